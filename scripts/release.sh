#!/usr/bin/env bash
# `make release`: builds and packs the release artifacts of VERSION into dist/ (docs/RELEASING.md).
#
#   scripts/release.sh [--flavours auto|cpu,vulkan,cuda11,cuda13] [--out dist]
#
# dist/ then holds rustycage-VERSION-linux-x86_64-{cpu,vulkan,cuda11,cuda13}.tar.gz (each flavour built),
# each with its .sig (scripts/release-sign.sh, key: RUSTYCAGE_SIGNING_KEY), trusted-keys.pem (the
# public key hosts verify with), install.sh, LATEST (the version) and SHA256SUMS over all of them. `auto` is cpu, vulkan where the
# Vulkan headers are new enough for the pinned ggml-vulkan (scripts/vulkan-headers.sh fetches them
# from the next Debian release where the system's are too old). The CUDA flavours are built when
# named (each takes over an hour on two cores: `make release FLAVOURS=cuda11,cuda13`).
# Every artifact is built in a Debian bullseye root and must need nothing above GLIBC_2.31.
set -euo pipefail
cd "$(dirname "$0")/.."
flavours=auto
out=dist
while [ $# -gt 0 ]; do
    case "$1" in
        --flavours) flavours=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) echo "usage: $0 [--flavours auto|cpu,vulkan,cuda11,cuda13] [--out DIR]" >&2; exit 2 ;;
    esac
done
log() { echo "[release] $*" >&2; }
die() { echo "[release] error: $*" >&2; exit 1; }

GLIBC_MAX=2.31
version=$(head -1 VERSION)
echo "$version" | grep -Eq '^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.]+)?$' || die "VERSION '$version' is not MAJOR.MINOR.PATCH[-suffix]"
grep -q "^## \[$version\]" CHANGELOG.md || log "warning: CHANGELOG.md has no '## [$version]' section yet (docs/RELEASING.md)"
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || log "warning: the tree has uncommitted changes: the artifacts say '<commit>-dirty'"

if [ "$flavours" = auto ]; then
    flavours=cpu
    if why=$(scripts/vulkan-headers.sh 2>&1 >/dev/null); then flavours+=,vulkan; else log "skipping vulkan: $why"; fi
fi
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
mkdir -p "$out"
# Only this version's artifacts stay in dist/ (older ones are build outputs, not archives).
find "$out" -maxdepth 1 -name 'rustycage-*-linux-*.tar.gz' ! -name "rustycage-$version-linux-*" -delete

IFS=, read -r -a list <<<"$flavours"
for f in "${list[@]}"; do
    log "=== $f"
    start=$(date +%s)
    built=$(scripts/release-build.sh "$f") || die "the $f build failed"
    read -r build sysroot <<<"$built"
    args=(--build "$build" --flavour "$f" --out "$out")
    [ -z "$sysroot" ] || args+=(--sysroot "$sysroot")
    # cuda13's cuBLAS is the host toolkit's (bound into the root); cuda11's is in the root itself.
    [ "$f" != cuda13 ] || args+=(--lib-path "$(dirname "$(dirname "$(readlink -f "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")")/lib64")
    tarball=$(scripts/release-package.sh "${args[@]}")
    scripts/release-check.sh --quiet --max-glibc "$GLIBC_MAX" "$tarball" >&2 || die "$tarball fails the ELF checks"
    log "$tarball: $(du -h "$tarball" | cut -f1), built in $(( $(date +%s) - start ))s"
done

# Every artifact is signed (the fleet's hosts run nothing else): with the lab's key in
# RUSTYCAGE_SIGNING_KEY, else with a development key made once under build/ (said loudly: hosts
# that trust it trust whoever can read this machine's build tree).
key=${RUSTYCAGE_SIGNING_KEY:-}
if [ -z "$key" ]; then
    key=build/release-signing/dev-signing-key.pem
    [ -f "$key" ] || { mkdir -p "$(dirname "$key")" && scripts/release-sign.sh --keygen "$key" >&2; }
    log "WARNING: signed with the development key $key (set RUSTYCAGE_SIGNING_KEY to the lab's key)"
fi
scripts/release-sign.sh --key "$key" "$out"/rustycage-"$version"-linux-*.tar.gz >&2
openssl pkey -in "$key" -pubout -out "$out/trusted-keys.pem"
cp scripts/install.sh "$out/install.sh"
echo "$version" >"$out/LATEST"
(cd "$out" && sha256sum rustycage-"$version"-linux-*.tar.gz rustycage-"$version"-linux-*.tar.gz.sig install.sh trusted-keys.pem >SHA256SUMS)
log "dist: $(cd "$out" && ls | tr '\n' ' ')"
