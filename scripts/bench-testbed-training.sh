#!/usr/bin/env bash
# Training across nodes (issue 35, point 4): ZeRO-3 on 2 nodes x 2 ranks of the testbed, the
# optimizer state on each node's NVMe and on the shared remote tier, at two link rates. For each
# rate: the link is set, the node is profiled there (compute, host MPI, and comm.inter_node
# measured between the nodes through the shaped links; the tier curves are taken from a tier
# profile of the same testbed), the run's weights are compared bitwise with one process training
# the same global batch, and every phase is held against `mlpo-tune --validate`.
#
#   scripts/bench-testbed-training.sh --tiers out/bench-testbed/tiers-1.json
#       [--links 500mbit,2gbit] [--model small] [--steps 6] [--out out/bench-testbed-training]
#
# --model takes a preset or an mlpo.model/1 file, e.g. bench/models/small4.json (68 M parameters:
# an update long enough that the token bucket's first slice, which lets ~0.1 s of a cap through
# at once, is a few percent of it rather than ~15 % as with small's 0.5 s update).
#
# The testbed `bench` must be up (scripts/bench-testbed.sh brings it up and writes tiers-N.json).
# Prints, per link, predicted vs measured seconds per phase (steps 2.. averaged) and whether the
# weights are bitwise those of one process. Keep the machine idle while it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/options.sh
. scripts/lib/bench.sh
model=small; steps=6; tiers=""; out=out/bench-testbed-training; links=500mbit,2gbit
micro=2; seq=256
parse_options bench-testbed-training 2,18 --tiers=tiers --links=links --model=model --steps=steps --out=out -- "$@"
[ -n "$tiers" ] || { echo "bench-testbed-training: --tiers FILE is required (scripts/bench-testbed.sh writes tiers-N.json)" >&2; exit 2; }
use_testbed bench-testbed-training "scripts/bench-testbed.sh or scripts/testbed.sh --name bench up ... (docs/testbed.md)"
nodes=$NODES; ranks_per_node=2; ranks=$((nodes * ranks_per_node))
backbone=$(python3 -c "print(min($REMOTE_READ, $REMOTE_WRITE) / 1e9)")
first_link=$LINK
mkdir -p "$out"
out="$(cd "$out" && pwd)"
tiers="$(cd "$(dirname "$tiers")" && pwd)/$(basename "$tiers")"
[ -f "$model" ] && model="$(cd "$(dirname "$model")" && pwd)/$(basename "$model")"  # the nodes' commands run elsewhere
read -r params model_name < <("$bin/mlpo-tune" --model "$model" --describe --json |
  python3 -c "import json,sys; d = json.load(sys.stdin); print(d['params'], d['model'])")
[ -f "$out/tokens.bin" ] || "$bin/mlpo-run" prepare-data --input README.md docs core executor --out "$out/tokens.bin" > /dev/null
common=(--model "$model" --seq-len "$seq" --micro-batch "$micro" --steps "$steps" --seed 5 --data "$out/tokens.bin" --quiet)

cat > "$out/plan.json" <<JSON
{"schema": "mlpo.plan/1", "model": {"name": "$model_name", "params": $params},
 "cluster": {"nodes": $nodes, "gpus_per_node": $ranks_per_node, "micro_batch": $micro, "grad_accum": 1, "seq_len": $seq},
 "subgroup_elements": 1048576, "buffers": 4, "prefetch_depth": 2, "host_cache_subgroups": 0,
 "order": "alternating", "gradients": "delayed", "mode": "mlp",
 "tiers": [{"name": "nvme", "path": "/mnt/mlpo-bench/nvme", "kind": "nvme", "fraction": 0.6, "concurrency_limit": 0},
           {"name": "remote", "path": "/mnt/mlpo-bench/remote", "kind": "remote", "fraction": 0.4, "concurrency_limit": 0}]}
JSON

echo "bench-testbed-training: $model ($params params), $nodes nodes x $ranks_per_node ranks, micro-batch $micro x seq $seq, $steps steps; caps nvme $NVME_READ:$NVME_WRITE per node, remote $REMOTE_READ:$REMOTE_WRITE shared; ${CPUS_PER_NODE:-0} CPU(s) per node (0: shared); commit $(git rev-parse --short HEAD); $(date -u +%FT%TZ)" >&2
# One process, the same global batch (4 micro-batches), on n1: the weights to match.
echo "== one process ($(date -u +%T))" >&2
rm -rf "$out/one-state"
"${tb[@]}" exec n1 "$bin/mlpo-run" "${common[@]}" --grad-accum "$ranks" --state-dir "$out/one-state" \
  --export-safetensors "$out/one.safetensors" > "$out/one.out" 2>&1 || { cat "$out/one.out" >&2; exit 1; }
rm -rf "$out/one-state"

IFS=, read -r -a link_list <<< "$links"
for link in "${link_list[@]}"; do
  echo "== link $link ($(date -u +%T))" >&2
  "${tb[@]}" link "$link" > /dev/null
  # The node's figures at this link: compute for this model and batch, host MPI, comm.inter_node.
  "${tb[@]}" exec n1 "$bin/mlpo-profile" --quick --tier "scratch=/mnt/mlpo-bench/nvme" --tier-size 16MiB \
    --host-size 64MiB --model "$model" --micro-batch "$micro" --seq-len "$seq" --comm \
    --comm-between-nodes "$PWD/scripts/testbed.sh --name bench mpirun" --comm-ranks-per-node "$ranks_per_node" --notes "bench-testbed-training link $link" \
    --out "$out/node-$link.json" > "$out/node-$link.log" 2>&1 || { cat "$out/node-$link.log" >&2; exit 1; }
  # ... with the tier curves of the tier profile (the same testbed's NVMe and remote tier).
  python3 - "$out/node-$link.json" "$tiers" "$out/profile-$link.json" <<'PY'
import json, sys
node, tiers = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
node["tiers"] = tiers["tiers"]
node["notes"] = (node.get("notes", "") + "; tiers from " + sys.argv[2]).strip("; ")
json.dump(node, open(sys.argv[3], "w"), indent=1)
PY
  log="$out/run-$link.jsonl"
  rm -f "$log"
  "${tb[@]}" mpirun -np "$ranks" "$bin/mlpo-run" "${common[@]}" --grad-accum 1 --plan "$out/plan.json" --log "$log" \
    --export-safetensors "$out/run-$link.safetensors" > "$out/run-$link.out" 2>&1 || { cat "$out/run-$link.out" >&2; exit 1; }
  "$bin/mlpo-tune" --validate "$log" --plan "$out/plan.json" --profile "$out/profile-$link.json" --model "$model" \
    --remote-backbone-gbps "$backbone" --json > "$out/run-$link.validate.json"
  same=no
  cmp -s "$out/one.safetensors" "$out/run-$link.safetensors" && same=yes
  python3 - "$out/run-$link.validate.json" "$out/profile-$link.json" "$link" "$same" <<'PY'
import json, sys
v, prof, link, same = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3], sys.argv[4]
inter = prof["comm"]["inter_node"]
print(f"\nlink {link}: comm.inter_node all-gather {inter['all_gather_gbps']['median']:.3f} GB/s, "
      f"reduce-scatter {inter['reduce_scatter_gbps']['median']:.3f} GB/s; weights bitwise one process's: {same}")
print("| quantity | predicted | measured | error |")
print("|---|---|---|---|")
for r in v["rows"]:
    if r["measured"] == 0 or r["relative_error"] is None:
        continue
    print(f"| {r['quantity']} | {r['predicted']:.4g} | {r['measured']:.4g} | {r['relative_error'] * 100:+.1f} % |")
for w in v["warnings"]:
    print(f"warning: {w}")
PY
done
"${tb[@]}" link "$first_link" > /dev/null
echo "bench-testbed-training: links back to $first_link; load at end $(cut -d' ' -f1-3 /proc/loadavg)" >&2
