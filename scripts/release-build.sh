#!/usr/bin/env bash
# Builds Rustycage for a release artifact and prints "BUILD_DIR SYSROOT" for
# scripts/release-package.sh. Every flavour is built inside the Debian bullseye build root
# (scripts/release-chroot.sh: glibc 2.31, gcc 10), so every artifact runs on Debian 11 / Ubuntu 20.04;
# libstdc++ 10 / libgcc and OpenSSL's libcrypto are linked statically.
#
#   scripts/release-build.sh cpu      llama.cpp's release-cpu flavour (GGML_BACKEND_DL, every CPU
#                                     variant) with the root's clang 13 (gcc 10 lacks the AMX and
#                                     AVX-VNNI flags)
#   scripts/release-build.sh vulkan   llama.cpp's vulkan flavour; Vulkan headers from
#                                     scripts/vulkan-headers.sh bound in, glslc from the root's extras
#   scripts/release-build.sh cuda11   bullseye's nvidia-cuda-toolkit 11.2 (installed in the root)
#   scripts/release-build.sh cuda13   the host's CUDA 13 toolkit, bound in read-only
#     (CUDA: scripts/build-cuda.sh picks the architectures and checks the nvcc is the flavour's)
#
# Heavy: run one at a time. Builds run under `nice` ($RUSTYCAGE_NICE, default 10; 19 for CUDA) on
# $RUSTYCAGE_JOBS cores (default: all). The root keeps each flavour's llama.cpp build and a ccache,
# so a second build recompiles what changed only.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
flavour=${1:-}
jobs=${RUSTYCAGE_JOBS:-$(nproc)}
log() { echo "[release-build] $*" >&2; }
die() { echo "[release-build] error: $*" >&2; exit 1; }

# The commit the tree is at (with -dirty when tracked files differ): the chroot cannot read the
# worktree's git metadata, so it is handed in (cmake/build_info.cmake reads RUSTYCAGE_COMMIT).
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || commit="$commit-dirty"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

nice_level=${RUSTYCAGE_NICE:-10}
binds=()          # --bind SRC:DST[:ro] for release-chroot.sh exec
envs=()           # VAR=value inside the root
cmake_opts=()     # our project's CMake options
path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
case "$flavour" in
    cpu)
        cmake_opts=(-DRUSTYCAGE_LLAMA_FLAVOUR=release-cpu)
        envs=(RUSTYCAGE_LLAMA_CC=clang-13 RUSTYCAGE_LLAMA_CXX=clang++-13) ;;
    vulkan)
        # The headers directory, fetched on this host once (bullseye's are too old), is bound where
        # scripts/vulkan-headers.sh looks for it inside the root.
        vk_include=$(scripts/vulkan-headers.sh) || die "no Vulkan headers new enough for the pinned ggml-vulkan"
        if [ "$vk_include" != /usr/include ]; then
            vk_dir=$(dirname "$(dirname "$vk_include")")
            binds+=(--bind "$vk_dir:/root/.cache/rustycage/$(basename "$vk_dir"):ro")
        fi
        path="/opt/cmake/bin:$path"  # ggml-vulkan needs CMake 3.19+ (release-chroot.sh install_cmake)
        cmake_opts=(-DRUSTYCAGE_VULKAN=ON) ;;
    cuda11)
        cmake_opts=(-DRUSTYCAGE_CUDA=ON); nice_level=${RUSTYCAGE_NICE:-19} ;;
    cuda13)
        nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
        [ -n "$nvcc" ] || die "cuda13: no nvcc on this host (PATH, /usr/local/cuda)"
        toolkit=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
        binds+=(--bind "$toolkit:$toolkit:ro")
        path="$toolkit/bin:$path"
        cmake_opts=(-DRUSTYCAGE_CUDA=ON); nice_level=${RUSTYCAGE_NICE:-19} ;;
    *) die "usage: $0 cpu|vulkan|cuda11|cuda13" ;;
esac

# A CUDA architecture list named here (CUDA_ARCHITECTURES="80-real;90-real") reaches
# scripts/build-cuda.sh in the root, which otherwise builds the flavour's own list.
[ -z "${CUDA_ARCHITECTURES:-}" ] || envs+=("CUDA_ARCHITECTURES=$CUDA_ARCHITECTURES")
root=$(scripts/release-chroot.sh build-root "$flavour")
llama_src=$(scripts/llama.sh src)
if [ "${flavour#cuda}" != "$flavour" ]; then
    got=$(scripts/release-chroot.sh exec "$root" "${binds[@]}" -- env PATH="$path" /bin/sh -c \
        'nvcc --version | sed -n "s/.*release \([0-9]*\)\..*/cuda\1/p" | head -1')
    [ "$got" = "$flavour" ] || die "the nvcc in the build root is '${got:-none}', not $flavour"
fi
# The console's browser libraries, installed here from their lock file (the root has no npm).
ui=$(mktemp -d)
trap 'rm -rf "$ui"' EXIT
cp src/api/ui/package.json src/api/ui/package-lock.json "$ui/"
npm ci --prefix "$ui" --prefer-offline --ignore-scripts --no-audit --no-fund --loglevel=error >&2

static_runtime="-static-libstdc++ -static-libgcc"
build=/build/rustycage-$flavour
log "building $flavour in the bullseye root $root (nice $nice_level, $jobs jobs)"
start=$(date +%s)
scripts/release-chroot.sh exec "$root" --bind "$src:/src:ro" --bind "$llama_src:/llama-src:ro" --bind "$ui:/ui:ro" "${binds[@]}" -- \
    env PATH="$path" RUSTYCAGE_LLAMA_SRC=/llama-src RUSTYCAGE_COMMIT="$commit" SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" \
        "${envs[@]}" nice -n "$nice_level" sh -ec 'build=$1; jobs=$2; shift 2; mkdir -p "$build"
        cmake -S /src -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DRUSTYCAGE_TESTS=OFF \
            -DRUSTYCAGE_UI_NODE_MODULES=/ui/node_modules -DOPENSSL_USE_STATIC_LIBS=TRUE "$@" >"$build/configure.log" 2>&1 \
            || { tail -40 "$build/configure.log"; exit 1; }
        cmake --build "$build" -j "$jobs" --target rustycage rustycage-mkmodel >"$build/build.log" 2>&1 \
            || { grep -B2 -A8 "error" "$build/build.log" | head -60; exit 1; }' \
        release-build "$build" "$jobs" "${cmake_opts[@]}" "-DCMAKE_EXE_LINKER_FLAGS=$static_runtime" >&2
log "$flavour built in $(( $(date +%s) - start ))s"
echo "$root$build $root"
