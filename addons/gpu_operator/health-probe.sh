# The GPU node health check's probe: every interval, what the node's GPUs and EFA devices look like,
# and on an idle node a short DCGM diagnostic, written to a new folder that then replaces
# <results>/latest in one rename (the judge, gpu_health.py, never reads a half-written round).
# Runs in NVIDIA's DCGM image (dcgmi, bash, coreutils) with the node's GPUs visible (nvidia-smi
# comes from the driver through the container runtime). The diagnostic runs in the node's one host
# engine (the node monitoring agent's, at $HOST_ENGINE): dcgmi is only its client.
# Arguments: the results folder, seconds between rounds.
results=$1
interval=$2
while :; do
  round="$results/round.$$"
  rm -rf "$round"
  mkdir -p "$round"
  nvidia-smi --query-gpu=index,pci.bus_id,uuid --format=csv,noheader > "$round/gpus.csv" 2> "$round/gpus.err"
  echo $? > "$round/gpus.rc"
  nvidia-smi --query-compute-apps=pid,gpu_uuid --format=csv,noheader > "$round/apps.csv" 2> /dev/null
  ls /sys/class/infiniband 2> /dev/null | wc -l > "$round/efa.count"
  if [ -s "$round/apps.csv" ]; then
    echo "a process uses a GPU" > "$round/diag.skipped"
  else
    dcgmi diag --host "$HOST_ENGINE" -r 1 -j > "$round/diag.json" 2> "$round/diag.err"
    echo $? > "$round/diag.rc"
  fi
  date +%s > "$round/at"
  rm -rf "$results/previous"
  [ -d "$results/latest" ] && mv "$results/latest" "$results/previous"
  mv "$round" "$results/latest"
  [ "$interval" -gt 0 ] || exit 0
  sleep "$interval"
done
