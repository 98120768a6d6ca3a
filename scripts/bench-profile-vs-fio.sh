#!/usr/bin/env bash
# The profiler's storage figures side by side with fio on the same path and parameters
# (docs/benchmarks.md, "Profiler vs fio"). For each stream count N of the profile's curve,
# fio runs N jobs (numjobs=N, one file each, like the profiler's N engines) with
# ioengine=io_uring and what the engine does: the same bs, iodepth and per-job size,
# direct=1 (0 on tmpfs, where the engine runs buffered too), fallocate=native, registered
# buffers (fixedbufs=1: the engine registers its pinned pool with the ring), and on buffered
# files reads handed to io_uring's workers (force_async=1: the engine sets IOSQE_ASYNC on
# buffered reads; it does not on writes). Writes are timed like the profiler's: O_DIRECT
# writes to completion (the profiler syncs after its clock), buffered writes with their fsync
# inside the clock (fio end_fsync=1).
# Paired repetitions: each of REPS rounds runs the profiler once (--reps 1) and then fio once
# at every point, so both tools see the same minutes of a VM whose disk drifts; the table
# gives each tool's median and the median of the per-round ratios.
# FIO_IOMEM=shmhuge gives fio huge-page buffers like the engine's pinned pool (transparent huge
# pages), so both send the disk the same merged requests; it needs STREAMS x QD x BS of huge
# pages reserved (64 at the defaults, 256 at qd 64: echo 256 > /proc/sys/vm/nr_hugepages as
# root; set it back afterwards). fio reads into iodepth x bs of buffers, used over and over;
# the profiler and the executor cycle through 64 MiB or more, and on a VM that costs reads
# (docs/benchmarks.md, "Buffer footprint"): compare reads at a qd where iodepth x bs >= 64 MiB. Without it fio uses
# malloc'd 4 KiB pages and its 1 MiB blocks are split on virtio (see docs/benchmarks.md).
# Needs a release build and fio; python3 parses JSON.
#   ./scripts/bench-profile-vs-fio.sh DIR [SIZE_PER_STREAM] [STREAMS] [REPS] [BS] [QD]
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${1:?usage: $0 DIR [SIZE_PER_STREAM] [STREAMS] [REPS] [BS] [QD]}"
size="${2:-1GiB}"
streams="${3:-4}"
reps="${4:-3}"
bs="${5:-1MiB}"
qd="${6:-8}"
iomem="${FIO_IOMEM:-}"
bin=./build/release/cli/mlpo-profile
[ -x "$bin" ] || ./scripts/build.sh release
mkdir -p "$dir"
work="$(mktemp -d)"
fio_dir="$dir/.mlpo-fio-$$"
trap 'rm -rf "$work" "$fio_dir"' EXIT

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(hostname), $(nproc) cores, kernel $(uname -r), $(fio --version), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# path $dir, size/stream $size, bs $bs, qd $qd, up to $streams streams, $reps paired rounds, fio iomem ${iomem:-malloc}"

field() {  # field PROFILE PYTHON-EXPRESSION-ON-t (the first tier)
  python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tiers"][0]; print(eval(sys.argv[2]))' "$1" "$2"
}

# fio GB/s (decimal) of one run: op numjobs
fio_once() {
  local op="$1" jobs="$2" async=0 out
  [ "$op" = read ] && [ "$direct" = 0 ] && async=1
  mkdir -p "$fio_dir"
  if [ "$iomem" = shmhuge ]; then
    local need free
    need=$(( jobs * qd * bs_bytes / (2 * 1024 * 1024) ))
    free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
    if [ "$free" -lt "$need" ]; then
      echo "bench-profile-vs-fio: fio needs $need free huge pages at $jobs job(s) x qd $qd x bs $bs_bytes, $free are; reserve them (echo $need > /proc/sys/vm/nr_hugepages)" >&2
      return 1
    fi
  fi
  if [ "$op" = read ]; then
    fio --name=lay --directory="$fio_dir" --ioengine=io_uring --direct="$direct" --rw=write --bs="$bs_bytes" \
      --iodepth="$qd" --size="$bytes" --numjobs="$jobs" --fallocate=native --end_fsync=1 ${iomem:+--iomem=$iomem} >/dev/null || { rm -rf "$fio_dir"; return 1; }
  fi
  out=$(fio --name=$( [ "$op" = read ] && echo lay || echo job ) --directory="$fio_dir" --ioengine=io_uring \
    --direct="$direct" --rw="$op" --bs="$bs_bytes" --iodepth="$qd" --size="$bytes" --numjobs="$jobs" \
    --fixedbufs=1 --force_async="$async" --fallocate=native $( [ "$op" = write ] && [ "$direct" = 0 ] && echo --end_fsync=1 ) \
    ${iomem:+--iomem=$iomem} --group_reporting --output-format=json) || { rm -rf "$fio_dir"; return 1; }
  rm -rf "$fio_dir"
  python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["jobs"][0][sys.argv[1]]["bw_bytes"]/1e9)' "$op" <<<"$out"
}

# One line per (round, streams, op): "round n op profiler fio".
: >"$work/pairs"
for r in $(seq "$reps"); do
  echo "== round $r/$reps: mlpo-profile, then fio at every point" >&2
  "$bin" --json --quick --tier "t=$dir" --tier-size "$size" --streams "$streams" --reps 1 \
    --block-size "$bs" --queue-depth "$qd" --host-size 16MiB --model tiny >"$work/profile.$r.json"
  # fio reads "MiB" as 10^6 under its default kb_base, so it is given plain byte counts.
  bs_bytes=$(field "$work/profile.$r.json" 't["block_size"]')
  direct=$(field "$work/profile.$r.json" '1 if t["direct_io"] else 0')
  bytes=$(field "$work/profile.$r.json" 't["read_gbps"][0]["value"]["size_bytes"]')
  counts=$(field "$work/profile.$r.json" '" ".join(str(p["streams"]) for p in t["read_gbps"])')
  for n in $counts; do
    for op in write read; do
      mine=$(field "$work/profile.$r.json" "next(p['value']['median'] for p in t['${op}_gbps'] if p['streams']==$n)")
      theirs=$(fio_once "$op" "$n") || { echo "bench-profile-vs-fio: fio failed at $n stream(s), $op" >&2; exit 1; }
      echo "$r $n $op $mine $theirs" >>"$work/pairs"
    done
  done
done

python3 - "$work/pairs" <<'EOF'
import sys, statistics as st
rows = {}
for line in open(sys.argv[1]):
    r, n, op, mine, fio = line.split()
    rows.setdefault((int(n), op), []).append((float(mine), float(fio)))
print("| streams | op | mlpo-profile | fio | ratio of medians | paired ratio (median) | per-round ratios |")
print("|---|---|---|---|---|---|---|")
for (n, op), v in rows.items():
    m = st.median(a for a, _ in v); f = st.median(b for _, b in v)
    ratios = [a / b for a, b in v]
    print(f"| {n} | {op} | {m:.3f} | {f:.3f} | {m / f:.3f} | {st.median(ratios):.3f} | {', '.join(f'{x:.2f}' for x in ratios)} |")
EOF
