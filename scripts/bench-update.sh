#!/usr/bin/env bash
# Update-phase benchmark (issue 4): the ablation from the ZeRO-3-offload baseline to full MLP
# mode, each row measured in the same run on the same machine, and (with --invariance) the
# state digest of 10 steps under every plan shape at full size.
#
#   scripts/bench-update.sh (--profile profiles/data/dev-2core-vm.json | --profile-now) \
#       [--params 1B] [--steps 4] [--disk /var/tmp/mlpo-bench] [--shm /dev/shm/mlpo-bench] \
#       [--subgroup 16777216] [--cache-bytes 2GiB] [--shm-fraction 0.3] [--qd 8] [--limit 2] [--repeat 1]
#       [--buffers 8] [--prefetch 4] [--profile-size 4GiB] [--profile-each-row]
#       [--invariance [--no-ablation]]
#       [--out out/bench-update]
# --qd: I/O queue depth of every plan (1 MiB blocks in flight per transfer), baseline included.
# --limit: the node-wide concurrency limit k on the disk in the last row (R = 2 ranks, each
#       with a reader and a writer: 4 transfers could be in flight; k = 2, the default, lets
#       half of them; k = 1 makes every disk transfer of the node take turns).
# --repeat N: run the five rows N times, each repeat starting one row later (rotating), and
#       print per-row medians; speed-ups and achieved/bound are taken within each repeat.
# --buffers, --prefetch: the pinned buffers and prefetch depth of the rows from the cache row
#       on (the tuner's deepest pipeline, 8/4, by default); the baseline and the delayed row
#       keep the baseline's 4/1.
# --profile-now: measure the disk tier with mlpo-profile (at the plans' queue depth,
#       --profile-size per stream, default 4 GiB: passes of 1-2 s, as long as an update phase,
#       so the figures are the disk's sustained rate, not a burst) right before the rows, into
#       OUT/profile.json, and take each row's bound from it: on a shared VM whose disk drifts by
#       tens of percent, the bound then describes the same hour. The /dev/shm tier is `host`:
#       updated in place (no I/O), so it needs no figures.
# --profile-each-row: with --profile-now, also profile the disk again right before every row
#       (up to 2 streams, 2 repetitions, --profile-size per stream, 256 MiB host probes; about
#       25 s each) into OUT/profile.NAME.repR.json, and take that row's bound from it. A row
#       then is compared with the disk of the same minute; the VM's disk drifts by 15-30 %
#       within the quarter hour a run takes, which a single profile at the start cannot see.
#
# Every row runs `mlpo-run --update-only` with real tier files; the first step of each row is
# a warm-up and is not averaged. Prints a table (markdown) with each row's mean update time,
# its physical bound from the profile, achieved/bound and the speedup over the baseline.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/options.sh

params=1B; steps=4; disk=/var/tmp/mlpo-bench; shm=/dev/shm/mlpo-bench; profile=""
subgroup=16777216; cache_bytes=$((2 * 1024 * 1024 * 1024)); shm_fraction=0.3; qd=8; limit=2; repeat=1; invariance=0; ablation=1; out=out/bench-update
buffers=8; prefetch=4; profile_size=4GiB; each_row=0
parse_options bench-update 2,36 --params=params --steps=steps --disk=disk --shm=shm --profile=profile \
  --profile-now=profile:now --profile-each-row=each_row:1 --subgroup=subgroup --cache-bytes=cache_bytes \
  --shm-fraction=shm_fraction --invariance=invariance:1 --qd=qd --limit=limit --repeat=repeat --buffers=buffers \
  --prefetch=prefetch --profile-size=profile_size --no-ablation=ablation:0 --out=out -- "$@"
[ -n "$profile" ] || { echo "bench-update: --profile FILE or --profile-now is required (make a profile with mlpo-profile)" >&2; exit 2; }
[ "$each_row" = 0 ] || [ "$profile" = now ] || { echo "bench-update: --profile-each-row needs --profile-now" >&2; exit 2; }
run=build/release/cli/mlpo-run
[ -x "$run" ] || ./scripts/build.sh release
mkdir -p "$disk" "$shm" "$out"
# profile_disk OUT [mlpo-profile args...]: the disk tier at the plans' queue depth, --profile-size per stream.
profile_disk() {
  local file=$1; shift
  build/release/cli/mlpo-profile --tier "disk=$disk" --queue-depth "$qd" --tier-size "$profile_size" --model tiny \
    --out "$file" "$@" >/dev/null
}
if [ "$profile" = now ]; then
  profile="$out/profile.json"
  echo "== mlpo-profile of disk=$disk at queue depth $qd, $profile_size per stream -> $profile" >&2
  profile_disk "$profile" --streams 4 --reps 3
fi
cache_bytes=$(python3 -c "import re,sys; t=sys.argv[1]; m=re.fullmatch(r'([0-9.]+)([KMGT]?)(i?B)?', t); print(int(float(m.group(1)) * 1024**' KMGT'.index(m.group(2) or ' ')))" "$cache_bytes")
cache=$(( cache_bytes / (subgroup * 12) ))

# plan NAME DISK_FRACTION CACHE ORDER LIMIT [PREFETCH] [BUFFERS]
plan() {
  local name=$1 f=$2 c=$3 order=$4 k=$5 prefetch=${6:-2} buffers=${7:-4}
  local shm_part=""
  if [ "$f" != "1.0" ]; then
    shm_part=", {\"name\": \"shm\", \"kind\": \"host\", \"path\": \"$shm\", \"fraction\": $(python3 -c "print(round(1-$f, 6))")}"
  fi
  cat > "$out/$name.plan.json" <<JSON
{"schema": "mlpo.plan/1", "model": {"name": "synthetic", "params": 1}, "cluster": {},
 "subgroup_elements": $subgroup,
 "tiers": [{"name": "disk", "kind": "nvme", "path": "$disk", "fraction": $f, "concurrency_limit": $k}$shm_part],
 "host_cache_subgroups": $c, "buffers": $buffers, "prefetch_depth": $prefetch, "order": "$order", "gradients": "delayed",
 "io": {"queue_depth": $qd}}
JSON
  echo "$out/$name.plan.json"
}

row() {  # row INDEX REPEAT LABEL PLAN RANKS [extra mlpo-run args...]
  local index=$1 rep=$2 label=$3 p=$4 ranks=$5; shift 5
  local row_profile="$profile"
  if [ "$each_row" = 1 ]; then
    row_profile="$out/profile.$(basename "$p" .plan.json).rep$rep.json"
    echo "== [repeat $rep] mlpo-profile of disk=$disk right before the row -> $row_profile" >&2
    profile_disk "$row_profile" --streams 2 --reps 2 --host-size 256MiB
  fi
  echo "== [repeat $rep] $label" >&2
  local log
  log="$out/$(basename "$p" .plan.json).r$ranks.rep$rep.jsonl"
  "$run" --update-only --params "$params" --plan "$p" --ranks "$ranks" --steps "$steps" --profile "$row_profile" \
    --quiet --log "$log" "$@" | grep '^summary:' | sed 's/^summary: //' \
    | LABEL="$label" ROW="$index" REPEAT="$rep" LOG="$log" python3 -c "import json,os,sys; d=json.load(sys.stdin); d['label']=os.environ['LABEL']; d['row']=int(os.environ['ROW']); d['repeat']=int(os.environ['REPEAT']); d['log']=os.environ['LOG']; print(json.dumps(d))" >> "$out/rows.jsonl"
}

shm_f=$(python3 -c "print(round(1-$shm_fraction, 6))")
if [ "$ablation" = 1 ]; then
: > "$out/rows.jsonl"
labels=("baseline (ZeRO-3 offload: 1 tier, fp32 grads flushed, ascending, no cache)"
        "+ delayed bf16 gradients"
        "+ host cache ($cache subgroups) & alternating order"
        "+ second tier /dev/shm (${shm_fraction})"
        "+ concurrency limit k=$limit, R=2 ranks")
plans=("$(plan base 1.0 0 ascending 0 1)" "$(plan delayed 1.0 0 ascending 0 1)"
       "$(plan cache 1.0 "$cache" alternating 0 "$prefetch" "$buffers")"
       "$(plan twotier "$shm_f" "$cache" alternating 0 "$prefetch" "$buffers")"
       "$(plan limit "$shm_f" $(( cache / 2 )) alternating "$limit" "$prefetch" "$buffers")")
ranks=(1 1 1 1 2)
extra=("--mode baseline" "" "" "" "")
# Repeat r starts at row r-1 (rotating), so a slow spell of the machine does not always hit
# the same row.
for rep in $(seq "$repeat"); do
  for j in 0 1 2 3 4; do
    i=$(( (j + rep - 1) % 5 ))
    # shellcheck disable=SC2086
    row "$i" "$rep" "${labels[$i]}" "${plans[$i]}" "${ranks[$i]}" ${extra[$i]}
  done
done

python3 - "$out/rows.jsonl" <<'PY'
import json, sys, statistics
rows = [json.loads(l) for l in open(sys.argv[1])]
repeats = sorted({r["repeat"] for r in rows})
by = {(r["row"], r["repeat"]): r for r in rows}
med = statistics.median
def io(r): return r["mean_update_s"] + r.get("mean_gradient_flush_s", 0.0)
n = len(repeats)
if n > 1:
    print(f"medians over {n} repeats; speed-ups and achieved/bound are taken within each repeat (its own baseline), then the median")
print("| configuration | update s | + gradient flush s | bound s (placement) | achieved/bound | ideal bound s (any placement) "
      "| speedup (update) | speedup (update + flush) |")
print("|---|---|---|---|---|---|---|---|")
for i in sorted({r["row"] for r in rows}):
    rs = [by[(i, k)] for k in repeats]
    bs = [by[(0, k)] for k in repeats]
    upd = med([r["mean_update_s"] for r in rs])
    ach = med([r.get("achieved_over_bound", float("nan")) for r in rs])
    sp = med([b["mean_update_s"] / r["mean_update_s"] for r, b in zip(rs, bs)])
    sp_io = med([io(b) / io(r) for r, b in zip(rs, bs)])
    each = " (" + ", ".join(f"{r['mean_update_s']:.2f}" for r in rs) + ")" if n > 1 else ""
    each_ach = " (" + ", ".join(f"{r.get('achieved_over_bound', float('nan')):.2f}" for r in rs) + ")" if n > 1 else ""
    print(f"| {rs[0]['label']} | {upd:.2f}{each} | {med([io(r) for r in rs]):.2f} | "
          f"{med([r.get('mean_bound_s', float('nan')) for r in rs]):.2f} | {ach:.2f}{each_ach} | "
          f"{med([r.get('mean_ideal_bound_s', float('nan')) for r in rs]):.2f} | {sp:.2f}x | {sp_io:.2f}x |")

# The disk's own counters (tiers[0].device in the per-step logs, present when the disk tier is
# on a block device): did the update leave the device idle, or did the device move less than
# its profile said? Steps 2..S of every repeat, as the summary averages.
device = {}
for i in sorted({r["row"] for r in rows}):
    for k in repeats:
        log = by[(i, k)].get("log")
        if not log:
            continue
        recs = [json.loads(l) for l in open(log)]
        for rec in recs[1:] if len(recs) > 1 else recs:
            disk = rec["tiers"][0]
            d = disk.get("device")
            if d and d["busy_s"] > 0 and rec["update_s"] > 0:
                moved = (disk["read_bytes"] + disk["write_bytes"]) / 1e9
                device.setdefault(i, []).append((d["busy_s"] / rec["update_s"], moved / d["busy_s"], rec.get("adam_s", 0.0)))
if device:
    print()
    print("disk device counters, steps 2..S of every repeat (docs/offload.md, tiers[].device)")
    print("| configuration | device busy / update: median [min-max] | disk GB/s while busy: median [min-max] | AdamW s per step: median [max] |")
    print("|---|---|---|---|")
    for i, v in device.items():
        busy, rate, adam = ([x[j] for x in v] for j in range(3))
        print(f"| {by[(i, repeats[0])]['label']} | {med(busy):.2f} [{min(busy):.2f}-{max(busy):.2f}] | "
              f"{med(rate):.2f} [{min(rate):.2f}-{max(rate):.2f}] | {med(adam):.2f} [{max(adam):.2f}] |")
PY
fi

if [ "$invariance" = 1 ]; then
  echo "== invariance: 10 steps, state-sha256 under every plan shape" >&2
  : > "$out/invariance.txt"
  mem="$out/memory.plan.json"
  cat > "$mem" <<JSON
{"schema": "mlpo.plan/1", "model": {"name": "synthetic", "params": 1}, "cluster": {},
 "subgroup_elements": $subgroup, "tiers": [{"name": "ram", "kind": "memory", "fraction": 1.0}]}
JSON
  inv() {  # inv LABEL PLAN RANKS [args]
    local label=$1 p=$2 ranks=$3; shift 3
    local h
    h=$("$run" --update-only --params "$params" --plan "$p" --ranks "$ranks" --steps 10 --state-hash --quiet "$@" | grep '^state-sha256:' | cut -d' ' -f2)
    echo "| $label | \`$h\` |" | tee -a "$out/invariance.txt"
  }
  echo "| configuration | state-sha256 after 10 steps |"
  echo "|---|---|"
  inv "all in host memory" "$mem" 1
  inv "one disk tier" "$(plan inv-disk 1.0 0 ascending 0)" 1
  inv "disk + /dev/shm 50/50" "$(plan inv-5050 0.5 0 ascending 0)" 1
  inv "disk + /dev/shm 80/20" "$(plan inv-8020 0.8 0 ascending 0)" 1
  inv "cache on, alternating" "$(plan inv-cache "$shm_f" "$cache" alternating 0)" 1
  inv "cache off, alternating" "$(plan inv-nocache "$shm_f" 0 alternating 0)" 1
  inv "baseline mode" "$(plan inv-base 1.0 0 ascending 0)" 1 --mode baseline
  inv "R = 2 ranks, k = 1" "$(plan inv-r2 "$shm_f" $(( cache / 2 )) alternating 1)" 2
  distinct=$(cut -d'`' -f2 "$out/invariance.txt" | sort -u | wc -l)
  if [ "$distinct" = 1 ]; then echo "invariance: all identical"; else echo "invariance: FAILED ($distinct distinct digests)"; exit 1; fi
fi
