#!/usr/bin/env bash
# The GPU device check, in one go (issue 5): configure with CUDA, build mlpo-profile and the
# tests, run the GPU probes (a --quick profile of this machine: GPUs, host, a disk tier and
# /dev/shm) and every CUDA test, and write the profile and all logs to OUT_DIR. Budget: 8
# minutes on one GPU machine.
#   ./scripts/device-check.sh OUT_DIR
#
# The lent GPU machine has CUDA, cmake and ninja but none of our Debian packages and cannot
# install any. Run `./scripts/device-check.sh --fetch` here first: it downloads the .deb
# files of the build dependencies into .debs/ (git-ignored); carry .debs to the GPU machine;
# this script unpacks them with dpkg -x into .debs/root (not into /) and points CMake,
# pkg-config and the loader at it.
set -euo pipefail
cd "$(dirname "$0")/.."
debs=(liburing-dev liburing2 nlohmann-json3-dev libcli11-dev libgtest-dev googletest libgmock-dev
      libsimgrid-dev libsimgrid3.32 libboost-dev libopenblas-dev libopenblas0-pthread libopenblas-pthread-dev
      libopenblas0 libssl-dev libgfortran5)
if [ "${1:-}" = "--fetch" ]; then
  mkdir -p .debs && cd .debs && apt-get download "${debs[@]}"
  echo "device-check: fetched $(ls ./*.deb | wc -l) packages into .debs/; carry .debs to the GPU machine"
  exit 0
fi
out="${1:?usage: $0 OUT_DIR   (or $0 --fetch, on the development machine)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
exec > >(tee "$out/device-check.log") 2>&1
start=$(date +%s)
echo "# device check $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)"

prefix_args=()
if ls .debs/*.deb >/dev/null 2>&1 && ! dpkg-query -W liburing-dev >/dev/null 2>&1; then
  root="$PWD/.debs/root"
  mkdir -p "$root"
  for d in .debs/*.deb; do dpkg -x "$d" "$root"; done
  export PKG_CONFIG_PATH="$root/usr/lib/x86_64-linux-gnu/pkgconfig:$root/usr/share/pkgconfig:${PKG_CONFIG_PATH:-}"
  export PKG_CONFIG_SYSROOT_DIR="$root"
  export LD_LIBRARY_PATH="$root/usr/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu/openblas-pthread:${LD_LIBRARY_PATH:-}"
  export CPATH="$root/usr/include:$root/usr/include/x86_64-linux-gnu/openblas-pthread:${CPATH:-}"
  prefix_args=(-DCMAKE_PREFIX_PATH="$root/usr;$root/usr/lib/x86_64-linux-gnu/cmake")
  echo "device-check: using the unpacked packages in $root"
fi

build=build/device
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMLPO_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
  "${prefix_args[@]}" >"$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
grep -q "CUDA backend enabled" "$out/configure.log" || { echo "device-check: CUDA was not enabled"; exit 1; }
cmake --build "$build" -j "$(nproc)" >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
echo "device-check: built in $(( $(date +%s) - start )) s"

disk="$PWD/out/device-check-tier"
shm="/dev/shm/mlpo-device-check"
mkdir -p "$disk" "$shm"
"$build/cli/mlpo-profile" --quick --tier "disk=$disk" --tier "shm=$shm" --model llama2-7b --micro-batch 1 \
  --notes "GPU device check ($(hostname))" --out "$out/profile.json" | tee "$out/profile.txt"
rmdir "$disk" "$shm" 2>/dev/null || true
echo "device-check: profiled in $(( $(date +%s) - start )) s"

# Every CUDA test (names containing Cuda or Gpu), then the profiler's own tests.
ctest --test-dir "$build" -R 'Cuda|CUDA|Gpu|GPU' --no-tests=ignore --output-on-failure >"$out/ctest-cuda.log" 2>&1 \
  && cuda_ok=1 || cuda_ok=0
tail -5 "$out/ctest-cuda.log"
ctest --test-dir "$build" -R 'Profile|TierProbe|TierSpec|SummaryTable|CompareTable' --output-on-failure \
  >"$out/ctest-profiles.log" 2>&1 && prof_ok=1 || prof_ok=0
tail -3 "$out/ctest-profiles.log"
echo "device-check: done in $(( $(date +%s) - start )) s; CUDA tests $([ $cuda_ok = 1 ] && echo passed || echo FAILED), profiler tests $([ $prof_ok = 1 ] && echo passed || echo FAILED)"
[ $cuda_ok = 1 ] && [ $prof_ok = 1 ]
