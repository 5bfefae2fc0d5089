#!/usr/bin/env bash
# Debian bullseye (glibc 2.31, gcc 10) roots made with debootstrap from the Debian mirror, for the
# release build and for proving that its artifacts run on an old distribution.
#
#   scripts/release-chroot.sh build-root [FLAVOUR]
#                                               the build root (created once, updated when the package
#                                               list below changes); prints its path. FLAVOUR (cpu,
#                                               vulkan, cuda11, cuda13) adds what that flavour's build
#                                               needs, once (FLAVOUR EXTRAS below)
#   scripts/release-chroot.sh runtime-root DIR  a fresh runtime root in DIR (an empty or missing dir):
#                                               minbase + the few libraries an operator's host has
#   scripts/release-chroot.sh exec ROOT [--bind SRC:DST[:ro]]... -- CMD...
#                                               runs CMD inside ROOT with /proc, /dev and the binds
#                                               mounted in a private mount namespace (gone when CMD ends)
#
# Cache: ${RUSTYCAGE_CACHE:-~/.cache/rustycage}/bullseye/{build-root,runtime.tar}. Needs root.
set -euo pipefail

SUITE=bullseye
MIRROR=${RUSTYCAGE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${RUSTYCAGE_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
# The build root: bullseye's own compilers (gcc 10; clang 13) and the -dev packages we link against.
# clang-13 builds llama.cpp's CPU variants that need newer -m flags than gcc 10 knows (AMX, AVX-VNNI).
BUILD_PACKAGES=(build-essential cmake ninja-build ccache git pkg-config ca-certificates file clang-13
                libcurl4-openssl-dev libssl-dev libsqlite3-dev libxxhash-dev)
# FLAVOUR EXTRAS, installed on top of the build root when a flavour asks for it:
#   vulkan  bullseye's libvulkan-dev (the loader our libraries link: the host's at run time); the
#           headers come from scripts/vulkan-headers.sh (bound in: bullseye's 1.2.162 are too old)
#           and glslc from trixie (bullseye has none): glslc, libshaderc1 and their libraries
#           unpacked under /opt/glslc and run by their own dynamic loader (/usr/local/bin/glslc),
#           so the root's glibc 2.31 stays the one everything else builds and links against.
#           glslc only turns GLSL into SPIR-V: what it links has no bearing on the artifact.
#           Also bookworm's spirv-headers (a CMake config ggml-vulkan looks for) and a CMake
#           3.25 built from bookworm's source in the root (ggml-vulkan needs 3.19: install_cmake).
#   cuda11  bullseye's nvidia-cuda-toolkit 11.2 from the root's own non-free component (the
#           host's apt sources are not touched); nvcc 11.2 accepts the root's gcc 10.
#   cuda13  nothing installed: the host's CUDA 13 toolkit is bound in read-only at the same path
#           (scripts/release-build.sh; NVIDIA's binaries run on glibc 2.31, nvcc 13 accepts gcc 10).
CUDA11_PACKAGES=(nvidia-cuda-toolkit)
VULKAN_PACKAGES=(libvulkan-dev)
GLSLC_DEBS=(glslc libshaderc1 libc6 libstdc++6 libgcc-s1)
# What a minimal Debian 11 / Ubuntu 20.04 server has or gets from the installer: libcurl4 (our
# downloads), systemd (to enable the units and to verify them with bullseye's systemd 247), curl.
RUNTIME_PACKAGES=(ca-certificates libcurl4 systemd curl procps)

cache="${RUSTYCAGE_CACHE:-$HOME/.cache/rustycage}/bullseye"
log() { echo "[release-chroot] $*" >&2; }
die() { echo "[release-chroot] error: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot, mount)"
command -v debootstrap >/dev/null || die "debootstrap missing: run scripts/setup.sh release"

# The components beyond main go on the suite and its updates only: bullseye-security's non-free is
# NVIDIA driver updates (535.x) the toolkit does not need, and whose files the mirror may not serve.
write_sources() {  # root [components]
    local components=${2:-main}
    cat >"$1/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE $components
deb $MIRROR $SUITE-updates $components
deb $SECURITY_MIRROR $SUITE-security main
EOF
}

# Runs a command in the root with only what apt/compilers need; a private mount namespace means no
# mount outlives the command, whatever happens to it.
chroot_exec() {  # root, binds (SRC:DST[:ro])..., --, cmd...
    local root=$1; shift
    local binds=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        [ "$1" = "--bind" ] || die "exec: expected --bind or --, got '$1'"
        binds+=("$2"); shift 2
    done
    [ "${1:-}" = "--" ] && shift
    [ $# -gt 0 ] || die "exec: no command"
    local script='set -e; root=$1; shift; n=$1; shift
        mount -t proc proc "$root/proc"; mount --rbind /dev "$root/dev"
        for ((i = 0; i < n; i++)); do
            IFS=: read -r src dst mode <<<"$1"; shift
            mkdir -p "$root$dst"; mount --bind "$src" "$root$dst"
            [ "$mode" = ro ] && mount -o remount,bind,ro "$root$dst"
        done
        exec chroot "$root" /usr/bin/env -i HOME=/root TERM="${TERM:-dumb}" LANG=C.UTF-8 \
            PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"'
    unshare --mount --propagation private bash -c "$script" chroot-exec "$root" "${#binds[@]}" "${binds[@]}" "$@"
}

apt_in() {  # root, packages...
    local root=$1; shift
    chroot_exec "$root" -- sh -c 'export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq && apt-get -y -qq -o Dpkg::Use-Pty=0 dist-upgrade >/dev/null &&
        apt-get install -y -qq -o Dpkg::Use-Pty=0 --no-install-recommends "$@" >/dev/null && apt-get clean' apt-in "$@"
}

bootstrap() {  # dir, packages...
    local dir=$1; shift
    local include
    include=$(IFS=,; echo "$*")
    log "debootstrap $SUITE into $dir (from $MIRROR)"
    # In its own mount namespace: the /proc it mounts inside the target cannot outlive it.
    unshare --mount --propagation private \
        debootstrap --variant=minbase --include="$include" "$SUITE" "$dir" "$MIRROR" >"$dir.debootstrap.log" 2>&1 \
        || { tail -20 "$dir.debootstrap.log" >&2; die "debootstrap failed, see $dir.debootstrap.log"; }
    write_sources "$dir"
    apt_in "$dir" "$@"
}

# Deletes a root, refusing when anything is still mounted below it (rm would reach into the mount).
remove_root() {  # dir
    [ -e "$1" ] || return 0
    if findmnt -rn -o TARGET | grep -q "^$(realpath "$1")/"; then die "something is mounted under $1; not removing it"; fi
    rm -rf "$1"
}

stamp_of() { printf '%s\n' "$SUITE" "$@" | sha256sum | cut -c1-16; }

# apt options that read SUITE's signed index (deb or deb-src lines) into WORK, leaving the host's
# apt state alone: for what the flavour extras take from a newer Debian release.
APT_OPTS=()
suite_index() {  # work suite deb|deb-src
    local work=$1
    mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
    echo "$3 [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $2 main" >"$work/sources.list"
    APT_OPTS=(-q -o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$work/lists"
              -o "Dir::Cache=$work/cache" -o Dir::State::status=/dev/null -o APT::Sandbox::User=root)
    apt-get "${APT_OPTS[@]}" update >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; return 1; }
}

# Header-only packages bullseye lacks or has too old, installed into the build root from the host's
# apt (Debian 12, its signed index): they are architecture-independent, with no dependencies.
#   libcli11-dev   CLI11 (not packaged for bullseye), the version the main build uses
#   spirv-headers  ggml-vulkan finds it by its CMake config, which bullseye's 1.5.4 does not ship
install_host_deb() {  # root package
    local root=$1 package=$2 work
    work=$(mktemp -d)
    (cd "$work" && apt-get download "$package" >/dev/null 2>&1) || { rm -rf "$work"; die "could not download $package"; }
    cp "$work"/"$package"_*_all.deb "$root/tmp/$package.deb" || { rm -rf "$work"; die "$package is not architecture-independent"; }
    rm -rf "$work"
    chroot_exec "$root" -- dpkg -i "/tmp/$package.deb" >/dev/null
    rm -f "$root/tmp/$package.deb"
}

install_cli11() {  # root
    [ -f "$1/usr/include/CLI/CLI.hpp" ] || install_host_deb "$1" libcli11-dev
}

# ggml-vulkan needs CMake 3.19 or later (FindVulkan's glslc, ExternalProject's step policy);
# bullseye has 3.18 and its backports are gone from the mirror. Debian 12's CMake source (its signed
# Sources index, as apt checks every package) is built inside the root, with the root's compilers
# and bundled libraries, into ROOT/opt/cmake: about 7 minutes on two cores, once per root. Only the
# vulkan flavour puts it on PATH (scripts/release-build.sh).
CMAKE_SOURCE_SUITE=bookworm
install_cmake() {  # root
    local root=$1 work orig
    "$root/opt/cmake/bin/cmake" --version >/dev/null 2>&1 && return 0
    log "building $CMAKE_SOURCE_SUITE's CMake into $root/opt/cmake (once)"
    work=$(mktemp -d)
    { suite_index "$work" "$CMAKE_SOURCE_SUITE" deb-src && (cd "$work" && apt-get "${APT_OPTS[@]}" source --download-only cmake >>"$work/apt.log" 2>&1); } \
        || { cat "$work/apt.log" >&2; rm -rf "$work"; die "could not download $CMAKE_SOURCE_SUITE's CMake source"; }
    orig=$(ls "$work"/cmake_*.orig.tar.* | head -1)
    rm -rf "$root/opt/cmake-src" "$root/opt/cmake-build" "$root/opt/cmake"
    mkdir -p "$root/opt/cmake-src"
    tar -xf "$orig" -C "$root/opt/cmake-src" --strip-components=1
    rm -rf "$work"
    chroot_exec "$root" -- sh -c 'cmake -S /opt/cmake-src -B /opt/cmake-build -G Ninja -DCMAKE_BUILD_TYPE=Release \
            -DCMAKE_INSTALL_PREFIX=/opt/cmake -DBUILD_TESTING=OFF -DBUILD_CursesDialog=OFF -DBUILD_QtDialog=OFF \
            -DCMAKE_USE_OPENSSL=OFF -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/opt/cmake-build.log 2>&1 &&
        nice -n 10 ninja -C /opt/cmake-build install >>/opt/cmake-build.log 2>&1' \
        || { tail -30 "$root/opt/cmake-build.log" >&2; die "building CMake in $root failed (log: $root/opt/cmake-build.log)"; }
    rm -rf "$root/opt/cmake-src" "$root/opt/cmake-build" "$root/opt/cmake-build.log"
    chroot_exec "$root" -- /opt/cmake/bin/cmake --version | head -1 >&2
}

# trixie's glslc under ROOT/opt/glslc, run by trixie's own loader (FLAVOUR EXTRAS). Trixie's, not
# bookworm's: bookworm's glslang 11 lacks GL_EXT_integer_dot_product, cooperative matrices and
# bfloat16, and ggml-vulkan then leaves out the shaders that use them (quantized matrix products
# with integer dot products run on every GPU whose driver has VK_KHR_shader_integer_dot_product).
GLSLC_SUITE=trixie
install_glslc() {  # root
    local root=$1 work loader
    work=$(mktemp -d)
    { suite_index "$work" "$GLSLC_SUITE" deb && (cd "$work" && apt-get "${APT_OPTS[@]}" download "${GLSLC_DEBS[@]}" >>"$work/apt.log" 2>&1); } \
        || { cat "$work/apt.log" >&2; rm -rf "$work"; die "could not download $GLSLC_SUITE's ${GLSLC_DEBS[*]}"; }
    rm -rf "$root/opt/glslc"
    mkdir -p "$root/opt/glslc"
    for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$root/opt/glslc"; done
    rm -rf "$work"
    # The loader's path inside the packages (/lib or, merged, /usr/lib).
    for loader in opt/glslc/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 opt/glslc/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 ""; do
        [ -z "$loader" ] || [ -e "$root/$loader" ] && break
    done
    [ -n "$loader" ] || die "no dynamic loader in $GLSLC_SUITE's libc6"
    cat >"$root/usr/local/bin/glslc" <<EOF
#!/bin/sh
# $GLSLC_SUITE's glslc with its own glibc, beside the root's (scripts/release-chroot.sh)
g=/opt/glslc
exec /$loader --library-path \$g/lib/x86_64-linux-gnu:\$g/usr/lib/x86_64-linux-gnu \$g/usr/bin/glslc "\$@"
EOF
    chmod 0755 "$root/usr/local/bin/glslc"
    chroot_exec "$root" -- glslc --version >/dev/null || die "glslc does not run in $root"
}

# What a flavour adds to the build root, once per root (a stamp per flavour).
add_flavour() {  # root flavour
    local root=$1 flavour=$2 stamp
    case "$flavour" in
        cpu|cuda13) return 0 ;;
        vulkan) stamp=$(stamp_of "${VULKAN_PACKAGES[@]}" "glslc-$GLSLC_SUITE" "${GLSLC_DEBS[@]}" spirv-headers "cmake-$CMAKE_SOURCE_SUITE") ;;
        cuda11) stamp=$(stamp_of non-free "${CUDA11_PACKAGES[@]}") ;;
        *) die "unknown flavour '$flavour' (cpu, vulkan, cuda11, cuda13)" ;;
    esac
    [ "$(cat "$root/.rustycage-stamp-$flavour" 2>/dev/null)" != "$stamp" ] || return 0
    log "adding the $flavour build tools to $root"
    case "$flavour" in
        vulkan) apt_in "$root" "${VULKAN_PACKAGES[@]}"; install_glslc "$root"; install_host_deb "$root" spirv-headers
                install_cmake "$root" ;;
        cuda11) write_sources "$root" "main contrib non-free"; apt_in "$root" "${CUDA11_PACKAGES[@]}" ;;
    esac
    echo "$stamp" >"$root/.rustycage-stamp-$flavour"
}

build_root() {  # flavour
    local root="$cache/build-root" want
    want=$(stamp_of "${BUILD_PACKAGES[@]}")
    mkdir -p "$cache"
    exec 8>"$cache/build-root.lock"
    flock 8
    if [ ! -f "$root/.rustycage-stamp" ]; then
        remove_root "$root"; remove_root "$root.new"
        mkdir -p "$root.new"
        bootstrap "$root.new" "${BUILD_PACKAGES[@]}"
        install_cli11 "$root.new"
        echo "$want" >"$root.new/.rustycage-stamp"
        mv "$root.new" "$root"
    elif [ "$(cat "$root/.rustycage-stamp")" != "$want" ]; then
        log "updating the packages of $root"
        apt_in "$root" "${BUILD_PACKAGES[@]}"
        install_cli11 "$root"
        echo "$want" >"$root/.rustycage-stamp"
    fi
    add_flavour "$root" "$1"
    echo "$root"
}

runtime_root() {  # dir
    local dir=$1 tarball="$cache/runtime.tar" want
    want=$(stamp_of "${RUNTIME_PACKAGES[@]}")
    mkdir -p "$cache"
    exec 8>"$cache/runtime.lock"
    flock 8
    if [ ! -f "$tarball" ] || [ "$(cat "$tarball.stamp" 2>/dev/null)" != "$want" ]; then
        local tmp="$cache/runtime.new"
        remove_root "$tmp"; mkdir -p "$tmp"
        bootstrap "$tmp" "${RUNTIME_PACKAGES[@]}"
        tar -C "$tmp" -cf "$tarball.new" .
        mv "$tarball.new" "$tarball"
        echo "$want" >"$tarball.stamp"
        remove_root "$tmp"
    fi
    mkdir -p "$dir"
    [ -z "$(ls -A "$dir")" ] || die "$dir is not empty"
    tar -C "$dir" -xf "$tarball"
    echo "$dir"
}

cmd=${1:-}
case "$cmd" in
    build-root) [ $# -le 2 ] || die "usage: $0 build-root [FLAVOUR]"; build_root "${2:-cpu}" ;;
    runtime-root) [ $# -eq 2 ] || die "usage: $0 runtime-root DIR"; runtime_root "$2" ;;
    exec) [ $# -ge 3 ] || die "usage: $0 exec ROOT [--bind SRC:DST[:ro]]... -- CMD..."; shift; chroot_exec "$@" ;;
    *) die "usage: $0 {build-root [FLAVOUR]|runtime-root DIR|exec ROOT [--bind SRC:DST[:ro]]... -- CMD...}" ;;
esac
