# EFA port counters for node-exporter's textfile collector, run as a sidecar of node-exporter in
# its own image (busybox sh, awk, sort). node-exporter's infiniband collector (v1.12.1,
# collector/infiniband_linux.go) exports only Mellanox hw_counters; the EFA driver's port
# counters (drivers/infiniband/hw/efa/efa_verbs.c, EFA_DEFINE_PORT_STATS) sit in
# <sysfs>/class/infiniband/<device>/ports/<port>/hw_counters/<name>, one number per file.
# Arguments: the host's sysfs, the .prom file to write, seconds between writes (0: write once).
# (No brace-style parameter expansion here: the script travels inside Terraform JSON.)
sysfs=$1
out=$2
interval=$3
while :; do
  for counters in "$sysfs"/class/infiniband/*/ports/*/hw_counters; do
    [ -d "$counters" ] || continue
    port_dir=$(dirname "$counters")
    port=$(basename "$port_dir")
    device=$(basename "$(dirname "$(dirname "$port_dir")")")
    for file in "$counters"/*; do
      name=$(basename "$file")
      case "$name" in lifespan | *[!a-z0-9_]*) continue ;; esac
      value=$(cat "$file" 2>/dev/null) || continue
      case "$value" in '' | *[!0-9]*) continue ;; esac
      echo "node_efa_$name""_total $device $port $value"
    done
  done | sort | awk '
    $1 != last { print "# HELP " $1 " EFA port counter " substr($1, 10, length($1) - 15) " (hw_counters)."; print "# TYPE " $1 " counter"; last = $1 }
    { print $1 "{device=\"" $2 "\",port=\"" $3 "\"} " $4 }' > "$out.tmp"
  mv "$out.tmp" "$out"
  [ "$interval" -gt 0 ] || exit 0
  sleep "$interval"
done
