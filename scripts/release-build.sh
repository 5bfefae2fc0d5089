#!/usr/bin/env bash
# Builds Rustycage for a release artifact and prints "BUILD_DIR SYSROOT" (SYSROOT empty for host
# builds) for scripts/release-package.sh.
#
#   scripts/release-build.sh cpu      inside the Debian bullseye build root (glibc 2.31): our code with
#                                     its gcc 10, llama.cpp's release-cpu flavour (GGML_BACKEND_DL, every
#                                     CPU variant) with its clang 13 (gcc 10 lacks the AMX and AVX-VNNI
#                                     flags); libstdc++ 10 / libgcc and OpenSSL's libcrypto static
#   scripts/release-build.sh vulkan   on this host, build-vulkan/ (the dir `make test-vulkan` uses)
#   scripts/release-build.sh cuda     on this host, build-cuda/ (scripts/build-cuda.sh picks the archs)
#
# Heavy: run one at a time. Builds run under `nice` ($RUSTYCAGE_NICE, default 10; 19 for cuda).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$(pwd)
flavour=${1:-}
jobs=${RUSTYCAGE_JOBS:-2}
log() { echo "[release-build] $*" >&2; }
die() { echo "[release-build] error: $*" >&2; exit 1; }

# The commit the tree is at (with -dirty when tracked files differ): the chroot cannot read the
# worktree's git metadata, so it is handed in (cmake/build_info.cmake reads RUSTYCAGE_COMMIT).
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || commit="$commit-dirty"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}

static_runtime="-static-libstdc++ -static-libgcc"

case "$flavour" in
    cpu)
        root=$(scripts/release-chroot.sh build-root)
        llama_src=$(scripts/llama.sh src)
        # The console's browser libraries, installed here from their lock file (the root has no npm).
        ui=$(mktemp -d)
        trap 'rm -rf "$ui"' EXIT
        cp src/api/ui/package.json src/api/ui/package-lock.json "$ui/"
        npm ci --prefix "$ui" --prefer-offline --ignore-scripts --no-audit --no-fund --loglevel=error >&2
        log "building in the bullseye root $root (nice ${RUSTYCAGE_NICE:-10})"
        scripts/release-chroot.sh exec "$root" --bind "$src:/src:ro" --bind "$llama_src:/llama-src:ro" --bind "$ui:/ui:ro" -- \
            env RUSTYCAGE_LLAMA_SRC=/llama-src RUSTYCAGE_COMMIT="$commit" SOURCE_DATE_EPOCH="$SOURCE_DATE_EPOCH" \
                RUSTYCAGE_LLAMA_CC=clang-13 RUSTYCAGE_LLAMA_CXX=clang++-13 \
            nice -n "${RUSTYCAGE_NICE:-10}" sh -ec 'mkdir -p /build
                cmake -S /src -B /build/rustycage -G Ninja -DCMAKE_BUILD_TYPE=Release \
                    -DRUSTYCAGE_LLAMA_FLAVOUR=release-cpu -DRUSTYCAGE_TESTS=OFF -DRUSTYCAGE_UI_NODE_MODULES=/ui/node_modules \
                    -DOPENSSL_USE_STATIC_LIBS=TRUE "-DCMAKE_EXE_LINKER_FLAGS='"$static_runtime"'" >/build/configure.log 2>&1 \
                    || { tail -30 /build/configure.log; exit 1; }
                cmake --build /build/rustycage -j '"$jobs"' --target rustycage rustycage-mkmodel >/build/build.log 2>&1 \
                    || { grep -B2 -A8 "error" /build/build.log | head -60; exit 1; }' >&2
        echo "$root/build/rustycage $root"
        ;;
    vulkan|cuda)
        dir="build-$flavour"
        opt=-DRUSTYCAGE_VULKAN=ON
        nice_level=${RUSTYCAGE_NICE:-10}
        if [ "$flavour" = cuda ]; then opt=-DRUSTYCAGE_CUDA=ON; nice_level=${RUSTYCAGE_NICE:-19}; fi
        log "building $dir (nice $nice_level)"
        # The same directory and configuration as `make test-vulkan` (RelWithDebInfo, stripped when
        # packed): one build serves both, and ccache shares build/'s objects (CCACHE_NOHASHDIR).
        # OpenSSL's libcrypto is linked statically as in the cpu artifact: hosts carry different
        # sonames (1.1 on bullseye and focal, 3 on bookworm and jammy). Configured every time, and
        # OpenSSL looked up again, so a directory configured without these options gets them.
        export CCACHE_NOHASHDIR=1
        RUSTYCAGE_COMMIT="$commit" nice -n "$nice_level" cmake -S . -B "$dir" -G Ninja \
            -U 'OPENSSL_*' -DCMAKE_BUILD_TYPE=RelWithDebInfo "$opt" -DOPENSSL_USE_STATIC_LIBS=TRUE \
            "-DCMAKE_EXE_LINKER_FLAGS=$static_runtime" >&2
        RUSTYCAGE_COMMIT="$commit" nice -n "$nice_level" cmake --build "$dir" -j "$jobs" --target rustycage rustycage-mkmodel >&2
        echo "$src/$dir "
        ;;
    *) die "usage: $0 cpu|vulkan|cuda" ;;
esac
