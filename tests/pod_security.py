"""The Pod Security Standard's baseline level, as the API server's admission enforces it, for the
pod specs the platform asks tenants (and its own checks) to run. No API server runs here, so this
evaluator is written from the upstream checks and cites them; it is tested first on the cases a
naive reading of "baseline" gets wrong (root is fine, an extra capability is not).

Source: kubernetes/pod-security-admission v0.35.6 (Kubernetes 1.35, the profiles' version),
policy/check_*.go. Each check visits init, regular and ephemeral containers (policy/visitor.go,
visitContainers) and is judged at the namespace's enforce-version ("latest" here).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# check_capabilities_baseline.go, capabilities_allowed_1_0: containerd's default set.
DEFAULT_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)
# check_sysctls.go, sysctlsAllowedV1Dot32 (the union of the 1.0, 1.27, 1.29 and 1.32 sets).
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
        "net.ipv4.tcp_rmem",
        "net.ipv4.tcp_wmem",
    }
)
# check_seLinuxOptions.go, selinuxAllowedTypes1_31.
SELINUX_TYPES = frozenset({"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"})
# check_seccompProfile_baseline.go and check_appArmorProfile.go: anything but Unconfined.
UNCONFINED = "Unconfined"


def _containers(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from spec.get("initContainers", [])
    yield from spec.get("containers", [])
    yield from spec.get("ephemeralContainers", [])


def baseline_problems(spec: dict[str, Any]) -> list[str]:
    """Why the baseline level refuses this pod spec (empty: admitted)."""
    problems: list[str] = []
    # check_hostNamespaces.go: hostNetwork, hostPID, hostIPC undefined or false.
    problems += [f"{field}=true" for field in ("hostNetwork", "hostPID", "hostIPC") if spec.get(field)]
    # check_hostPathVolumes.go: no hostPath volume.
    problems += [f"hostPath volume {v['name']}" for v in spec.get("volumes", []) if "hostPath" in v]
    pod_context = spec.get("securityContext", {})
    # check_sysctls.go: only the safe set.
    problems += [f"sysctl {s['name']}" for s in pod_context.get("sysctls", []) if s["name"] not in SAFE_SYSCTLS]
    contexts = [("pod", pod_context)]
    for container in _containers(spec):
        name, context = container["name"], container.get("securityContext", {})
        contexts.append((f"container {name}", context))
        # check_privileged.go.
        if context.get("privileged"):
            problems.append(f"container {name} is privileged")
        # check_capabilities_baseline.go: adds only from the default set.
        added = set(context.get("capabilities", {}).get("add", [])) - DEFAULT_CAPABILITIES
        if added:
            problems.append(f"container {name} adds {', '.join(sorted(added))}")
        # check_hostPorts.go: no hostPort other than 0.
        problems += [
            f"container {name} hostPort {p['hostPort']}" for p in container.get("ports", []) if p.get("hostPort")
        ]
        # check_procMount_baseline.go (1.35: any value when hostUsers is false).
        if context.get("procMount", "Default") != "Default" and spec.get("hostUsers", True):
            problems.append(f"container {name} procMount {context['procMount']}")
        # check_hostProbesAndhostLifecycle.go (1.34+): probes and hooks may not name a host.
        handlers = [container.get(p) for p in ("livenessProbe", "readinessProbe", "startupProbe")]
        handlers += [container.get("lifecycle", {}).get(hook) for hook in ("postStart", "preStop")]
        for handler in filter(None, handlers):
            if any(handler.get(kind, {}).get("host") for kind in ("httpGet", "tcpSocket")):
                problems.append(f"container {name} probes or hooks another host")
    for who, context in contexts:
        # check_seccompProfile_baseline.go and check_appArmorProfile.go.
        for field in ("seccompProfile", "appArmorProfile"):
            if context.get(field, {}).get("type") == UNCONFINED:
                problems.append(f"{who} {field} Unconfined")
        # check_seLinuxOptions.go: an allowed type, no user or role.
        selinux = context.get("seLinuxOptions", {})
        if selinux.get("type", "") not in SELINUX_TYPES or selinux.get("user") or selinux.get("role"):
            problems.append(f"{who} seLinuxOptions {selinux}")
    return problems
