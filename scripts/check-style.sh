#!/usr/bin/env bash
# The house rules, checked (docs/architecture.md, "House rules"):
#   1. every C++/CUDA file is as .clang-format formats it;
#   2. no line is longer than 110 columns (characters, not bytes);
#   3. no function outside tests/ and bench/ is longer than 120 lines (clang-tidy's
#      readability-function-size over the build's compile_commands.json; .cu files are not
#      parsed by clang-tidy and are left out of this rule);
#   4. a module's internal headers (MODULE/internal/*, docs/architecture.md "Public and internal
#      headers") are included only from that module and its tests (tests/MODULE/...).
#
#   scripts/check-style.sh [BUILD_DIR]      default build/release (configured: it needs
#                                           compile_commands.json for rule 3)
#   scripts/check-style.sh --no-functions   rules 1 and 2 only (no build needed; seconds)
# Exits 1 listing every offence with file:line, 0 when the tree keeps all four.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build/release; functions=1
for a in "$@"; do
  case "$a" in
    --no-functions) functions=0 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) build=$a ;;
  esac
done
mapfile -t sources < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.h')
bad=0

if ! out=$(clang-format --dry-run --Werror "${sources[@]}" 2>&1); then
  echo "$out" | grep -E '^[^ ].*: (error|warning):' | sed 's/: error: code should be clang-formatted.*/: not clang-formatted (run clang-format -i)/' | sort -u
  bad=1
fi

if long=$(LC_ALL=C.UTF-8 grep -nP '^.{111,}$' "${sources[@]}"); then
  echo "$long" | cut -d: -f1,2 | sed 's/$/: longer than 110 columns/'
  bad=1
fi

# Rule 4: "A/B/internal/x.hpp" may be included from A/B/... and tests/A/B/... only.
if leaks=$(grep -n -E '^\s*#\s*include\s+"[^"]+/internal/' "${sources[@]}" | awk -F: '{
    file = $1; inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*$/, "", inc)
    owner = inc; sub(/\/internal\/.*$/, "", owner)
    from = file; sub(/^tests\//, "", from)
    if (index(from, owner "/") != 1) print file ":" $2 ": includes " inc ", internal to " owner "/"
  }') && [ -n "$leaks" ]; then
  echo "$leaks"
  bad=1
fi

if [ "$functions" = 1 ]; then
  [ -f "$build/compile_commands.json" ] || { echo "check-style: no $build/compile_commands.json (configure first: scripts/build.sh, or pass --no-functions)" >&2; exit 2; }
  mapfile -t units < <(git ls-files '*.cpp' | grep -v -E '^(tests|bench)/')
  config='{Checks: "-*,readability-function-size", CheckOptions: [{key: readability-function-size.LineThreshold, value: 120}]}'
  if long=$(printf '%s\n' "${units[@]}" | xargs -P "$(nproc)" -n 8 clang-tidy -p "$build" --quiet --config="$config" 2>/dev/null \
            | grep -E 'warning: function .* exceeds'); then
    echo "$long" | sed -E 's/: warning: function (.*) exceeds.*/: function \1 is longer than 120 lines/' | sort -u
    bad=1
  fi
fi

rules="clang-format, 110 columns, internal headers"
[ "$functions" = 1 ] && rules="$rules, functions <= 120 lines"
if [ "$bad" = 0 ]; then echo "check-style: $rules: all ${#sources[@]} files keep the house rules"; fi
exit "$bad"
