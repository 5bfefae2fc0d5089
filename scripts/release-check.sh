#!/usr/bin/env bash
# Checks the ELF files of a release artifact (a tarball or an unpacked tree): every ELF in it, bin/
# and lib/ alike, is examined.
#
#   scripts/release-check.sh [--max-glibc 2.31] [--quiet] TARBALL|DIR
#
# Prints, per ELF, the highest GLIBC_ symbol version it needs, then the highest over all of them
# ("max_glibc=2.31" on the last line). Fails (exit 1) when:
#  * a version is above --max-glibc;
#  * anything needs libstdc++ or libgcc_s (they are linked statically: GLIBCXX_/CXXABI_ needs too);
#    NVIDIA's prebuilt cuBLAS, which is shipped and not built here, may need libgcc_s.so.1 (libc6
#    depends on libgcc-s1 on every supported distribution) and libstdc++.so.6 up to what bullseye's
#    has (GLIBCXX_3.4.28, CXXABI_1.3.12: cuBLAS 11 needs 3.4.11 and 1.3.3); every supported host
#    has libstdc++6 (apt needs it);
#  * a NEEDED library is neither shipped in lib/ nor one a host provides (glibc, libcurl, the
#    Vulkan loader, the NVIDIA driver's libcuda);
#  * an executable's RUNPATH is not $ORIGIN/../lib, or a library's RUNPATH holds an absolute path.
set -euo pipefail

max=""
quiet=false
while [ $# -gt 1 ]; do
    case "$1" in
        --max-glibc) max=$2; shift 2 ;;
        --quiet) quiet=true; shift ;;
        *) break ;;
    esac
done
[ $# -eq 1 ] || { echo "usage: $0 [--max-glibc X.Y] [--quiet] TARBALL|DIR" >&2; exit 2; }
command -v readelf >/dev/null || { echo "readelf missing (binutils)" >&2; exit 2; }

# What every supported host has (Debian 11+, Ubuntu 20.04+), or brings with its GPU driver.
SYSTEM_LIBS="libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1 ld-linux-x86-64.so.2 libcurl.so.4 libvulkan.so.1 libcuda.so.1"

tree=$1
tmp=""
if [ -f "$tree" ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    tar -xzf "$tree" -C "$tmp"
    tree=$tmp
fi

failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
report() { [ "$quiet" = true ] || echo "$@"; }

is_elf() { [ "$(head -c 4 "$1" | od -An -tx1 | tr -d ' \n')" = "7f454c46" ]; }

shipped=" "
while IFS= read -r -d '' f; do shipped+="$(basename "$f") "; done < <(find "$tree" -path '*/lib/*' \( -type f -o -type l \) -name '*.so*' -print0)

overall=0.0
count=0
while IFS= read -r -d '' f; do
    is_elf "$f" || continue
    count=$((count + 1))
    rel=${f#"$tree"/}
    versions=$(readelf -V -W "$f" 2>/dev/null | grep -o 'Name: GLIBC_[0-9.]*' | sed 's/Name: GLIBC_//' | sort -uV || true)
    top=$(echo "$versions" | tail -1)
    [ -n "$top" ] || top=0.0
    report "$top $rel"
    if [ "$(printf '%s\n%s\n' "$top" "$overall" | sort -V | tail -1)" = "$top" ]; then overall=$top; fi
    if [ -n "$max" ] && [ "$(printf '%s\n%s\n' "$top" "$max" | sort -V | tail -1)" != "$max" ]; then
        fail "$rel needs GLIBC_$top (> $max): $(readelf -W --dyn-syms "$f" | grep -o '[A-Za-z_0-9]*@GLIBC_'"$top" | sort -u | head -5 | tr '\n' ' ')"
    fi
    nvidia_prebuilt=false
    case "${rel##*/}" in libcublas.so.*|libcublasLt.so.*) nvidia_prebuilt=true ;; esac
    if [ "$nvidia_prebuilt" = true ]; then
        for abi in GLIBCXX_3.4.28 CXXABI_1.3.12; do
            need=$(readelf -V -W "$f" 2>/dev/null | grep -o "Name: ${abi%_*}_[0-9.]*" | sed "s/Name: ${abi%_*}_//" | sort -uV | tail -1 || true)
            [ -z "$need" ] || [ "$(printf '%s\n%s\n' "$need" "${abi#*_}" | sort -V | tail -1)" = "${abi#*_}" ] \
                || fail "$rel needs ${abi%_*}_$need (> ${abi#*_}, bullseye's libstdc++)"
        done
    elif readelf -V -W "$f" 2>/dev/null | grep -qE 'Name: (GLIBCXX|CXXABI)_'; then fail "$rel needs a shared libstdc++ (GLIBCXX_/CXXABI_ versions)"; fi
    for lib in $(readelf -d -W "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
        if [ "$nvidia_prebuilt" = true ]; then case "$lib" in libgcc_s.so.1|libstdc++.so.6) continue ;; esac; fi
        case "$lib" in libstdc++.so*|libgcc_s.so*) fail "$rel needs $lib (must be linked statically)"; continue ;; esac
        case " $SYSTEM_LIBS " in *" $lib "*) continue ;; esac
        case "$shipped" in *" $lib "*) continue ;; esac
        fail "$rel needs $lib, which is neither in lib/ nor on every host"
    done
    runpath=$(readelf -d -W "$f" | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
    case "$rel" in
        */bin/*) [ "$runpath" = '$ORIGIN/../lib' ] || fail "$rel has RUNPATH '$runpath', expected \$ORIGIN/../lib" ;;
        *) case ":$runpath:" in *:/*) fail "$rel has an absolute RUNPATH '$runpath'" ;; esac ;;
    esac
done < <(find "$tree" -type f -print0 | sort -z)

[ $count -gt 0 ] || fail "no ELF files found"
echo "elf_files=$count max_glibc=$overall"
[ $failures -eq 0 ]
