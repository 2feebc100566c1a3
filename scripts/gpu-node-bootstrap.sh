#!/usr/bin/env bash
# GPU node bootstrap, run by cloud-init before nodeadm joins the node to the cluster.
# The AL2023 NVIDIA AMI already carries the NVIDIA driver, the container toolkit and the EFA
# driver: nothing here installs or reconfigures them.
set -euo pipefail
# Set to 1 at synthesis when the profile's FSx for Lustre file system is EFA-enabled.
LUSTRE_OVER_EFA=0
# Prefix of every system path: empty on a node; a fake tree in tests/test_bootstrap.py.
ROOT="${BOOTSTRAP_ROOT:-}"
log() { echo "gpu-node-bootstrap: $*" | tee "${ROOT}/dev/kmsg" >&2 || true; }

# Pre-allocate 2 MiB huge pages: libfabric's EFA provider registers its buffers in them, and
# training pods request `hugepages-2Mi`, which the kubelet can only grant from this pool.
HUGEPAGES_2MI=5128
echo "${HUGEPAGES_2MI}" > "${ROOT}/proc/sys/vm/nr_hugepages"
echo "vm.nr_hugepages = ${HUGEPAGES_2MI}" > "${ROOT}/etc/sysctl.d/90-efa-hugepages.conf"
log "reserved $(cat "${ROOT}/proc/sys/vm/nr_hugepages") huge pages"

# The Lustre client lets the FSx CSI driver mount FSx for Lustre volumes on this node.
if ! rpm -q lustre-client >/dev/null 2>&1; then
  dnf install -y lustre-client || log "lustre-client install failed: FSx volumes will not mount"
fi

# Record what the node sees, for the topology check: EFA devices. A GPU node without EFA has no
# /sys/class/infiniband at all: the glob then matches nothing (no failing pipeline under pipefail).
shopt -s nullglob
efa_paths=("${ROOT}"/sys/class/infiniband/*)
efa_devices=${#efa_paths[@]}
log "EFA devices visible: ${efa_devices}"

# An EFA-enabled file system is reached over EFA only when LNet has an efa network on every EFA
# device (beside tcp on the primary interface): configured before any volume mounts, or the
# client talks TCP while the file system is paid for EFA throughput.
if [ "${LUSTRE_OVER_EFA}" = "1" ] && [ "${efa_devices}" -gt 0 ]; then
  modprobe lnet
  lnetctl lnet configure
  primary=$(ip -o route show default | awk '{print $5; exit}')
  lnetctl net add --net tcp --if "${primary}" || log "LNet tcp network on ${primary} failed"
  for device in "${efa_paths[@]}"; do
    lnetctl net add --net efa --if "$(basename "${device}")" --peer-credits 32 \
      || log "LNet efa network on $(basename "${device}") failed"
  done
  lnetctl set discovery 1
  # The networks are saved for reboots (the lnet service imports this file) before the selection
  # policy below: Lustre 2.15's export writes a policy with dst and rte "NA", which its own import
  # refuses, failing the service (fixed upstream only from 2.16.60, LU-16572).
  lnetctl export --backup > "${ROOT}/etc/lnet.conf"
  # With both networks up, LNet would spread traffic over tcp too: a selection policy makes the
  # efa networks the preferred local interfaces (priority 0 is the highest), tcp the fallback.
  # Added now, and by the lnet service after each import.
  lnetctl udsp add --src efa --priority 0 || log "LNet selection policy preferring efa failed"
  mkdir -p "${ROOT}/etc/systemd/system/lnet.service.d"
  cat > "${ROOT}/etc/systemd/system/lnet.service.d/prefer-efa.conf" <<'UNIT'
[Service]
ExecStartPost=/usr/sbin/lnetctl udsp add --src efa --priority 0
UNIT
  systemctl enable lnet >/dev/null 2>&1 || true
  log "LNet networks: $(lnetctl net show | grep -c 'net type: efa') efa, lustre client over EFA"
fi
