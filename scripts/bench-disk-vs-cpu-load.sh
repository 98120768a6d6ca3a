#!/usr/bin/env bash
# Does a tier's throughput depend on the CPU being idle? (docs/benchmarks.md, "The disk needs
# an idle vCPU"). The update phase streams a tier while AdamW keeps the cores busy, and the
# physical bound (docs/offload.md) takes the two as independent. On a VM whose storage is
# emulated by host threads that share physical cores with the vCPUs, they are not.
#
# Each round runs io_bench (sequential write then read, the executor's I/O engine) on DIR
# under four loads, in this order, so every load sees the same minutes of a drifting disk:
#   idle        nothing else running
#   busy 1      one busy loop (pure ALU, no memory traffic)
#   busy all    one busy loop per core
#   idle-class  one busy loop per core at SCHED_IDLE (chrt -i 0): any other thread in the
#               guest preempts them, so a slowdown here is not the guest's scheduler
# and prints each load's median GB/s per direction over the rounds and its ratio to "idle".
# Needs a release build (io_bench) and chrt (util-linux).
#   ./scripts/bench-disk-vs-cpu-load.sh DIR [SIZE_PER_STREAM] [STREAMS] [QD] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:?usage: $0 DIR [SIZE_PER_STREAM] [STREAMS] [QD] [ROUNDS]}"
size="${2:-4GiB}"
streams="${3:-2}"
qd="${4:-64}"
rounds="${5:-3}"
bin=./build/release/bench/io/io_bench
[ -x "$bin" ] || ./scripts/build.sh release
command -v chrt >/dev/null || { echo "bench-disk-vs-cpu-load: needs chrt (apt-get install util-linux)" >&2; exit 2; }
mkdir -p "$dir"
cores=$(nproc)
work="$(mktemp -d)"
spinners=()
stop_spinners() {
  for p in "${spinners[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${spinners[@]}"; do wait "$p" 2>/dev/null || true; done
  spinners=()
}
trap 'stop_spinners; rm -rf "$work"' EXIT

# start_spinners COUNT [WRAPPER...]: COUNT busy loops, each under WRAPPER (e.g. chrt -i 0)
start_spinners() {
  local n="$1"; shift
  for ((i = 0; i < n; i++)); do
    "$@" sh -c 'while :; do :; done' &
    spinners+=($!)
  done
  sleep 0.5
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(hostname), $cores cores, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# path $dir, size/stream $size, $streams stream(s), qd $qd, bs 1MiB, $rounds rounds; GB/s = median of each io_bench's 3 reps"

loads=(idle busy1 busyall idleclass)
for ((r = 1; r <= rounds; r++)); do
  for load in "${loads[@]}"; do
    case "$load" in
      idle) ;;
      busy1) start_spinners 1 ;;
      busyall) start_spinners "$cores" ;;
      idleclass) start_spinners "$cores" chrt -i 0 ;;
    esac
    "$bin" --tier "d=$dir" --size "$size" --qd "$qd" --streams "$streams" --reps 3 > "$work/$load.$r.txt" 2>&1
    stop_spinners
    line=$(awk '$1 == "d" && ($2 == "write" || $2 == "read") {printf "%s %s ", $2, $4}' "$work/$load.$r.txt")
    echo "round $r  $load: $line"
    echo "$load $line" >> "$work/all.txt"
  done
done

python3 - "$work/all.txt" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    load, vals = f[0], dict(zip(f[1::2], map(float, f[2::2])))
    for op, v in vals.items():
        rows.setdefault(load, {}).setdefault(op, []).append(v)
names = {"idle": "idle", "busy1": "1 core busy", "busyall": "all cores busy", "idleclass": "all cores busy, SCHED_IDLE"}
base = {op: statistics.median(v) for op, v in rows["idle"].items()}
print()
print("| load | write GB/s | read GB/s | write / idle | read / idle |")
print("|---|---|---|---|---|")
for load in ("idle", "busy1", "busyall", "idleclass"):
    w = statistics.median(rows[load]["write"]); r = statistics.median(rows[load]["read"])
    print(f"| {names[load]} | {w:.2f} | {r:.2f} | {w / base['write']:.2f} | {r / base['read']:.2f} |")
EOF
