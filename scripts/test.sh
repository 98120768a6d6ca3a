#!/usr/bin/env bash
# The README's test command: install what is missing, build, check the house rules
# (scripts/check-style.sh: clang-format, 110 columns, functions <= 120 lines), run the whole
# test suite.
#   ./scripts/test.sh            release build (CUDA backend compiled when nvcc is present)
#   ./scripts/test.sh debug      debug build with ASan/UBSan
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-release}"
./scripts/setup.sh
./scripts/build.sh "$preset"
./scripts/check-style.sh "build/$preset"
ctest --preset "$preset" -j "$(nproc)"
