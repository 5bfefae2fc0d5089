#!/usr/bin/env bash
# Fetch the pinned llama.cpp tree and build it once per (commit, backend) into a cache outside the clone.
#
#   scripts/llama.sh build [FLAVOUR]    fetch + build the libraries; prints the build dir
#   scripts/llama.sh server [FLAVOUR]   also build llama-server (for bench/)
#   scripts/llama.sh src                fetch only; prints the source dir
#
# Flavours:
#   cpu          (default) static libraries, CPU kernels for this machine (GGML_NATIVE)
#   metal        static, Metal backend (macOS)
#   release-cpu  shared libraries with dynamically loaded backends (GGML_BACKEND_DL) and every x86 CPU
#                variant (GGML_CPU_ALL_VARIANTS): one build picks its kernels at run time; no OpenMP.
#                What the CPU release artifact ships (scripts/release.sh).
# $RUSTYCAGE_LLAMA_CC / $RUSTYCAGE_LLAMA_CXX pick another compiler for a flavour's llama.cpp build.
#   vulkan       shared + GGML_BACKEND_DL: libggml-vulkan.so and one portable CPU backend (AVX2 level);
#                Vulkan headers from scripts/vulkan-headers.sh (newer than Debian 12's where needed)
#   cuda         shared + GGML_BACKEND_DL: libggml-cuda.so (cudart linked statically) and one portable CPU
#                backend; architectures from $RUSTYCAGE_CUDA_ARCHITECTURES (scripts/build-cuda.sh picks
#                them by the nvcc it finds)
# Shared flavours leave every library in <build>/bin with RUNPATH $ORIGIN, libstdc++ and libgcc linked
# statically.
#
# Sources, in order: $RUSTYCAGE_LLAMA_SRC (an existing checkout), the git bundle inside the npm package
# node-llama-cpp@3.21.1, a clone of the upstream repository. The commit is verified in every case.
# Then the patches in scripts/llama-patches/ are applied (README there says why each exists); a
# checkout of $RUSTYCAGE_LLAMA_SRC must carry them already or take them cleanly.
# Cache: ${RUSTYCAGE_CACHE:-~/.cache/rustycage}/llama/{src-<commit>, build-<commit12>-<flavour>}
# (cuda: build-<commit12>-cuda-<hash of the architectures and the nvcc release>).
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

PATCH_DIR="$(cd "$(dirname "$0")" && pwd)/llama-patches"

patches() { ls "$PATCH_DIR"/*.patch 2>/dev/null | sort; }

patch_set_id() { patches | xargs -r cat | sha256sum | cut -c1-16; }

# Applies our patches to a tree. The cached tree is reset to the pinned commit first when it carries
# another patch set (a marker file records which); a checkout of the user's is only checked and
# completed, never reset.
apply_patches() {  # dir, cached (1) or the user's (0)
    local dir=$1 cached=$2 id p
    id=$(patch_set_id)
    # A tree that records this patch set carries it (the cache's own, or bound into the release root):
    # checking patch by patch would fail where a later patch changed an earlier one's context.
    [ "$(cat "$dir/.rustycage-patches" 2>/dev/null)" = "$id" ] && return 0
    if [ "$cached" = 1 ]; then
        git -C "$dir" reset -q --hard "$LLAMA_COMMIT"
        git -C "$dir" clean -qfd -e .rustycage-verified -e .rustycage-patches
    fi
    for p in $(patches); do
        if git -C "$dir" apply --reverse --check "$p" 2>/dev/null; then continue; fi  # already there
        git -C "$dir" apply "$p" || die "patch $(basename "$p") does not apply to $dir"
        log "applied $(basename "$p")"
    done
    [ "$cached" = 1 ] && echo "$id" >"$dir/.rustycage-patches"
    return 0
}

fetch_source() {
    if [ -n "${RUSTYCAGE_LLAMA_SRC:-}" ]; then
        verify_commit "$RUSTYCAGE_LLAMA_SRC"
        apply_patches "$RUSTYCAGE_LLAMA_SRC" 0 >&2
        echo "$RUSTYCAGE_LLAMA_SRC"
        return
    fi
    local src="$cache/src-$LLAMA_COMMIT"
    if [ -f "$src/.rustycage-verified" ]; then
        exec 8>"$src.lock"
        flock 8
        apply_patches "$src" 1 >&2
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
    apply_patches "$tmp/tree" 1 >&2
    rm -rf "$src"
    mv "$tmp/tree" "$src"
    touch "$src/.rustycage-verified"
    echo "$src"
}

# Shared libraries, backends loaded at run time from the directory of the libraries, no -march=native.
# The artifacts link libstdc++ and libgcc statically (scripts/release-check.sh), libraries and the
# dlopen'ed backends (MODULE libraries, with flags of their own) alike.
STATIC_RUNTIME="-static-libstdc++ -static-libgcc"
SHARED_DL_FLAGS=(-DBUILD_SHARED_LIBS=ON -DGGML_BACKEND_DL=ON -DGGML_NATIVE=OFF
                 -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON '-DCMAKE_INSTALL_RPATH=$ORIGIN'
                 "-DCMAKE_SHARED_LINKER_FLAGS=$STATIC_RUNTIME" "-DCMAKE_MODULE_LINKER_FLAGS=$STATIC_RUNTIME"
                 "-DCMAKE_EXE_LINKER_FLAGS=$STATIC_RUNTIME")
# The one CPU backend of the GPU flavours, at the AVX2 level, named: ggml turns these on by itself
# only when GGML_NATIVE may default on, and a release build sets SOURCE_DATE_EPOCH, which turns that
# default off (the CPU backend was built for plain x86-64: no AVX at all).
GPU_CPU_FLAGS=(-DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_BMI2=ON -DGGML_FMA=ON -DGGML_F16C=ON)

is_dl_flavour() { case "$1" in release-cpu|vulkan|cuda) return 0 ;; *) return 1 ;; esac; }

cuda_architectures() {
    [ -n "${RUSTYCAGE_CUDA_ARCHITECTURES:-}" ] || die "cuda: RUSTYCAGE_CUDA_ARCHITECTURES is not set (build through scripts/build-cuda.sh)"
    echo "$RUSTYCAGE_CUDA_ARCHITECTURES"
}

# Fills FLAVOUR_FLAGS with the CMake flags of a flavour.
flavour_flags() {
    FLAVOUR_FLAGS=()
    case "$1" in
        cpu) ;;
        metal) FLAVOUR_FLAGS=(-DGGML_METAL=ON) ;;
        release-cpu)
            # ggml's own thread pool instead of OpenMP: no libgomp to ship or to find on the host.
            FLAVOUR_FLAGS=("${SHARED_DL_FLAGS[@]}" -DGGML_CPU_ALL_VARIANTS=ON -DGGML_OPENMP=OFF) ;;
        vulkan)
            local vk_include
            vk_include=$("$(dirname "$0")/vulkan-headers.sh") || die "vulkan: no Vulkan headers new enough"
            FLAVOUR_FLAGS=("${SHARED_DL_FLAGS[@]}" "${GPU_CPU_FLAGS[@]}" -DGGML_VULKAN=ON "-DVulkan_INCLUDE_DIR=$vk_include") ;;
        cuda)
            local nvcc archs
            nvcc=$(command -v nvcc) || die "cuda: nvcc not on PATH"
            archs=$(cuda_architectures)
            # cudart from the toolkit's static archive: the artifact needs only the driver's libcuda.so.1
            # (and cuBLAS, shipped next to the backend). No NCCL: it only speeds up splitting one model
            # across several GPUs, and would add a 218 MB libnccl.so.2 that no host is sure to have.
            # NVIDIA's layout keeps it beside bin/ (lib64/), Debian's toolkit in the multiarch dir.
            local cudart="" d
            for d in "$(dirname "$(dirname "$(readlink -f "$nvcc")")")/lib64" "$(dirname "$(dirname "$nvcc")")/lib64" /usr/lib/x86_64-linux-gnu; do
                [ -f "$d/libcudart_static.a" ] && { cudart=$d/libcudart_static.a; break; }
            done
            [ -n "$cudart" ] || die "cuda: no libcudart_static.a beside $nvcc or in /usr/lib/x86_64-linux-gnu"
            FLAVOUR_FLAGS=("${SHARED_DL_FLAGS[@]}" "${GPU_CPU_FLAGS[@]}" -DGGML_CUDA=ON -DGGML_CUDA_NCCL=OFF "-DCMAKE_CUDA_COMPILER=$nvcc"
                           "-DCMAKE_CUDA_ARCHITECTURES=$archs" "-DCUDA_cudart_LIBRARY=$cudart") ;;
        *) die "unknown flavour '$1' (cpu, release-cpu, vulkan, cuda, metal)" ;;
    esac
    # Another compiler for llama.cpp alone (the bullseye release build: gcc 10 lacks -mamx-tile and
    # -mavxvnni, which the sapphirerapids and alderlake variants need; bullseye's clang 13 has them).
    if [ -n "${RUSTYCAGE_LLAMA_CC:-}" ]; then FLAVOUR_FLAGS+=("-DCMAKE_C_COMPILER=$RUSTYCAGE_LLAMA_CC"); fi
    if [ -n "${RUSTYCAGE_LLAMA_CXX:-}" ]; then FLAVOUR_FLAGS+=("-DCMAKE_CXX_COMPILER=$RUSTYCAGE_LLAMA_CXX"); fi
}

build_dir_name() {  # flavour
    case "$1" in
        cuda) echo "build-${LLAMA_COMMIT:0:12}-cuda-$( { cuda_architectures; nvcc --version 2>/dev/null | tail -1; } | sha256sum | cut -c1-8)" ;;
        *) echo "build-${LLAMA_COMMIT:0:12}-$1" ;;
    esac
}

# The backend modules of a GGML_BACKEND_DL build (nothing links them, so they are named explicitly).
dl_backend_targets() {  # build dir
    ninja -C "$1" -t targets all | awk -F: '$1 ~ /^ggml-(cpu|vulkan|cuda)(-[a-z0-9_]+)?$/ {print $1}' | sort -u
}

build() {  # backend, targets...
    local backend=$1; shift
    local src build
    src=$(fetch_source)
    flavour_flags "$backend"
    local flags="${FLAVOUR_FLAGS[*]}"
    build="$cache/$(build_dir_name "$backend")"
    mkdir -p "$build"
    exec 9>"$build.lock"
    flock 9
    local launcher=()
    command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    # The flavours added after cpu record their flags: a change reconfigures (cpu's cache stays as it was).
    if [ "$backend" != cpu ] && [ -f "$build/CMakeCache.txt" ] && [ "$(cat "$build/flavour-flags" 2>/dev/null)" != "$flags" ]; then
        log "flags of $backend changed: reconfiguring $build"
        rm -f "$build/CMakeCache.txt"
    fi
    if [ ! -f "$build/CMakeCache.txt" ]; then
        log "configuring $build"
        cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
            -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
            -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
            -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_UI=OFF \
            -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
            "${launcher[@]}" "${FLAVOUR_FLAGS[@]}" >"$build/configure.log" 2>&1 \
            || { rm -f "$build/CMakeCache.txt"; die "configure failed, see $build/configure.log"; }
        [ "$backend" = cpu ] || echo "$flags" >"$build/flavour-flags"
    fi
    local targets=("$@")
    if is_dl_flavour "$backend"; then
        mapfile -t -O "${#targets[@]}" targets < <(dl_backend_targets "$build")
    fi
    set -- "${targets[@]}"
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
    *) die "usage: $0 {build|server|src} [cpu|release-cpu|vulkan|cuda|metal]" ;;
esac
