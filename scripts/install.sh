#!/usr/bin/env bash
# Rustycage installer: picks the release artifact for this host (CPU, Vulkan or CUDA), verifies it
# against SHA256SUMS, installs it to /opt/rustycage/<version> with a `current` link, creates the
# `rustycage` system user and a hardened systemd unit reading /etc/rustycage/rustycage.env — a file
# an upgrade never overwrites. Idempotent: a second run with the same artifact changes nothing.
# Never installs GPU drivers: it says what is missing. The same file ships in every release.
#
#   install.sh [--offline TARBALL | --dist DIR | --url BASE] [--version V]
#              [--flavour auto|cpu|vulkan|cuda|cuda11|cuda13]
#              [--data-dir DIR] [--models auto|none|NAME...] [--fleet --etcd URL [--host-id ID]]
#              [--trusted-keys PEM]
#              [--no-start] [--stage] [--root DIR] [--yes]
#   install.sh --uninstall [--purge] [--root DIR]
#   install.sh --detect     what this host has and the flavour it would get, and why; changes nothing
# --trusted-keys installs the lab's release public keys to /etc/rustycage/trusted-keys.pem (what the
# fleet agent verifies rollout artifacts with) and makes this install check the artifact's .sig too.
# --stage unpacks the version into /opt/rustycage/<version> and stops there (current, units and the
# running service untouched): a rollout stages ahead of time, then runs install.sh again to switch.
#
# See docs/INSTALL.md. Exit status: 0 done (or nothing to do), 1 failed, 2 bad usage.
set -euo pipefail
umask 022

PROG=install.sh
ARCH=x86_64
DEFAULT_URL=${RUSTYCAGE_RELEASE_URL:-}   # e.g. https://releases.example.org/rustycage (BASE/VERSION/…)

root=""            # install into this directory as a filesystem root (tests, images): no services touched
source_tarball=""
sums_file=""
dist_dir=""
url="$DEFAULT_URL"
version=""
flavour=auto
data_dir=/var/lib/rustycage
models=()
fleet=false
etcd=""
host_id=""
start=true
assume_yes=false
uninstall=false
purge=false
stage_only=false
trusted_keys=""
detect_only=false
CPUINFO=${RUSTYCAGE_CPUINFO:-/proc/cpuinfo}   # tests point it at another CPU

say() { echo "[$PROG] $*"; }
warn() { echo "[$PROG] warning: $*" >&2; }
die() { echo "[$PROG] error: $*" >&2; exit 1; }
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
        --offline) source_tarball=${2:?--offline needs a tarball}; shift 2 ;;
        --sums) sums_file=${2:?--sums needs a file}; shift 2 ;;
        --dist) dist_dir=${2:?--dist needs a directory}; shift 2 ;;
        --url) url=${2:?--url needs a URL}; shift 2 ;;
        --version) version=${2:?--version needs a version}; shift 2 ;;
        --flavour|--flavor) flavour=${2:?--flavour needs auto, cpu, vulkan, cuda, cuda11 or cuda13}; shift 2 ;;
        --detect) detect_only=true; shift ;;
        --data-dir) data_dir=${2:?--data-dir needs a directory}; shift 2 ;;
        --models) shift; while [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; do models+=("$1"); shift; done
                  [ ${#models[@]} -gt 0 ] || die "--models needs auto, none or curated model names" ;;
        --fleet) fleet=true; shift ;;
        --etcd) etcd=${2:?--etcd needs a URL}; shift 2 ;;
        --host-id) host_id=${2:?--host-id needs an id}; shift 2 ;;
        --no-start) start=false; shift ;;
        --stage) stage_only=true; shift ;;
        --trusted-keys) trusted_keys=${2:?--trusted-keys needs a PEM file}; shift 2 ;;
        --root) root=${2:?--root needs a directory}; shift 2 ;;
        --yes|-y) assume_yes=true; shift ;;
        --uninstall) uninstall=true; shift ;;
        --purge) purge=true; shift ;;
        -h|--help) usage ;;
        *) echo "[$PROG] unknown option '$1'" >&2; usage ;;
    esac
done
[ -z "$trusted_keys" ] || [ -f "$trusted_keys" ] || die "--trusted-keys $trusted_keys does not exist"

case "$flavour" in auto|cpu|vulkan|cuda|cuda11|cuda13) ;; *) die "--flavour must be auto, cpu, vulkan, cuda, cuda11 or cuda13" ;; esac
case "$data_dir" in /*) ;; *) die "--data-dir must be an absolute path" ;; esac
[ "$fleet" = false ] || [ -n "$etcd" ] || die "--fleet needs --etcd URL"
[ -z "$etcd" ] || [ "$fleet" = true ] || die "--etcd is for --fleet"
if [ "$purge" = true ] && [ "$uninstall" = false ]; then die "--purge goes with --uninstall"; fi
if [ -n "$root" ]; then
    mkdir -p "$root"
    root=$(cd "$root" && pwd)
    [ "$root" != / ] || root=""
fi
[ "$detect_only" = true ] || [ "$(id -u)" -eq 0 ] || die "run as root (sudo $0 …)"

# Installed layout (docs/RELEASING.md): /opt/rustycage/<version>/{bin,lib,share,docs}, a `current`
# link to the active version, /usr/local/bin links, /etc/rustycage/rustycage.env, the units.
OPT="$root/opt/rustycage"
BIN_DIR="$root/usr/local/bin"
ETC="$root/etc/rustycage"
UNIT_DIR="$root/etc/systemd/system"
DATA="$root$data_dir"
UNITS=(rustycage.service rustycage-agent.service)
KEEP_VERSIONS=3   # the active one and two to roll back to
changed=0
note_change() { changed=$((changed + 1)); say "$*"; }

# systemd is driven only when it runs this system (not for --root, not in a chroot or container build).
systemd_live() { [ -z "$root" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null; }
systemctl_offline() {  # enable/disable by links alone: works in chroots and under --root
    if [ -n "$root" ]; then systemctl --root="$root" "$@"; else systemctl "$@"; fi
}

# ---------------------------------------------------------------------------------------------
# Uninstall
# ---------------------------------------------------------------------------------------------
do_uninstall() {
    local u
    for u in "${UNITS[@]}"; do
        [ -f "$UNIT_DIR/$u" ] || continue
        if systemd_live; then systemctl disable --now "$u" >/dev/null 2>&1 || true
        else systemctl_offline disable "$u" >/dev/null 2>&1 || true; fi
        rm -f "$UNIT_DIR/$u"
        note_change "removed $u"
    done
    systemd_live && systemctl daemon-reload || true
    for link in "$BIN_DIR/rustycage" "$BIN_DIR/rustycage-mkmodel"; do
        if [ -L "$link" ] && case "$(readlink "$link")" in /opt/rustycage/*) true ;; *) false ;; esac; then
            rm -f "$link"; note_change "removed $link"
        fi
    done
    if [ -d "$OPT" ]; then rm -rf "$OPT"; note_change "removed /opt/rustycage"; fi
    if [ "$purge" = true ]; then
        if [ -d "$ETC" ]; then rm -rf "$ETC"; note_change "removed /etc/rustycage"; fi
        if [ -d "$DATA" ]; then rm -rf "$DATA"; note_change "removed $data_dir (models, KV disk tier)"; fi
        if user_exists rustycage; then
            userdel_in rustycage && note_change "removed user rustycage"
        fi
    else
        [ -d "$DATA" ] && say "kept $data_dir (models) and /etc/rustycage: --uninstall --purge removes them"
    fi
    [ $changed -gt 0 ] || say "nothing to remove"
}

user_exists() {
    if [ -n "$root" ]; then grep -q "^$1:" "$root/etc/passwd" 2>/dev/null; else getent passwd "$1" >/dev/null; fi
}
userdel_in() {
    if [ -n "$root" ]; then userdel --root "$root" "$1"; else userdel "$1"; fi
}

# ---------------------------------------------------------------------------------------------
# What this host is and has
# ---------------------------------------------------------------------------------------------
host_glibc() {  # "2.31"; the target root's when --root holds a system
    local v=""
    if [ -n "$root" ] && [ -x "$root/usr/bin/getconf" ]; then
        v=$(chroot "$root" /usr/bin/getconf GNU_LIBC_VERSION 2>/dev/null || true)
    fi
    [ -n "$v" ] || v=$(getconf GNU_LIBC_VERSION 2>/dev/null || true)
    echo "${v##* }"
}
version_ge() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -1)" = "$2" ]; }   # $1 >= $2

# ---------------------------------------------------------------------------------------------
# NVIDIA cards and the CUDA flavours
# ---------------------------------------------------------------------------------------------
# What each CUDA flavour is built with (scripts/build-cuda.sh's defaults; a test keeps the two equal),
# newest first. The artifact's BUILDINFO has the last word: it is checked again once downloaded.
CUDA_FLAVOURS=(cuda13 cuda11)
cuda_driver_floor() { case $1 in cuda13) echo 580.65.06 ;; cuda11) echo 450.80.02 ;; esac; }
cuda_architectures() {
    case $1 in
        cuda13) echo "75;86-real" ;;
        cuda11) echo "50-virtual;61;75;86" ;;
    esac
}

# Drivers before R510 cannot report a card's compute capability: it comes from the name then. First
# match wins; GeForce names are matched with their brand, so a Quadro RTX 5000 is not an RTX 5090.
CC_BY_NAME=(
    'geforce rtx 50[0-9]0|rtx pro [0-9]+ blackwell' 12.0
    '(^| )g?b(100|200)( |-|$)' 10.0
    '(^| )g?h(100|200|800)( |-|$)' 9.0
    'geforce rtx 40[0-9]0|(^| )l(4|20|40s?)( |-|$)|rtx [0-9]+ ada' 8.9
    '(^| )a(100|800|30)( |-|$)' 8.0
    'geforce rtx 30[0-9]0|rtx a[0-9]+|(^| )a(2|10g?|16|40)( |-|$)' 8.6
    'titan rtx|quadro rtx|geforce rtx 20[0-9]0|gtx 16[0-9]0|(^| )t(4|400|600|1000|1200)( |-|$)' 7.5
    'v100|titan v' 7.0
    'p100' 6.0
    'gtx 10[0-9]0|titan xp|titan x \(pascal\)|(^| )p(4|6|40)( |-|$)|quadro p[0-9]+|gt 1030' 6.1
    'gtx 9[0-9]0|gtx titan x|(^| )m(4|6|40|60)( |-|$)|quadro m[0-9]+' 5.2
    'gtx 75[0-9]|gtx 745|(^| )m10( |-|$)' 5.0
    'k80' 3.7
    'k20|k40|gtx 780|gtx titan' 3.5
    'gtx 6[0-9]0|gtx 7[0-9]0|(^| )k10( |-|$)' 3.0
)
cc_from_name() {  # "NVIDIA GeForce GTX 1080" → 6.1, or "unknown"
    local n=${1,,} i
    for ((i = 0; i < ${#CC_BY_NAME[@]}; i += 2)); do
        if [[ $n =~ ${CC_BY_NAME[i]} ]]; then echo "${CC_BY_NAME[i + 1]}"; return; fi
    done
    echo unknown
}

# NVIDIA_DRIVER and NVIDIA_GPUS ("6.1|NVIDIA GeForce GTX 1080", one per card) from nvidia-smi;
# NVIDIA_GPU names a card even without a driver (lspci, vendor 10de).
detect_nvidia() {
    NVIDIA_DRIVER=""; NVIDIA_GPU=""; NVIDIA_GPUS=()
    if command -v nvidia-smi >/dev/null 2>&1; then
        local out line drv cc name
        out=$(nvidia-smi --query-gpu=driver_version,compute_cap,name --format=csv,noheader 2>/dev/null) \
            || out=$(nvidia-smi --query-gpu=driver_version,name --format=csv,noheader 2>/dev/null | sed 's/,/, ?,/') \
            || out=""
        while IFS= read -r line; do
            drv=$(echo "${line%%,*}" | tr -d ' ')
            case "$drv" in [0-9]*.[0-9]*) ;; *) continue ;; esac
            line=${line#*,}
            cc=$(echo "${line%%,*}" | tr -d ' ')
            name=$(echo "${line#*,}" | sed 's/^ *//; s/ *$//')
            case "$cc" in [0-9]*.[0-9]*) ;; *) cc=$(cc_from_name "$name") ;; esac
            NVIDIA_DRIVER=$drv
            NVIDIA_GPUS+=("$cc|$name")
        done <<<"$out"
        [ ${#NVIDIA_GPUS[@]} -eq 0 ] || NVIDIA_GPU=${NVIDIA_GPUS[0]#*|}
    fi
    if [ -z "$NVIDIA_GPU" ] && command -v lspci >/dev/null 2>&1; then
        NVIDIA_GPU=$(lspci -nn 2>/dev/null | grep -iE 'vga|3d|display' | grep -i '\[10de:' | head -1 | sed 's/^[^ ]* //' || true)
    fi
}

# Whether an architecture list has code for compute capability $2: "NN-real" runs on NN and later
# minor revisions of the same major, "NN-virtual" (PTX) on NN and every later card, "NN" is both.
archs_cover() {  # "61-real;86-virtual", "8.6"
    local cc=${2/./} a n
    local IFS=';'
    for a in $1; do
        n=${a%%-*}
        case "$a" in
            *-real) [ $((n / 10)) -eq $((cc / 10)) ] && [ "$n" -le "$cc" ] && return 0 ;;
            *) [ "$n" -le "$cc" ] && return 0 ;;
        esac
    done
    return 1
}

# Whether a CUDA build (driver floor $1, architectures $2) runs on every NVIDIA GPU here; WHY_NOT says
# why not, WHY why.
cuda_fits() {
    WHY_NOT=""; WHY=""
    if ! version_ge "$NVIDIA_DRIVER" "$1"; then
        WHY_NOT="needs NVIDIA driver $1 or newer, this host has $NVIDIA_DRIVER"; return 1
    fi
    local g cc ccs=""
    for g in "${NVIDIA_GPUS[@]}"; do
        cc=${g%%|*}
        if [ "$cc" = unknown ]; then
            warn "compute capability of ${g#*|} unknown (a driver before R510 cannot report it): assuming it runs"
            continue
        fi
        archs_cover "$2" "$cc" || { WHY_NOT="has no code for ${g#*|} (compute capability $cc; built for ${2//;/ })"; return 1; }
        case " $ccs " in *" $cc "*) ;; *) ccs="${ccs:+$ccs }$cc" ;; esac
    done
    WHY="driver $NVIDIA_DRIVER >= $1, code for every GPU (compute capability ${ccs:-unknown})"
}

detect_host() {
    local os="unknown"
    if [ -r "$root/etc/os-release" ]; then
        # shellcheck disable=SC1091
        os=$(. "$root/etc/os-release" && echo "${PRETTY_NAME:-$ID $VERSION_ID}")
        local id ver
        id=$(. "$root/etc/os-release" && echo "${ID:-}")
        ver=$(. "$root/etc/os-release" && echo "${VERSION_ID:-}")
        case "$id:$ver" in
            debian:11|debian:12|debian:13|ubuntu:20.04|ubuntu:22.04|ubuntu:24.04) ;;
            *) warn "$os is not a tested distribution (Debian 11-13, Ubuntu 20.04-24.04): continuing" ;;
        esac
    fi
    [ "$(uname -m)" = "$ARCH" ] || die "only $ARCH releases exist; this host is $(uname -m)"
    HOST_GLIBC=$(host_glibc)
    [ -n "$HOST_GLIBC" ] || die "cannot tell the glibc version (getconf GNU_LIBC_VERSION)"
    HOST_AVX2=false; HOST_AVX512=false
    grep -qw avx2 "$CPUINFO" 2>/dev/null && HOST_AVX2=true
    grep -qw avx512f "$CPUINFO" 2>/dev/null && HOST_AVX512=true
    detect_nvidia
    # Vulkan: the loader and a driver for a real GPU. Mesa installs its ICD files whatever the
    # hardware, and lavapipe (Mesa's CPU device) does not count: vulkaninfo says what the devices are;
    # without it, a GPU on the PCI bus plus a non-lavapipe ICD file has to do.
    VULKAN_LOADER=false; VULKAN_GPU_ICD=""
    if ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1'; then VULKAN_LOADER=true; fi
    OTHER_GPU=""
    if command -v lspci >/dev/null 2>&1; then
        OTHER_GPU=$(lspci -nn 2>/dev/null | grep -iE 'vga|3d|display' | grep -ivE '\[10de:|\[1af4:|\[1234:|\[1013:|\[15ad:' | head -1 | sed 's/^[^ ]* //' || true)
    fi
    if [ "$VULKAN_LOADER" = true ] && command -v vulkaninfo >/dev/null 2>&1; then
        VULKAN_GPU_ICD=$(timeout 20 vulkaninfo --summary 2>/dev/null | awk '/deviceType/ && /GPU/ {gpu=1} gpu && /deviceName/ {sub(/.*= /, ""); print; exit}' || true)
    elif [ -n "$OTHER_GPU" ]; then
        local icd
        for icd in "$root"/usr/share/vulkan/icd.d/*.json "$root"/etc/vulkan/icd.d/*.json; do
            [ -f "$icd" ] || continue
            case "$(basename "$icd")" in lvp_icd*) ;; *) VULKAN_GPU_ICD="$(basename "$icd" .json)"; break ;; esac
        done
    fi
    say "host: $os, glibc $HOST_GLIBC, CPU $( [ $HOST_AVX512 = true ] && echo AVX-512 || { [ $HOST_AVX2 = true ] && echo AVX2 || echo 'without AVX2'; } )"
    local g
    for g in "${NVIDIA_GPUS[@]}"; do
        say "NVIDIA GPU: ${g#*|}, compute capability ${g%%|*}${NVIDIA_DRIVER:+, driver $NVIDIA_DRIVER}"
    done
    [ ${#NVIDIA_GPUS[@]} -gt 0 ] || [ -z "$NVIDIA_GPU" ] || say "NVIDIA GPU: $NVIDIA_GPU (no driver)"
    [ -z "$VULKAN_GPU_ICD" ] || say "Vulkan: loader $( [ $VULKAN_LOADER = true ] && echo present || echo missing ), driver $VULKAN_GPU_ICD"
}

# The flavours to try, best first (CANDIDATES; cpu always last), and why: the newest CUDA flavour
# that runs on every NVIDIA GPU here, else Vulkan with a GPU driver, else CPU. What is missing for a
# better one is said out loud. --flavour cuda picks among the CUDA flavours the same way.
pick_flavours() {
    CANDIDATES=(); PICK_WHY=""
    case "$flavour" in
        auto|cuda) ;;
        *) CANDIDATES=("$flavour"); PICK_WHY="--flavour $flavour"; return ;;
    esac
    local f
    if [ ${#NVIDIA_GPUS[@]} -gt 0 ]; then
        if [ "$HOST_AVX2" = false ]; then
            warn "the CUDA builds need a CPU with AVX2; not using them"
        else
            for f in "${CUDA_FLAVOURS[@]}"; do
                if cuda_fits "$(cuda_driver_floor "$f")" "$(cuda_architectures "$f")"; then
                    CANDIDATES+=("$f"); [ -n "$PICK_WHY" ] || PICK_WHY="$f: $WHY"
                else
                    say "not $f: it $WHY_NOT"
                fi
            done
            CANDIDATES+=(cuda)   # a release from before the two CUDA flavours: its BUILDINFO decides
            [ ${#CANDIDATES[@]} -gt 1 ] || warn "no CUDA build runs on these GPUs with driver $NVIDIA_DRIVER (cuda11 needs $(cuda_driver_floor cuda11)+ and compute capability 5.0+, cuda13 $(cuda_driver_floor cuda13)+ and 7.5+): upgrade the driver (not done by this script)"
        fi
    elif [ -n "$NVIDIA_GPU" ]; then
        warn "NVIDIA GPU found ($NVIDIA_GPU) but no working driver (nvidia-smi): install the NVIDIA driver (450.80 or newer runs the cuda11 build, 580 or newer the cuda13 build; e.g. 'apt install nvidia-driver' on Debian with non-free, 'ubuntu-drivers install' on Ubuntu) and run this again. This script does not install drivers."
    fi
    [ "$flavour" = auto ] || { [ ${#CANDIDATES[@]} -gt 0 ] || die "--flavour cuda: no CUDA build runs on this host"; return; }
    if [ -n "$VULKAN_GPU_ICD" ] && [ "$VULKAN_LOADER" = true ] && [ "$HOST_AVX2" = true ]; then
        CANDIDATES+=(vulkan); [ -n "$PICK_WHY" ] || PICK_WHY="vulkan: a Vulkan loader and a GPU driver ($VULKAN_GPU_ICD)${NVIDIA_GPU:+, no CUDA build for the NVIDIA GPU}"
    fi
    if [ -n "$OTHER_GPU" ] && [ -z "$VULKAN_GPU_ICD" -o "$VULKAN_LOADER" = false ]; then
        warn "GPU found ($OTHER_GPU) but no Vulkan driver: 'apt install libvulkan1 mesa-vulkan-drivers' enables the Vulkan build; not installed by this script"
    fi
    CANDIDATES+=(cpu); [ -n "$PICK_WHY" ] || PICK_WHY="cpu: no GPU this release can use"
}

# ---------------------------------------------------------------------------------------------
# Finding, fetching and verifying the artifact
# ---------------------------------------------------------------------------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/rustycage-install.XXXXXX")
trap 'rm -rf "$work"' EXIT

artifact_name() { echo "rustycage-$1-linux-$ARCH-$2.tar.gz"; }  # version, flavour

# Checks $1 against the SHA256SUMS file $2 (a line "<hex>  <name>" for its base name).
verify_sums() {
    local file=$1 sums=$2 name want got
    name=$(basename "$file")
    [ -f "$sums" ] || die "no SHA256SUMS for $name (give --sums FILE): refusing an unverified artifact"
    want=$(awk -v n="$name" '$2 == n || $2 == "*"n {print $1}' "$sums" | head -1)
    [ -n "$want" ] || die "$name is not listed in $sums"
    got=$(sha256sum "$file" | cut -d' ' -f1)
    [ "$want" = "$got" ] || die "$name does not match SHA256SUMS (expected $want, got $got): corrupt or tampered download"
    ARTIFACT_SHA=$got
}

# Sets ARTIFACT (a local, verified tarball) for flavour $1; returns 1 when that flavour is not offered.
fetch_artifact() {
    local want=$1
    if [ -n "$source_tarball" ]; then
        [ -f "$source_tarball" ] || die "$source_tarball does not exist"
        verify_sums "$source_tarball" "${sums_file:-$(dirname "$source_tarball")/SHA256SUMS}"
        ARTIFACT=$source_tarball
        verify_signature "$source_tarball.sig"
        return 0
    fi
    if [ -n "$dist_dir" ]; then
        local v=${version:-$(latest_in_dist)}
        [ -n "$v" ] || die "no release artifacts in $dist_dir"
        local f="$dist_dir/$(artifact_name "$v" "$want")"
        [ -f "$f" ] || return 1
        verify_sums "$f" "${sums_file:-$dist_dir/SHA256SUMS}"
        ARTIFACT=$f
        verify_signature "$f.sig"
        return 0
    fi
    [ -n "$url" ] || die "no artifact source: give --offline TARBALL, --dist DIR or --url BASE (or set RUSTYCAGE_RELEASE_URL)"
    command -v curl >/dev/null || die "curl is needed to download (or use --offline TARBALL)"
    local v=$version
    if [ -z "$v" ]; then
        v=$(curl -fsSL "$url/LATEST" 2>/dev/null | head -1 | tr -d '[:space:]') || true
        [ -n "$v" ] || die "cannot read $url/LATEST: give --version"
        version=$v
    fi
    local name
    name=$(artifact_name "$v" "$want")
    if ! curl -fsSL -o "$work/SHA256SUMS" "$url/$v/SHA256SUMS"; then die "cannot download $url/$v/SHA256SUMS"; fi
    grep -q " \*\{0,1\}$name\$" "$work/SHA256SUMS" || return 1
    say "downloading $url/$v/$name"
    curl -fL --retry 3 -o "$work/$name" "$url/$v/$name" || die "download of $name failed"
    verify_sums "$work/$name" "$work/SHA256SUMS"
    ARTIFACT="$work/$name"
    if [ -n "$trusted_keys" ]; then curl -fsSL -o "$work/$name.sig" "$url/$v/$name.sig" || die "cannot download $url/$v/$name.sig"; fi
    verify_signature "$work/$name.sig"
}

# With --trusted-keys: ARTIFACT's signature ($1: where ARTIFACT.sig is) must verify with one of them.
verify_signature() {
    [ -n "$trusted_keys" ] || return 0
    command -v openssl >/dev/null || die "openssl is needed to check the artifact's signature (--trusted-keys)"
    local sig=$1 sha key ok=false
    [ -f "$sig" ] || die "no signature $(basename "$sig") for $(basename "$ARTIFACT"): refusing an unsigned artifact (--trusted-keys)"
    sha=$(sha256sum "$ARTIFACT" | cut -d' ' -f1)
    [ "$(sed -n 's/^sha256 //p' "$sig")" = "$sha" ] || die "$(basename "$sig") is the signature of another artifact"
    sed -n 's/^ed25519 //p' "$sig" | base64 -d >"$work/sig.bin" 2>/dev/null || die "$(basename "$sig") is malformed"
    printf 'rustycage-artifact 1\nsha256 %s\n' "$sha" >"$work/statement"
    # Each PEM block of the trusted keys file in turn.
    awk -v d="$work" '/BEGIN PUBLIC KEY/{n++} n{print > (d "/key." n ".pem")}' "$trusted_keys"
    for key in "$work"/key.*.pem; do
        [ -f "$key" ] || continue
        if openssl pkeyutl -verify -pubin -inkey "$key" -rawin -in "$work/statement" -sigfile "$work/sig.bin" >/dev/null 2>&1; then ok=true; fi
    done
    [ "$ok" = true ] || die "$(basename "$ARTIFACT") is not signed by a trusted key ($trusted_keys): refusing it"
    say "signature of $(basename "$ARTIFACT") verified ($trusted_keys)"
}

ensure_trusted_keys() {
    [ -n "$trusted_keys" ] || return 0
    mkdir -p "$ETC"
    write_if_changed "installed /etc/rustycage/trusted-keys.pem (the fleet agent verifies rollout artifacts with it)" "$ETC/trusted-keys.pem" <"$trusted_keys" || true
}

latest_in_dist() {
    ls "$dist_dir" 2>/dev/null | sed -n "s/^rustycage-\(.*\)-linux-$ARCH-[a-z]*\.tar\.gz$/\1/p" | sort -V | tail -1
}

# Unpacks ARTIFACT into $work/unpacked and reads its facts (VERSION, share/rustycage/BUILDINFO).
unpack_artifact() {
    rm -rf "$work/unpacked"; mkdir -p "$work/unpacked"
    tar -xzf "$ARTIFACT" -C "$work/unpacked" --no-same-owner
    local top
    top=$(find "$work/unpacked" -mindepth 1 -maxdepth 1 -type d | head -1)
    [ -n "$top" ] && [ -x "$top/bin/rustycage" ] && [ -f "$top/VERSION" ] || die "$(basename "$ARTIFACT") is not a rustycage release (no bin/rustycage, VERSION)"
    UNPACKED=$top
    ART_VERSION=$(head -1 "$top/VERSION")
    case "$ART_VERSION" in [0-9]*.[0-9]*.[0-9]*) ;; *) die "bad VERSION '$ART_VERSION' in the artifact" ;; esac
    ART_FLAVOUR=$(sed -n 's/^flavour=//p' "$top/share/rustycage/BUILDINFO")
    ART_GLIBC=$(sed -n 's/^glibc_floor=//p' "$top/share/rustycage/BUILDINFO")
    ART_DRIVER=$(sed -n 's/^cuda_driver_floor=//p' "$top/share/rustycage/BUILDINFO")
    ART_ARCHS=$(sed -n 's/^cuda_architectures=//p' "$top/share/rustycage/BUILDINFO")
}

# Fetches the first candidate offered that runs here: its BUILDINFO (glibc floor; for CUDA the driver
# floor and architectures) is checked against the host before anything is installed.
choose_and_fetch() {
    if [ -n "$source_tarball" ]; then CANDIDATES=(given); PICK_WHY="the tarball given (--offline)"; else pick_flavours; fi
    say "flavour: $PICK_WHY"
    local want tried=()
    for want in "${CANDIDATES[@]}"; do
        tried+=("$want")
        if ! fetch_artifact "$want"; then
            [ "$flavour" = auto ] || [ "$flavour" = cuda ] || die "no $want artifact in this release"
            [ "$want" = cuda ] || say "no $want artifact in this release"
            continue
        fi
        unpack_artifact
        local ok=true
        if [ -n "$ART_GLIBC" ] && ! version_ge "$HOST_GLIBC" "$ART_GLIBC"; then
            warn "the $ART_FLAVOUR build needs glibc $ART_GLIBC, this host has $HOST_GLIBC"; ok=false
        fi
        case "$ART_FLAVOUR" in cuda*)
            if [ -n "$NVIDIA_DRIVER" ] && [ -n "$ART_DRIVER" ] && ! cuda_fits "$ART_DRIVER" "${ART_ARCHS:-0-virtual}"; then
                warn "the $ART_FLAVOUR build $WHY_NOT"; ok=false
            fi ;;
        esac
        [ $ok = false ] || return 0
        [ -z "$source_tarball" ] && { [ "$flavour" = auto ] || [ "$flavour" = cuda ]; } || die "the artifact does not run on this host"
    done
    die "no usable artifact for this host (tried: ${tried[*]})"
}

# ---------------------------------------------------------------------------------------------
# Installing
# ---------------------------------------------------------------------------------------------
# The one library the artifacts take from the host besides glibc (and the GPU driver's): libcurl,
# for pulls. A runtime package, not a driver: installed with apt when missing, saying so.
ensure_runtime_libs() {
    if [ -n "$root" ]; then
        ls "$root"/usr/lib/x86_64-linux-gnu/libcurl.so.4 "$root"/lib/x86_64-linux-gnu/libcurl.so.4 >/dev/null 2>&1 \
            || warn "$root has no libcurl.so.4: install libcurl4 there before starting rustycage"
        return
    fi
    ldconfig -p 2>/dev/null | grep -q 'libcurl.so.4 ' && return
    command -v apt-get >/dev/null || die "libcurl.so.4 is missing: install your distribution's libcurl4 package"
    say "installing libcurl4 (rustycage needs libcurl.so.4)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libcurl4 >/dev/null \
        || die "apt-get install libcurl4 failed"
    note_change "installed libcurl4"
}

install_tree() {
    local dest="$OPT/$ART_VERSION"
    mkdir -p "$OPT"
    if [ -f "$dest/.artifact-sha256" ] && [ "$(cat "$dest/.artifact-sha256")" = "$ARTIFACT_SHA" ]; then
        say "rustycage $ART_VERSION ($ART_FLAVOUR) already in /opt/rustycage/$ART_VERSION"
    else
        local stage="$OPT/.staging-$ART_VERSION.$$"
        rm -rf "$stage"
        cp -a "$UNPACKED" "$stage"
        echo "$ARTIFACT_SHA" >"$stage/.artifact-sha256"
        chmod -R go-w "$stage"
        if [ -e "$dest" ]; then
            # The same version from another artifact (another flavour, a rebuild): swap it whole.
            mv "$dest" "$OPT/.old-$ART_VERSION.$$"
            mv "$stage" "$dest"
            rm -rf "$OPT/.old-$ART_VERSION.$$"
            note_change "replaced /opt/rustycage/$ART_VERSION with the $ART_FLAVOUR artifact"
        else
            mv "$stage" "$dest"
            note_change "installed rustycage $ART_VERSION ($ART_FLAVOUR) to /opt/rustycage/$ART_VERSION"
        fi
    fi
    [ "$stage_only" = false ] || return 0
    PREVIOUS=$(readlink "$OPT/current" 2>/dev/null || true)
    if [ "$PREVIOUS" != "$ART_VERSION" ]; then
        ln -sfn "$ART_VERSION" "$OPT/.current.$$"
        mv -T "$OPT/.current.$$" "$OPT/current"
        note_change "current -> $ART_VERSION${PREVIOUS:+ (was $PREVIOUS)}"
        VERSION_SWITCHED=true
    fi
    mkdir -p "$BIN_DIR"
    local b
    for b in rustycage rustycage-mkmodel; do
        [ -x "$OPT/current/bin/$b" ] || continue
        if [ "$(readlink "$BIN_DIR/$b" 2>/dev/null)" != "/opt/rustycage/current/bin/$b" ]; then
            [ ! -e "$BIN_DIR/$b" ] || [ -L "$BIN_DIR/$b" ] || die "$BIN_DIR/$b exists and is not our link: move it away first"
            ln -sfn "/opt/rustycage/current/bin/$b" "$BIN_DIR/$b"
            note_change "linked /usr/local/bin/$b"
        fi
    done
    prune_versions
}

# Keeps the newest versions (and always the current one) for rollbacks; older ones go.
prune_versions() {
    local current v n=0
    current=$(readlink "$OPT/current")
    for v in $(ls "$OPT" | grep -E '^[0-9]+\.[0-9]+\.[0-9]+' | sort -rV); do
        n=$((n + 1))
        if [ $n -gt $KEEP_VERSIONS ] && [ "$v" != "$current" ]; then
            rm -rf "${OPT:?}/$v"; note_change "removed old version $v"
        fi
    done
}

ensure_user() {
    if user_exists rustycage; then return; fi
    local args=(--system --user-group --home-dir "$data_dir" --no-create-home --shell /usr/sbin/nologin
                --comment "Rustycage LLM server")
    if [ -n "$root" ]; then
        [ -f "$root/etc/passwd" ] || { warn "$root has no /etc/passwd: no user created"; return; }
        useradd --root "$root" "${args[@]}" rustycage
    else
        useradd "${args[@]}" rustycage
    fi
    note_change "created system user rustycage"
    # GPU device nodes are group-accessible (video, render) on Debian and Ubuntu.
    local g
    for g in video render; do
        if grep -q "^$g:" "$root/etc/group" 2>/dev/null; then
            if [ -n "$root" ]; then usermod --root "$root" -aG "$g" rustycage; else usermod -aG "$g" rustycage; fi
        fi
    done
}

owner_of_data() { user_exists rustycage && echo rustycage || echo root; }

chown_in_root() {  # owner, paths...: names resolve in the target root, not on the host
    local owner=$1; shift
    local uid gid
    uid=$(awk -F: -v u="$owner" '$1 == u {print $3}' "$root/etc/passwd" 2>/dev/null)
    gid=$(awk -F: -v u="$owner" '$1 == u {print $4}' "$root/etc/passwd" 2>/dev/null)
    [ -n "$uid" ] && chown "$uid:$gid" "$@"
}

ensure_data_dir() {
    local d made=false
    for d in "$DATA" "$DATA/models" "$DATA/kv"; do
        if [ ! -d "$d" ]; then mkdir -p "$d"; made=true; fi
    done
    chmod 0750 "$DATA"
    if [ "$made" = true ]; then
        chown_in_root "$(owner_of_data)" "$DATA" "$DATA/models" "$DATA/kv" || true
        note_change "created $data_dir (models, kv)"
    fi
}

render() {  # template file → stdout, with the data dir filled in
    sed "s|@DATA_DIR@|$data_dir|g" "$1"
}

# Writes $2 from stdin when its content differs; reports whether it changed.
# The comparison happens outside the target directory, so an unchanged file leaves even the
# directory's mtime alone; a changed one is replaced atomically.
write_if_changed() {  # description, path
    local want="$work/want.$$"
    cat >"$want"
    if [ -f "$2" ] && cmp -s "$want" "$2"; then rm -f "$want"; return 1; fi
    cp "$want" "$2.new.$$"
    chmod 0644 "$2.new.$$"
    mv "$2.new.$$" "$2"
    rm -f "$want"
    note_change "$1"
    return 0
}

env_has() { grep -qE "^[[:space:]]*$1=" "$2"; }

# /etc/rustycage/rustycage.env is the operator's: created once, never rewritten. New keys a fleet
# install needs are appended; a value already there is kept (and said so) rather than replaced.
ensure_env_file() {
    local env="$ETC/rustycage.env" tmpl="$OPT/current/share/rustycage/rustycage.env"
    mkdir -p "$ETC"
    render "$tmpl" | write_if_changed "updated /etc/rustycage/rustycage.env.dist (this release's defaults)" "$ETC/rustycage.env.dist" || true
    if [ ! -f "$env" ]; then
        render "$tmpl" >"$env.new.$$"
        chmod 0640 "$env.new.$$"
        mv "$env.new.$$" "$env"
        chown_in_root root "$env" || true
        local grp; grp=$(awk -F: '$1 == "rustycage" {print $3}' "$root/etc/group" 2>/dev/null || true)
        [ -z "$grp" ] || chgrp "$grp" "$env"
        note_change "created /etc/rustycage/rustycage.env"
    else
        say "kept /etc/rustycage/rustycage.env (yours: never overwritten)"
    fi
    if [ "$fleet" = true ]; then
        set_env_once RUSTYCAGE_ETCD "$etcd" "$env"
        set_env_once RUSTYCAGE_HOST_ID "${host_id:-$(cat "$root/etc/hostname" 2>/dev/null || hostname)}" "$env"
    fi
}

set_env_once() {  # key, value, file
    if env_has "$1" "$3"; then
        local cur; cur=$(sed -n "s/^[[:space:]]*$1=//p" "$3" | tail -1)
        [ "$cur" = "$2" ] || warn "kept $1=$cur in rustycage.env (asked for $2: edit the file to change it)"
        return
    fi
    printf '%s=%s\n' "$1" "$2" >>"$3"
    note_change "set $1 in rustycage.env"
}

ensure_units() {
    mkdir -p "$UNIT_DIR"
    UNITS_CHANGED=false
    local u
    for u in "${UNITS[@]}"; do
        if [ "$u" = rustycage-agent.service ] && [ "$fleet" = false ] && [ ! -f "$UNIT_DIR/$u" ]; then continue; fi
        if render "$OPT/current/share/rustycage/systemd/$u" | write_if_changed "installed $u" "$UNIT_DIR/$u"; then UNITS_CHANGED=true; fi
    done
}

# On a fleet host the agent supervises the server: the agent unit is enabled, the server's is not.
ensure_enabled() {
    local on=rustycage.service off=rustycage-agent.service
    if [ "$fleet" = true ] || is_enabled rustycage-agent.service; then on=rustycage-agent.service; off=rustycage.service; fi
    if ! is_enabled "$on"; then
        systemctl_offline enable "$on" >/dev/null 2>&1 || die "systemctl enable $on failed"
        note_change "enabled $on"
    fi
    if is_enabled "$off"; then
        if systemd_live; then systemctl disable --now "$off" >/dev/null 2>&1 || true; else systemctl_offline disable "$off" >/dev/null 2>&1 || true; fi
        note_change "disabled $off"
    fi
    ACTIVE_UNIT=$on
}

is_enabled() {
    if [ -n "$root" ]; then [ -L "$root/etc/systemd/system/multi-user.target.wants/$1" ]
    else systemctl is-enabled --quiet "$1" 2>/dev/null; fi
}

ensure_running() {
    if ! systemd_live; then
        say "systemd is not running here: $ACTIVE_UNIT is enabled and starts at boot"
        return
    fi
    [ "$UNITS_CHANGED" = false ] || systemctl daemon-reload
    [ "$start" = true ] || { say "--no-start: not starting $ACTIVE_UNIT"; return; }
    if [ "$ACTIVE_UNIT" = rustycage-agent.service ] && ! "$OPT/current/bin/rustycage" agent --help >/dev/null 2>&1; then
        warn "this release has no 'rustycage agent' yet: $ACTIVE_UNIT is installed and enabled, not started"
        return
    fi
    if systemctl is-active --quiet "$ACTIVE_UNIT"; then
        if [ "${VERSION_SWITCHED:-false}" = true ] || [ "$UNITS_CHANGED" = true ]; then
            systemctl restart "$ACTIVE_UNIT"; note_change "restarted $ACTIVE_UNIT"
        fi
    else
        systemctl start "$ACTIVE_UNIT"; note_change "started $ACTIVE_UNIT"
    fi
}

# Curated models (share/rustycage/curated.json) through `rustycage pull --curated`.
pull_models() {
    if [ ${#models[@]} -eq 0 ]; then
        if [ -t 0 ] && [ "$assume_yes" = false ]; then
            local answer=""
            read -r -p "[$PROG] pull the curated models that fit this host now? [y/N] " answer || true
            case "$answer" in y|Y|yes) models=(auto) ;; *) models=(none) ;; esac
        else
            models=(none)
        fi
    fi
    [ "${models[0]}" != none ] || { say "no models pulled (later: rustycage pull --curated --models-dir $data_dir/models)"; return; }
    local bin="$OPT/current/bin/rustycage" m
    local args=(pull --curated --models-dir "$DATA/models")
    if [ "${models[0]}" = auto ]; then
        "$bin" "${args[@]}" --fit auto || warn "some curated models were not pulled (run it again to resume)"
    else
        for m in "${models[@]}"; do "$bin" "${args[@]}" --fit "$m" || warn "$m was not pulled"; done
    fi
    chown_in_root "$(owner_of_data)" -R "$DATA/models" 2>/dev/null || true
}

# ---------------------------------------------------------------------------------------------
if [ "$uninstall" = true ]; then
    do_uninstall
    exit 0
fi

detect_host
if [ "$detect_only" = true ]; then
    for c in "${CUDA_FLAVOURS[@]}"; do say "$c runs with driver >= $(cuda_driver_floor "$c") on $(cuda_architectures "$c")"; done
    pick_flavours
    say "flavour: $PICK_WHY"
    shown=(); for c in "${CANDIDATES[@]}"; do [ "$c" = cuda ] || shown+=("$c"); done   # cuda: older releases' name
    say "would install: ${shown[0]}${shown[1]:+ (then, if this release lacks it or it does not run: ${shown[*]:1})}"
    exit 0
fi
choose_and_fetch
say "artifact: $(basename "$ARTIFACT") (rustycage $ART_VERSION, $ART_FLAVOUR${ART_GLIBC:+, glibc >= $ART_GLIBC})"
ensure_runtime_libs
if ! "$UNPACKED/bin/rustycage" version --no-devices >/dev/null 2>&1 && [ -z "$root" ]; then
    die "the artifact's rustycage does not run on this host: $("$UNPACKED/bin/rustycage" version --no-devices 2>&1 | head -3)"
fi
install_tree
if [ "$stage_only" = true ]; then
    say "staged rustycage $ART_VERSION in /opt/rustycage/$ART_VERSION (current: $(readlink "$OPT/current" 2>/dev/null || echo none))"
    exit 0
fi
ensure_user
ensure_data_dir
ensure_env_file
ensure_trusted_keys
ensure_units
ensure_enabled
ensure_running
pull_models
if [ $changed -eq 0 ]; then
    say "rustycage $ART_VERSION is installed and up to date: nothing changed"
else
    say "done: rustycage $ART_VERSION ($ART_FLAVOUR); settings in /etc/rustycage/rustycage.env; $ACTIVE_UNIT"
fi
