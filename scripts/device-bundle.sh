#!/usr/bin/env bash
# Builds HERE the programs the GPU device check runs and packs them, with the shared libraries a
# CUDA image lacks, into .device-bundle/bundle.tar.gz (git-ignored): carry `.device-bundle` to the
# device machine and no device time goes to a build (docs/cuda.md, "Device check").
#
#   ./scripts/device-bundle.sh            build/device (Release, sm_90, no MPI) and the bundle
#
# The bundle holds bin/ (the programs), lib/ (their libraries beyond the C library, the CUDA
# driver, cuBLASLt and NCCL: the device image has those, and cuBLASLt alone is 0.5 GB), glibc/
# (this machine's C and C++ runtime and loader, used only where the device's C library is older
# than this one's) and MANIFEST (commit, date, compiler). scripts/device-check.sh unpacks it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/device
programs=(tests/kernels/cuda/cuda_tests tests/kernels/kernels_ops_tests bench/model/cuda_model_bench
  bench/model/cuda_attention_bench cli/mlpo-run cli/mlpo-profile tests/profiles/profiles_tests
  tests/executor/comm/comm_nccl_tests)
targets=()
for p in "${programs[@]}"; do targets+=("$(basename "$p")"); done

echo "device-bundle: configuring $build (Release, sm_90, -DMLPO_MPI=OFF)"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 -DMLPO_MPI=OFF > /dev/null
echo "device-bundle: building ${targets[*]}"
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"

stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/glibc"
for p in "${programs[@]}"; do
  if [ -x "$build/$p" ]; then
    cp "$build/$p" "$stage/bin/"
  else
    echo "device-bundle: $p was not built (NCCL missing at configure time?); the check skips its stage"
  fi
done
strip --strip-debug "$stage"/bin/* 2>/dev/null || true

# Libraries: the ldd closure of every program, sorted into lib/ and glibc/; the driver, cuBLASLt
# and NCCL are left to the device (found there by the check's preflight).
ldd "$stage"/bin/* | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u | while read -r name path; do
  case "$name" in
    libcuda.so* | libnvidia* | libcublasLt.so* | libcublas.so* | libnccl.so*) ;;
    libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | libstdc++.so.* | libgcc_s.so.*)
      cp -L "$path" "$stage/glibc/$name"
      ;;
    *) cp -L "$path" "$stage/lib/$name" ;;
  esac
done
cp -L /lib64/ld-linux-x86-64.so.2 "$stage/glibc/"

{
  echo "mlpo device bundle $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!docs' || echo '+uncommitted') built $(date -u +%Y-%m-%dT%H:%MZ)"
  echo "host: $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
  echo "nvcc: $(/usr/local/cuda/bin/nvcc --version | grep -o 'release [0-9.]*, V[0-9.]*')"
  echo "programs: $(cd "$stage/bin" && echo *)"
  echo "lib: $(cd "$stage/lib" && echo *)"
} > "$stage/MANIFEST"

mkdir -p .device-bundle
tar -C "$stage" -czf .device-bundle/bundle.tar.gz.part .
mv .device-bundle/bundle.tar.gz.part .device-bundle/bundle.tar.gz
echo "device-bundle: .device-bundle/bundle.tar.gz, $(du -h .device-bundle/bundle.tar.gz | cut -f1) ($(head -1 "$stage/MANIFEST"))"
