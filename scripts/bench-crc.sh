#!/usr/bin/env bash
# The cost of tier integrity (plan io.crc, on by default) on the update phase: the same
# update-only run with io.crc true and false, interleaved (on, off, off, on, ...), REPEAT
# times, on two plans:
#   disk+shm  the bench's two-tier row: disk (nvme, streamed, CRC per extent in TierIo) 70 %
#             + /dev/shm (host, mapped, CRC per chunk fused into AdamW) 30 %, cache 10,
#             buffers 8, prefetch 4, queue depth 64, 16 Mi-element subgroups, 1B params;
#   shm       both tiers on /dev/shm (steadier than the VM's disk): one streamed (kind
#             other), one mapped (host), 50/50, no cache, SHM_PARAMS params.
# Prints per plan and setting each run's mean update s (steps 2..STEPS) and the medians, after
# one untimed run of each plan; then the least on/off ratio this machine allows: the check must
# put each parameter's 24 bytes (p, m, v as read and as written) through CRC32C, at best at the
# fastest in-cache rate crc_bench measures here (one core), and that CPU time lengthens the
# update by itself over the cores, less what the CRC-off update left idle (its
# mean_update_cpu_idle, /proc/stat). A floor above 1.03 means no check can be that cheap on
# this machine: the update has no CPU to hide it in.
#
#   scripts/bench-crc.sh [DISK_DIR] [REPEAT] [PARAMS] [SHM_PARAMS] [STEPS]
#   PLANS=shm scripts/bench-crc.sh ...   only the shm plan (PLANS="disk+shm shm" by default)
#   CRC_BENCH=path/to/crc_bench          the CRC32C rate probe (build/release/bench/io/crc_bench)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
run=${RUN:-"$root/build/release/cli/mlpo-run"}  # RUN=another mlpo-run (an older build) to compare
disk=${1:-/var/tmp/mlpo-bench-crc}
repeat=${2:-3}
params=${3:-1B}
shm_params=${4:-500M}
steps=${5:-4}
plans=${PLANS:-"disk+shm shm"}
params_of() { if [ "$1" = shm ]; then echo "$shm_params"; else echo "$params"; fi; }
crc_bench=${CRC_BENCH:-"$root/build/release/bench/io/crc_bench"}
if [ ! -x "$crc_bench" ]; then
  echo "bench-crc.sh: $crc_bench is missing: build the project first (cmake --build build/release), or set CRC_BENCH" >&2
  exit 2
fi
for name in $plans; do
  case $name in disk+shm | shm) ;; *) echo "bench-crc.sh: PLANS=\"$plans\": '$name' is no plan; use disk+shm and/or shm" >&2; exit 2 ;; esac
done
out="$root/out/bench-crc"
shm=/dev/shm/mlpo-bench-crc
mkdir -p "$out" "$disk" "$shm/stream" "$shm/inplace"
trap 'rm -rf "$shm"' EXIT

plan() {  # plan FILE CRC TIERS CACHE
  cat > "$1" <<JSON
{"schema": "mlpo.plan/1", "model": {"name": "synthetic", "params": 1}, "cluster": {},
 "subgroup_elements": 16777216, "tiers": $3,
 "host_cache_subgroups": $4, "buffers": 8, "prefetch_depth": 4, "order": "alternating", "gradients": "delayed",
 "io": {"queue_depth": 64, "crc": $2}}
JSON
}
two='[{"name": "disk", "kind": "nvme", "path": "'$disk'", "fraction": 0.7}, {"name": "shm", "kind": "host", "path": "'$shm/inplace'", "fraction": 0.3}]'
shm_only='[{"name": "stream", "kind": "other", "path": "'$shm/stream'", "fraction": 0.5}, {"name": "inplace", "kind": "host", "path": "'$shm/inplace'", "fraction": 0.5}]'
for crc in true false; do
  plan "$out/disk+shm.crc-$crc.plan.json" $crc "$two" 10
  plan "$out/shm.crc-$crc.plan.json" $crc "$shm_only" 0
done

# One untimed run of each plan first: the first run on a new directory allocates its tier files'
# blocks (disk+shm 1B: 9.6 s against 4.1-4.7 s for the runs after it, 2026-12-07).
for name in $plans; do
  "$run" --update-only --params "$(params_of "$name")" --plan "$out/$name.crc-true.plan.json" --steps 2 --quiet > /dev/null
done
: > "$out/runs.txt"
for rep in $(seq 1 "$repeat"); do
  # Alternate which setting goes first, so drift of the VM over a repeat moves both alike.
  if [ $((rep % 2)) = 1 ]; then order="true false"; else order="false true"; fi
  for name in $plans; do
    for crc in $order; do
      s=$("$run" --update-only --params "$(params_of "$name")" --plan "$out/$name.crc-$crc.plan.json" --steps "$steps" --quiet \
            | grep '^summary:' | sed 's/^summary: //' \
            | python3 -c "import json,sys; j=json.load(sys.stdin); print(f\"mean_update_s={j['mean_update_s']} idle={j.get('mean_update_cpu_idle', -1)} params={j['params']}\")")
      echo "$name crc=$crc rep=$rep $s" | tee -a "$out/runs.txt" >&2
    done
  done
done
# The fastest CRC32C this machine has, one core, in cache (ISA-L or the project's own; GB/s).
crc_rate=$("$crc_bench" --sizes 64KiB 1MiB --gib 1 --reps 3 \
             | awk '$NF ~ /^[0-9.]+$/ && $(NF-1) ~ /^[0-9.]+$/ && $(NF-1) > best { best = $(NF-1) } END { print best }')
python3 - "$out/runs.txt" "$crc_rate" "$(nproc)" <<'PY'
import statistics, sys, collections
runs, idle, params = collections.defaultdict(list), collections.defaultdict(list), {}
rate, cores = float(sys.argv[2]), int(sys.argv[3])
for line in open(sys.argv[1]):
    name, *fields = line.split()
    f = dict(kv.split("=") for kv in fields)
    runs[(name, f["crc"])].append(float(f["mean_update_s"]))
    idle[(name, f["crc"])].append(float(f["idle"]))
    params[name] = int(f["params"])  # the run's own count (its summary), as mlpo-run parsed --params
for name in ("disk+shm", "shm"):
    on, off = runs[(name, "true")], runs[(name, "false")]
    if not on or not off: continue
    mon, moff = statistics.median(on), statistics.median(off)
    print(f"{name}: crc on {mon:.3f} s [{', '.join(f'{x:.3f}' for x in on)}]  off {moff:.3f} s [{', '.join(f'{x:.3f}' for x in off)}]"
          f"  on/off {mon / moff:.3f}  paired {statistics.median(a / b for a, b in zip(on, off)):.3f}")
    idle_off = [i for i in idle[(name, "false")] if i >= 0]
    if not idle_off: continue
    i = statistics.median(idle_off)
    check_cpu = 24 * params[name] / (rate * 1e9)            # CPU s, one core at the best rate
    least = moff + max(0.0, check_cpu - i * cores * moff) / cores
    print(f"{name}: CRC off left {100 * i:.1f} % of the CPU idle over the update; the check's 24 B x {params[name]:.3g} params"
          f" at {rate:.1f} GB/s (crc_bench's best, one core, in cache) is {check_cpu:.3f} CPU s"
          f" -> floor on/off >= {least / moff:.3f} on {cores} cores")
PY
