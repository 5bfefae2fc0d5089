#!/usr/bin/env bash
# Packs one build of Rustycage into a release tarball:
#
#   scripts/release-package.sh --build DIR --flavour cpu|vulkan|cuda|cuda11|cuda13 --out DIR
#                              [--version V] [--sysroot DIR] [--lib-path DIR]... [--fast] [--dev]
#
# Layout of rustycage-V-linux-x86_64-FLAVOUR.tar.gz (one top directory of the same name):
#   bin/      rustycage, rustycage-mkmodel (stripped; RUNPATH $ORIGIN/../lib)
#   lib/      llama.cpp's shared libraries and backend modules (RUNPATH $ORIGIN) and the runtime
#             libraries they need that a host may lack (libgomp; cuBLAS for CUDA), from --sysroot
#             (the bullseye build root for the CPU artifact) or --lib-path directories
#   share/rustycage/  curated.json, rustycage.env, systemd/*.service, BUILDINFO, licenses/
#   docs/     README, INSTALL, RELEASING, MODELS, KV_TIERING, CHANGELOG
#   install.sh, VERSION
# BUILDINFO records the flavour, commits, the highest GLIBC_ version any ELF needs (glibc_floor,
# measured by scripts/release-check.sh) and, for CUDA, the architectures and the driver floor.
# Deterministic: sorted names, owner 0, mtimes from SOURCE_DATE_EPOCH (default: the commit's time).
# --version repacks under another version (installer tests of upgrades); --dev marks a package of a
# development build (make test); --fast compresses with gzip -1. Prints the tarball's path.
set -euo pipefail
cd "$(dirname "$0")/.."
here=$(pwd)

build=""; flavour=""; out=""; version=""; sysroot=""; fast=false; dev=false
lib_paths=()
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build=$2; shift 2 ;;
        --flavour) flavour=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --version) version=$2; shift 2 ;;
        --sysroot) sysroot=$2; shift 2 ;;
        --lib-path) lib_paths+=("$2"); shift 2 ;;
        --fast) fast=true; shift ;;
        --dev) dev=true; shift ;;
        *) echo "usage: $0 --build DIR --flavour cpu|vulkan|cuda|cuda11|cuda13 --out DIR [--version V] [--sysroot DIR] [--lib-path DIR]... [--fast] [--dev]" >&2; exit 2 ;;
    esac
done
die() { echo "[release-package] error: $*" >&2; exit 1; }
[ -n "$build" ] && [ -n "$out" ] || die "--build and --out are required"
case "$flavour" in cpu|vulkan|cuda|cuda11|cuda13) ;; *) die "--flavour must be cpu, vulkan, cuda11 or cuda13 (cuda: the build's own)" ;; esac
[ -x "$build/bin/rustycage" ] || die "$build/bin/rustycage does not exist: build first"
if [ "$flavour" = cuda ]; then
    # The toolkit decides the CUDA flavour (scripts/build-cuda.sh): the build's llama.cpp records it.
    cuda_env="$sysroot$(dirname "$(readlink "$build/lib/libllama.so" 2>/dev/null || echo /nonexistent/x)")/../cuda-build.env"
    flavour=$(sed -n 's/^cuda_flavour=//p' "$cuda_env" 2>/dev/null)
    case "$flavour" in cuda11|cuda13) ;; *) die "--flavour cuda: $cuda_env names no release flavour (cuda11, cuda13): '${flavour}'" ;; esac
fi
version=${version:-$(head -1 VERSION)}
name="rustycage-$version-linux-x86_64-$flavour"
mkdir -p "$out"
out=$(cd "$out" && pwd)
stage="$out/.stage-$name"
rm -rf "$stage"
top="$stage/$name"
mkdir -p "$top/bin" "$top/lib" "$top/share/rustycage/systemd" "$top/share/rustycage/licenses" "$top/docs"

strip_elf() { strip --strip-unneeded "$1" 2>/dev/null || true; }

# --- bin/
for b in rustycage rustycage-mkmodel; do
    cp "$build/bin/$b" "$top/bin/$b"
    strip_elf "$top/bin/$b"
done

# --- lib/: the llama.cpp shared libraries our build links (build/lib links into llama's build dir)
llama_bin=""
if [ -L "$build/lib/libllama.so" ]; then
    # An absolute link; for a build made in the bullseye root it is a path inside that root.
    llama_bin="$sysroot$(dirname "$(readlink "$build/lib/libllama.so")")"
    [ -d "$llama_bin" ] || die "llama.cpp's libraries ($llama_bin) are gone: rebuild"
    # Files and the soname links between them, as llama.cpp's build made them.
    for f in "$llama_bin"/lib*.so*; do
        cp -P "$f" "$top/lib/"
        [ -L "$f" ] || strip_elf "$top/lib/$(basename "$f")"
    done
fi

# Runtime libraries a host may lack: copied from the sysroot / lib paths, closure over NEEDED.
BUNDLE_OK="libgomp.so.1 libxxhash.so.0 libcublas.so.13 libcublasLt.so.13 libcublas.so.12 libcublasLt.so.12 libcublas.so.11 libcublasLt.so.11"
search_dirs=() bundled=()
[ -z "$sysroot" ] || search_dirs+=("$sysroot/usr/lib/x86_64-linux-gnu" "$sysroot/lib/x86_64-linux-gnu")
search_dirs+=("${lib_paths[@]}")
[ -n "$sysroot" ] || search_dirs+=(/usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu)
for _ in 1 2 3; do
    for elf in "$top"/bin/* "$top"/lib/*; do
        [ -L "$elf" ] && continue
        for lib in $(readelf -d -W "$elf" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
            case " $BUNDLE_OK " in *" $lib "*) ;; *) continue ;; esac
            [ -e "$top/lib/$lib" ] && continue
            found=""
            for d in "${search_dirs[@]}"; do [ -e "$d/$lib" ] && { found="$d/$lib"; break; }; done
            [ -n "$found" ] || die "$lib (needed by $(basename "$elf")) not found in: ${search_dirs[*]}"
            cp -L "$found" "$top/lib/$lib"
            chmod 0644 "$top/lib/$lib"
            bundled+=("$lib")
        done
    done
done

# --- share/, docs/, the installer
cp share/curated.json "$top/share/rustycage/"
cp share/rustycage.env "$top/share/rustycage/"
cp share/systemd/*.service "$top/share/rustycage/systemd/"
cp scripts/install.sh "$top/install.sh"
chmod 0755 "$top/install.sh"
echo "$version" >"$top/VERSION"
for d in README.md CHANGELOG.md docs/INSTALL.md docs/RELEASING.md docs/MODELS.md docs/KV_TIERING.md; do
    [ -f "$d" ] && cp "$d" "$top/docs/$(basename "$d")"
done
lic="$top/share/rustycage/licenses"
llama_src=$(scripts/llama.sh src)   # the pinned tree (same commit as every build; verified)
cp "$llama_src/LICENSE" "$lic/llama.cpp-LICENSE"
for f in "$llama_src"/licenses/*; do [ -f "$f" ] && cp "$f" "$lic/llama.cpp-$(basename "$f")"; done
cp "$llama_src/vendor/cpp-httplib/LICENSE" "$lic/cpp-httplib-LICENSE"
cp share/licenses/*.txt "$lic/" 2>/dev/null || true
[ -f LICENSE ] && cp LICENSE "$lic/rustycage-LICENSE"
# The bundled Debian libraries' own terms: libxxhash.so.0 is package libxxhash0's.
for lib in "${bundled[@]}"; do
    pkg=$(echo "$lib" | sed 's/\.so\.\([0-9]*\).*/\1/')
    copyright="${sysroot:-}/usr/share/doc/$pkg/copyright"
    [ ! -f "$copyright" ] || cp "$copyright" "$lic/$pkg-copyright"
done

# --- BUILDINFO (glibc floor measured over every ELF)
commit=$(git rev-parse HEAD 2>/dev/null || echo unknown)
[ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || commit="$commit-dirty"
check=$(scripts/release-check.sh --quiet "$stage/$name" 2>/dev/null | tail -1 || true)
glibc_floor=$(echo "$check" | sed -n 's/.*max_glibc=\([0-9.]*\).*/\1/p')
[ -n "$glibc_floor" ] || glibc_floor=$(scripts/release-check.sh "$stage/$name" 2>&1 | sed -n 's/.*max_glibc=\([0-9.]*\).*/\1/p')
{
    echo "name=rustycage"
    echo "version=$version"
    echo "flavour=$flavour"
    echo "commit=$commit"
    echo "llama_cpp_commit=$(sed -n 's/^LLAMA_COMMIT=//p' scripts/llama.sh)"
    echo "release=$([ "$dev" = true ] && echo false || echo true)"
    echo "glibc_floor=$glibc_floor"
    if [ -n "$llama_bin" ] && [ -f "$llama_bin/../cuda-build.env" ]; then cat "$llama_bin/../cuda-build.env"; fi
    echo "built_on=$( ( . "${sysroot:-}/etc/os-release" && echo "$ID-$VERSION_ID" ) 2>/dev/null || echo unknown)"
} >"$top/share/rustycage/BUILDINFO"

# --- the tarball, reproducibly
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}
tarball="$out/$name.tar.gz"
level=9; [ "$fast" = false ] || level=1
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" --mode='u+rw,go-w' \
    -C "$stage" -cf - "$name" | gzip -n -"$level" >"$tarball.tmp"
mv "$tarball.tmp" "$tarball"
rm -rf "$stage"
cd "$here"
echo "$tarball"
