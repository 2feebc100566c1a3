"""Which network NCCL chose between nodes, read from an NCCL_DEBUG=INFO log, and whether that is EFA.

NCCL uses EFA only through aws-ofi-nccl (its network plugin for libfabric) with libfabric's efa
provider. Without the plugin, or when the plugin finds no EFA device, NCCL falls back to its
internal transports (IB verbs, then TCP sockets) and says nothing above INFO: the job runs, slower
by an order of magnitude, while every pod holds the node's EFA interfaces. verify judges each
multi-node run by the lines below (pure functions: unit-tested on tests/fixtures/nccl/).

The lines, at the pins (NCCL 2.27.5-1 in the nccl-tests image, 2.26.2-1 in PyTorch 2.7.1's
wheel; aws-ofi-nccl 1.16.0 in both images). Every NCCL line is `<host>:<pid>:<tid> [<cuda dev>]
NCCL INFO <message>` (src/debug.cc ncclDebugLog); INFO of the NCCL_INIT subsystem is printed under
the default NCCL_DEBUG_SUBSYS (INIT,BOOTSTRAP,ENV):
- `Using network <name>`: src/init.cc (v2.27.5-1 line 346, v2.26.2-1 line 337), `comm->ncclNet->name`
  of the transport NCCL assigned to the communicator, one line per communicator and rank. The
  names: aws-ofi-nccl's `Libfabric` (src/nccl_ofi_interface_nvidia.cpp, `.name = "Libfabric"`),
  or `AWS Libfabric` where NCCL_NET asks for the old name (same file, line 543) and in plugins
  before 1.7; NCCL's own `IB` (src/transport/net_ib.cc `ncclNetIb`) and `Socket`
  (src/transport/net_socket.cc `ncclNetSocket`).
- `NET/OFI Selected provider is <provider>, fabric is <fabric> (found <n> nics)`: aws-ofi-nccl
  src/nccl_ofi_net.cpp line 656 (v1.14.0 to v1.17.x; before v1.14.0 `Selected Provider is
  <provider> (found <n> nics)`), the libfabric provider and the number of its NICs the plugin
  will use. aws-ofi-nccl prefixes all its lines with `NET/OFI ` (include/nccl_ofi_log.h).
- `NET/OFI Initializing aws-ofi-nccl <version>`: src/nccl_ofi_net.cpp line 143 (PACKAGE_STRING).
- `NET/OFI No eligible providers were found`: src/nccl_ofi_rdma.cpp line 7758, fi_getinfo found
  no device of the provider (FI_PROVIDER, efa on AWS): the pod holds no EFA device.
- `NET/Plugin: Could not find: libnccl-net.so. ...`: NCCL src/plugin/plugin_open.cc (v2.27.5-1
  line 104, v2.26.2-1 line 102, which adds `Using internal net plugin.`): no network plugin in
  the image; NCCL tries its IB transport (`NET/IB : No device found.` on EFA, whose verbs devices
  are not InfiniBand or RoCE) and then TCP.
- `NET/Socket : Using [0]<if>:<address>`: src/transport/net_socket.cc line 67, NCCL's TCP
  transport started (the bootstrap's own `Bootstrap: Using ...` is not a transport choice).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from components.acceptance import ValidationTarget

LIBFABRIC_NETWORKS = ("Libfabric", "AWS Libfabric")
EFA_PROVIDER = "efa"

_PREFIX = r"NCCL INFO "
_NETWORK = re.compile(_PREFIX + r"Using network (?P<name>\S.*?)\s*$", re.MULTILINE)
_PROVIDER = re.compile(
    _PREFIX + r"NET/OFI Selected [Pp]rovider is (?P<provider>[^,\s]+)(?:, fabric is (?P<fabric>\S+))?"
    r" \(found (?P<nics>\d+) nics\)"
)
_PLUGIN = re.compile(_PREFIX + r"NET/OFI Initializing (?P<plugin>aws-ofi-nccl \S+)")
_NO_PROVIDER = re.compile(_PREFIX + r"NET/OFI No eligible providers were found")
_PLUGIN_MISSING = re.compile(_PREFIX + r"NET/Plugin: Could not find:(?P<names>(?: \S+?\.so)+)\.")
_VERSION = re.compile(_PREFIX + r"NCCL version (?P<version>\S+)")


@dataclass(frozen=True)
class OfiSelection:
    """One `NET/OFI Selected provider is ...` line: what aws-ofi-nccl chose in one process."""

    provider: str
    fabric: str | None
    nics: int


@dataclass(frozen=True)
class NcclTransport:
    """What one run's NCCL_DEBUG=INFO log says about its network, every rank's lines together."""

    networks: tuple[str, ...]
    """Every `Using network` name, one per communicator and rank, in log order."""
    selections: tuple[OfiSelection, ...]
    """Every aws-ofi-nccl provider selection, one per process that loaded the plugin."""
    plugin: str | None
    """`aws-ofi-nccl <version>` when a process initialized the plugin."""
    plugin_missing: tuple[str, ...]
    """The plugin libraries NCCL looked for and did not find (the image has no aws-ofi-nccl)."""
    no_provider: bool
    """aws-ofi-nccl found no device of its provider (no EFA device in the pod)."""
    nccl_version: str | None

    @property
    def network(self) -> str | None:
        """The network the run used: the first one that is not aws-ofi-nccl's where any rank fell
        back (one rank on TCP holds the whole collective to TCP speed), else the first one."""
        fallen = [name for name in self.networks if name not in LIBFABRIC_NETWORKS]
        return next(iter(fallen or self.networks), None)

    @property
    def provider(self) -> OfiSelection | None:
        """The provider selection that decides: the first that is not efa, else the one with the
        fewest NICs (a rank with fewer NICs than the node has caps the run)."""
        if not self.selections:
            return None
        other = [s for s in self.selections if s.provider != EFA_PROVIDER]
        return other[0] if other else min(self.selections, key=lambda s: s.nics)


def nccl_transport(log: str) -> NcclTransport:
    """Parse the transport-selection lines of an NCCL_DEBUG=INFO log (any number of ranks)."""
    missing = sorted({name for found in _PLUGIN_MISSING.finditer(log) for name in found.group("names").split()})
    plugin = _PLUGIN.search(log)
    version = _VERSION.search(log)
    return NcclTransport(
        networks=tuple(found.group("name") for found in _NETWORK.finditer(log)),
        selections=tuple(
            OfiSelection(found.group("provider"), found.group("fabric"), int(found.group("nics")))
            for found in _PROVIDER.finditer(log)
        ),
        plugin=plugin.group("plugin") if plugin else None,
        plugin_missing=tuple(missing),
        no_provider=bool(_NO_PROVIDER.search(log)),
        nccl_version=version.group("version") if version else None,
    )


def _fallback_cause(transport: NcclTransport) -> str:
    if transport.plugin is None and transport.plugin_missing:
        return (
            f"the image has no aws-ofi-nccl (NCCL found no network plugin: {', '.join(transport.plugin_missing)}); "
            "run an image with the EFA installer's libfabric and aws-ofi-nccl (the build layer's pytorch-efa "
            "or nccl-tests image)"
        )
    if transport.no_provider:
        return (
            f"{transport.plugin or 'aws-ofi-nccl'} found no EFA device (NET/OFI No eligible providers were found): "
            "the pod requested no vpc.amazonaws.com/efa devices, or FI_PROVIDER names a provider the node lacks"
        )
    if transport.plugin is None:
        return (
            "aws-ofi-nccl never started: an image without it, NCCL_NET_PLUGIN or NCCL_NET naming another "
            "network, or no EFA devices requested"
        )
    return (
        f"{transport.plugin} started but NCCL did not use it: check FI_PROVIDER=efa, the pod's "
        "vpc.amazonaws.com/efa request and the plugin's NET/OFI warnings in the log"
    )


def efa_transport_problem(transport: NcclTransport, *, efa_interfaces: int, instance_type: str) -> str | None:
    """Why a run that asked for EFA (every EFA interface of an `instance_type` node) did not get
    it, or None: every rank on aws-ofi-nccl (Libfabric) with libfabric's efa provider, on all the
    node's NICs."""
    network = transport.network
    if network is None:
        return (
            "NCCL printed no transport selection (no `Using network` line): run with NCCL_DEBUG=INFO, "
            "or the job failed before NCCL started"
        )
    if network not in LIBFABRIC_NETWORKS:
        what = "TCP sockets" if network == "Socket" else f"its internal {network} transport"
        return f"NCCL fell back to {what} instead of EFA (Using network {network}): {_fallback_cause(transport)}"
    selected = transport.provider
    if selected is None:
        return (
            f"NCCL used {network} but aws-ofi-nccl logged no provider selection (NET/OFI Selected provider is ...): "
            "the log is cut, or the plugin is not aws-ofi-nccl"
        )
    if selected.provider != EFA_PROVIDER:
        return (
            f"aws-ofi-nccl selected libfabric's {selected.provider} provider, not efa: traffic goes over "
            f"{selected.provider}, not EFA (FI_PROVIDER={selected.provider} in the pod or the image?): set "
            "FI_PROVIDER=efa and request the node's vpc.amazonaws.com/efa devices"
        )
    if selected.nics < efa_interfaces:
        return (
            f"aws-ofi-nccl found {selected.nics} EFA NICs, the catalog says {efa_interfaces} for {instance_type}: "
            "check the pod's vpc.amazonaws.com/efa request and the launch template"
        )
    return None


def transport_summary(transport: NcclTransport) -> str:
    """`Libfabric (efa, 32 NICs)`, `Socket`, ...: for a passing check's detail."""
    selected = transport.provider
    if transport.network in LIBFABRIC_NETWORKS and selected is not None:
        return f"{transport.network} ({selected.provider}, {selected.nics} NICs)"
    return transport.network or "an unreported network"


def efa_network_problem(log: str, target: ValidationTarget) -> str | None:
    """Why a run on the checked group did not use every EFA NIC, if it did not (a group without
    EFA has only TCP between nodes: nothing to judge)."""
    if not target.efa_interfaces:
        return None
    return efa_transport_problem(
        nccl_transport(log), efa_interfaces=target.efa_interfaces, instance_type=target.entry.name
    )


# Multi-node NVLink (NCCL's MNNVL: the GPUs of one UltraServer reach each other's memory over NVLink
# across nodes, through IMEX). The lines, at NCCL v2.27.5-1 (the nccl-tests image's; read in
# NVIDIA/nccl at that tag), all printed under the default NCCL_DEBUG_SUBSYS:
# - `comm <ptr> rank <r> nRanks <n> nNodes <k> localRanks <l> localRank <i> MNNVL <0|1>`: src/init.cc
#   998 (INFO NCCL_INIT), one per communicator and rank: whether that communicator uses MNNVL;
# - `MNNVL 1 cliqueId <hex> cliqueSize <n> cliqueRank <r>`: src/mnnvl.cc 83, once MNNVL is on: how
#   many of the communicator's ranks share the rank's NVLink clique (its UltraServer's domain);
# - `Channel <c>/<i> : <rank>[<dev>] -> <rank>[<dev>] via P2P/MNNVL...`: src/transport/p2p.cc 393
#   (INFO NCCL_INIT|NCCL_P2P), a peer connection over fabric memory; `... [send] via NET/<net>/...`
#   and `... [receive] via NET/<net>/...`: src/transport/net.cc 218, 222 and 264, a connection
#   over the network (EFA through aws-ofi-nccl's Libfabric, or sockets);
# - WARN `MNNVL (cliqueSize <n>) is available but not working on this system. Check the IMEX
#   channel configuration (/dev/nvidia-caps-imex-channels). ...` (src/mnnvl.cc 63: fabric memory
#   cannot be allocated, the pod has no IMEX channel) or `... Check the IMEX configuration
#   (nvidia-imex-ctl -N). ...` (74: it cannot be exported or imported, the IMEX daemons are not
#   connected); with NCCL_MNNVL_ENABLE=1 the communicator then fails (ncclSystemError).
_COMM = re.compile(
    _PREFIX + r"comm \S+ rank (?P<rank>\d+) nRanks (?P<ranks>\d+) nNodes (?P<nodes>\d+) localRanks \d+ "
    r"localRank \d+ MNNVL (?P<mnnvl>\d+)"
)
_CLIQUE = re.compile(
    _PREFIX + r"MNNVL 1 cliqueId (?P<clique>[0-9a-fA-F]+) cliqueSize (?P<size>\d+) cliqueRank (?P<rank>\d+)"
)
_P2P_MNNVL = re.compile(_PREFIX + r"Channel \d+/\d+ : \d+\[\d+\] -> \d+\[\d+\] via P2P/MNNVL")
_NET_CHANNEL = re.compile(
    _PREFIX + r"Channel \d+/\d+ : \d+\[\d+\] -> \d+\[\d+\] \[(?:send|receive)\] via NET/(?P<net>[^/\s]+)"
)
_MNNVL_BROKEN = re.compile(
    r"NCCL WARN MNNVL \(cliqueSize (?P<size>\d+)\) is available but not working on this system\. "
    r"Check the (?P<what>IMEX channel configuration|IMEX configuration)"
)


@dataclass(frozen=True)
class CommSummary:
    """One `comm ... MNNVL` line: a communicator as one rank saw it."""

    rank: int
    ranks: int
    nodes: int
    mnnvl: bool


@dataclass(frozen=True)
class MnnvlUse:
    """What one run's NCCL_DEBUG=INFO log says about multi-node NVLink, every rank's lines together."""

    comms: tuple[CommSummary, ...]
    clique_sizes: tuple[int, ...]
    """Every `MNNVL 1 cliqueId ... cliqueSize` line's size."""
    p2p_mnnvl: int
    """Peer connections over P2P/MNNVL."""
    networks: tuple[str, ...]
    """The network of every connection over NET/<net>, in log order."""
    broken: tuple[str, ...]
    """What the `MNNVL ... is available but not working` warnings say to check."""


def mnnvl_use(log: str) -> MnnvlUse:
    """Parse the multi-node NVLink lines of an NCCL_DEBUG=INFO log (any number of ranks)."""
    return MnnvlUse(
        comms=tuple(
            CommSummary(int(m.group("rank")), int(m.group("ranks")), int(m.group("nodes")), m.group("mnnvl") == "1")
            for m in _COMM.finditer(log)
        ),
        clique_sizes=tuple(int(m.group("size")) for m in _CLIQUE.finditer(log)),
        p2p_mnnvl=len(_P2P_MNNVL.findall(log)),
        networks=tuple(m.group("net") for m in _NET_CHANNEL.finditer(log)),
        broken=tuple(m.group("what") for m in _MNNVL_BROKEN.finditer(log)),
    )


def mnnvl_problem(use: MnnvlUse) -> str | None:
    """Why a multi-node run on a multi-node NVLink group did not go over NVLink between its nodes,
    or None: every communicator that spans nodes on MNNVL, one clique holding all its ranks, no
    connection over the network."""
    return _mnnvl_not_on(use) or _mnnvl_not_everywhere(use)


def _mnnvl_not_on(use: MnnvlUse) -> str | None:
    if use.broken:
        return (
            f"NCCL found the GPUs on one NVLink fabric but could not use it (MNNVL ... is available but not "
            f"working; check the {use.broken[0]}): the pods hold no IMEX channel (the job's ComputeDomain "
            "channel claim) or the ComputeDomain's IMEX daemons are not ready"
        )
    if not use.comms:
        return (
            "NCCL printed no communicator summary (no `comm ... MNNVL` line): run with NCCL_DEBUG=INFO, or the "
            "job failed before NCCL started"
        )
    spanning = [comm for comm in use.comms if comm.nodes > 1]
    if not spanning:
        return "every communicator stayed on one node (nNodes 1): nothing went between nodes"
    without = [comm for comm in spanning if not comm.mnnvl]
    if without:
        return (
            f"NCCL did not use multi-node NVLink (MNNVL 0 on {len(without)} of {len(spanning)} ranks' "
            "communicators across nodes): NCCL_MNNVL_ENABLE=0, nodes outside one NVLink domain, or GPUs whose "
            "fabric reports no cluster"
        )
    return None


def _mnnvl_not_everywhere(use: MnnvlUse) -> str | None:
    ranks = max(comm.ranks for comm in use.comms if comm.nodes > 1)
    if not use.clique_sizes or min(use.clique_sizes) < ranks:
        smallest = min(use.clique_sizes, default=0)
        return (
            f"a rank's NVLink clique holds {smallest} of the communicator's {ranks} ranks: the job's nodes are "
            "not all in one NVLink domain (UltraServer)"
        )
    if use.networks:
        return (
            f"{len(use.networks)} connections went over the network (NET/{use.networks[0]}), not NVLink: ranks "
            "outside one NVLink domain"
        )
    return None


def mnnvl_summary(use: MnnvlUse) -> str:
    """`multi-node NVLink (one clique of 8 ranks, 24 P2P/MNNVL connections)`: for a passing check's detail."""
    size = min(use.clique_sizes, default=0)
    return f"multi-node NVLink (one clique of {size} ranks, {use.p2p_mnnvl} P2P/MNNVL connections)"
