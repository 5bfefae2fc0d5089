#!/usr/bin/env bash
# The CUDA build of llama.cpp, for old and new NVIDIA cards: picks CMAKE_CUDA_ARCHITECTURES by the nvcc
# it finds, links cudart statically (the artifact needs the driver's libcuda.so.1 and the cuBLAS it
# ships), and states the driver the result needs.
#
#   scripts/build-cuda.sh info     nvcc version, architectures, driver floor (nothing is built)
#   scripts/build-cuda.sh llama    build llama.cpp's cuda flavour (scripts/llama.sh); prints its dir
#
# Architectures (override: CUDA_ARCHITECTURES="75-real"):
#   CUDA 11.8 – 12.7   50-virtual 61 70 75 80 86 89 90, 90-virtual   Maxwell (PTX) … Hopper; Pascal and
#                                                                    Volta (61, 70) compiled for real
#   CUDA 12.8 – 12.9   the same plus 100 and 120, 120-virtual         … Blackwell
#   CUDA 13.x          75 80 86 89 90 100 120, 120-virtual            Turing … Blackwell (13 dropped
#                                                                    Maxwell, Pascal and Volta)
# "NN" is real code for that architecture; "NN-virtual" is PTX the driver compiles for newer cards.
# Driver floor (CUDA's minor-version compatibility): 11.x ≥ 450.80.02, 12.x ≥ 525.60.13,
# 13.x ≥ 580.65.06.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "[build-cuda] error: $*" >&2; exit 1; }

nvcc=$(command -v nvcc || true)
[ -n "$nvcc" ] || for c in /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc; do [ -x "$c" ] && { nvcc=$c; break; }; done
[ -n "$nvcc" ] || die "nvcc not found (PATH, /usr/local/cuda): install the CUDA toolkit (11.8 or newer)"
export PATH="$(dirname "$nvcc"):$PATH"
cuda_version=$("$nvcc" --version | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -1)
[ -n "$cuda_version" ] || die "cannot read the version of $nvcc"
major=${cuda_version%%.*}
minor=${cuda_version#*.}

if [ -n "${CUDA_ARCHITECTURES:-}" ]; then
    archs=$CUDA_ARCHITECTURES
elif [ "$major" -ge 13 ]; then
    archs="75-real;80-real;86-real;89-real;90-real;100-real;120-real;120-virtual"
elif [ "$major" -eq 12 ] && [ "$minor" -ge 8 ]; then
    archs="50-virtual;61-real;70-real;75-real;80-real;86-real;89-real;90-real;100-real;120-real;120-virtual"
elif [ "$major" -eq 12 ] || { [ "$major" -eq 11 ] && [ "$minor" -ge 8 ]; }; then
    archs="50-virtual;61-real;70-real;75-real;80-real;86-real;89-real;90-real;90-virtual"
else
    die "CUDA $cuda_version is too old: 11.8 or newer is needed"
fi
case "$major" in
    11) driver_floor=450.80.02 ;;
    12) driver_floor=525.60.13 ;;
    *) driver_floor=580.65.06 ;;
esac

cmd=${1:-info}
case "$cmd" in
    info)
        echo "nvcc=$nvcc"
        echo "cuda_version=$cuda_version"
        echo "cuda_architectures=$archs"
        echo "cuda_driver_floor=$driver_floor"
        ;;
    llama)
        export RUSTYCAGE_CUDA_ARCHITECTURES="$archs"
        build=$(scripts/llama.sh build cuda)
        printf 'cuda_version=%s\ncuda_architectures=%s\ncuda_driver_floor=%s\n' "$cuda_version" "$archs" "$driver_floor" >"$build/cuda-build.env"
        echo "$build"
        ;;
    *) die "usage: $0 info|llama" ;;
esac
