#!/usr/bin/env bash
# The GPU machine's check, one script (docs/cuda.md, "Device check"). On one H200 it ends within
# MLPO_DEVICE_CHECK_BUDGET_S seconds (default 480 = 8 minutes) from its start, build included:
#   1. unpack the Debian packages carried in .debs/ (scripts/device-fetch-debs.sh, run
#      beforehand on a Debian 12 machine) into a local prefix with dpkg -x — never into / —
#      and point CMake and pkg-config at it;
#   2. configure and build (sm_90 only) the CUDA tests, the MFU bench, mlpo-run and mlpo-profile;
#   3. run the stages, most important first, each in its own time box (cut short, or skipped,
#      so that the whole script stays within the budget), each logging to OUT_DIR/<stage>.log;
#      a failing stage never stops the others:
#        cuda-tests     every CUDA kernel against its CPU twin, the whole model, the copy queue,
#                       host-streamed weights = resident on the GPU (bitwise), training on the
#                       GPU vs the CPU backend (3 steps), parameter offload = resident (bitwise)
#        train-small    50 steps of `small` on the GPU and on the CPU backend (side by side),
#                       loss curves compared by scripts/compare-loss-curves.py (its tolerance)
#        mfu            forward+backward of a GPU-resident ~0.9B model: model TFLOP/s and MFU
#                       against the H200's dense bf16 peak (989 TFLOP/s)
#        offload        the budget check refusing llama2-7b in 8 GiB of GPU memory without
#                       --param-offload, then 2 steps of it with --param-offload and optimizer
#                       state in host memory (90 %) and on disk (10 %); iteration breakdown
#        nccl           the NCCL communicator tests (world size 1) and a training run with
#                       --backend cuda --comm nccl
#        profile        mlpo-profile --quick with the GPU probes; the profiles tests
#      Summary lines go to OUT_DIR/summary.txt.
# Exit status: 0 only when every stage ran and passed.
#   scripts/device-check.sh OUT_DIR                   the full check (on the GPU machine)
#   scripts/device-check.sh OUT_DIR --configure-only  steps 1-2's configure only (testable without a GPU)
#   scripts/device-check.sh OUT_DIR --build-only      steps 1-2 (testable without a GPU)
#   scripts/device-check.sh OUT_DIR --cpu-dry-run     every stage's command line with tiny sizes and
#                                                     --backend cpu against build/release (no GPU
#                                                     needed): proves the script's plumbing
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:?usage: scripts/device-check.sh OUT_DIR [--configure-only|--build-only|--cpu-dry-run]}"
mode="${2:-}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
summary="$out/summary.txt"
: > "$summary"
failed=0
note() { echo "device-check: $*" | tee -a "$summary"; }
start=$(date +%s)
budget="${MLPO_DEVICE_CHECK_BUDGET_S:-480}"
deadline=$((start + budget))
elapsed() { echo "$(( $(date +%s) - start ))s"; }
dry=0
[ "$mode" = "--cpu-dry-run" ] && dry=1

if [ $dry = 1 ]; then
  build="build/release"
  [ -x "$build/cli/mlpo-run" ] || { note "--cpu-dry-run needs a release build (scripts/build.sh release)"; exit 1; }
  note "cpu dry run: stages with tiny sizes and --backend cpu against $build"
else
  # ---- 1. dependencies ------------------------------------------------------------------
  root="$PWD/.deps-root"
  if [ -d .debs ] && compgen -G ".debs/*.deb" >/dev/null; then
    stamp="$(ls -l .debs/*.deb | md5sum | cut -d' ' -f1) $root"
    if [ "$(cat "$root/.unpacked" 2>/dev/null)" != "$stamp" ]; then
      rm -rf "$root" && mkdir -p "$root"
      for deb in .debs/*.deb; do dpkg -x "$deb" "$root"; done
      # pkg-config files carry absolute /usr paths: point them into the prefix.
      find "$root" -name '*.pc' -exec sed -i -E "s#^([a-z_]+)=/usr#\1=$root/usr#" {} +
      echo "$stamp" > "$root/.unpacked"
    fi
    arch_lib="$root/usr/lib/x86_64-linux-gnu"
    export PKG_CONFIG_PATH="$arch_lib/pkgconfig:$arch_lib/openblas-pthread/pkgconfig:$root/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    export LD_LIBRARY_PATH="$arch_lib:$arch_lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    prefix_args=(-DCMAKE_PREFIX_PATH="$root/usr" -DOPENSSL_ROOT_DIR="$root/usr")
    note "unpacked $(ls .debs/*.deb | wc -l) packages into $root ($(elapsed))"
  else
    prefix_args=()
    note "no .debs/ here: using the system's packages"
  fi
  # MLPO_DEVICE_CHECK_NO_SYSTEM=1 hides the system's package locations from CMake and
  # pkg-config, to test here that the prefix alone is enough.
  if [ "${MLPO_DEVICE_CHECK_NO_SYSTEM:-0}" = 1 ]; then
    prefix_args+=(-DCMAKE_IGNORE_PREFIX_PATH=/usr -DCMAKE_MAKE_PROGRAM="$(command -v ninja)")
    export PKG_CONFIG_LIBDIR="$PKG_CONFIG_PATH"
  fi

  # ---- 2. configure and build ------------------------------------------------------------
  # Open MPI is not carried: without it the MPI communicator is left out (-DMLPO_MPI=OFF).
  command -v mpicxx >/dev/null 2>&1 || prefix_args+=(-DMLPO_MPI=OFF)
  build="build/device"
  if ! cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES="${MLPO_CUDA_ARCH:-90}" \
       "${prefix_args[@]}" > "$out/configure.log" 2>&1; then
    note "configure FAILED (see configure.log)"
    tail -20 "$out/configure.log"
    exit 1
  fi
  note "configured $build ($(elapsed))"
  if [ "$mode" = "--configure-only" ]; then
    grep -E "^(GTest_DIR|nlohmann_json_DIR|CLI11_DIR|OPENSSL_CRYPTO_LIBRARY|pkgcfg_lib_[A-Z]+_[a-z]+):" "$build/CMakeCache.txt" | tee -a "$summary"
    exit 0
  fi
  targets=(cuda_tests cuda_model_bench mlpo-run mlpo-profile profiles_tests)
  grep -q "NCCL communicator enabled" "$out/configure.log" && targets+=(comm_nccl_tests)
  if ! cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" > "$out/build.log" 2>&1; then
    note "build FAILED (see build.log)"
    tail -30 "$out/build.log"
    exit 1
  fi
  note "built ${targets[*]} ($(elapsed))"
  [ "$mode" = "--build-only" ] && exit 0
  nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true
fi
mlpo_run="$build/cli/mlpo-run"
backend=cuda
[ $dry = 1 ] && backend=cpu

# ---- 3. stages -----------------------------------------------------------------------------
# run_stage NAME BOX_SECONDS COMMAND...: the command gets min(BOX, what is left of the budget);
# with under 20 s left the stage is skipped. Output goes to OUT_DIR/NAME.log.
run_stage() {
  local name="$1" box="$2"; shift 2
  local left=$(( deadline - $(date +%s) - 5 ))
  if [ "$left" -lt 20 ]; then
    note "stage $name skipped: the ${budget}s budget is spent"
    failed=1
    return 1
  fi
  [ "$box" -gt "$left" ] && box=$left
  local t0=$(date +%s) status=0
  timeout --kill-after=5 "$box" "$@" > "$out/$name.log" 2>&1 || status=$?
  if [ $status = 0 ]; then
    note "stage $name: passed ($(( $(date +%s) - t0 ))s)"
  else
    [ $status = 124 ] && note "stage $name: TIMED OUT after ${box}s"
    note "stage $name: FAILED, status $status ($(( $(date +%s) - t0 ))s; see $name.log)"
    tail -15 "$out/$name.log"
    failed=1
  fi
  return $status
}
skip_stage() { note "stage $1 skipped: $2"; failed=1; }
export MLPO_RUN="$mlpo_run" OUT="$out" BACKEND="$backend" DRY="$dry"

# write_plan FILE MODEL SUBGROUP_ELEMENTS MEMORY_FRACTION [DISK_DIR]: an mlpo.plan/1 for one rank
# with the optimizer state MEMORY_FRACTION in host memory and the rest in DISK_DIR. Parameter
# counts of the presets used here (tests/core/model_spec_test.cpp asserts them; mlpo-run checks
# the plan against the model and exits 2 on a mismatch).
write_plan() {
  python3 - "$@" <<'PY'
import json, sys
path, model, subgroup, memory = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
disk = sys.argv[5] if len(sys.argv) > 5 else ""
params = {"tiny": 853120, "small": 17963520, "1b": 1100048384, "llama2-7b": 6738415616}[model]
tiers = [{"name": "host", "path": "", "kind": "memory", "fraction": memory, "concurrency_limit": 0}]
if memory < 1:
    tiers.append({"name": "disk", "path": disk, "kind": "other", "fraction": round(1 - memory, 6), "concurrency_limit": 0})
plan = {"schema": "mlpo.plan/1", "model": {"name": model, "params": params},
        "cluster": {"nodes": 1, "gpus_per_node": 1, "micro_batch": 1, "grad_accum": 1, "seq_len": 0},
        "subgroup_elements": subgroup, "buffers": 6, "prefetch_depth": 3, "host_cache_subgroups": 0,
        "order": "alternating", "gradients": "delayed", "mode": "mlp",
        "io": {"block_size": 1048576, "queue_depth": 8, "direct_io": False, "crc": False, "slot_scope": "combined"},
        "tiers": tiers, "explanation": {"source": "scripts/device-check.sh"}}
with open(path, "w") as f:
    json.dump(plan, f, indent=1)
PY
}
export -f write_plan

# cuda-tests: without a GPU every test skips, which fails the stage (not in the dry run).
if [ $dry = 1 ]; then
  run_stage cuda-tests 100 "$build/tests/kernels/cuda/cuda_tests" --gtest_brief=1
else
  run_stage cuda-tests 100 "$build/tests/kernels/cuda/cuda_tests" --gtest_output="xml:$out/cuda-tests.xml"
  if grep -q "SKIPPED" "$out/cuda-tests.log"; then note "cuda-tests: tests were SKIPPED (no usable GPU?)"; failed=1; fi
fi

# train-small: the same 50 steps on the GPU and on the CPU backend, run side by side (the GPU
# run needs few cores), then the loss curves compared (tolerance: compare-loss-curves.py).
train_small() {
  local steps=50 seq=256 mb=4 model=small tail=10
  [ "$DRY" = 1 ] && { steps=6; seq=32; mb=2; model=tiny; tail=2; }
  local cores; cores=$(nproc)
  "$MLPO_RUN" prepare-data --input README.md docs core executor kernels --out "$OUT/train-small.tokens" || return 1
  write_plan "$OUT/train-small-plan.json" "$model" 1048576 1.0 || return 1
  local common=(--model "$model" --data "$OUT/train-small.tokens" --plan "$OUT/train-small-plan.json" --steps "$steps"
                --seq-len "$seq" --micro-batch "$mb" --lr 3e-3 --warmup-steps 5 --seed 7 --quiet)
  "$MLPO_RUN" "${common[@]}" --backend "$BACKEND" --threads 2 --blas-threads 1 \
    --log "$OUT/train-small-gpu.jsonl" > "$OUT/train-small-gpu.out" 2>&1 &
  local gpu_pid=$!
  "$MLPO_RUN" "${common[@]}" --backend cpu --threads $((cores > 4 ? cores - 2 : 2)) --blas-threads $((cores > 4 ? cores - 2 : 2)) \
    --log "$OUT/train-small-cpu.jsonl" > "$OUT/train-small-cpu.out" 2>&1
  local cpu_status=$?
  wait $gpu_pid; local gpu_status=$?
  echo "--- $BACKEND run"; cat "$OUT/train-small-gpu.out"; echo "--- cpu run"; cat "$OUT/train-small-cpu.out"
  [ $gpu_status = 0 ] && [ $cpu_status = 0 ] || return 1
  python3 scripts/compare-loss-curves.py "$OUT/train-small-gpu.jsonl" "$OUT/train-small-cpu.jsonl" --tail "$tail" || return 1
  # What did not overlap on the device: gradient copies after backward, weight uploads after the update.
  python3 - "$OUT/train-small-gpu.jsonl" "$BACKEND" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])][1:]  # step 1 includes start-up
mean = lambda k: sum(r[k] for r in recs) / len(recs)
print(f"train-small, {sys.argv[2]} run, mean over steps 2..: step {mean('step_s'):.3f} s, forward {mean('forward_s'):.3f}, "
      f"backward {mean('backward_s'):.3f} (gradient copy wait {mean('gradient_copy_wait_s'):.4f}), update {mean('update_s'):.3f}, "
      f"weights to device after the update {mean('weights_to_device_s'):.4f} s")
PY
}
export -f train_small
run_stage train-small 120 bash -c train_small
grep -E "^(worst step|loss curves|train-small )" "$out/train-small.log" >> "$summary" 2>/dev/null

# mfu: the bench refuses, up front, a model that does not fit (it runs the memory check).
if [ $dry = 1 ]; then
  run_stage mfu 60 "$build/bench/model/model_bench" --layers 2 --batch 1 --steps 1
else
  run_stage mfu 60 "$build/bench/model/cuda_model_bench" --steps 5 --peak-tflops 989
fi
grep -E "^(device|model|forward|throughput):?" "$out/mfu.log" >> "$summary" 2>/dev/null

# offload: a model whose bf16 weights alone exceed the GPU memory the run may use. A model
# larger than the H200's 141 GB cannot be trained on this machine at all: its optimizer state
# (12 B/param, > 24B params) exceeds host memory + disk (128 GiB + 64 GiB). So: llama2-7b
# (6.74B; bf16 weights 12.6 GiB) under --gpu-memory-limit 8GiB; its 75 GiB of fp32 state 90 % in
# host memory, 10 % on disk; host memory needed ~98 GiB (state, pinned bf16 weights + gradients).
offload() {
  local model=llama2-7b limit=8GiB seq=1024 subgroup=16777216 need_gib=100
  if [ "$DRY" = 1 ]; then
    model=tiny; limit=0; seq=32; subgroup=65536; need_gib=0
  else
    local avail_gib; avail_gib=$(awk '/MemAvailable/ {print int($2 / 1048576)}' /proc/meminfo)
    if [ "$avail_gib" -lt "$need_gib" ]; then
      echo "offload: only ${avail_gib} GiB of host memory available, llama2-7b needs ~${need_gib} GiB: using 1b under 1536MiB"
      model=1b; limit=1536MiB
    fi
  fi
  local state="$PWD/out/device-check-state"
  rm -rf "$state" && mkdir -p "$state/disk" || return 1
  "$MLPO_RUN" prepare-data --input README.md docs --out "$OUT/offload.tokens" || return 1
  write_plan "$OUT/offload-plan.json" "$model" "$subgroup" 0.9 "$state/disk" || return 1
  local common=(--model "$model" --data "$OUT/offload.tokens" --plan "$OUT/offload-plan.json" --seq-len "$seq"
                --micro-batch 1 --steps 2 --backend "$BACKEND")
  [ "$limit" != 0 ] && common+=(--gpu-memory-limit "$limit")
  local status=0
  if [ "$DRY" != 1 ]; then
    echo "--- without --param-offload: must be refused up front (exit 2, bytes needed vs available)"
    "$MLPO_RUN" "${common[@]}" --quiet; local refused=$?
    if [ $refused != 2 ]; then echo "offload: expected exit 2 from the memory check, got $refused"; status=1; fi
  fi
  echo "--- with --param-offload"
  "$MLPO_RUN" "${common[@]}" --param-offload --log "$OUT/offload.jsonl" || status=1
  rm -rf "$state"
  [ -s "$OUT/offload.jsonl" ] && python3 - "$OUT/offload.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    fb = r.get("weight_fetch_bytes", 0)
    fwbw = r["forward_s"] + r["backward_s"]
    tiers = ", ".join(f"{t['name']} read {t['read_bytes'] / 2**30:.1f} GiB write {t['write_bytes'] / 2**30:.1f} GiB" for t in r["tiers"])
    print(f"offload step {r['step']}: step {r['step_s']:.2f} s = forward {r['forward_s']:.2f} + backward {r['backward_s']:.2f} "
          f"(gradient copy wait {r['gradient_copy_wait_s']:.3f}) + update {r['update_s']:.2f} (adam {r['adam_s']:.2f}, "
          f"stall {r['prefetch_stall_s']:.2f}) + weights {r['weights_to_device_s']:.3f} s; weights fetched "
          f"{fb / 2**30:.1f} GiB ({fb / fwbw / 1e9:.1f} GB/s over forward+backward, {r['weight_demand_fetches']} demand fetches); "
          f"{tiers}; loss {r['loss']:.4f}")
PY
  return $status
}
export -f offload
run_stage offload 170 bash -c offload
grep -E "^(offload step|device:)" "$out/offload.log" >> "$summary" 2>/dev/null

# nccl: the communicator's own tests, then training with its reductions through NCCL.
nccl() {
  local status=0
  if [ -x "$BUILD/tests/executor/comm/comm_nccl_tests" ]; then
    "$BUILD/tests/executor/comm/comm_nccl_tests" || status=1
  else
    echo "comm_nccl_tests not built (NCCL was not found at configure time)"; status=1
  fi
  local comm=nccl
  [ "$DRY" = 1 ] && comm=single  # NCCL needs a GPU; the dry run checks the command line
  "$MLPO_RUN" prepare-data --input README.md --out "$OUT/nccl.tokens" || return 1
  "$MLPO_RUN" --model tiny --data "$OUT/nccl.tokens" --steps 3 --seq-len 32 --backend "$BACKEND" --comm "$comm" \
    --state-dir "$OUT/state-nccl" --log "$OUT/nccl.jsonl" || status=1
  rm -rf "$OUT/state-nccl"
  return $status
}
export -f nccl
BUILD="$build" run_stage nccl 45 bash -c nccl
if [ $dry = 0 ] && grep -q "SKIPPED" "$out/nccl.log"; then note "nccl: tests were SKIPPED"; failed=1; fi

# profile: the GPU probes of mlpo-profile (issue 5), a --quick profile of this machine.
probe_disk="$PWD/out/device-check-tier"; probe_shm=/dev/shm/mlpo-device-check
mkdir -p "$probe_disk" "$probe_shm"
profile_size=()
[ $dry = 1 ] && profile_size=(--tier-size 16MiB --host-size 16MiB --reps 1 --streams 1)
run_stage profile 75 "$build/cli/mlpo-profile" --quick "${profile_size[@]}" --tier "disk=$probe_disk" --tier "shm=$probe_shm" \
  --model llama2-7b --notes "GPU device check ($(hostname))" --out "$out/profile.json"
rm -rf "$probe_disk" "$probe_shm"
if [ $dry = 1 ]; then
  run_stage profiles-tests 40 "$build/tests/profiles/profiles_tests" --gtest_brief=1 --gtest_filter='-*Slow*'
else
  run_stage profiles-tests 40 "$build/tests/profiles/profiles_tests"
fi

note "total $(elapsed) of ${budget}s; $( [ $failed = 0 ] && echo PASSED || echo 'NOT PASSED (a stage failed or was skipped)')"
exit $failed
