#!/usr/bin/env bash
# The storage-engine figures of docs/benchmarks.md: io_bench (engine vs fio, side by side)
# on the local disk and /dev/shm at bs 1/4 MiB x qd 8/32, one stream, then both tiers at
# once (engine and fio each), then the cost of CRC32C. Needs a release build
# (./scripts/build.sh) and fio.
#   ./scripts/bench-io.sh [DISK_DIR] [SHM_DIR] [REPS] [REQUEST]
# REQUEST is the engine's bytes per request (default 64MiB, a subgroup). fio reuses one
# buffer of iodepth x bs, which stays in the CPU cache on a tmpfs tier; REQUEST=1MiB gives
# the engine the same footprint ((qd + 2) x bs), which is the like-for-like comparison.
set -euo pipefail
cd "$(dirname "$0")/.."
disk="${1:-/var/tmp/mlpo-bench}"
shm="${2:-/dev/shm/mlpo-bench}"
reps="${3:-5}"
request="${4:-64MiB}"
mkdir -p "$disk" "$shm"
bench=./build/release/bench/io/io_bench
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, kernel $(uname -r), $(fio --version), request $request, load $(cut -d' ' -f1-3 /proc/loadavg)"
for bs in 1MiB 4MiB; do
  for qd in 8 32; do
    echo "## bs $bs qd $qd"
    "$bench" --tier disk="$disk" --tier shm="$shm" --size 2GiB --bs "$bs" --qd "$qd" --streams 1 \
      --direct on --reps "$reps" --request "$request" --vs-fio
  done
done
echo "## both tiers at once, bs 1MiB qd 8"
"$bench" --tier disk="$disk" --tier shm="$shm" --size 2GiB --bs 1MiB --qd 8 --reps "$reps" --request "$request" --together --vs-fio
echo "## CRC32C on, bs 1MiB qd 8"
"$bench" --tier disk="$disk" --tier shm="$shm" --size 2GiB --bs 1MiB --qd 8 --reps "$reps" --request "$request" --crc
