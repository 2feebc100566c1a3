"""verify's transport judge on NCCL_DEBUG=INFO logs in the formats of the pinned NCCL (2.26.2-1 in
PyTorch's wheel, 2.27.5-1 in the nccl-tests image) and aws-ofi-nccl (1.16.0); each fixture's
header names the source lines behind its lines. Healthy EFA runs pass; every fallback fails with
the fallback and its likely cause named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from components.nccl_transport import (
    NcclTransport,
    OfiSelection,
    efa_transport_problem,
    mnnvl_problem,
    mnnvl_summary,
    mnnvl_use,
    nccl_transport,
    transport_summary,
)

FIXTURES = Path(__file__).parent / "fixtures" / "nccl"
P5: dict[str, Any] = {"efa_interfaces": 32, "instance_type": "p5.48xlarge"}


def fixture(name: str) -> str:
    """A fixture's log without its `##` header."""
    lines = (FIXTURES / name).read_text().splitlines(keepends=True)
    return "".join(line for line in lines if not line.startswith("##"))


def test_every_fixture_says_where_its_lines_come_from():
    for path in sorted(FIXTURES.glob("*.log")):
        header = [line for line in path.read_text().splitlines() if line.startswith("##")]
        assert header, f"{path.name} has no header"
        text = "\n".join(header)
        assert "src/init.cc" in text and ("2.26.2-1" in text or "2.27.5-1" in text), path.name


@pytest.mark.parametrize("name", ["torch-efa-healthy-p5.log", "nccl-tests-efa-healthy-p5.log"])
def test_a_healthy_efa_run_passes(name):
    transport = nccl_transport(fixture(name))
    assert transport.network == "Libfabric" and len(transport.networks) == 16
    assert transport.provider == OfiSelection("efa", "efa-direct", 32)
    assert transport.plugin == "aws-ofi-nccl 1.16.0"
    assert efa_transport_problem(transport, **P5) is None
    assert transport_summary(transport) == "Libfabric (efa, 32 NICs)"


def test_the_nccl_version_is_read_from_the_log():
    assert nccl_transport(fixture("torch-efa-healthy-p5.log")).nccl_version == "2.26.2+cuda12.8"
    assert nccl_transport(fixture("nccl-tests-efa-healthy-p5.log")).nccl_version == "2.27.5+cuda12.8"


@pytest.mark.parametrize(
    ("name", "cause"),
    [
        # PyTorch's public image: NCCL 2.26.2 finds no net plugin (and says it uses its internal one).
        ("torch-public-image-socket-fallback-p5.log", "the image has no aws-ofi-nccl"),
        # NCCL 2.27.5 words the missing plugin without the fallback sentence.
        ("nccl-tests-no-plugin-socket-fallback-p5.log", "the image has no aws-ofi-nccl"),
        # The plugin is there but the pod holds no EFA device.
        ("torch-no-efa-devices-socket-fallback-p5.log", "requested no vpc.amazonaws.com/efa devices"),
    ],
)
def test_a_socket_fallback_fails_naming_it_and_its_cause(name, cause):
    log = fixture(name)
    transport = nccl_transport(log)
    assert transport.network == "Socket"
    problem = efa_transport_problem(transport, **P5)
    assert problem is not None
    assert "fell back to TCP sockets instead of EFA (Using network Socket)" in problem and cause in problem


def test_the_public_image_fallback_is_what_the_old_check_passed():
    """Rank 0's world size and sum are right over TCP: only the transport lines tell."""
    log = fixture("torch-public-image-socket-fallback-p5.log")
    assert "TRAINJOB_CHECK world=16 sum=16 backend=nccl" in log
    assert nccl_transport(log).plugin_missing == ("libnccl-net.so",)


def test_libfabric_over_another_provider_fails():
    transport = nccl_transport(fixture("torch-tcp-provider-p5.log"))
    assert transport.network == "Libfabric" and transport.provider == OfiSelection("tcp", "10.1.0.0/16", 1)
    problem = efa_transport_problem(transport, **P5)
    assert problem is not None and "selected libfabric's tcp provider, not efa" in problem
    assert "FI_PROVIDER" in problem


def test_fewer_nics_than_the_node_has_fail():
    log = fixture("torch-efa-healthy-p5.log").replace("(found 32 nics)", "(found 8 nics)", 1)
    problem = efa_transport_problem(nccl_transport(log), **P5)
    assert problem is not None and "found 8 EFA NICs, the catalog says 32 for p5.48xlarge" in problem


def test_one_rank_on_sockets_fails_the_run():
    lines = fixture("torch-efa-healthy-p5.log").splitlines()
    last = max(i for i, line in enumerate(lines) if line.endswith("Using network Libfabric"))
    lines[last] = lines[last].replace("Using network Libfabric", "Using network Socket")
    transport = nccl_transport("\n".join(lines))
    assert transport.network == "Socket"
    assert efa_transport_problem(transport, **P5) is not None


def test_a_log_without_nccl_info_fails():
    problem = efa_transport_problem(nccl_transport("TRAINJOB_CHECK world=16 sum=16 backend=nccl\n"), **P5)
    assert problem is not None and "NCCL_DEBUG=INFO" in problem


def test_the_old_plugin_name_and_the_pre_1_14_provider_line_are_read():
    log = (
        "h:1:1 [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)\n"
        "h:1:1 [0] NCCL INFO Using network AWS Libfabric\n"
    )
    transport = nccl_transport(log)
    assert transport.network == "AWS Libfabric" and transport.provider == OfiSelection("efa", None, 4)
    assert efa_transport_problem(transport, efa_interfaces=4, instance_type="p4d.24xlarge") is None


def test_nccls_internal_ib_is_a_fallback_too():
    transport = NcclTransport(
        networks=("IB",), selections=(), plugin=None, plugin_missing=(), no_provider=False, nccl_version=None
    )
    problem = efa_transport_problem(transport, **P5)
    assert problem is not None and "fell back to its internal IB transport" in problem
    assert "aws-ofi-nccl never started" in problem


# Multi-node NVLink (P6e-GB200): judged by the lines of NCCL v2.27.5-1 that components/nccl_transport.py
# names; the healthy fixture, and each failure made from it the way NCCL would print it.
MNNVL_LOG = "nccl-tests-mnnvl-healthy-gb200.log"


def test_a_healthy_mnnvl_run_passes():
    use = mnnvl_use(fixture(MNNVL_LOG))
    assert len(use.comms) == 8 and all(comm.mnnvl and comm.nodes == 2 for comm in use.comms)
    assert use.clique_sizes == (8,) * 8 and use.p2p_mnnvl == 16 and use.networks == () and use.broken == ()
    assert mnnvl_problem(use) is None
    assert mnnvl_summary(use) == "multi-node NVLink (one clique of 8 ranks, 16 P2P/MNNVL connections)"


def test_mnnvl_off_fails():
    # NCCL_MNNVL_ENABLE=0, or GPUs whose fabric reports no cluster: MNNVL 0, no clique line.
    log = fixture(MNNVL_LOG).replace(" MNNVL 1\n", " MNNVL 0\n")
    log = "\n".join(line for line in log.splitlines() if "MNNVL 1 cliqueId" not in line)
    assert "did not use multi-node NVLink (MNNVL 0 on 8 of 8" in (mnnvl_problem(mnnvl_use(log)) or "")


def test_a_pod_without_its_imex_channel_fails_naming_the_channel_claim():
    warn = (
        "\n[2099-02-28 12:00:00] nccl-allreduce-worker-1:5104:5104 [0] mnnvl.cc:63 NCCL WARN MNNVL (cliqueSize 8) "
        "is available but not working on this system. Check the IMEX channel configuration "
        "(/dev/nvidia-caps-imex-channels). Set NCCL_MNNVL_ENABLE=0 to ignore this issue.\n"
    )
    problem = mnnvl_problem(mnnvl_use(fixture(MNNVL_LOG) + warn)) or ""
    assert "check the IMEX channel configuration" in problem and "ComputeDomain channel claim" in problem


def test_nodes_in_two_nvlink_domains_fail():
    # Four ranks in each of two cliques: NCCL connects the cliques over the network.
    log = fixture(MNNVL_LOG).replace("cliqueSize 8", "cliqueSize 4")
    log += "nccl-allreduce-worker-0:5103:5103 [3] NCCL INFO Channel 00/0 : 3[3] -> 4[0] [send] via NET/Libfabric/0\n"
    assert "clique holds 4 of the communicator's 8 ranks" in (mnnvl_problem(mnnvl_use(log)) or "")
    networked = fixture(MNNVL_LOG) + (
        "nccl-allreduce-worker-0:5103:5103 [3] NCCL INFO Channel 00/0 : 3[3] -> 4[0] [send] via NET/Libfabric/0\n"
    )
    assert "1 connections went over the network (NET/Libfabric)" in (mnnvl_problem(mnnvl_use(networked)) or "")


def test_a_log_without_communicator_lines_or_on_one_node_fails():
    assert "no `comm ... MNNVL` line" in (mnnvl_problem(mnnvl_use("")) or "")
    one_node = fixture(MNNVL_LOG).replace("nNodes 2", "nNodes 1")
    assert "stayed on one node" in (mnnvl_problem(mnnvl_use(one_node)) or "")
