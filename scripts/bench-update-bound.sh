#!/usr/bin/env bash
# The update phase against its bound on tiers whose rates cannot drift (issue 36, point 3): one
# rank of `mlpo-run --update-only` on node n1 of the testbed (docs/testbed.md), whose NVMe and
# shared remote tier are capped by the blkio controller, under plans of 1, 2 and 3 tiers
# (nvme, + remote, + the node's /dev/shm as a mapped `host` tier), concurrency limit k = 1 and
# none, host cache on and off; CRC on (the default) in every plan.
#
# The bound of a step is exact here: per file tier, the bytes it read over its read cap and the
# bytes it wrote over its write cap (the run log's own byte counts, padding included); the two
# directions have separate token buckets, so a tier takes the larger of the two, or their sum
# with k = 1 (one transfer at a time: reads and writes take turns; not exact on blk-throttle,
# whose fresh slice after an idle gap credits each turn: docs/testbed.md, limits); the bound is
# the slowest tier, or the AdamW roof when that is longer (the same update with its state in
# process memory, `memory` tier, measured on the same node first). Prints one markdown row per
# plan: bytes, bound, measured (steps 2.. averaged) and measured / bound; measured over the
# both-directions bound (each tier's reads and writes at once, which no schedule can beat, k = 1
# or not); and the pipeline's fill: one subgroup read from the bound's tier at its read cap, the
# time before that tier's first write can start, which no pipeline can hide and the bound leaves
# out (why the default subgroup is 1 Mi elements: at 4 Mi the fill alone was 0.17 s, 6-10 % of a
# 2-tier step).
#
#   scripts/bench-update-bound.sh [--params 100M] [--steps 4] [--subgroup 1048576]
#       [--out out/bench-update-bound] [--only NAME,NAME...]
#
# The testbed `bench` must be up (scripts/bench-testbed.sh, or scripts/testbed.sh --name bench up
# --nodes 2 --nvme 300M:250M --remote 250M:250M --nvme-size 12G --remote-size 16G
# --cpus-per-node 1). Keep the machine idle while it runs (~5 min at the defaults).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/options.sh
. scripts/lib/bench.sh
params=100M; steps=4; subgroup=1048576; out=out/bench-update-bound; only=""
parse_options bench-update-bound 2,27 --params=params --steps=steps --subgroup=subgroup --out=out --only=only -- "$@"
[ "$steps" -ge 2 ] || { echo "bench-update-bound: --steps must be at least 2 (step 1 is not averaged)" >&2; exit 2; }
use_testbed bench-update-bound "scripts/testbed.sh --name bench up ... (see --help)"
nvme=/mnt/mlpo-bench/nvme; remote=/mnt/mlpo-bench/remote; shm=/dev/shm/mlpo-bench-bound
"${tb[@]}" exec n1 mkdir -p "$shm"
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# plan NAME CACHE TIER:FRACTION:K...
plan() {
  local name=$1; shift
  python3 - "$out/$name.plan.json" "$subgroup" "$nvme" "$remote" "$shm" "$@" <<'PY'
import json, sys
path, subgroup, nvme, remote, shm, cache, *tiers = sys.argv[1:]
where = {"nvme": (nvme, "nvme"), "remote": (remote, "remote"), "shm": (shm, "host"), "mem": (None, "memory")}
plan = {"schema": "mlpo.plan/1", "model": {"name": "synthetic", "params": 1}, "cluster": {},
        "subgroup_elements": int(subgroup), "tiers": [], "host_cache_subgroups": int(cache), "buffers": 8,
        "prefetch_depth": 4, "order": "alternating", "gradients": "delayed", "io": {"crc": True}}
for t in tiers:
    name, fraction, k = t.split(":")
    p, kind = where[name]
    tier = {"name": name, "kind": kind, "fraction": float(fraction), "concurrency_limit": int(k)}
    if p:
        tier["path"] = p
    plan["tiers"].append(tier)
json.dump(plan, open(path, "w"), indent=1)
PY
}

run() {  # run NAME: the plan's update on n1, its log in OUT/NAME.jsonl
  local name=$1
  rm -f "$out/$name.jsonl"
  echo "== $name ($(date -u +%T))" >&2
  "${tb[@]}" exec n1 "$bin/mlpo-run" --update-only --params "$params" --plan "$out/$name.plan.json" \
    --steps "$steps" --quiet --log "$out/$name.jsonl" > "$out/$name.out" 2>&1 || { cat "$out/$name.out" >&2; exit 1; }
}

echo "bench-update-bound: $params params, 1 rank on n1, $steps steps, subgroups of $subgroup; caps nvme $NVME_READ:$NVME_WRITE, remote $REMOTE_READ:$REMOTE_WRITE B/s; commit $(git rev-parse --short HEAD); $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

# name cache tiers...: 1, 2 and 3 tiers; k = 1 on every file tier and none; cache on and off.
configs=(
  "nvme-k0 0 nvme:1:0"
  "nvme-k1 0 nvme:1:1"
  "nvme-k0-cache 0 nvme:1:0"
  "nvme+remote-k0 0 nvme:0.55:0 remote:0.45:0"
  "nvme+remote-k1 0 nvme:0.55:1 remote:0.45:1"
  "nvme+remote-k0-cache 0 nvme:0.55:0 remote:0.45:0"
  "3-tiers-k0 0 nvme:0.45:0 remote:0.35:0 shm:0.2:0"
  "3-tiers-k1 0 nvme:0.45:1 remote:0.35:1 shm:0.2:0"
  "3-tiers-k0-cache 0 nvme:0.45:0 remote:0.35:0 shm:0.2:0"
)
# The cache rows keep ~15 % of the subgroups in the host cache.
cache=$(python3 -c "
import re
t = '$params'.upper(); m = {'K': 1e3, 'M': 1e6, 'B': 1e9, 'G': 1e9}
n = float(t[:-1]) * m[t[-1]] if t[-1] in m else float(t)
print(max(1, round(0.15 * -(-int(n) // $subgroup))))")

wanted() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]] || [ ! -f "$out/$1.jsonl" ]; }  # else kept
plan roof 0 mem:1:0
if wanted roof; then run roof; fi
for c in "${configs[@]}"; do
  read -r name c0 tiers <<< "$c"
  [[ "$name" == *-cache ]] && c0=$cache
  # shellcheck disable=SC2086
  plan "$name" "$c0" $tiers
  if wanted "$name"; then run "$name"; fi
done

python3 - "$out" "$subgroup" "$NVME_READ" "$NVME_WRITE" "$REMOTE_READ" "$REMOTE_WRITE" "${configs[@]}" <<'PY'
import json, statistics, sys
out, subgroup, nr, nw, rr, rw, *configs = sys.argv[1:]
caps = {"nvme": (float(nr), float(nw)), "remote": (float(rr), float(rw))}

def steps(name):
    return [json.loads(l) for l in open(f"{out}/{name}.jsonl") if l.strip()][1:]

roof = statistics.mean(s["update_s"] for s in steps("roof"))
print(f"AdamW roof (state in process memory, no I/O, no CRC): {roof:.3f} s per step\n")
print("| plan | k | cache | read / write GB per step (nvme; remote) | I/O bound s | fill s | measured s "
      "| measured / bound | measured / both-directions bound |")
print("|---|---|---|---|---|---|---|---|---|")
worst = 0.0
for c in configs:
    name, cache, *tiers = c.split()
    plan = json.load(open(f"{out}/{name}.plan.json"))
    k = {t["name"]: t["concurrency_limit"] for t in plan["tiers"]}
    ss = steps(name)
    measured = statistics.mean(s["update_s"] for s in ss)
    bounds, overlapped, fills, moved = [], [], [], []
    for s in ss:
        worst_tier, fill, both = 0.0, 0.0, 0.0
        for t in s["tiers"]:
            if t["name"] not in caps:
                continue
            r = t["read_bytes"] / caps[t["name"]][0]
            w = t["write_bytes"] / caps[t["name"]][1]
            tier_bound = r + w if k[t["name"]] == 1 else max(r, w)
            both = max(both, r, w)
            if tier_bound > worst_tier:
                worst_tier, fill = tier_bound, 12 * int(subgroup) / caps[t["name"]][0]
        bounds.append(max(worst_tier, roof))
        overlapped.append(max(both, roof))
        fills.append(fill)
    for t in ss[-1]["tiers"]:
        if t["name"] in caps:
            moved.append(f"{t['read_bytes'] / 1e9:.2f} / {t['write_bytes'] / 1e9:.2f}")
    bound = statistics.mean(bounds)
    ratio = measured / bound
    worst = max(worst, ratio)
    ks = "1" if all(v == 1 for n, v in k.items() if n in caps) else "none"
    print(f"| {name} | {ks} | {plan['host_cache_subgroups']} | {'; '.join(moved)} | {bound:.2f} | "
          f"{statistics.mean(fills):.3f} | {measured:.2f} | {ratio:.3f} | "
          f"{measured / statistics.mean(overlapped):.3f} |")
print(f"\nworst measured / bound: {worst:.3f}")
PY
