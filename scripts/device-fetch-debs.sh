#!/usr/bin/env bash
# Run HERE (a Debian 12 machine with network), before a device session: downloads into .debs/
# (git-ignored, carried to the GPU machine) every Debian package the build needs that a bare
# GPU machine lacks — the -dev packages of cmake/MlpoDependencies.cmake and the shared
# libraries they pull in (the ldd closure of those libraries, minus glibc/libstdc++/libgcc,
# which every Linux has). scripts/device-check.sh unpacks them with dpkg -x into a prefix.
#   ./scripts/device-fetch-debs.sh          # fetch (skips what is already in .debs/)
#   ./scripts/device-fetch-debs.sh --list   # print the package list only
set -euo pipefail
cd "$(dirname "$0")/.."

dev_packages=(
  libgtest-dev                         # GoogleTest (static libs + CMake config)
  liburing-dev liburing2               # io_uring
  libsimgrid-dev libsimgrid3.32        # the simulator
  libboost1.74-dev                     # headers SimGrid's headers include
  nlohmann-json3-dev libcli11-dev      # header-only
  libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libopenblas0  # CPU GEMM
  libssl-dev libssl3                   # SHA-256 of optimizer state
  libsentencepiece-dev libsentencepiece0  # SentencePiece tokenizers
)

# Shared libraries the runtime libraries above need, found from this machine's copies.
runtime_closure() {
  local libs=(/usr/lib/x86_64-linux-gnu/libsimgrid.so.3.32 /usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0
              /usr/lib/x86_64-linux-gnu/liburing.so.2 /usr/lib/x86_64-linux-gnu/libcrypto.so.3)
  for lib in "${libs[@]}"; do
    [ -e "$lib" ] || { echo "device-fetch-debs: $lib missing here; run scripts/setup.sh first" >&2; exit 2; }
    ldd "$lib" | awk '$3 ~ /^\// {print $3}'
  done | while read -r path; do
    real=$(readlink -f "$path")
    dpkg -S "$real" 2>/dev/null || dpkg -S "${real#/usr}" 2>/dev/null || dpkg -S "/usr$real" 2>/dev/null || true
  done | cut -d: -f1 | sort -u | grep -v -x -E 'libc6|libgcc-s1|libstdc\+\+6|libzstd1|zlib1g' || true
}

mapfile -t runtime < <(runtime_closure)
packages=($(printf '%s\n' "${dev_packages[@]}" "${runtime[@]}" | sort -u))

if [ "${1:-}" = "--list" ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

mkdir -p .debs
cd .debs
for p in "${packages[@]}"; do
  if compgen -G "${p}_*.deb" >/dev/null; then continue; fi
  apt-get download "$p" >/dev/null
  echo "device-fetch-debs: $(ls ${p}_*.deb)"
done
echo "device-fetch-debs: ${#packages[@]} packages in .debs/ ($(du -sh . | cut -f1))"
