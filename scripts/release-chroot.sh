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
#           and glslc from bookworm (bullseye has none): glslc, libshaderc1 and their libraries
#           unpacked under /opt/glslc and run by their own dynamic loader (/usr/local/bin/glslc),
#           so the root's glibc 2.31 stays the one everything else builds and links against.
#           glslc only turns GLSL into SPIR-V: what it links has no bearing on the artifact.
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

# CLI11 is header-only and not packaged for bullseye: install bookworm's architecture-independent
# libcli11-dev (the version the main build uses) into the build root.
install_cli11() {  # root
    local root=$1 deb
    [ -f "$root/usr/include/CLI/CLI.hpp" ] && return
    deb=$(ls /var/cache/apt/archives/libcli11-dev_*_all.deb 2>/dev/null | tail -1 || true)
    if [ -z "$deb" ]; then
        (cd /tmp && apt-get download libcli11-dev >/dev/null 2>&1) || die "could not download libcli11-dev"
        deb=$(ls /tmp/libcli11-dev_*_all.deb | tail -1)
    fi
    cp "$deb" "$root/tmp/libcli11-dev.deb"
    chroot_exec "$root" -- dpkg -i /tmp/libcli11-dev.deb >/dev/null
    rm -f "$root/tmp/libcli11-dev.deb"
}

# bookworm's glslc under ROOT/opt/glslc, run by bookworm's own loader (FLAVOUR EXTRAS). The .debs
# come from the host's apt (Debian 12, its signed index), as install_cli11's does.
install_glslc() {  # root
    local root=$1 work
    work=$(mktemp -d)
    (cd "$work" && apt-get download "${GLSLC_DEBS[@]}" >/dev/null 2>&1) \
        || { rm -rf "$work"; die "could not download bookworm's ${GLSLC_DEBS[*]}"; }
    rm -rf "$root/opt/glslc"
    mkdir -p "$root/opt/glslc"
    for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$root/opt/glslc"; done
    rm -rf "$work"
    cat >"$root/usr/local/bin/glslc" <<'EOF'
#!/bin/sh
# bookworm's glslc with bookworm's glibc, beside the root's own (scripts/release-chroot.sh)
g=/opt/glslc
exec $g/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 \
    --library-path $g/lib/x86_64-linux-gnu:$g/usr/lib/x86_64-linux-gnu $g/usr/bin/glslc "$@"
EOF
    chmod 0755 "$root/usr/local/bin/glslc"
    chroot_exec "$root" -- glslc --version >/dev/null || die "glslc does not run in $root"
}

# What a flavour adds to the build root, once per root (a stamp per flavour).
add_flavour() {  # root flavour
    local root=$1 flavour=$2 stamp
    case "$flavour" in
        cpu|cuda13) return 0 ;;
        vulkan) stamp=$(stamp_of "${VULKAN_PACKAGES[@]}" "${GLSLC_DEBS[@]}") ;;
        cuda11) stamp=$(stamp_of non-free "${CUDA11_PACKAGES[@]}") ;;
        *) die "unknown flavour '$flavour' (cpu, vulkan, cuda11, cuda13)" ;;
    esac
    [ "$(cat "$root/.rustycage-stamp-$flavour" 2>/dev/null)" != "$stamp" ] || return 0
    log "adding the $flavour build tools to $root"
    case "$flavour" in
        vulkan) apt_in "$root" "${VULKAN_PACKAGES[@]}"; install_glslc "$root" ;;
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
