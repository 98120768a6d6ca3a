#!/usr/bin/env bash
# Update-only fidelity across nodes (issue 35, point 3): 2 nodes x 2 ranks of the testbed
# (docs/testbed.md), a 1B-class model, plans over the node's NVMe, the shared remote tier and
# the node's /dev/shm, each measured with `mlpo-run --update-only` launched by mpirun across the
# nodes and held against `mlpo-tune --validate` (SimGrid, the same profile, the remote tier's
# backbone = the testbed's remote cap); then the tuner's own pick, measured the same way.
#
#   scripts/bench-testbed-fidelity.sh --profile out/bench-testbed/tiers-1.json
#       [--model 1b] [--steps 3] [--subgroup 16777216] [--out out/bench-testbed-fidelity] [--only NAME,NAME...]
#       [--concurrency | --headline]
#
# --concurrency measures instead the shared remote tier's concurrency limit (issue 35, point 5):
# nvme 0.6 + remote 0.4 with k = 1, 2, 4 and no limit on the remote tier, whose slots (lock files
# on the shared file system) count the ranks of both nodes together. --only re-measures the
# named plans (p1..p7, tuned, k1, k2, k4, k0) and keeps the others' rows.
#
# --headline measures instead full MLP mode against the baseline (issue 35, point 6), one after
# the other in the same run: the baseline on the node's NVMe alone (fp32 gradients flushed, no
# cache, ascending), and MLP over NVMe and the shared tier in the ratio of their write rates per
# node (the remote tier's share is its cap over the nodes), a host cache of ~15 % of a rank's
# subgroups, alternating order, delayed gradients. The speedup is the baseline's update + flush
# over MLP's update, measured and predicted (mlpo-tune --validate's update_and_flush_s row).
#
# The testbed `bench` must be up (scripts/bench-testbed.sh brings it up and profiles its tiers;
# the profile is one of its tiers-N.json). Prints one markdown row per plan: predicted and
# measured update seconds (steps 2.. averaged) and the error, then the tuner's pick against the
# fastest plan. Keep the machine idle while it runs (~25 min at the default caps).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/options.sh
. scripts/lib/bench.sh
model=1b; steps=3; profile=""; out=out/bench-testbed-fidelity; only=""; concurrency=0; headline=0
subgroup=16777216
parse_options bench-testbed-fidelity 2,28 --profile=profile --model=model --steps=steps --out=out --only=only \
  --subgroup=subgroup --concurrency=concurrency:1 --headline=headline:1 -- "$@"
[ -n "$profile" ] || { echo "bench-testbed-fidelity: --profile FILE is required (scripts/bench-testbed.sh writes tiers-N.json)" >&2; exit 2; }
use_testbed bench-testbed-fidelity "scripts/bench-testbed.sh (which also profiles its tiers) or scripts/testbed.sh --name bench up ... (docs/testbed.md)"
nodes=$NODES
backbone=$(python3 -c "print(min($REMOTE_READ, $REMOTE_WRITE) / 1e9)")
nvme=/mnt/mlpo-bench/nvme; remote=/mnt/mlpo-bench/remote; shm=/dev/shm/mlpo-bench
for n in $(seq 1 "$nodes"); do "${tb[@]}" exec "n$n" mkdir -p "$shm"; done
mkdir -p "$out"
out="$(cd "$out" && pwd)"
profile="$(cd "$(dirname "$profile")" && pwd)/$(basename "$profile")"
params=$(model_params "$model")
ranks_per_node=2

# plan NAME MODE CACHE ORDER SCOPE TIER:FRACTION:K...
plan() {
  local name=$1; shift
  python3 - "$out/$name.plan.json" "$model" "$params" "$nodes" "$ranks_per_node" "$subgroup" "$nvme" "$remote" "$shm" "$@" <<'PY'
import json, sys
path, model, params, nodes, rpn, subgroup, nvme, remote, shm, mode, cache, order, scope, *tiers = sys.argv[1:]
where = {"nvme": (nvme, "nvme"), "remote": (remote, "remote"), "shm": (shm, "host")}
plan = {"schema": "mlpo.plan/1", "model": {"name": model, "params": int(params)},
        "cluster": {"nodes": int(nodes), "gpus_per_node": int(rpn)}, "mode": mode,
        "subgroup_elements": int(subgroup), "tiers": [], "host_cache_subgroups": int(cache), "buffers": 4,
        "prefetch_depth": 1 if mode == "baseline" else 2, "order": order, "io": {"slot_scope": scope},
        "gradients": "flush-fp32" if mode == "baseline" else "delayed"}
for t in tiers:
    name, fraction, k = t.split(":")
    p, kind = where[name]
    plan["tiers"].append({"name": name, "kind": kind, "path": p, "fraction": float(fraction),
                          "concurrency_limit": int(k)})
json.dump(plan, open(path, "w"), indent=1)
PY
  echo "$out/$name.plan.json"
}

measure() {  # measure LABEL PLAN
  local label=$1 p=$2 name log
  name=$(basename "$p" .plan.json)
  if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then return 0; fi  # kept from an earlier run
  log="$out/$name.jsonl"
  rm -f "$log"
  echo "== $label ($(date -u +%T))" >&2
  "${tb[@]}" mpirun -np $((nodes * ranks_per_node)) "$bin/mlpo-run" --update-only --params "$params" --plan "$p" \
    --steps "$steps" --quiet --log "$log" > "$out/$name.out" 2>&1 || { cat "$out/$name.out" >&2; exit 1; }
  "$bin/mlpo-tune" --validate "$log" --plan "$p" --profile "$profile" --model "$model" \
    --remote-backbone-gbps "$backbone" --json > "$out/$name.validate.json"
  python3 - "$out/$name.validate.json" "$label" "$out/measured.txt" "$name" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
row = next(r for r in v["rows"] if r["quantity"] == "update_s")
pred, meas = row["predicted"], row["measured"]
print(f"| {sys.argv[2]} | {pred:.2f} | {meas:.2f} | {(pred - meas) / meas * 100:+.1f} % |", flush=True)
# One line per plan: a plan measured again (--only) replaces its line.
try:
    rows = [l for l in open(sys.argv[3]) if l.split()[0] != sys.argv[4]]
except FileNotFoundError:
    rows = []
rows.append(f"{sys.argv[4]} {meas} {pred}\n")
open(sys.argv[3], "w").writelines(rows)
PY
}

echo "bench-testbed-fidelity: $model ($params params), $nodes nodes x $ranks_per_node ranks, $steps steps; caps nvme $NVME_READ:$NVME_WRITE per node, remote $REMOTE_READ:$REMOTE_WRITE shared (backbone $backbone GB/s), link $LINK; commit $(git rev-parse --short HEAD); $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
[ -n "$only" ] || rm -f "$out/measured.txt"
echo "| plan ($model, $nodes nodes x $ranks_per_node ranks) | predicted update s | measured update s | error |"
echo "|---|---|---|---|"
if [ "$concurrency" = 1 ]; then
  for k in 1 2 4 0; do
    measure "nvme 0.6 + remote 0.4 (k=$k on remote, slots shared by both nodes), alternating" \
      "$(plan "k$k" mlp 0 alternating combined nvme:0.6:0 "remote:0.4:$k")"
  done
  python3 - "$out" <<'PY'
import json, sys
for k in (1, 2, 4, 0):
    steps = [json.loads(l) for l in open(f"{sys.argv[1]}/k{k}.jsonl") if l.strip()][1:]
    t = next(t for t in steps[-1]["tiers"] if t["name"] == "remote")
    wait = sum(next(t for t in s["tiers"] if t["name"] == "remote")["slot_wait_s"] for s in steps) / len(steps)
    print(f"k={k or 'none'}: remote slot wait {wait:.1f} s per step (all ranks)")
PY
  exit 0
fi
if [ "$headline" = 1 ]; then
  # MLP's tier fractions by write rate per node, its cache ~15 % of a rank's subgroups.
  read -r f_nvme f_remote cache share < <(python3 -c "
nvme, remote = $NVME_WRITE, $REMOTE_WRITE / $nodes
per_rank = -(-$params // ($nodes * $ranks_per_node))
subgroups = -(-per_rank // $subgroup)
cache = round(0.15 * subgroups)
print(round(nvme / (nvme + remote), 2), round(1 - round(nvme / (nvme + remote), 2), 2), cache, round(cache / subgroups, 3))")
  echo "headline: MLP fractions nvme $f_nvme remote $f_remote, cache $cache subgroups ($share of a rank's)" >&2
  measure "baseline (nvme, fp32 gradients flushed, no cache, ascending)" \
    "$(plan h-base baseline 0 ascending combined nvme:1.0:0)"
  measure "MLP (nvme $f_nvme + remote $f_remote, cache $cache, alternating)" \
    "$(plan h-mlp mlp "$cache" alternating combined "nvme:$f_nvme:0" "remote:$f_remote:0")"
  python3 - "$out" <<'PY'
import json, sys
def rows(name):
    return {r["quantity"]: r for r in json.load(open(f"{sys.argv[1]}/{name}.validate.json"))["rows"]}
base, mlp = rows("h-base"), rows("h-mlp")
b, m = base["update_and_flush_s"], mlp["update_s"]
print(f"\nbaseline update + flush: predicted {b['predicted']:.2f} s, measured {b['measured']:.2f} s "
      f"(flush {base['gradient_flush_s']['predicted']:.2f} / {base['gradient_flush_s']['measured']:.2f} s)")
pred, meas = b["predicted"] / m["predicted"], b["measured"] / m["measured"]
print(f"speedup of MLP over the baseline: predicted {pred:.2f}x, measured {meas:.2f}x, "
      f"error {(pred - meas) / meas * 100:+.1f} %")
PY
  exit 0
fi
measure "nvme, no cache, ascending" "$(plan p1 mlp 0 ascending combined nvme:1.0:0)"
measure "nvme 0.6 + remote 0.4, no cache, ascending" "$(plan p2 mlp 0 ascending combined nvme:0.6:0 remote:0.4:0)"
measure "nvme 0.55 + remote 0.3 + shm 0.15, cache 4, alternating" \
  "$(plan p3 mlp 4 alternating combined nvme:0.55:0 remote:0.3:0 shm:0.15:0)"
measure "nvme 0.55 + remote 0.3 + shm 0.15, cache 4, ascending" \
  "$(plan p4 mlp 4 ascending combined nvme:0.55:0 remote:0.3:0 shm:0.15:0)"
measure "nvme 0.7 (k=1, separate) + remote 0.3, alternating" \
  "$(plan p5 mlp 0 alternating separate nvme:0.7:1 remote:0.3:0)"
measure "nvme 0.85 (k=2) + shm 0.15, cache 2, alternating" \
  "$(plan p6 mlp 2 alternating combined nvme:0.85:2 shm:0.15:0)"
measure "baseline (nvme, fp32 gradients flushed, ascending)" "$(plan p7 baseline 0 ascending combined nvme:1.0:0)"

echo "== tuner's pick ($(date -u +%T))" >&2
"$bin/mlpo-tune" --model "$model" --profile "$profile" --update-only --nodes "$nodes" --gpus-per-node "$ranks_per_node" \
  --remote-backbone-gbps "$backbone" --host-memory-budget "${MLPO_FIDELITY_HOST_BUDGET:-6GiB}" --quiet \
  --out "$out/tuned.plan.json" > /dev/null
# The tuner's pick with the testbed's paths (its profile names nvme and remote; a memory tier has no path).
python3 - "$out/tuned.plan.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
print(json.dumps({"tuned": [(t["name"], round(t["fraction"], 3), t["concurrency_limit"]) for t in p["tiers"]],
                  "cache": p["host_cache_subgroups"], "order": p["order"], "scope": p.get("slot_scope")}), file=sys.stderr)
PY
label=$(python3 -c "import json; p=json.load(open('$out/tuned.plan.json')); print(', '.join(t['name']+' '+str(round(t['fraction'],2))+(' k='+str(t['concurrency_limit']) if t['concurrency_limit'] else '') for t in p['tiers']) + ', cache ' + str(p['host_cache_subgroups']) + ', ' + p['order'])")
measure "tuner's pick ($label)" "$out/tuned.plan.json"
python3 - "$out/measured.txt" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
rows = [(n, float(m), float(p)) for n, m, p in rows]
fixed = [r for r in rows if r[0] != "tuned"]
pick = next((r for r in rows if r[0] == "tuned"), None)
worst = max(abs(p - m) / m for _, m, p in rows)
print(f"\nlargest prediction error {worst * 100:.1f} %")
if pick and fixed:
    fastest = min(fixed, key=lambda r: r[1])
    print(f"tuner's pick measured {pick[1]:.2f} s vs the fastest fixed plan ({fastest[0]}) {fastest[1]:.2f} s: "
          f"{(pick[1] / fastest[1] - 1) * 100:+.1f} %")
PY
echo "bench-testbed-fidelity: load at end $(cut -d' ' -f1-3 /proc/loadavg)" >&2
