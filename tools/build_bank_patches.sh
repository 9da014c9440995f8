#!/usr/bin/env bash
# Build memlens banks' device patch (profiling/collect/banktrace/banktrace_patch.cu) for each GPU architecture
# into profiling/collect/banktrace/patches/banktrace_patch.sm_XX.fatbin: what `memlens banks -- COMMAND` uses
# on a machine without nvcc (with nvcc it builds the patch for the GPU it finds into the user's cache).
# Needs nvcc and the Sanitizer API's headers: SANITIZER=<compute-sanitizer folder> (default: the toolkit's,
# else the nvidia-cuda-sanitizer-api wheel's). CUDA 13's nvcc has no sm_70: build that one with CUDA 12's.
#
#   bash tools/build_bank_patches.sh [ARCH ...]     # default: sm_70 sm_75 sm_80 sm_86 sm_89 sm_90 sm_100
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src=$root/profiling/collect/banktrace
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
sanitizer=${SANITIZER:-}
if [ -z "$sanitizer" ]; then
  for candidate in "$(dirname "$(dirname "$nvcc")")/compute-sanitizer" \
                   "$(python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "cu13", "compute-sanitizer"))' 2>/dev/null)"; do
    if [ -f "$candidate/include/sanitizer.h" ]; then sanitizer=$candidate; break; fi
  done
fi
[ -f "$sanitizer/include/sanitizer.h" ] || { echo "no Sanitizer API headers: set SANITIZER" >&2; exit 3; }
archs=("$@")
[ ${#archs[@]} -gt 0 ] || archs=(sm_70 sm_75 sm_80 sm_86 sm_89 sm_90 sm_100)
mkdir -p "$src/patches"
for arch in "${archs[@]}"; do
  if "$nvcc" -arch="$arch" --compile-as-tools-patch -fatbin -I"$sanitizer/include" -I"$src" \
       -o "$src/patches/banktrace_patch.$arch.fatbin" "$src/banktrace_patch.cu" 2> "$src/patches/.$arch.log"; then
    echo "built $arch"
  else
    echo "skipped $arch: $(tail -1 "$src/patches/.$arch.log")"
  fi
  rm -f "$src/patches/.$arch.log"
done
"$nvcc" --version | grep -o 'release [0-9.]*' | sed "s/^/patches built with nvcc /" > "$src/patches/VERSION.txt"
echo "sanitizer headers: $(basename "$(dirname "$sanitizer")")/compute-sanitizer" >> "$src/patches/VERSION.txt"
