#!/usr/bin/env bash
# The GPU machine's check: one prepared script that fits its budget and brings its results back
# (docs/cuda.md, "Device check").
#
#   scripts/device-check.sh OUT_DIR                 the check, on the GPU machine
#   scripts/device-check.sh OUT_DIR --dry-run       preflight and stage plan only, every stage SKIPPED
#                                                   (seconds; no GPU needed)
#   scripts/device-check.sh OUT_DIR --cpu-dry-run   every stage's commands with tiny sizes and
#                                                   --backend cpu against build/release: the plumbing
#
# Programs: the bundle that scripts/device-bundle.sh builds HERE (.device-bundle/bundle.tar.gz:
# sm_90 binaries and the shared libraries a CUDA image lacks; carry .device-bundle), so no
# device time goes to a build. Without a usable bundle it builds build/device on the machine
# (cmake, ninja, nvcc, the -dev packages: .debs/ from scripts/device-fetch-debs.sh if carried).
#
# Stages, most valuable first, each time-boxed (cut to what is left of the budget, skipped
# under 15 s), each with one PASSED / FAILED / TIMED OUT / SKIPPED line; a failure never stops
# the others:
#   cuda-tests   every CUDA kernel against its CPU twin on both attention paths, the whole model,
#                the copy queue, training on the GPU vs the CPU (cuda_tests); the op tests against
#                the double reference on the CUDA backend (kernels_ops_tests). A binary that fails
#                or dies is rerun test by test, CUDA_LAUNCH_BLOCKING=1 MLPO_CUDA_SYNC_CHECK=1.
#   train-small  50 steps of `small` on the GPU (both attention paths) and on the CPU backend side
#                by side; loss curves compared (scripts/compare-loss-curves.py)
#   mfu          attention alone, both paths (cuda_attention_bench); forward+backward of a
#                GPU-resident ~0.9B model, both paths: model TFLOP/s and MFU (cuda_model_bench)
#   offload      a model whose bf16 weights exceed the GPU memory the run may use: refused up
#                front without --param-offload, then 2 steps with it, state 90 % in host memory
#                and 10 % on disk
#   nccl         the NCCL communicator tests, then training with --comm nccl
#   profile      mlpo-profile --quick with the GPU probes; the profiles tests
#   sanitizer    (optional) compute-sanitizer memcheck over the op tests (racecheck over attention
#                with MLPO_DEVICE_CHECK_RACECHECK=1)
#
# OUT_DIR receives exactly two files: summary.txt (preflight, one line per stage, the figures)
# and device-check.tar.gz (every log, XML report, run log and the profile), re-packed after each
# stage, so a run cut short still brings back what it did.
# Exit status: 0 when every non-optional stage passed (the dry runs: when the plumbing worked).
set -uo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
out="${1:?usage: scripts/device-check.sh OUT_DIR [--dry-run|--cpu-dry-run]}"
mode="${2:-}"
case "$mode" in "" | --dry-run | --cpu-dry-run) ;; *)
  echo "device-check: unknown mode '$mode'; use --dry-run, --cpu-dry-run or nothing" >&2
  exit 2
  ;;
esac
mkdir -p "$out"
out="$(cd "$out" && pwd)"
rm -f "$out/summary.txt" "$out/device-check.tar.gz"
summary="$out/summary.txt"
: > "$summary"
work="$(mktemp -d /tmp/mlpo-device-check.XXXXXX)"
start=$(date +%s)
budget="${MLPO_DEVICE_CHECK_BUDGET_S:-360}"
deadline=$((start + budget))
failed=0
elapsed() { echo "$(($(date +%s) - start))s"; }
note() { echo "device-check: $*" | tee -a "$summary"; }
pack() {  # everything in $work but the programs and the token files (a few MiB at most)
  tar -C "$work" --exclude=./bundle --exclude=./programs --exclude='*.tokens' -czf "$out/.device-check.tar.gz.part" . \
    2>/dev/null && mv "$out/.device-check.tar.gz.part" "$out/device-check.tar.gz"
}
finish() {
  pack
  rm -rf "$work" "$root/out/device-check-scratch" /dev/shm/mlpo-device-check
}
trap finish EXIT
trap 'note "interrupted after $(elapsed)"; exit 130' INT TERM

dry=0 cpu_dry=0
[ "$mode" = "--dry-run" ] && dry=1
[ "$mode" = "--cpu-dry-run" ] && cpu_dry=1

# ---- preflight: what this machine has, in the first seconds ---------------------------------
# find_library NAME: the directory of the first NAME on the loader's path, the CUDA toolkit or
# a Python wheel (PyTorch's nvidia-* packages carry cuBLAS and NCCL).
find_library() {
  local name="$1" path
  path=$(ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n {print $NF; exit}')
  [ -n "$path" ] || path=$(find /usr/local/cuda/ /usr/local/cuda-*/ -name "$name" 2>/dev/null | head -1)
  [ -n "$path" ] || path=$(find /opt /usr/local/lib /usr/lib -maxdepth 10 -name "$name" 2>/dev/null | head -1)
  [ -n "$path" ] && dirname "$path"
}
gpu="none"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  gpu="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
  nvidia-smi > "$work/nvidia-smi.txt" 2>&1
fi
note "preflight: GPU: $gpu"
nvcc_bin="$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)"
note "preflight: nvcc: $([ -n "$nvcc_bin" ] && "$nvcc_bin" --version | grep -o 'release [0-9.]*' || echo missing)"
cublaslt_dir="$(find_library libcublasLt.so.13)"
nccl_dir="$(find_library libnccl.so.2)"
cudart_dir="$(find_library libcudart.so.13)"
note "preflight: libcublasLt.so.13: ${cublaslt_dir:-MISSING (every GEMM needs it)}; libnccl.so.2: ${nccl_dir:-missing (nccl stage skipped)}"
sanitizer="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)"
note "preflight: compute-sanitizer: ${sanitizer:-missing (sanitizer stage skipped)}; pkg-config: $(command -v pkg-config >/dev/null && echo yes || echo no); cmake: $(command -v cmake >/dev/null && echo yes || echo no)"
mem_gib=$(awk '/MemAvailable/ {print int($2 / 1048576)}' /proc/meminfo)
disk_gib=$(df -P -BG "$root" | awk 'NR == 2 {print int($4)}')
note "preflight: $(nproc) cores, ${mem_gib} GiB memory available, ${disk_gib} GiB free disk; budget ${budget}s"

# ---- programs: the carried bundle, else a build here -----------------------------------------
bin=""
launcher=()
export LD_LIBRARY_PATH="${cublaslt_dir:+$cublaslt_dir:}${nccl_dir:+$nccl_dir:}${cudart_dir:+$cudart_dir:}${LD_LIBRARY_PATH:-}"
bundle_usable() {  # unpacks the bundle; sets bin and launcher when its programs start here
  local tarball="$root/.device-bundle/bundle.tar.gz" dir="$work/bundle"
  [ -f "$tarball" ] || { note "programs: no .device-bundle/bundle.tar.gz (make it with scripts/device-bundle.sh)"; return 1; }
  mkdir -p "$dir" && tar -C "$dir" -xzf "$tarball" || { note "programs: the bundle does not unpack"; return 1; }
  cp "$dir/MANIFEST" "$work/bundle-manifest.txt" 2>/dev/null
  export LD_LIBRARY_PATH="$dir/lib:$LD_LIBRARY_PATH"
  if "$dir/bin/mlpo-run" --version > "$work/bundle-start.log" 2>&1; then
    bin="$dir/bin"
    note "programs: the bundle ($(head -1 "$dir/MANIFEST" 2>/dev/null)) starts with this machine's C library"
    return 0
  fi
  # An older C library than the bundle was built against: run through the bundle's own loader.
  if "$dir/glibc/ld-linux-x86-64.so.2" --library-path "$dir/glibc:$LD_LIBRARY_PATH" "$dir/bin/mlpo-run" --version \
    >> "$work/bundle-start.log" 2>&1; then
    bin="$dir/bin"
    launcher=("$dir/glibc/ld-linux-x86-64.so.2" --library-path "$dir/glibc:$LD_LIBRARY_PATH")
    note "programs: the bundle starts through its own C library (this machine's is older)"
    return 0
  fi
  note "programs: the bundle's mlpo-run does not start here: $(tail -1 "$work/bundle-start.log")"
  return 1
}
build_here() {  # configures and builds build/device on this machine; sets bin
  local prefix_args=()
  if [ -d .debs ] && compgen -G ".debs/*.deb" >/dev/null; then
    local prefix="$root/.deps-root"
    rm -rf "$prefix" && mkdir -p "$prefix"
    for deb in .debs/*.deb; do dpkg -x "$deb" "$prefix"; done
    find "$prefix" -name '*.pc' -exec sed -i -E "s#^([a-z_]+)=/usr#\1=$prefix/usr#" {} +
    local arch_lib="$prefix/usr/lib/x86_64-linux-gnu"
    export PKG_CONFIG_PATH="$arch_lib/pkgconfig:$arch_lib/openblas-pthread/pkgconfig:$prefix/usr/share/pkgconfig"
    export LD_LIBRARY_PATH="$arch_lib:$arch_lib/openblas-pthread:$LD_LIBRARY_PATH"
    prefix_args=(-DCMAKE_PREFIX_PATH="$prefix/usr" -DOPENSSL_ROOT_DIR="$prefix/usr")
  fi
  local missing=()
  for tool in cmake ninja pkg-config; do command -v $tool >/dev/null || missing+=("$tool"); done
  [ -n "$nvcc_bin" ] || missing+=(nvcc)
  [ ${#missing[@]} = 0 ] || { note "programs: cannot build here, missing: ${missing[*]}"; return 1; }
  note "programs: building build/device here (sm_90)"
  if ! cmake -S . -B build/device -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DMLPO_MPI=OFF \
    "${prefix_args[@]}" > "$work/configure.log" 2>&1; then
    note "programs: configure FAILED ($(grep -m1 -i error "$work/configure.log"))"
    return 1
  fi
  if ! cmake --build build/device -j "$(nproc)" --target cuda_tests kernels_ops_tests cuda_model_bench \
    cuda_attention_bench mlpo-run mlpo-profile profiles_tests comm_nccl_tests > "$work/build.log" 2>&1; then
    note "programs: build FAILED ($(grep -m1 -E 'error|FAILED' "$work/build.log"))"
    return 1
  fi
  mkdir -p "$work/programs"
  for p in tests/kernels/cuda/cuda_tests tests/kernels/kernels_ops_tests bench/model/cuda_model_bench \
    bench/model/cuda_attention_bench cli/mlpo-run cli/mlpo-profile tests/profiles/profiles_tests \
    tests/executor/comm/comm_nccl_tests; do
    [ -x "build/device/$p" ] && ln -sf "$root/build/device/$p" "$work/programs/"
  done
  bin="$work/programs"
  note "programs: built in $(elapsed)"
}
if [ $dry = 1 ]; then
  note "programs: none needed (dry run)"
elif [ $cpu_dry = 1 ]; then
  [ -x build/release/cli/mlpo-run ] || { note "--cpu-dry-run needs a release build (scripts/build.sh release)"; exit 1; }
  mkdir -p "$work/programs"
  for p in cli/mlpo-run cli/mlpo-profile bench/model/model_bench tests/profiles/profiles_tests; do
    ln -sf "$root/build/release/$p" "$work/programs/"
  done
  bin="$work/programs"
  note "programs: build/release, stages with tiny sizes and --backend cpu"
else
  bundle_usable || build_here || { note "no programs to run: carry .device-bundle (scripts/device-bundle.sh) or the build's tools"; exit 1; }
fi
# run PROGRAM ARGS...: a program of $bin, through the bundle's loader when it needs one.
run() {
  local program="$1"
  shift
  "${launcher[@]}" "$BIN/$program" "$@"
}
export BIN="$bin" WORK="$work" ROOT="$root" DRY="$cpu_dry" BACKEND=cuda
[ $cpu_dry = 1 ] && BACKEND=cpu
export -f run
launcher_decl="$(declare -p launcher)"
export LAUNCHER_DECL="$launcher_decl"

# ---- stages ----------------------------------------------------------------------------------
# stage NAME BOX OPTIONAL WHY_SKIP COMMAND...: runs COMMAND (output to NAME.log in the archive)
# within min(BOX, what is left of the budget); WHY_SKIP non-empty skips it with that reason.
stage() {
  local name="$1" box="$2" optional="$3" why_skip="$4"
  shift 4
  local left=$((deadline - $(date +%s) - 5)) label="stage $name"
  [ "$optional" = optional ] && label="stage $name (optional)"
  if [ -n "$why_skip" ]; then
    note "$label: SKIPPED ($why_skip)"
    [ "$optional" = optional ] || [ $dry = 1 ] || failed=1
    return 0
  fi
  if [ "$left" -lt 15 ]; then
    note "$label: SKIPPED (the ${budget}s budget is spent)"
    [ "$optional" = optional ] || failed=1
    return 0
  fi
  [ "$box" -gt "$left" ] && box=$left
  local t0 status=0
  t0=$(date +%s)
  timeout --kill-after=5 "$box" "$@" > "$work/$name.log" 2>&1 || status=$?
  local took=$(($(date +%s) - t0))
  if [ $status = 0 ]; then
    note "$label: PASSED (${took}s)"
  elif [ $status = 124 ] || [ $status = 137 ]; then
    note "$label: TIMED OUT after ${box}s (see $name.log in the archive)"
    [ "$optional" = optional ] || failed=1
  else
    note "$label: FAILED, status $status (${took}s; see $name.log in the archive)"
    tail -12 "$work/$name.log" | sed 's/^/    /'
    [ "$optional" = optional ] || failed=1
  fi
  pack
}

# gtest NAME PROGRAM ARGS...: a GoogleTest program with its XML report; when it fails or dies,
# every test that did not pass runs again alone with CUDA_LAUNCH_BLOCKING=1 and
# MLPO_CUDA_SYNC_CHECK=1, so a fault that poisons the CUDA context cannot hide the other tests'
# results, and the faulting kernel names itself. Fails when the first run failed.
gtest() {
  local name="$1" program="$2"
  shift 2
  eval "$LAUNCHER_DECL"
  local status=0
  run "$program" "$@" --gtest_output="xml:$WORK/$name.xml" || status=$?
  [ $status = 0 ] && return 0
  echo "=== $name exited with status $status: each test that did not pass, alone"
  run "$program" "$@" --gtest_list_tests > "$WORK/$name.list" 2>/dev/null
  python3 - "$WORK/$name.list" "$WORK/$name.xml" > "$WORK/$name.rerun" <<'PY'
import sys, xml.etree.ElementTree as ET
tests, suite = [], None  # --gtest_list_tests: "Suite." lines, then "  Name  # comment" lines
for line in open(sys.argv[1]):
    words = line.split()
    if not words:
        continue
    if not line.startswith(" "):
        suite = words[0] if words[0].endswith(".") else None
    elif suite:
        tests.append(suite + words[0])
passed = set()
try:
    for case in ET.parse(sys.argv[2]).getroot().iter("testcase"):
        if case.find("failure") is None and case.get("result", "completed") == "completed":
            passed.add(case.get("classname") + "." + case.get("name"))
except Exception:
    pass  # a run that died wrote no report: rerun everything
print("\n".join(t for t in tests if t not in passed))
PY
  local t
  while read -r t; do
    [ -n "$t" ] || continue
    if CUDA_LAUNCH_BLOCKING=1 MLPO_CUDA_SYNC_CHECK=1 timeout 60 bash -c "$LAUNCHER_DECL; run \"$program\" --gtest_filter=\"$t\"" \
      > "$WORK/$name.rerun.log" 2>&1; then
      echo "alone: $t passed"
    else
      echo "alone: $t FAILED:"
      grep -E "Failure|error|Error|Expected|Which is|actual" "$WORK/$name.rerun.log" | head -8 | sed 's/^/    /'
    fi
  done < "$WORK/$name.rerun"
  return 1
}
export -f gtest

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

# cuda-tests ------------------------------------------------------------------------------------
cuda_tests() {
  local status=0
  gtest cuda-tests cuda_tests || status=1
  gtest kernels-ops-tests kernels_ops_tests --gtest_filter='*Cuda*' || status=1
  # Without a usable GPU every CUDA test skips: that is a failure here.
  if grep -q 'result="skipped"' "$WORK"/cuda-tests.xml "$WORK"/kernels-ops-tests.xml 2>/dev/null; then
    echo "CUDA tests were SKIPPED (no usable GPU?)"
    status=1
  fi
  python3 - "$WORK"/cuda-tests.xml "$WORK"/kernels-ops-tests.xml <<'PY'
import sys, xml.etree.ElementTree as ET
for path in sys.argv[1:]:
    try:
        r = ET.parse(path).getroot()
        print(f"{path.rsplit('/', 1)[1]}: {r.get('tests')} tests, {r.get('failures')} failed, "
              f"{r.get('disabled')} disabled, {r.get('time')} s")
    except Exception as e:
        print(f"{path.rsplit('/', 1)[1]}: no report ({e})")
PY
  return $status
}
export -f cuda_tests

# train-small: the same 50 steps on the GPU (both attention paths, one after the other) and on
# the CPU backend, side by side; each GPU curve against the CPU's.
train_small() {
  eval "$LAUNCHER_DECL"
  local steps=50 seq=256 mb=4 model=small tail=10 cores
  [ "$DRY" = 1 ] && { steps=6; seq=32; mb=2; model=tiny; tail=2; }
  cores=$(nproc)
  run mlpo-run prepare-data --input "$ROOT/README.md" "$ROOT/docs" "$ROOT/core" "$ROOT/executor" "$ROOT/kernels" \
    --out "$WORK/train-small.tokens" || return 1
  write_plan "$WORK/train-small-plan.json" "$model" 1048576 1.0 || return 1
  local common=(--model "$model" --data "$WORK/train-small.tokens" --plan "$WORK/train-small-plan.json" --steps "$steps"
    --seq-len "$seq" --micro-batch "$mb" --lr 3e-3 --warmup-steps 5 --seed 7 --quiet)
  local paths=(gemm fused)
  [ "$DRY" = 1 ] && paths=(dry)  # the dry run's stand-in for the GPU runs, on the CPU
  (
    for p in "${paths[@]}"; do
      local extra=(--backend "$BACKEND" --attention "$p")
      [ "$DRY" = 1 ] && extra=(--backend cpu)
      run mlpo-run "${common[@]}" "${extra[@]}" --threads 2 --blas-threads 1 \
        --log "$WORK/train-small-$p.jsonl" > "$WORK/train-small-$p.out" 2>&1 || exit 1
    done
  ) &
  local gpu_pid=$!
  local threads=$((cores > 4 ? cores - 2 : 2))
  run mlpo-run "${common[@]}" --backend cpu --threads $threads --blas-threads $threads \
    --log "$WORK/train-small-cpu.jsonl" > "$WORK/train-small-cpu.out" 2>&1
  local cpu_status=$? status=0
  wait $gpu_pid || status=1
  for p in "${paths[@]}" cpu; do
    echo "--- $p run"
    cat "$WORK/train-small-$p.out"
  done
  [ $status = 0 ] && [ $cpu_status = 0 ] || return 1
  for p in "${paths[@]}"; do
    echo "--- $p against the CPU backend"
    python3 "$ROOT/scripts/compare-loss-curves.py" "$WORK/train-small-$p.jsonl" "$WORK/train-small-cpu.jsonl" --tail "$tail" |
      sed "s/^/$p: /" || status=1
    python3 - "$WORK/train-small-$p.jsonl" "$p" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])][1:]  # step 1 includes start-up
mean = lambda k: sum(r[k] for r in recs) / len(recs)
print(f"train-small {sys.argv[2]}: mean over steps 2..: step {mean('step_s'):.3f} s, forward {mean('forward_s'):.3f}, "
      f"backward {mean('backward_s'):.3f} (gradient copy wait {mean('gradient_copy_wait_s'):.4f}), "
      f"update {mean('update_s'):.3f}, weights to device after the update {mean('weights_to_device_s'):.4f} s")
PY
  done
  return $status
}
export -f train_small

# mfu: attention alone on both paths, then the ~0.9B model on both (the bench runs the memory
# check first and refuses a model that does not fit).
mfu() {
  eval "$LAUNCHER_DECL"
  local status=0
  if [ "$DRY" = 1 ]; then
    run model_bench --layers 2 --batch 1 --steps 1 || return 1
    return 0
  fi
  run cuda_attention_bench --reps 5 || status=1
  for p in gemm fused; do
    echo "--- cuda_model_bench --attention $p"
    run cuda_model_bench --steps 5 --peak-tflops 989 --attention "$p" || status=1
  done
  return $status
}
export -f mfu

# offload: a model whose bf16 weights exceed the GPU memory the run may use (--gpu-memory-limit):
# refused up front without --param-offload (exit 2, bytes needed vs available), then 2 steps
# with it, the optimizer state 90 % in host memory and 10 % in a disk tier.
offload() {
  eval "$LAUNCHER_DECL"
  local model="${MLPO_DEVICE_CHECK_OFFLOAD_MODEL:-1b}" limit=1536MiB seq=1024 subgroup=16777216
  [ "$model" = llama2-7b ] && limit=8GiB
  [ "$DRY" = 1 ] && { model=tiny; limit=0; seq=32; subgroup=65536; }
  local state="$ROOT/out/device-check-scratch/state"
  rm -rf "$state" && mkdir -p "$state/disk" || return 1
  run mlpo-run prepare-data --input "$ROOT/README.md" "$ROOT/docs" --out "$WORK/offload.tokens" || return 1
  write_plan "$WORK/offload-plan.json" "$model" "$subgroup" 0.9 "$state/disk" || return 1
  local common=(--model "$model" --data "$WORK/offload.tokens" --plan "$WORK/offload-plan.json" --seq-len "$seq"
    --micro-batch 1 --steps 2 --backend "$BACKEND")
  [ "$limit" != 0 ] && common+=(--gpu-memory-limit "$limit")
  local status=0
  if [ "$DRY" != 1 ]; then
    echo "--- without --param-offload: must be refused up front (exit 2, bytes needed vs available)"
    run mlpo-run "${common[@]}" --quiet
    local refused=$?
    if [ $refused != 2 ]; then
      echo "offload: expected exit 2 from the memory check, got $refused"
      status=1
    fi
  fi
  echo "--- with --param-offload"
  run mlpo-run "${common[@]}" --param-offload --log "$WORK/offload.jsonl" || status=1
  rm -rf "$state"
  [ -s "$WORK/offload.jsonl" ] && python3 - "$WORK/offload.jsonl" "$model" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    fb = r.get("weight_fetch_bytes", 0)
    fwbw = r["forward_s"] + r["backward_s"]
    tiers = ", ".join(f"{t['name']} read {t['read_bytes'] / 2**30:.1f} GiB write {t['write_bytes'] / 2**30:.1f} GiB" for t in r["tiers"])
    print(f"offload {sys.argv[2]} step {r['step']}: step {r['step_s']:.2f} s = forward {r['forward_s']:.2f} + backward {r['backward_s']:.2f} "
          f"(gradient copy wait {r['gradient_copy_wait_s']:.3f}) + update {r['update_s']:.2f} (adam {r['adam_s']:.2f}, "
          f"stall {r['prefetch_stall_s']:.2f}) + weights {r['weights_to_device_s']:.3f} s; weights fetched "
          f"{fb / 2**30:.1f} GiB ({fb / max(fwbw, 1e-9) / 1e9:.1f} GB/s over forward+backward, {r['weight_demand_fetches']} demand fetches); "
          f"{tiers}; loss {r['loss']:.4f}")
PY
  return $status
}
export -f offload

# nccl: the communicator's own tests, then training with its reductions through NCCL.
nccl() {
  eval "$LAUNCHER_DECL"
  local status=0
  gtest nccl-tests comm_nccl_tests || status=1
  run mlpo-run prepare-data --input "$ROOT/README.md" --out "$WORK/nccl.tokens" || return 1
  run mlpo-run --model tiny --data "$WORK/nccl.tokens" --steps 3 --seq-len 32 --backend cuda --comm nccl \
    --state-dir "$ROOT/out/device-check-scratch/nccl" --log "$WORK/nccl.jsonl" || status=1
  rm -rf "$ROOT/out/device-check-scratch/nccl"
  return $status
}
export -f nccl

# profile: the GPU probes of mlpo-profile, a --quick profile of this machine, and the profiles tests.
profile() {
  eval "$LAUNCHER_DECL"
  # --model 1b: the model's widths set the GEMM and CPU-backend probes; llama2-7b's CPU forward/backward
  # alone took 60 s of the first device run (2026-12-04).
  local status=0 disk="$ROOT/out/device-check-scratch/tier" shm=/dev/shm/mlpo-device-check size=() model=1b
  mkdir -p "$disk" "$shm"
  [ "$DRY" = 1 ] && size=(--tier-size 16MiB --host-size 16MiB --reps 1 --streams 1) model=tiny
  run mlpo-profile --quick "${size[@]}" --tier "disk=$disk" --tier "shm=$shm" --model "$model" \
    --notes "GPU device check ($(hostname))" --out "$WORK/profile.json" || status=1
  rm -rf "$disk" "$shm"
  if [ "$DRY" = 1 ]; then
    gtest profiles-tests profiles_tests --gtest_filter='-*Slow*' || status=1
  else
    gtest profiles-tests profiles_tests || status=1
  fi
  return $status
}
export -f profile

# sanitizer: memcheck over the op tests (both attention paths), then racecheck over the attention
# tests (the kernels that share memory) when MLPO_DEVICE_CHECK_RACECHECK=1 (70 s on an H200).
sanitizer() {
  local status=0 s="$SANITIZER"
  "$s" --tool memcheck --error-exitcode 3 "$BIN/cuda_tests" --gtest_filter='Ops.*' --gtest_brief=1 || status=1
  if [ "${MLPO_DEVICE_CHECK_RACECHECK:-0}" = 1 ]; then
    "$s" --tool racecheck --error-exitcode 3 "$BIN/cuda_tests" --gtest_filter='Ops.Attention*:Ops.GemmAttention*' \
      --gtest_brief=1 || status=1
  fi
  return $status
}
export -f sanitizer
export SANITIZER="$sanitizer"

gpu_skip=""
[ $dry = 1 ] && gpu_skip="dry run: no GPU needed, none used"
nccl_skip="$gpu_skip"
[ -z "$nccl_skip" ] && [ $cpu_dry = 1 ] && nccl_skip="--cpu-dry-run: NCCL needs a GPU"
[ -z "$nccl_skip" ] && [ -z "$nccl_dir" ] && nccl_skip="no libnccl.so.2 on this machine"
[ -z "$nccl_skip" ] && [ -n "$bin" ] && [ ! -e "$bin/comm_nccl_tests" ] && nccl_skip="comm_nccl_tests not built (no NCCL at build time)"
cuda_skip="$gpu_skip"
[ -z "$cuda_skip" ] && [ $cpu_dry = 1 ] && cuda_skip="--cpu-dry-run: the CUDA tests need a GPU"
sanitizer_skip="$cuda_skip"
[ -z "$sanitizer_skip" ] && [ -z "$sanitizer" ] && sanitizer_skip="no compute-sanitizer on this machine"
[ -z "$sanitizer_skip" ] && [ ${#launcher[@]} -gt 0 ] && sanitizer_skip="the bundle runs through its own loader"

note "plan: cuda-tests (box 100 s), train-small (90 s), mfu (90 s), offload (75 s), nccl (40 s), profile (90 s), sanitizer (optional, 120 s)"
stage cuda-tests 100 required "$cuda_skip" bash -c cuda_tests
grep -E "^(cuda-tests|kernels-ops-tests)\.xml:|^alone:" "$work/cuda-tests.log" 2>/dev/null | sed 's/^/  /' | tee -a "$summary"
stage train-small 90 required "$gpu_skip" bash -c train_small
grep -E "loss curves|worst step|^train-small |: (PASS|FAIL)" "$work/train-small.log" 2>/dev/null | sed 's/^/  /' | tee -a "$summary"
stage mfu 90 required "$gpu_skip" bash -c mfu
grep -E "^(gemm|fused) |^throughput|^forward|^init|^device" "$work/mfu.log" 2>/dev/null | sed 's/^/  /' | tee -a "$summary"
stage offload 75 required "$gpu_skip" bash -c offload
grep -E "^offload .* step|^device:|needs" "$work/offload.log" 2>/dev/null | head -6 | sed 's/^/  /' | tee -a "$summary"
stage nccl 40 required "$nccl_skip" bash -c nccl
stage profile 90 required "$gpu_skip" bash -c profile
[ -s "$work/profile.json" ] && python3 - "$work/profile.json" <<'PY' | tee -a "$summary"
import json, sys
p = json.load(open(sys.argv[1]))
med = lambda m: m.get("median", m.get("value")) if isinstance(m, dict) else m
for g in p.get("gpus", []):
    print(f"  profile: {g.get('count')} x {g.get('model')}: bf16 GEMM {med(g.get('bf16_tflops', {}))} TFLOP/s, HBM copy "
          f"{med(g.get('hbm_gbps', {}))} GB/s, H2D {med(g.get('h2d_gbps', {}))} GB/s, D2H {med(g.get('d2h_gbps', {}))} GB/s, "
          f"both {med(g.get('bidirectional_gbps', {}))} GB/s")
PY
stage sanitizer 120 optional "$sanitizer_skip" bash -c sanitizer
grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$work/sanitizer.log" 2>/dev/null | sed 's/^/  /' | tee -a "$summary"

if [ $dry = 1 ]; then
  note "total $(elapsed): dry run, every stage SKIPPED; the plumbing worked"
  exit 0
fi
note "total $(elapsed) of ${budget}s; $([ $failed = 0 ] && echo PASSED || echo 'NOT PASSED (a stage failed or was skipped)')"
exit $failed
