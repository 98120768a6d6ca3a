#!/usr/bin/env bash
# Behaviour digest: one line per observable result of the three commands, as a SHA-256, so
# a refactor can show that it changed no behaviour (run it before and after, diff the files).
#
#   scripts/behaviour-digest.sh [--bin build/release] [--out out/behaviour-digest] > digest.txt
#
# What it pins (all on small built-in inputs, about two minutes on 2 cores):
#   - mlpo-tune: --describe --json of several presets; the chosen plan (with its predictions
#     and the baseline's) for 1-rank, 4-rank and 64-node shapes on the stored profiles;
#     --simulate --json of a hand-written off-grid plan; --explain's text;
#   - mlpo-run training (tiny preset, a two-tier plan: disk + /dev/shm, host cache, baseline
#     mode too): the losses, the exported safetensors, every checkpoint file (p, m, v and the
#     manifest), and a resume from the middle checkpoint ending on the same bytes;
#   - mlpo-run --update-only: the state hash under two plans and two ranks;
#   - mpirun -np 2 training when mpirun exists.
# Timings are never hashed: only losses, weights, optimizer state, plans and predictions.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/options.sh
bin=build/release; out=out/behaviour-digest
parse_options behaviour-digest 2,15 --bin=bin --out=out -- "$@"
run="$bin/cli/mlpo-run"; tune="$bin/cli/mlpo-tune"
[ -x "$run" ] && [ -x "$tune" ] || { echo "behaviour-digest: no mlpo-run/mlpo-tune under $bin/cli (build first: scripts/build.sh)" >&2; exit 2; }
out=$(realpath -m "$out")
rm -rf "$out"; mkdir -p "$out"
shm=/dev/shm/mlpo-digest-$$
trap 'rm -rf "$shm"' EXIT
mkdir -p "$shm" "$out/disk"

digest() { printf '%-44s %s\n' "$1" "$(sha256sum | cut -c1-16)"; }
losses() { python3 -c "import json,sys; [print(json.loads(l)['step'], repr(json.loads(l)['loss'])) for l in open(sys.argv[1]) if l.strip()]" "$1"; }

# --- mlpo-tune ---------------------------------------------------------------------------
for m in tiny small 1b llama2-7b llama2-70b paper-100b mlpo-280b; do
  "$tune" --model "$m" --describe --json | digest "describe $m"
done
p1=profiles/data/dev-2core-vm.json; p4=profiles/data/example-cluster-node.json; p8=profiles/data/example-8-tier-node.json
tune_plan() {  # LABEL ARGS...
  local label=$1; shift
  "$tune" "$@" --out "$out/$label.plan.json" --quiet >/dev/null 2>>"$out/stderr.log" || "$tune" "$@" --out "$out/$label.plan.json" >/dev/null
  digest "plan $label" < "$out/$label.plan.json"
}
tune_plan small-1rank --model small --profile "$p1" --micro-batch 2 --seq-len 128
tune_plan 1b-1rank --model 1b --profile "$p1"
tune_plan 7b-4gpu --model llama2-7b --profile "$p4" --gpus-per-node 4
tune_plan 70b-4gpu --model llama2-70b --profile "$p4" --gpus-per-node 4
tune_plan 280b-8tier-64node --model mlpo-280b --profile "$p8" --nodes 64 --gpus-per-node 8
"$tune" --model llama2-7b --profile "$p4" --gpus-per-node 4 --explain 2>>"$out/stderr.log" | sed -E "s/[0-9.]+ ms$//" | digest "explain 7b-4gpu"

params_of() { "$tune" --model "$1" --describe --json | python3 -c "import json,sys; print(json.load(sys.stdin)['params'])"; }
cat > "$out/offgrid.plan.json" <<JSON
{"schema": "mlpo.plan/1", "model": {"name": "1b", "params": $(params_of 1b)}, "cluster": {"nodes": 1, "gpus_per_node": 1},
 "mode": "mlp", "subgroup_elements": 12641280,
 "tiers": [{"name": "disk", "kind": "nvme", "path": "$out/disk", "fraction": 0.6, "concurrency_limit": 1},
           {"name": "shm", "kind": "host", "path": "$shm", "fraction": 0.4, "concurrency_limit": 2}],
 "host_cache_subgroups": 7, "buffers": 5, "prefetch_depth": 3, "order": "alternating", "gradients": "delayed"}
JSON
"$tune" --simulate "$out/offgrid.plan.json" --profile "$p1" --model 1b --json | digest "simulate off-grid 1b"

# --- mlpo-run training -------------------------------------------------------------------
for i in $(seq 1 4000); do echo "line $i: the quick brown fox $((i * 7919 % 1000)) jumps over the lazy dog"; done > "$out/corpus.txt"
"$run" prepare-data --input "$out/corpus.txt" --out "$out/tokens.bin" >/dev/null
digest "prepare-data tokens" < "$out/tokens.bin"

two_tier_plan() {  # FILE MODE GRADIENTS
  cat > "$1" <<JSON
{"schema": "mlpo.plan/1", "model": {"name": "tiny", "params": $(params_of tiny)}, "cluster": {"nodes": 1, "gpus_per_node": 1},
 "mode": "$2", "subgroup_elements": 65536,
 "tiers": [{"name": "disk", "kind": "nvme", "path": "$out/disk", "fraction": 0.7, "concurrency_limit": 1},
           {"name": "shm", "kind": "host", "path": "$shm", "fraction": 0.3, "concurrency_limit": 1}],
 "host_cache_subgroups": 3, "buffers": 4, "prefetch_depth": 2, "order": "alternating", "gradients": "$3"}
JSON
}
two_tier_plan "$out/tiny.plan.json" mlp delayed
cat > "$out/tiny-baseline.plan.json" <<JSON
{"schema": "mlpo.plan/1", "model": {"name": "tiny", "params": $(params_of tiny)}, "cluster": {"nodes": 1, "gpus_per_node": 1},
 "mode": "baseline", "subgroup_elements": 65536,
 "tiers": [{"name": "disk", "kind": "nvme", "path": "$out/disk", "fraction": 1.0, "concurrency_limit": 0}],
 "host_cache_subgroups": 0, "buffers": 4, "prefetch_depth": 1, "order": "ascending", "gradients": "flush-fp32"}
JSON
train=(--model tiny --data "$out/tokens.bin" --seq-len 64 --micro-batch 2 --grad-accum 2 --lr 3e-3
       --warmup-steps 2 --lr-decay-steps 6 --seed 7 --threads 2 --quiet)

"$run" "${train[@]}" --plan "$out/tiny.plan.json" --steps 6 --log "$out/full.jsonl" \
  --checkpoint-dir "$out/ckpt" --checkpoint-every 3 --export-safetensors "$out/full.safetensors" >/dev/null
losses "$out/full.jsonl" | digest "train tiny 2-tier losses"
digest "train tiny 2-tier export" < "$out/full.safetensors"
for f in $(cd "$out/ckpt" && find . -type f ! -name '*.json' | sort); do
  digest "checkpoint $f" < "$out/ckpt/$f"
done
python3 -c "import json,sys; m=json.load(open(sys.argv[1])); [m.pop(k, None) for k in ('manifest_crc32c', 'created', 'plan')]; print(json.dumps(m, sort_keys=True))" \
  "$out/ckpt/ckpt-6/manifest.json" | digest "checkpoint manifest step 6 (no plan)"

# Three steps, then --resume to six under the same plan: the same final bytes as one run.
"$run" "${train[@]}" --plan "$out/tiny.plan.json" --steps 3 --checkpoint-dir "$out/ckpt-resume" >/dev/null
"$run" "${train[@]}" --plan "$out/tiny.plan.json" --steps 6 --resume --checkpoint-dir "$out/ckpt-resume" \
  --export-safetensors "$out/resumed.safetensors" >/dev/null
digest "train tiny resumed-at-3 export" < "$out/resumed.safetensors"
cmp "$out/full.safetensors" "$out/resumed.safetensors" >&2 || echo "behaviour-digest: resume differs from the full run" >&2

"$run" "${train[@]}" --plan "$out/tiny-baseline.plan.json" --mode baseline --steps 4 --log "$out/baseline.jsonl" \
  --export-safetensors "$out/baseline.safetensors" >/dev/null
losses "$out/baseline.jsonl" | digest "train tiny baseline losses"
digest "train tiny baseline export" < "$out/baseline.safetensors"

"$run" "${train[@]}" --steps 4 --state-dir "$out/default-state" --log "$out/default.jsonl" \
  --export-safetensors "$out/default.safetensors" >/dev/null 2>>"$out/stderr.log"
losses "$out/default.jsonl" | digest "train tiny default plan losses"
digest "train tiny default plan export" < "$out/default.safetensors"

# --- mlpo-run --update-only --------------------------------------------------------------
uo() {  # LABEL ARGS...
  local label=$1; shift
  "$run" --update-only --params 3000000 --steps 3 --seed 5 --quiet --state-hash "$@" 2>>"$out/stderr.log" \
    | grep '^state-sha256:' | digest "update-only $label"
}
uo "2-tier plan" --plan "$out/tiny.plan.json"
uo "baseline plan" --plan "$out/tiny-baseline.plan.json" --mode baseline
uo "2 ranks" --plan "$out/tiny.plan.json" --ranks 2

# --- ZeRO-3 over MPI ---------------------------------------------------------------------
if command -v mpirun >/dev/null; then
  rm -rf "$out/disk"/* "$shm"/*
  mpirun --allow-run-as-root --oversubscribe -np 2 "$run" "${train[@]}" --steps 3 \
    --state-dir "$out/mpi-state" --log "$out/mpi.jsonl" --export-safetensors "$out/mpi.safetensors" >/dev/null 2>>"$out/stderr.log"
  losses "$out/mpi.jsonl" | digest "train tiny 2 ranks (mpirun) losses"
  digest "train tiny 2 ranks (mpirun) export" < "$out/mpi.safetensors"
fi
