#!/usr/bin/env bash
# Fetch the pinned llama.cpp tree and build it once per (commit, backend) into a cache outside the clone.
#
#   scripts/llama.sh build [cpu|cuda|vulkan|metal]   fetch + build the libraries; prints the build dir
#   scripts/llama.sh server [backend]                also build llama-server (for bench/)
#   scripts/llama.sh src                             fetch only; prints the source dir
#
# Sources, in order: $RUSTYCAGE_LLAMA_SRC (an existing checkout), the git bundle inside the npm package
# node-llama-cpp@3.21.1, a clone of the upstream repository. The commit is verified in every case.
# Cache: ${RUSTYCAGE_CACHE:-~/.cache/rustycage}/llama/{src-<commit>, build-<commit12>-<backend>}.
set -euo pipefail

LLAMA_COMMIT=80fb11ac73e66d89eae2c6a91d8a77428fa733ed
NPM_PACKAGE=node-llama-cpp@3.21.1
UPSTREAM=https://github.com/ggml-org/llama.cpp

cache="${RUSTYCAGE_CACHE:-$HOME/.cache/rustycage}/llama"
mkdir -p "$cache"

log() { echo "[llama.sh] $*" >&2; }
die() { echo "[llama.sh] error: $*" >&2; exit 1; }

verify_commit() {  # dir
    local head
    head=$(git -C "$1" rev-parse HEAD 2>/dev/null) || die "$1 is not a git checkout"
    [ "$head" = "$LLAMA_COMMIT" ] || die "$1 is at $head, expected pinned $LLAMA_COMMIT"
}

fetch_source() {
    if [ -n "${RUSTYCAGE_LLAMA_SRC:-}" ]; then
        verify_commit "$RUSTYCAGE_LLAMA_SRC"
        echo "$RUSTYCAGE_LLAMA_SRC"
        return
    fi
    local src="$cache/src-$LLAMA_COMMIT"
    if [ -f "$src/.rustycage-verified" ]; then
        echo "$src"
        return
    fi
    local tmp
    tmp=$(mktemp -d "$cache/fetch.XXXXXX")
    trap 'rm -rf "$tmp"' RETURN
    log "fetching llama.cpp $LLAMA_COMMIT from npm package $NPM_PACKAGE"
    if (cd "$tmp" && npm pack --silent "$NPM_PACKAGE" >/dev/null 2>&1) \
        && tar -xzf "$tmp"/node-llama-cpp-*.tgz -C "$tmp" package/llama/gitRelease.bundle \
        && git clone -q "$tmp/package/llama/gitRelease.bundle" "$tmp/tree" 2>/dev/null \
        && git -C "$tmp/tree" -c advice.detachedHead=false checkout -q "$LLAMA_COMMIT"; then
        :
    else
        log "npm bundle unavailable; cloning $UPSTREAM"
        rm -rf "$tmp/tree"
        git clone -q "$UPSTREAM" "$tmp/tree" && git -C "$tmp/tree" -c advice.detachedHead=false checkout -q "$LLAMA_COMMIT" \
            || die "could not fetch llama.cpp from npm or upstream"
    fi
    verify_commit "$tmp/tree"
    rm -rf "$src"
    mv "$tmp/tree" "$src"
    touch "$src/.rustycage-verified"
    echo "$src"
}

backend_flags() {
    case "$1" in
        cpu) echo "" ;;
        cuda) echo "-DGGML_CUDA=ON" ;;
        vulkan) echo "-DGGML_VULKAN=ON" ;;
        metal) echo "-DGGML_METAL=ON" ;;
        *) die "unknown backend '$1' (cpu, cuda, vulkan, metal)" ;;
    esac
}

build() {  # backend, targets...
    local backend=$1; shift
    local src build
    src=$(fetch_source)
    build="$cache/build-${LLAMA_COMMIT:0:12}-$backend"
    mkdir -p "$build"
    exec 9>"$build.lock"
    flock 9
    local launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    if [ ! -f "$build/CMakeCache.txt" ]; then
        log "configuring $build"
        # shellcheck disable=SC2046
        cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
            -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
            -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
            -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF \
            -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
            "${launcher[@]}" $(backend_flags "$backend") >"$build/configure.log" 2>&1 \
            || { rm -f "$build/CMakeCache.txt"; die "configure failed, see $build/configure.log"; }
    fi
    log "building $* in $build"
    cmake --build "$build" --target "$@" -j "$(nproc)" >"$build/build.log" 2>&1 \
        || { tail -30 "$build/build.log" >&2; die "build failed, see $build/build.log"; }
    echo "$src" >"$build/source-dir"
    echo "$build"
}

LIB_TARGETS=(llama llama-common cpp-httplib)
cmd=${1:-build}
case "$cmd" in
    src) fetch_source ;;
    build) build "${2:-cpu}" "${LIB_TARGETS[@]}" ;;
    server) build "${2:-cpu}" "${LIB_TARGETS[@]}" llama-server ;;
    *) die "usage: $0 {build|server|src} [cpu|cuda|vulkan|metal]" ;;
esac
