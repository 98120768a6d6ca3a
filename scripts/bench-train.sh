#!/usr/bin/env bash
# Training benchmarks of docs/benchmarks.md ("Training"):
#  1. learning: the `small` preset on a byte-level token file made from this repository's own
#     *.cpp, *.hpp and *.md files, 300 steps; prints the loss every 10 steps;
#  2. placement invariance at `small` size: 30 steps under the all-in-memory plan, a one-tier
#     plan, a two-tier plan with host cache and alternating order, and baseline mode; prints
#     whether the per-step losses are identical and the sha256 of each exported safetensors.
# Usage: scripts/bench-train.sh [WORKDIR] (default: build/bench-train). Needs build/release.
set -euo pipefail
cd "$(dirname "$0")/.."
run=build/release/cli/mlpo-run
work="${1:-build/bench-train}"
steps="${STEPS:-300}"
inv_steps="${INV_STEPS:-30}"
rm -rf "$work" && mkdir -p "$work/a" "$work/b"

# Token file: the repository's own sources and docs (not build outputs), in sorted order.
git ls-files '*.cpp' '*.hpp' '*.md' | sort > "$work/files.txt"
mapfile -t files < "$work/files.txt"
"$run" prepare-data --input "${files[@]}" --out "$work/tokens.bin"

common=(--model small --data "$work/tokens.bin" --seq-len 128 --seed 1 --threads 2 --blas-threads 2)

echo "== learning: small, $steps steps, micro-batch 2 x seq 128, lr 3e-3 (warm-up 20, cosine to 3e-4)"
"$run" "${common[@]}" --micro-batch 2 --steps "$steps" --lr 3e-3 --min-lr 3e-4 --warmup-steps 20 \
  --state-dir "$work/state" --log "$work/learning.jsonl" --quiet
python3 - "$work/learning.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
first = recs[0]["loss"]
for r in recs:
    if r["step"] == 1 or r["step"] % 10 == 0:
        print(f'step {r["step"]:4d}  loss {r["loss"]:.4f}')
last = recs[-1]["loss"]
print(f'step-{recs[-1]["step"]} loss / step-1 loss = {last / first:.3f}')
print(f'mean tokens/s {sum(r["tokens"] for r in recs) / sum(r["step_s"] for r in recs):.0f}')
PY

echo "== placement invariance: small, $inv_steps steps, micro-batch 1 x seq 128"
python3 - "$work" <<'PY'
import json, sys, os
work = os.path.abspath(sys.argv[1])
params = 17963520  # small (vocab 256, hidden 512, 6 layers, 8/4 heads, ffn 1408)
base = {"schema": "mlpo.plan/1", "model": {"name": "small", "params": params}, "cluster": {},
        "subgroup_elements": 1 << 20, "buffers": 4, "prefetch_depth": 2,
        "io": {"direct_io": False}, "order": "ascending", "gradients": "delayed", "host_cache_subgroups": 0}
def plan(name, **kw):
    p = dict(base); p.update(kw)
    json.dump(p, open(f"{work}/{name}.json", "w"), indent=1)
plan("memory", tiers=[{"name": "mem", "kind": "memory", "fraction": 1.0}])
plan("one-tier", tiers=[{"name": "a", "kind": "other", "path": f"{work}/a", "fraction": 1.0}])
plan("two-tier", tiers=[{"name": "a", "kind": "other", "path": f"{work}/a", "fraction": 0.6, "concurrency_limit": 1},
                        {"name": "b", "kind": "other", "path": f"{work}/b", "fraction": 0.4}],
     host_cache_subgroups=4, order="alternating")
PY
for p in memory one-tier two-tier baseline; do
  if [ "$p" = baseline ]; then args=(--plan "$work/two-tier.json" --mode baseline); else args=(--plan "$work/$p.json"); fi
  "$run" "${common[@]}" --micro-batch 1 --steps "$inv_steps" "${args[@]}" --log "$work/inv-$p.jsonl" \
    --export-safetensors "$work/inv-$p.safetensors" --quiet > /dev/null
  python3 -c "import json,sys; print(' '.join('%.6f' % json.loads(l)['loss'] for l in open(sys.argv[1])))" "$work/inv-$p.jsonl" > "$work/inv-$p.losses"
  echo "$p: $(sha256sum < "$work/inv-$p.safetensors" | cut -c1-64)  losses $(head -c 60 "$work/inv-$p.losses")..."
done
python3 - "$work" <<'PY'
import json, sys
w = sys.argv[1]
loss = {p: [json.loads(l)["loss"] for l in open(f"{w}/inv-{p}.jsonl")] for p in ["memory", "one-tier", "two-tier", "baseline"]}
same = all(loss[p] == loss["memory"] for p in loss)
print(f"losses identical at every step under all 4 plans: {same} ({len(loss['memory'])} steps)")
PY
