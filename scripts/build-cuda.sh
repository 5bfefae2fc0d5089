#!/usr/bin/env bash
# The CUDA builds of llama.cpp, for old and new NVIDIA cards: two release flavours, picked by the nvcc
# found; cudart linked statically (the artifact needs the driver's libcuda.so.1 and the cuBLAS it
# ships); each states the driver it needs.
#
#   scripts/build-cuda.sh info           nvcc, flavour, architectures, driver floor (nothing is built)
#   scripts/build-cuda.sh facts FLAVOUR  a flavour's architectures and driver floor (no nvcc needed)
#   scripts/build-cuda.sh llama          build llama.cpp's cuda flavour (scripts/llama.sh); prints its dir
#
# Flavours (scripts/install.sh carries the same table to pick one per host; a test keeps them equal):
#   cuda11  nvcc 11.x (11.2 is bullseye's)  50-virtual 61 75 86 (each with its PTX)   driver >= 450.80.02
#     Real code for Pascal (GTX 10xx, P40, P4: 6.1), Turing (T4, RTX 20xx, GTX 16xx: 7.5) and Ampere
#     (RTX 30xx, A2-A40, RTX A2000-A6000: 8.6; Ada's 8.9 runs 8.6 code too). The rest through PTX the
#     driver compiles once at first load (kept in its cache): Maxwell and P100 (5.x, 6.0) from
#     compute_50; Volta (V100: 7.0) from compute_61 — ggml's dp4a kernels, no tensor-core flash
#     attention (cuBLAS still uses the tensor cores); A100 (8.0) from compute_75 (Turing's tensor-core
#     kernels); later cards from compute_86. Why not 70 for real (yet): nvcc passes per
#     architecture are the build's cost and Volta's is the dearest (its tensor-core flash-attention
#     instances take 2.6x Ampere's); a probe's estimate put it past 90 minutes, but this list's
#     build took 44 min on two cores, so a real 70 (about 60 min, docs/RELEASING.md) is the next step.
#   cuda13  nvcc 13.x                       75 (with its PTX), 86-real             driver >= 580.65.06
#     Turing … Blackwell (CUDA 13 dropped Maxwell, Pascal and Volta). Real code for Turing (7.5) and
#     Ampere/Ada (8.6, 8.9); A100 (8.0), Hopper and Blackwell from compute_75's PTX, compiled by the
#     driver at first load (Turing's tensor-core kernels). Two nvcc passes: CUDA 13 takes ~27 min
#     per architecture over ggml-cuda on two cores, so CUDA 13's default seven would take hours; a
#     datacenter build names its own (CUDA_ARCHITECTURES="80-real;90-real;100-real").
#   (nvcc 12.x builds a developer-only cuda12: 50-virtual 61 70 75 80 86 89 90 [100 120 with 12.8+],
#    driver >= 525.60.13; no release flavour.)
# "NN" is real code for that architecture (and later minor revisions of its major: 8.6 code runs on
# 8.9); "NN-virtual" is PTX the driver compiles for any later card. Override: CUDA_ARCHITECTURES="75-real".
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "[build-cuda] error: $*" >&2; exit 1; }

flavour_facts() {  # flavour → FLAVOUR_ARCHS, FLAVOUR_DRIVER
    case "$1" in
        cuda11) FLAVOUR_ARCHS="50-virtual;61;75;86"; FLAVOUR_DRIVER=450.80.02 ;;
        cuda12) FLAVOUR_ARCHS="50-virtual;61-real;70-real;75-real;80-real;86-real;89-real;90-real;90-virtual"
                [ "${minor:-0}" -lt 8 ] || FLAVOUR_ARCHS="${FLAVOUR_ARCHS%;90-virtual};100-real;120-real;120-virtual"
                FLAVOUR_DRIVER=525.60.13 ;;
        cuda13) FLAVOUR_ARCHS="75;86-real"; FLAVOUR_DRIVER=580.65.06 ;;
        *) die "unknown CUDA flavour '$1' (cuda11, cuda13)" ;;
    esac
}

if [ "${1:-}" = facts ]; then
    flavour_facts "${2:?usage: $0 facts cuda11|cuda13}"
    printf 'cuda_architectures=%s\ncuda_driver_floor=%s\n' "$FLAVOUR_ARCHS" "$FLAVOUR_DRIVER"
    exit 0
fi

nvcc=$(command -v nvcc || true)
[ -n "$nvcc" ] || for c in /usr/local/cuda/bin/nvcc /usr/local/cuda-*/bin/nvcc; do [ -x "$c" ] && { nvcc=$c; break; }; done
[ -n "$nvcc" ] || die "nvcc not found (PATH, /usr/local/cuda): install the CUDA toolkit (11.2 or newer)"
export PATH="$(dirname "$nvcc"):$PATH"
cuda_version=$("$nvcc" --version | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p' | head -1)
[ -n "$cuda_version" ] || die "cannot read the version of $nvcc"
major=${cuda_version%%.*}
minor=${cuda_version#*.}
if [ "$major" -lt 11 ] || { [ "$major" -eq 11 ] && [ "$minor" -lt 2 ]; }; then die "CUDA $cuda_version is too old: 11.2 or newer is needed"; fi
[ "$major" -le 13 ] || die "CUDA $cuda_version is newer than this script knows (11, 12, 13): set CUDA_ARCHITECTURES and extend flavour_facts"
flavour=cuda$major
flavour_facts "$flavour"
archs=${CUDA_ARCHITECTURES:-$FLAVOUR_ARCHS}
driver_floor=$FLAVOUR_DRIVER

cmd=${1:-info}
case "$cmd" in
    info)
        echo "nvcc=$nvcc"
        echo "cuda_version=$cuda_version"
        echo "cuda_flavour=$flavour"
        echo "cuda_architectures=$archs"
        echo "cuda_driver_floor=$driver_floor"
        ;;
    llama)
        export RUSTYCAGE_CUDA_ARCHITECTURES="$archs"
        build=$(scripts/llama.sh build cuda)
        printf 'cuda_flavour=%s\ncuda_version=%s\ncuda_architectures=%s\ncuda_driver_floor=%s\n' "$flavour" "$cuda_version" "$archs" "$driver_floor" >"$build/cuda-build.env"
        echo "$build"
        ;;
    *) die "usage: $0 info|facts FLAVOUR|llama" ;;
esac
