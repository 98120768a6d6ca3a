#!/usr/bin/env bash
# I/O settings against the models (issue 21): does the block size x queue depth the tuner picks
# from `mlpo-profile --io-settings` matter on this machine, and does the prediction hold at each?
#
#   scripts/bench-io-settings.sh [--model 1b] [--settings 256KiB:32,4MiB:4] [--budget 5GiB]
#       [--rounds 2] [--steps 4] [--disk /var/tmp/mlpo-bench] [--out out/bench-io-settings]
#
#   1. mlpo-profile of the disk tier at the main setting (1 MiB x 8) and at --settings, the
#      settings taking turns within every repetition (two stream counts, three repetitions);
#   2. mlpo-tune --update-only with a host budget that keeps the update on the disk;
#   3. the tuned plan at every measured setting (only io.block_size / io.queue_depth changed),
#      `mlpo-run --update-only` --rounds times each, the settings alternated so that the disk's
#      drift falls on all of them, each run held against its prediction (`mlpo-tune --validate`).
# Prints one row per run (setting, predicted and measured update seconds, error), then per
# setting the median measured update and its prediction.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/options.sh
. scripts/lib/bench.sh
model=1b; settings=256KiB:32,4MiB:4; budget=5GiB; rounds=2; steps=4
disk=/var/tmp/mlpo-bench; out=out/bench-io-settings
parse_options bench-io-settings 2,15 --model=model --settings=settings --budget=budget --rounds=rounds \
  --steps=steps --disk=disk --out=out -- "$@"
need_tools bench-io-settings mlpo-profile mlpo-tune mlpo-run
[ "$rounds" -ge 1 ] 2> /dev/null || { echo "bench-io-settings: --rounds must be a positive count, not '$rounds'" >&2; exit 2; }
mkdir -p "$disk" "$out"
echo "bench-io-settings: $model, settings 1MiB:8,$settings, $rounds round(s) of $steps steps;" \
  "$(machine_state)"

echo "== 1. mlpo-profile (disk at 1MiB:8 and $settings)"
"$bin/mlpo-profile" --tier "disk=$disk:nvme" --streams 2 --reps 3 --io-settings "$settings" --model tiny \
  --out "$out/profile.json" > "$out/profile.txt" 2>&1 ||
  { cat "$out/profile.txt" >&2; echo "bench-io-settings: mlpo-profile failed (output above)" >&2; exit 1; }

echo "== 2. mlpo-tune --update-only --host-memory-budget $budget"
"$bin/mlpo-tune" --model "$model" --profile "$out/profile.json" --update-only --host-memory-budget "$budget" \
  --quiet --out "$out/tuned.json" 2> /dev/null
params=$(model_params "$model")
names=$(python3 - "$out" "$settings" <<'PY'
import json, re, sys
out, settings = sys.argv[1], sys.argv[2]
units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "": 1}
plan = json.load(open(f"{out}/tuned.json"))
names = []
for item in ["1MiB:8"] + settings.split(","):
    size, qd = item.split(":")
    m = re.fullmatch(r"(\d+)(KiB|MiB|GiB|)", size)
    p = json.loads(json.dumps(plan))
    p["io"]["block_size"], p["io"]["queue_depth"] = int(m[1]) * units[m[2]], int(qd)
    name = item.replace(":", "x")
    json.dump(p, open(f"{out}/plan.{name}.json", "w"), indent=1)
    names.append(name)
print(" ".join(names))
PY
)
echo "tuned plan's setting: $(python3 -c "import json; io=json.load(open('$out/tuned.json'))['io']; print(io['block_size'] // 1024, 'KiB x', io['queue_depth'])")"

echo "== 3. the tuned plan at each setting, $rounds round(s), alternated"
echo "| round | setting | predicted update s | measured update s | error |"
echo "|---|---|---|---|---|"
for round in $(seq 1 "$rounds"); do
  for name in $names; do
    rm -rf "${disk:?}"/*
    log="$out/run.$name.$round.jsonl"
    "$bin/mlpo-run" --update-only --params "$params" --plan "$out/plan.$name.json" --steps "$steps" --quiet \
      --log "$log" > /dev/null
    "$bin/mlpo-tune" --validate "$log" --plan "$out/plan.$name.json" --profile "$out/profile.json" --json \
      > "$out/validate.$name.$round.json" 2> /dev/null
    python3 - "$out/validate.$name.$round.json" "$round" "$name" <<'PY'
import json, sys
rows = {r["quantity"]: r for r in json.load(open(sys.argv[1]))["rows"]}
u = rows["update_s"]
print(f"| {sys.argv[2]} | {sys.argv[3]} | {u['predicted']:.2f} | {u['measured']:.2f} | {100 * u['relative_error']:+.1f} % |")
PY
  done
done
rm -rf "${disk:?}"/*
python3 - "$out" $names <<'PY'
import json, statistics, sys, glob
out = sys.argv[1]
print("\nper setting: median measured update (predicted)")
for name in sys.argv[2:]:
    rows = [{r["quantity"]: r for r in json.load(open(f))["rows"]}["update_s"]
            for f in sorted(glob.glob(f"{out}/validate.{name}.*.json"))]
    print(f"  {name:>10}: {statistics.median(r['measured'] for r in rows):.2f} s ({rows[0]['predicted']:.2f} s)")
PY
echo "bench-io-settings: load average at end: $(cut -d' ' -f1-3 /proc/loadavg); everything is in $out"
