#!/usr/bin/env bash
# Installs exactly the Debian packages MLPO's build, tests and benchmarks need.
# Idempotent: installs only what is missing, prints what it installed. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  liburing-dev          # all storage I/O (io_uring)
  libisal-dev           # CRC32C of small buffers (Intel ISA-L's crc32_iscsi)
  libsimgrid-dev        # the discrete-event simulator (SimGrid 3.32)
  nlohmann-json3-dev    # JSON formats
  libcli11-dev          # command-line front-ends
  libgtest-dev          # tests
  libopenblas-dev       # CPU GEMM for the CPU compute backend
  libssl-dev            # SHA-256 of optimizer state (state digests)
  libsentencepiece-dev  # SentencePiece tokenizers (prepare-data --tokenizer; the tests train a tiny one)
  sentencepiece         # spm_train / spm_encode: training a tokenizer (docs/training.md)
  fio                   # the I/O benchmark's reference
  libopenmpi-dev        # multi-rank runs: the MPI communicator (executor/comm)
  openmpi-bin           # mpirun, for multi-rank runs and their tests
  python3               # small helper scripts (no PyPI packages)
  clang-format          # house style (.clang-format), checked by scripts/check-style.sh
  clang-tidy            # function-size rule, checked by scripts/check-style.sh
  ccache                # cheap rebuilds in fresh build folders and git worktrees
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "setup: installed ${missing[*]}"
