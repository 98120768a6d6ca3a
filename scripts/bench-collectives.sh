#!/usr/bin/env bash
# ZeRO-3 collectives against the models (issue 21): profile this machine with host MPI, tune
# a plan for 1, 2 and 4 ranks of one node, train each on the CPU backend under mpirun RUNS
# times, and hold every run against its prediction with `mlpo-tune --validate --json`.
#
#   scripts/bench-collectives.sh [--model tiny] [--micro-batch 4] [--steps 8] [--runs 3]
#       [--ranks "1 2 4"] [--out out/bench-collectives]
#
#   1. mlpo-profile --comm --comm-ranks 2 (host MPI all-gather / reduce-scatter) with the CPU
#      backend's forward/backward at the model's widths and the runs' shape (seq 128);
#   2. mlpo-tune --gpus-per-node R for each R (the plan, its SimGrid prediction);
#   3. mlpo-run RUNS times per R, one rank thread each (`--threads 1 --blas-threads 1`) when
#      R > 1, all cores with one rank; ranks oversubscribe the cores when R > cores;
#   4. per R: each run's error per phase (forward, backward, update, the rank's AdamW,
#      iteration) and the share of the CPU the hypervisor took in it (its steps' cpu_steal),
#      then the error of the median run (the median over runs of each measured phase against
#      the prediction). --validate drops each run's first step (warm-up). With several
#      ranks also the exchange's waits and CPU seconds against the analytic model's.
# Everything goes to --out; the scratch tier's directory is emptied before every run.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/options.sh
. scripts/lib/bench.sh
model=tiny; mb=4; steps=8; runs=3; ranks="1 2 4"; out=out/bench-collectives; seq=128
parse_options bench-collectives 2,19 --model=model --micro-batch=mb --steps=steps --runs=runs --ranks=ranks \
  --out=out -- "$@"
need_tools bench-collectives mlpo-profile mlpo-tune mlpo-run
command -v mpirun > /dev/null || { echo "bench-collectives: mpirun is missing; run scripts/setup.sh" >&2; exit 2; }
[ "$runs" -ge 1 ] 2> /dev/null || { echo "bench-collectives: --runs must be a positive count, not '$runs'" >&2; exit 2; }
mkdir -p "$out/scratch"
out=$(cd "$out" && pwd)
mpi=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
echo "bench-collectives: $model, micro-batch $mb, seq $seq, $steps steps, $runs runs per rank count;" \
  "$(nproc) cores, $(machine_state)"

echo "== data: this repository's docs, byte-level"
cat docs/*.md > "$out/corpus.txt"
"$bin/mlpo-run" prepare-data --input "$out/corpus.txt" --out "$out/tokens.bin" > /dev/null

echo "== 1. mlpo-profile --comm (host MPI on 2 ranks), CPU forward/backward of $model at micro-batch $mb"
"$bin/mlpo-profile" --comm --comm-ranks 2 --tier "scratch=$out/scratch" --tier-size 64MiB --host-size 256MiB \
  --model "$model" --seq-len "$seq" --micro-batch "$mb" --out "$out/profile.json" > "$out/profile.txt" 2>&1 ||
  { cat "$out/profile.txt" >&2; echo "bench-collectives: mlpo-profile failed (output above)" >&2; exit 1; }
grep -E "all-gather|reduce-scatter|latency" "$out/profile.txt" | grep -v '^\[' || true

for R in $ranks; do
  echo "== 2-3. $R rank(s): mlpo-tune, then $runs runs of $steps steps"
  plan="$out/plan.$R.json"
  "$bin/mlpo-tune" --model "$model" --profile "$out/profile.json" --gpus-per-node "$R" --micro-batch "$mb" \
    --seq-len "$seq" --out "$plan" > "$out/tune.$R.txt" 2>&1 ||
    { cat "$out/tune.$R.txt" >&2; echo "bench-collectives: mlpo-tune failed for $R ranks" >&2; exit 1; }
  train=("$bin/mlpo-run" --model "$model" --data "$out/tokens.bin" --plan "$plan" --micro-batch "$mb"
    --seq-len "$seq" --steps "$steps" --quiet)
  for run in $(seq 1 "$runs"); do
    rm -rf "$out/scratch"/* "$out/run.$R.$run.jsonl"
    if [ "$R" = 1 ]; then
      "${train[@]}" --log "$out/run.$R.$run.jsonl" > "$out/run.$R.$run.txt" 2>&1
    else
      "${mpi[@]}" -np "$R" "${train[@]}" --log "$out/run.$R.$run.jsonl" --threads 1 --blas-threads 1 \
        > "$out/run.$R.$run.txt" 2>&1
    fi || { cat "$out/run.$R.$run.txt" >&2; echo "bench-collectives: run $run on $R ranks failed" >&2; exit 1; }
    "$bin/mlpo-tune" --validate "$out/run.$R.$run.jsonl" --plan "$plan" --profile "$out/profile.json" \
      --model "$model" --json > "$out/validate.$R.$run.json" 2> /dev/null
  done
done

echo "== 4. predicted (SimGrid) vs measured: error per run, then of the median run"
python3 - "$out" "$runs" $ranks <<'PY'
import json, statistics, sys
out, runs, ranks = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
keys = ("forward_s", "backward_s", "update_s", "adam_s", "iteration_s")
def share(v): return "-" if v is None else f"{100 * v:.1f} %"
first = json.load(open(f"{out}/validate.{ranks[0]}.1.json"))
print(f"CPU steal while the profile measured the host: {share(first['cpu_steal']['profile'])}")
print("| ranks | run | " + " | ".join(k[:-2] for k in keys) + " | CPU steal |")
print("|---|---|" + "---|" * (len(keys) + 1))
def pct(p, m): return f"{100 * (p - m) / m:+.1f} %" if m else "-"
exchange = []
for r in ranks:
    rows, steal = [], []
    for run in range(1, runs + 1):
        v = json.load(open(f"{out}/validate.{r}.{run}.json"))
        rows.append({row["quantity"]: row for row in v["rows"]})
        steal.append(v["cpu_steal"]["run"])
    for run, row in enumerate(rows, 1):
        print(f"| {r} | {run} | " + " | ".join(pct(row[k]["predicted"], row[k]["measured"]) if k in row else "-"
                                           for k in keys) + f" | {share(steal[run - 1])} |")
    cells = []
    for k in keys:
        if k not in rows[0]:
            cells.append("-")
            continue
        m = statistics.median(row[k]["measured"] for row in rows)
        p = rows[0][k]["predicted"]
        cells.append(f"**{pct(p, m)}** ({p * 1e3:.2f} vs {m * 1e3:.2f} ms)")
    known = [x for x in steal if x is not None]
    print(f"| {r} | median | " + " | ".join(cells) + f" | {share(statistics.median(known) if known else None)} |")
    exchange.append((r, [(k, rows[0][k]["predicted"], statistics.median(row[k]["measured"] for row in rows))
                         for k in ("collective_wait_s", "exchange_cpu_s") if k in rows[0]]))
if any(figures for _, figures in exchange):
    print()
    print("ZeRO-3 exchange per iteration and rank, analytic model vs the median run's log:")
    for r, figures in exchange:
        for k, p, m in figures:
            print(f"  {r} ranks  {k:18s} predicted {p * 1e3:7.2f} ms   measured {m * 1e3:7.2f} ms")
PY
echo "bench-collectives: profile, plans, logs and validations are in $out"
