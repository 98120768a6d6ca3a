#!/usr/bin/env bash
# Does the update pipeline's AdamW run at the rate mlpo-profile measures for it, and does that
# rate hold still on this machine? ROUNDS rounds, each one, back to back:
#   probe     bench/adam/adam_bench's `adamw-crc` row: offload::checked_adamw over 1 GiB of
#             p, m, v (the call mlpo-profile times as host.adam_checked_elements_per_s),
#             all threads, median of 5;
#   pipeline  mlpo-run --update-only --params PARAMS on one /dev/shm tier of kind host (mapped,
#             updated in place: no I/O, only AdamW with CRC per chunk), 4 Mi-element subgroups,
#             STEPS steps: elements / adam_s of steps 2..STEPS (the run log's AdamW time).
# Prints each round's two rates and their ratio, then the medians and the probe's spread over
# the rounds. A ratio near 1 in every round says the pipeline's AdamW is the probe's; a probe
# that moves between rounds is the machine (on the dev VM: its memory bandwidth).
#
#   scripts/bench-adam-drift.sh [ROUNDS] [PARAMS] [STEPS]     # default 6 500M 4
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-6}
params=${2:-500M}
steps=${3:-4}
bin="$root/build/release"
for tool in "$bin/bench/adam/adam_bench" "$bin/cli/mlpo-run"; do
  [ -x "$tool" ] || { echo "bench-adam-drift: $tool is missing; run scripts/build.sh release first" >&2; exit 2; }
done
out="$root/out/bench-adam-drift"
shm=/dev/shm/mlpo-adam-drift-$(id -u)
mkdir -p "$out" "$shm/inplace"
trap 'rm -rf "$shm"' EXIT
cat > "$out/plan.json" <<JSON
{"schema": "mlpo.plan/1", "model": {"name": "synthetic", "params": 1}, "cluster": {},
 "subgroup_elements": 4194304,
 "tiers": [{"name": "inplace", "kind": "host", "path": "$shm/inplace", "fraction": 1.0}],
 "host_cache_subgroups": 0, "buffers": 2, "prefetch_depth": 1, "order": "alternating",
 "gradients": "delayed", "io": {"crc": true}}
JSON
: > "$out/rounds.txt"
echo "bench-adam-drift: $rounds rounds of the checked-AdamW probe and a $params update-only run on /dev/shm" >&2
for r in $(seq 1 "$rounds"); do
  "$bin/bench/adam/adam_bench" --isa best --threads "$(nproc)" --reps 5 --elements 93323264 \
    --memcpy-bytes 256MiB --json "$out/probe.$r.json" > /dev/null
  probe=$(python3 -c "import json,sys; print(next(x['elements_per_s'] for x in json.load(open(sys.argv[1]))['results'] if x['kernel'] == 'adamw-crc' and x['variant'].endswith('buffer')))" "$out/probe.$r.json")
  rm -f "$out/run.$r.jsonl"
  "$bin/cli/mlpo-run" --update-only --params "$params" --plan "$out/plan.json" --steps "$steps" --quiet \
    --log "$out/run.$r.jsonl" > /dev/null
  pipeline=$(python3 - "$out/run.$r.jsonl" <<'PY'
import json, sys
steps = [json.loads(l) for l in open(sys.argv[1]) if '"adam_s"' in l][1:]
print(sum(s["elements"] for s in steps) / sum(s["adam_s"] for s in steps))
PY
)
  echo "$r $probe $pipeline" >> "$out/rounds.txt"
  echo "round $r ($(date -u +%H:%M:%S) UTC): probe $(python3 -c "print(f'{$probe/1e9:.2f}')") Gelem/s," \
    "pipeline $(python3 -c "print(f'{$pipeline/1e9:.2f}')") Gelem/s, pipeline/probe $(python3 -c "print(f'{$pipeline/$probe:.2f}')")" >&2
done
python3 - "$out/rounds.txt" <<'PY'
import statistics, sys
rows = [list(map(float, l.split()[1:])) for l in open(sys.argv[1])]
probe = [r[0] / 1e9 for r in rows]; pipe = [r[1] / 1e9 for r in rows]; ratio = [b / a for a, b in zip(probe, pipe)]
print("| round | probe (Gelem/s) | pipeline (Gelem/s) | pipeline / probe |")
print("|---|---|---|---|")
for i, (a, b, q) in enumerate(zip(probe, pipe, ratio), 1):
    print(f"| {i} | {a:.2f} | {b:.2f} | {q:.2f} |")
print(f"| median | {statistics.median(probe):.2f} | {statistics.median(pipe):.2f} | {statistics.median(ratio):.2f} |")
print(f"\nprobe over the rounds: {min(probe):.2f}..{max(probe):.2f} Gelem/s (max/min {max(probe) / min(probe):.2f}); "
      f"pipeline/probe {min(ratio):.2f}..{max(ratio):.2f}")
PY
