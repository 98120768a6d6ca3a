#!/usr/bin/env bash
# The register, shared-memory and spill report of every CUDA kernel, for sm_90, as ptxas prints it
# with -Xptxas -v (docs/cuda.md, "Resources per kernel"). Needs nothing but nvcc: each .cu file
# is compiled alone, with the project's flags, into a throw-away object.
#
#   ./scripts/ptxas-report.sh [ARCH]      ARCH defaults to 90
# Prints one line per kernel: file, kernel (demangled, shortened), registers, spill bytes
# (stores/loads), stack frame and static shared memory. Exit 1 when any kernel spills.
set -euo pipefail
cd "$(dirname "$0")/.."
arch="${1:-90}"
nvcc="${NVCC:-/usr/local/cuda/bin/nvcc}"
[ -x "$nvcc" ] || { echo "ptxas-report: no nvcc at $nvcc (set NVCC)" >&2; exit 2; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/generated"
echo '#pragma once' > "$tmp/generated/version.hpp"
spills=0
printf '%-24s %-58s %5s %13s %6s %7s\n' file kernel regs "spill st/ld" stack smem
for cu in kernels/cuda/*.cu executor/comm/*.cu; do
  [ -e "$cu" ] || continue
  "$nvcc" -I. -I"$tmp/generated" -O3 -DNDEBUG -std=c++20 --generate-code=arch=compute_$arch,code=sm_$arch \
    -Xptxas -v -c "$cu" -o "$tmp/out.o" > "$tmp/ptxas.txt" 2>&1 || { cat "$tmp/ptxas.txt"; exit 1; }
  python3 - "$cu" "$tmp/ptxas.txt" <<'PY' || spills=1
import re, subprocess, sys
path, report = sys.argv[1], open(sys.argv[2]).read().splitlines()
spilled = False
kernel = None
for line in report:
    m = re.search(r"Compiling entry function '([^']+)'", line)
    if m:
        name = subprocess.run(["c++filt", m.group(1)], capture_output=True, text=True).stdout.strip()
        name = name.replace("(anonymous namespace)::", "")
        name = re.sub(r"^void |mlpo::(gpu|comm)::|mlpo::", "", name)
        name = re.sub(r"\(.*\)$", "", name)  # drop the parameter list
        kernel = dict(name=name[:58])
        continue
    m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
    if m and kernel is not None:
        kernel.update(stack=int(m.group(1)), st=int(m.group(2)), ld=int(m.group(3)))
        continue
    m = re.search(r"Used (\d+) registers.*?(?:(\d+) bytes smem)?$", line)
    if m and kernel is not None:
        smem = re.search(r"(\d+) bytes smem", line)
        print(f"{path.split('/')[-1]:<24} {kernel['name']:<58} {m.group(1):>5} {kernel.get('st', 0):>6}/{kernel.get('ld', 0):<6} "
              f"{kernel.get('stack', 0):>6} {smem.group(1) if smem else '0':>7}")
        spilled |= kernel.get("st", 0) > 0 or kernel.get("ld", 0) > 0
        kernel = None
sys.exit(1 if spilled else 0)
PY
done
[ $spills = 0 ] && echo "ptxas-report: no kernel spills (sm_$arch)" || echo "ptxas-report: SPILLS above (sm_$arch)"
exit $spills
