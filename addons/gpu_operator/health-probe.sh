# The GPU node health check's probe: every interval, what the node's GPUs and EFA devices look like
# and what DCGM's health watches say about them, written to a new folder that then replaces
# <results>/latest in one rename (the judge, gpu_health.py, never reads a half-written round).
# Runs in NVIDIA's DCGM image (dcgmi, bash, coreutils) with the node's GPUs visible (nvidia-smi
# comes from the driver through the container runtime). dcgmi is only a client of the node's one
# host engine (the node monitoring agent's, at $HOST_ENGINE); `dcgmi health` runs inside that
# engine and needs no diagnostic plugins, so it is safe while jobs run. It is a snapshot: DCGM's
# count-over-time checks (PCIe replays, NVLink, thermal, power) look back one minute. Every call has a time
# limit: a wedged driver can hang nvidia-smi (the judge notices a probe that stops finishing).
# Arguments: the results folder, seconds between rounds. DCGM_HEALTH=0: no host engine expected;
# nor on an aarch64 node, where the agent schedules no host engine (components/node_monitoring.py).
results=$1
interval=$2
while :; do
  round="$results/round.$$"
  rm -rf "$round"
  mkdir -p "$round"
  timeout -k 10 60 nvidia-smi --query-gpu=index,pci.bus_id,uuid --format=csv,noheader \
    > "$round/gpus.csv" 2> "$round/gpus.err"
  echo $? > "$round/gpus.rc"
  ls /sys/class/infiniband 2> /dev/null | wc -l > "$round/efa.count"
  if [ "$DCGM_HEALTH" != "1" ] || [ "$(uname -m)" = "aarch64" ]; then
    echo "no DCGM host engine is expected on this node" > "$round/health.none"
  elif ! timeout -k 10 30 dcgmi discovery --host "$HOST_ENGINE" -l > /dev/null 2>&1; then
    # Asked first with a command that never starts an engine of its own (dcgmi diag would).
    echo "the DCGM host engine at $HOST_ENGINE does not answer" > "$round/health.unavailable"
  else
    # The report of the health watches on the all-GPUs group (group 0, the agent's too). Only when
    # the engine has none (it restarted) are they set, once: each dcgmi connection that sets them
    # leaves its own watchers in the engine, so setting them every round would pile up.
    timeout -k 10 120 dcgmi health --host "$HOST_ENGINE" -g 0 -c -j > "$round/health.json" 2> "$round/health.err"
    echo $? > "$round/health.rc"
    if grep -q "Health watches not enabled" "$round/health.json"; then
      timeout -k 10 30 dcgmi health --host "$HOST_ENGINE" -g 0 -s a > "$round/watches.set" 2>&1
      echo $? >> "$round/watches.set"
    fi
  fi
  date +%s > "$round/at"
  rm -rf "$results/previous"
  [ -d "$results/latest" ] && mv "$results/latest" "$results/previous"
  mv "$round" "$results/latest"
  [ "$interval" -gt 0 ] || exit 0
  sleep "$interval"
done
