#!/usr/bin/env bash
# The profiler's storage figures side by side with fio on the same path and parameters
# (docs/benchmarks.md, "Profiler vs fio"). For each stream count N of the profile's curve,
# fio runs N jobs (numjobs=N, one file each, like the profiler's N engines) with
# ioengine=io_uring, the same bs, iodepth, per-job size, direct=1 (0 on tmpfs, where the
# engine runs buffered too) and fallocate=native. Writes are timed like the profiler's:
# O_DIRECT writes to completion (the profiler syncs after its clock), buffered writes with
# their fsync inside the clock (fio end_fsync=1). Needs a release build and fio; python3 parses JSON.
# FIO_IOMEM=shmhuge gives fio huge-page buffers like the engine's pinned pool (transparent huge
# pages), so both send the disk the same merged requests; it needs huge pages reserved
# (echo 64 > /proc/sys/vm/nr_hugepages as root; set it back afterwards). Without it fio uses
# malloc'd 4 KiB pages and its 1 MiB blocks are split on virtio (see docs/benchmarks.md).
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
mkdir -p "$dir"
work="$(mktemp -d)"
fio_dir="$dir/.mlpo-fio-$$"
trap 'rm -rf "$work" "$fio_dir"' EXIT

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(hostname), $(nproc) cores, kernel $(uname -r), $(fio --version), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# path $dir, size/stream $size, bs $bs, qd $qd, up to $streams streams, $reps reps (medians), fio iomem ${iomem:-malloc}"
"$bin" --json --quick --tier "t=$dir" --tier-size "$size" --streams "$streams" --reps "$reps" \
  --block-size "$bs" --queue-depth "$qd" --host-size 16MiB --model tiny >"$work/profile.json"

# fio reads "MiB" as 10^6 under its default kb_base, so it is given plain byte counts.
bs_bytes=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tiers"][0]["block_size"])' "$work/profile.json")
direct=$(python3 -c 'import json,sys; print(1 if json.load(open(sys.argv[1]))["tiers"][0]["direct_io"] else 0)' "$work/profile.json")
bytes=$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tiers"][0]; print(t["read_gbps"][0]["value"]["size_bytes"])' "$work/profile.json")
counts=$(python3 -c 'import json,sys; print(" ".join(str(p["streams"]) for p in json.load(open(sys.argv[1]))["tiers"][0]["read_gbps"]))' "$work/profile.json")

# fio GB/s (decimal) of one job group; median over REPS runs.
fio_gbps() {  # op numjobs
  local op="$1" jobs="$2" r out
  for r in $(seq "$reps"); do
    mkdir -p "$fio_dir"
    if [ "$op" = read ]; then
      fio --name=lay --directory="$fio_dir" --ioengine=io_uring --direct="$direct" --rw=write --bs="$bs_bytes" \
        --iodepth="$qd" --size="$bytes" --numjobs="$jobs" --fallocate=native --end_fsync=1 ${iomem:+--iomem=$iomem} >/dev/null
    fi
    out=$(fio --name=$( [ "$op" = read ] && echo lay || echo job ) --directory="$fio_dir" --ioengine=io_uring \
      --direct="$direct" --rw="$op" --bs="$bs_bytes" --iodepth="$qd" --size="$bytes" --numjobs="$jobs" \
      --fallocate=native $( [ "$op" = write ] && [ "$direct" = 0 ] && echo --end_fsync=1 ) ${iomem:+--iomem=$iomem} --group_reporting --output-format=json)
    python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["jobs"][0][sys.argv[1]]["bw_bytes"]/1e9)' "$op" <<<"$out"
    rm -rf "$fio_dir"
  done | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'
}

printf '%-8s %-6s %12s %12s %10s\n' streams op mlpo-profile fio ratio
for n in $counts; do
  for op in write read; do
    mine=$(python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["tiers"][0]
print(next(p["value"]["median"] for p in t[sys.argv[2]+"_gbps"] if p["streams"]==int(sys.argv[3])))' "$work/profile.json" "$op" "$n")
    theirs=$(fio_gbps "$op" "$n")
    printf '%-8s %-6s %12.3f %12.3f %10.3f\n' "$n" "$op" "$mine" "$theirs" "$(python3 -c "print($mine/$theirs)")"
  done
done
