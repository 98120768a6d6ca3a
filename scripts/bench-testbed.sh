#!/usr/bin/env bash
# The testbed's own figures (docs/testbed.md; docs/benchmarks.md, "On the testbed"):
#   1. Stable tiers: R profiles of a node's NVMe and the shared tier, GAP apart, each figure
#      against the tier's cap (the bound) and the runs against each other.
#   2. Links measured, not typed: mlpo-profile --comm-between-nodes at two link rates; the
#      figure must follow the link.
#
#   scripts/bench-testbed.sh [--runs 3] [--gap 30m] [--tier-size 1GiB] [--links 1gbit,5gbit] [--out DIR]
#
# Runs add to the profiles already in --out (tiers-1.json, tiers-2.json, ...), so the runs can be
# spread over time by hand (`--runs 1` now, again in 30 minutes: keep the machine idle while a
# run measures); the report covers all of them. --runs 0 --links "" reports only.
# Brings up a testbed named `bench` (2 nodes of 1 CPU each, NVMe 300M:250M, remote 250M:250M, unless one of
# that name is up: then its settings are used) and takes it down at the end if it made it.
# Profiles run on n1 with --model tiny and small host buffers: only the tier and comm figures
# are used. Prints one table per point; the profiles stay in --out (default out/bench-testbed).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=3 gap=30m tier_size=1GiB links=1gbit,5gbit out=out/bench-testbed
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs="$2" ;;
    --gap) gap="$2" ;;
    --tier-size) tier_size="$2" ;;
    --links) links="$2" ;;
    --out) out="$2" ;;
    *) echo "bench-testbed: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift 2
done
profile=build/release/cli/mlpo-profile
[ -x "$profile" ] || { echo "bench-testbed: build first (scripts/build.sh release)" >&2; exit 2; }
tb=(scripts/testbed.sh --name bench)
made=0
if ! { [ -f /run/mlpo-bench/env ] && "${tb[@]}" status > /dev/null 2>&1; }; then
  "${tb[@]}" down > /dev/null  # the traces of a broken one (the machine restarted under it)
  "${tb[@]}" up --nodes 2 --nvme 300M:250M --remote 250M:250M --nvme-size 12G --remote-size 16G --cpus-per-node 1
  made=1
fi
[ $made = 1 ] && trap '"${tb[@]}" down' EXIT
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cp /run/mlpo-bench/env "$out/testbed.env"
scratch=/var/tmp/mlpo-bench-scratch
mkdir -p "$scratch"
link_list=()
[ -n "$links" ] && IFS=, read -r -a link_list <<< "$links"

echo "bench-testbed: $runs tier profiles $gap apart, $tier_size per stream; commit $(git rev-parse --short HEAD); $(date -u +%FT%TZ)"
shopt -s nullglob
existing=("$out"/tiers-*.json)
first=$((${#existing[@]} + 1))
for r in $(seq "$first" $((first + runs - 1))); do
  [ "$r" -gt "$first" ] && sleep "$gap"
  echo "  run $r at $(date -u +%T)"
  "${tb[@]}" exec n1 "$PWD/$profile" --tier nvme=/mnt/mlpo-bench/nvme:nvme --tier remote=/mnt/mlpo-bench/remote:remote \
    --tier-size "$tier_size" --streams 4 --reps 3 --host-size 64MiB --model tiny --notes "bench-testbed run $r" \
    --out "$out/tiers-$r.json" > "$out/tiers-$r.log" 2>&1
done
for link in "${link_list[@]}"; do
  "${tb[@]}" link "$link" > /dev/null
  "$profile" --quick --tier "scratch=$scratch" --tier-size 16MiB --host-size 16MiB --reps 5 --model tiny \
    --comm-between-nodes "$PWD/scripts/testbed.sh --name bench mpirun" --notes "bench-testbed link $link" \
    --out "$out/link-$link.json" > "$out/link-$link.log" 2>&1
done
rm -rf "$scratch"

all_runs=("$out"/tiers-*.json)
python3 - "$out" "${#all_runs[@]}" "${link_list[@]}" <<'PY'
import json, sys
out, runs, links = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
env = dict(l.strip().split("=", 1) for l in open(f"{out}/testbed.env") if "=" in l)
caps = {("nvme", "write"): float(env["NVME_WRITE"]), ("nvme", "read"): float(env["NVME_READ"]),
        ("remote", "write"): float(env["REMOTE_WRITE"]), ("remote", "read"): float(env["REMOTE_READ"])}
profiles = [json.load(open(f"{out}/tiers-{r}.json")) for r in range(1, runs + 1)]
print("\n1. tiers against their caps (median GB/s of 3; ratio = figure / cap)")
print(f"  {'tier':7} {'curve':14} {'streams':>7} {'cap':>6}  " + "  ".join(f"run {r:<2}" for r in range(1, runs + 1))
      + "   ratio min..max   spread")
worst_ratio, worst_spread = 1e9, 0.0
for tier in ("nvme", "remote"):
    for curve, key, direction in (("write", "write_gbps", "write"), ("read", "read_gbps", "read"),
                                  ("mixed write", "mixed_write_gbps", "write"), ("mixed read", "mixed_read_gbps", "read")):
        cap = caps[(tier, direction)] / 1e9
        streams = [p["streams"] for p in next(t for t in profiles[0]["tiers"] if t["name"] == tier)[key]]
        for s in streams:
            vals = [next(pt["value"]["median"] for pt in next(t for t in p["tiers"] if t["name"] == tier)[key]
                         if pt["streams"] == s) for p in profiles]
            ratios = [v / cap for v in vals]
            spread = max(vals) / min(vals) - 1
            worst_ratio, worst_spread = min(worst_ratio, min(ratios)), max(worst_spread, spread)
            print(f"  {tier:7} {curve:14} {s:>7} {cap:6.3f}  " + "  ".join(f"{v:6.3f}" for v in vals)
                  + f"   {min(ratios):.3f}..{max(ratios):.3f}   {100 * spread:4.1f} %")
print(f"  lowest figure / cap {worst_ratio:.3f}; largest spread between runs {100 * worst_spread:.1f} %")
# Per tier and curve, the best stream count's figure (what the tuner's peak rates are): against the
# cap and between runs.
print("  best stream count per curve:")
for tier in ("nvme", "remote"):
    for curve, key, direction in (("write", "write_gbps", "write"), ("read", "read_gbps", "read"),
                                  ("mixed write", "mixed_write_gbps", "write"), ("mixed read", "mixed_read_gbps", "read")):
        cap = caps[(tier, direction)] / 1e9
        best = [max(pt["value"]["median"] for pt in next(t for t in p["tiers"] if t["name"] == tier)[key])
                for p in profiles]
        print(f"  {tier:7} {curve:14} {'best':>7} {cap:6.3f}  " + "  ".join(f"{v:6.3f}" for v in best)
              + f"   {min(best) / cap:.3f}..{max(best) / cap:.3f}   {100 * (max(best) / min(best) - 1):4.1f} %")
print("\n2. comm.inter_node against the link (one rank per node, 32 MiB buffers, median of 5)")
for link in links:
    c = json.load(open(f"{out}/link-{link}.json"))["comm"]["inter_node"]
    rate = float(link[:-4]) * {"g": 1e9, "m": 1e6, "k": 1e3}.get(link[-4], 1) / 8 / 1e9
    ag, rs = c["all_gather_gbps"]["median"], c["reduce_scatter_gbps"]["median"]
    print(f"  link {link:7} ({rate:.3f} GB/s): all-gather {ag:.3f} GB/s ({ag / rate:.2f} of the link), "
          f"reduce-scatter {rs:.3f} GB/s ({rs / rate:.2f}), latency {c['latency_us']['median']:.1f} us")
PY
