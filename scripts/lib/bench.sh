# shellcheck shell=bash
# What the scripts that run the tools (bench-*.sh, demo.sh) share besides their options
# (scripts/lib/options.sh): installing and building, the checks that the tools are built and
# that the testbed is up, a private /dev/shm directory, and the facts a report starts with.
# Sourced, never run, from the repository root; NAME is the calling script's name, which starts
# every message, and each check exits 2 on stderr when it fails.

# install_and_build: installs the Debian packages that are missing (scripts/setup.sh), builds the
# release tree (scripts/build.sh release) and sets bin to its tools' folder (absolute).
install_and_build() {
  ./scripts/setup.sh
  ./scripts/build.sh release
  bin="$PWD/build/release/cli"
}

# need_tools NAME TOOL...: sets bin to build/release/cli (absolute) and exits 2 unless every
# TOOL is built there.
need_tools() {
  local name=$1 tool; shift
  bin="$PWD/build/release/cli"
  for tool in "$@"; do
    [ -x "$bin/$tool" ] || { echo "$name: $bin/$tool is missing; run scripts/build.sh release first" >&2; exit 2; }
  done
}

# use_testbed NAME HOW_TO_START: for a script that runs on the testbed `bench` (docs/testbed.md):
# sets bin as need_tools does and exits 2 unless mlpo-run is built; sets tb to the command that
# drives the testbed (scripts/testbed.sh --name bench) and exits 2, saying "bring it up with
# HOW_TO_START", unless it is up; then reads its settings (/run/mlpo-bench/env: NODES, LINK,
# REMOTE_READ, REMOTE_WRITE, ...) into the caller's scope.
use_testbed() {
  local name=$1 how_to_start=$2
  bin="$PWD/build/release/cli"
  [ -x "$bin/mlpo-run" ] || { echo "$name: build first (scripts/build.sh release)" >&2; exit 2; }
  tb=(scripts/testbed.sh --name bench)
  { [ -f /run/mlpo-bench/env ] && "${tb[@]}" status > /dev/null 2>&1; } ||
    { echo "$name: the testbed 'bench' is not up; bring it up with $how_to_start" >&2; exit 2; }
  # shellcheck disable=SC1091
  . /run/mlpo-bench/env
}

# model_params MODEL: prints the parameter count of MODEL (a preset or an mlpo.model/1 file), as
# mlpo-tune --describe counts it.
model_params() {
  "$bin/mlpo-tune" --model "$1" --describe --json | python3 -c "import json,sys; print(json.load(sys.stdin)['params'])"
}

# machine_state: prints the load average, the time (UTC) and the commit, for a report's first line.
machine_state() {
  echo "load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
}

# private_shm NAME: sets shm to /dev/shm/mlpo-NAME-UID, which the script's exit removes (an EXIT
# trap; the directory itself is the caller's to make).
private_shm() {
  shm="/dev/shm/mlpo-$1-$(id -u)"
  trap 'rm -rf "$shm"' EXIT
}
