#!/usr/bin/env bash
# Simulator fidelity (issue 6): predicted versus measured update time for several plans on
# this machine, and how the tuner's own pick measures against them.
#
#   scripts/bench-fidelity.sh --profile profiles/data/dev-2core-vm.json [--model 1b]
#       [--steps 4] [--disk /var/tmp/mlpo-bench] [--shm /dev/shm/mlpo-bench] [--out out/bench-fidelity]
#
# For each plan: `mlpo-run --update-only` with the model's parameter count (real tiers, real
# I/O), then `mlpo-tune --validate` on its log (SimGrid prediction of the same plan on the
# same profile). Prints one markdown row per plan with the relative error of the update time,
# then how the tuner's pick measures against the fastest of the fixed plans, and (on stderr)
# the load average at the start and the end.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/options.sh
. scripts/lib/bench.sh
model=1b; steps=4; disk=/var/tmp/mlpo-bench; shm=/dev/shm/mlpo-bench; profile=""; out=out/bench-fidelity
subgroup=16777216; cache=10; shm_fraction=0.3
parse_options bench-fidelity 2,13 --profile=profile --model=model --steps=steps --disk=disk --shm=shm \
  --subgroup=subgroup --cache=cache --out=out -- "$@"
[ -n "$profile" ] || { echo "bench-fidelity: --profile FILE is required (make one with mlpo-profile)" >&2; exit 2; }
bin=build/release/cli
mkdir -p "$disk" "$shm" "$out"
params=$(model_params "$model")

# plan NAME RANKS DISK_FRACTION CACHE ORDER LIMIT MODE
plan() {
  local name=$1 ranks=$2 f=$3 c=$4 order=$5 k=$6 mode=$7 grads=delayed prefetch=2
  local shm_part=""
  [ "$mode" = baseline ] && grads=flush-fp32 && prefetch=1
  if [ "$f" != "1.0" ]; then
    shm_part=", {\"name\": \"shm\", \"kind\": \"host\", \"path\": \"$shm\", \"fraction\": $(python3 -c "print(round(1-$f, 6))")}"
  fi
  cat > "$out/$name.plan.json" <<JSON
{"schema": "mlpo.plan/1", "model": {"name": "$model", "params": $params}, "cluster": {"nodes": 1, "gpus_per_node": $ranks},
 "mode": "$mode", "subgroup_elements": $subgroup,
 "tiers": [{"name": "disk", "kind": "nvme", "path": "$disk", "fraction": $f, "concurrency_limit": $k}$shm_part],
 "host_cache_subgroups": $c, "buffers": 4, "prefetch_depth": $prefetch, "order": "$order", "gradients": "$grads"}
JSON
  echo "$out/$name.plan.json"
}

measure() {  # measure LABEL PLAN RANKS
  local label=$1 p=$2 ranks=$3 log
  log="$out/$(basename "$p" .plan.json).jsonl"
  echo "== $label" >&2
  "$bin/mlpo-run" --update-only --params "$params" --plan "$p" --ranks "$ranks" --steps "$steps" --quiet --log "$log" >/dev/null
  "$bin/mlpo-tune" --validate "$log" --plan "$p" --profile "$profile" --model "$model" > "$out/$(basename "$p" .plan.json).validate.txt"
  python3 - "$log" "$out/$(basename "$p" .plan.json).validate.txt" "$label" "$out/measured.txt" <<'PY'
import json, re, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
used = steps[1:] if len(steps) > 1 else steps
measured = sum(s["update_s"] for s in used) / len(used)
pred = None
for line in open(sys.argv[2]):
    if line.strip().startswith("update_s"):
        nums = re.findall(r"[-+]?\d+\.\d+(?:e[-+]?\d+)?", line)
        pred = float(nums[0])
        break
err = (pred - measured) / measured if pred is not None else float("nan")
print(f"| {sys.argv[3]} | {pred:.2f} | {measured:.2f} | {err*100:+.1f}% |")
with open(sys.argv[4], "a") as rows:
    rows.write(f"{measured} {pred}\n")
PY
}

shm_f=$(python3 -c "print(round(1-$shm_fraction, 6))")
echo "bench-fidelity: load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
rm -f "$out/measured.txt"
echo "| plan ($model, $params params) | predicted update s | measured update s | error |"
echo "|---|---|---|---|"
measure "1 tier (disk), no cache, ascending" "$(plan f1 1 1.0 0 ascending 0 mlp)" 1
measure "2 tiers (disk+shm ${shm_fraction}), no cache, ascending" "$(plan f2 1 "$shm_f" 0 ascending 0 mlp)" 1
measure "2 tiers, cache $cache, alternating" "$(plan f3 1 "$shm_f" "$cache" alternating 0 mlp)" 1
measure "2 tiers, cache $cache, ascending" "$(plan f4 1 "$shm_f" "$cache" ascending 0 mlp)" 1
measure "baseline (disk, fp32 grads, ascending)" "$(plan f5 1 1.0 0 ascending 0 baseline)" 1
measure "2 tiers, cache $((cache / 2))/rank, alternating, k=1, R=2" "$(plan f6 2 "$shm_f" $((cache / 2)) alternating 1 mlp)" 2

echo "== tuner's pick" >&2
"$bin/mlpo-tune" --model "$model" --profile "$profile" --update-only --quiet --out "$out/tuned.plan.json" \
  --host-memory-budget "${MLPO_FIDELITY_HOST_BUDGET:-12GiB}" >/dev/null
ranks=$(python3 -c "import json; p=json.load(open('$out/tuned.plan.json')); print(p['cluster']['nodes']*p['cluster']['gpus_per_node'])")
measure "tuner's pick ($(python3 -c "import json; p=json.load(open('$out/tuned.plan.json')); print(', '.join(t['name']+' '+str(round(t['fraction'],2))+(' k='+str(t['concurrency_limit']) if t['concurrency_limit'] else '') for t in p['tiers']) + ', cache ' + str(p['host_cache_subgroups']) + ', ' + p['order'])"))" "$out/tuned.plan.json" "$ranks"
python3 - "$out/measured.txt" <<'PY'
rows = [tuple(map(float, l.split())) for l in open(__import__("sys").argv[1]) if l.strip()]
fixed, pick = rows[:-1], rows[-1]
fastest = min(m for m, _ in fixed)
worst = max(abs(p - m) / m for m, p in rows)
print(f"\ntuner's pick measured {pick[0]:.2f} s vs the fastest fixed plan {fastest:.2f} s: {(pick[0] / fastest - 1) * 100:+.1f}%; "
      f"largest prediction error {worst * 100:.1f}%")
PY
echo "bench-fidelity: load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
