#!/usr/bin/env bash
# Issue 35's points 1-6 on the testbed, one after the other on an idle machine (docs/benchmarks.md,
# "Points 1-6 again on the journal-less testbed"):
#   1. a tier profile (scripts/bench-testbed.sh --runs 1), then 3. update-only fidelity of every
#   plan and the tuner's pick, 5. the remote tier's concurrency limit, 6. the headline, all on that
#   profile; after --gap since the first profile ended, 1. a second profile with 2. both links;
#   4. training across nodes at two links on the second profile.
#
#   scripts/bench-testbed-all.sh [--out out/bench-testbed-all] [--gap 30m | 0]
#
# Run it twice, the second time with --gap 0 at least 30 minutes after the first ended, for
# point 1's three profiles (every run adds tiers-N.json to OUT/tiers). Each benchmark's own
# output is OUT/<point>.out; the testbed `bench` is brought up (docs/benchmarks.md's settings) if it
# is not up, and left up (scripts/testbed.sh --name bench down). About 60 minutes plus the gap.
set -euo pipefail
cd "$(dirname "$0")/.."
out=out/bench-testbed-all gap=30m
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2 ;;
    --gap) gap=$2; [[ $gap =~ ^[0-9]+m?$ ]] || { echo "bench-testbed-all: --gap takes minutes (30m or 0)" >&2; exit 2; } ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "bench-testbed-all: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift 2
done
mkdir -p "$out"
tb=(scripts/testbed.sh --name bench)
if ! { [ -f /run/mlpo-bench/env ] && "${tb[@]}" status > /dev/null 2>&1; }; then
  "${tb[@]}" down > /dev/null  # the traces of a broken one
  "${tb[@]}" up --nodes 2 --nvme 300M:250M --remote 250M:250M --nvme-size 12G --remote-size 16G --cpus-per-node 1
fi
step() { echo "bench-testbed-all: $1 at $(date -u +%T)"; }
profile_run() {  # prints the profile it wrote
  scripts/bench-testbed.sh --runs 1 --links "$1" --out "$out/tiers" > "$out/profile-$(date -u +%H%M).out" 2>&1
  ls -1v "$out"/tiers/tiers-*.json | tail -1
}
step "1. tier profile"
first=$(profile_run "")
ended=$(date +%s)
step "3. fidelity ($first)"
scripts/bench-testbed-fidelity.sh --profile "$first" --out "$out/fidelity" > "$out/3-fidelity.out" 2>&1
step "5. concurrency"
scripts/bench-testbed-fidelity.sh --profile "$first" --concurrency --out "$out/concurrency" > "$out/5-concurrency.out" 2>&1
step "6. headline"
scripts/bench-testbed-fidelity.sh --profile "$first" --headline --out "$out/headline" > "$out/6-headline.out" 2>&1
wait_s=$(( ${gap%m} * 60 - ($(date +%s) - ended) ))
[ "$wait_s" -gt 0 ] && { step "waiting ${wait_s} s for the gap"; sleep "$wait_s"; }
step "1./2. second tier profile and the links"
second=$(profile_run 1gbit,5gbit)
step "4. training ($second)"
scripts/bench-testbed-training.sh --tiers "$second" --model bench/models/small4.json --out "$out/training" > "$out/4-training.out" 2>&1
step "done"
grep -h "^|\|speedup\|pick\|lowest\|best\|link " "$out"/*.out | head -120
