#!/usr/bin/env bash
# The README's main job on a built-in default: install what is missing, build, then run the
# pipeline as far as it exists today. Output goes to ./out/demo.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh release
bin=build/release/cli
out=out/demo
mkdir -p "$out"

echo
echo "== mlpo-tune --model llama2-70b --describe"
"$bin/mlpo-tune" --model llama2-70b --describe

echo
echo "== mlpo-profile --quick   (default scratch tier: $out/scratch; writes $out/profile.json)"
mkdir -p "$out/scratch"
(root="$PWD"; cd "$out/scratch" && "$root/$bin/mlpo-profile" --quick --out ../profile.json)
echo
echo "== mlpo-run --help"
"$bin/mlpo-run" --help
