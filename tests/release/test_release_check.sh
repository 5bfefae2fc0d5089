#!/usr/bin/env bash
# scripts/release-check.sh's verdicts on small artifact trees compiled here: a clean tree passes; a
# library of ours that needs libgcc_s or libstdc++ fails while NVIDIA's prebuilt cuBLAS may need them
# (libstdc++ no newer than bullseye's); a library
# neither shipped nor on every host, a wrong RUNPATH and a glibc above --max-glibc each fail, naming
# the file.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
command -v gcc >/dev/null && command -v readelf >/dev/null || { echo "gcc or readelf missing" >&2; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/rc-release-check.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo 'int rc_value(void) { return 42; }' >"$work/lib.c"
echo 'int rc_value(void); int main(void) { return rc_value() == 42 ? 0 : 1; }' >"$work/main.c"

# A tree as an artifact unpacks: top/bin/tool (RUNPATH $ORIGIN/../lib) linking top/lib/libthing.so.
# Each tree is made at $work/NAME; its top directory is $work/NAME/top.
make_tree() {  # dir
    mkdir -p "$1/top/bin" "$1/top/lib"
    gcc -shared -fPIC -o "$1/top/lib/libthing.so" "$work/lib.c"
    gcc -o "$1/top/bin/tool" "$work/main.c" -L"$1/top/lib" -lthing -Wl,-rpath,'$ORIGIN/../lib' -Wl,--enable-new-dtags
}
# A shared library NAME in DIR/lib that needs libgcc_s.so.1, as a prebuilt vendor library may.
add_lib_needing_libgcc_s() {  # dir, name
    gcc -shared -fPIC -o "$1/top/lib/$2" "$work/lib.c" -Wl,--no-as-needed -lgcc_s
    readelf -d -W "$1/top/lib/$2" | grep -q 'NEEDED.*libgcc_s.so.1' || fail "the fixture $2 does not need libgcc_s"
}
check() { "$repo/scripts/release-check.sh" "$@" 2>&1; }

make_tree "$work/clean"
out=$(check "$work/clean") || fail "a clean tree fails: $out"
expect_out "elf_files=2" "$out"
ok "a clean tree passes"

make_tree "$work/cublas"
add_lib_needing_libgcc_s "$work/cublas" libcublasLt.so.13
out=$(check "$work/cublas") || fail "prebuilt cuBLAS needing libgcc_s fails: $out"
ok "NVIDIA's prebuilt cuBLAS may need libgcc_s.so.1"

# A shared library NAME in DIR/lib that needs libstdc++.so.6 at the version of SYMBOL (a mangled
# name declared from C, so the fixture needs exactly that version and no other).
add_lib_needing_libstdcxx() {  # dir, name, symbol
    printf 'void %s(void); void rc_use(void) { %s(); }\n' "$3" "$3" >"$work/cxx.c"
    gcc -shared -fPIC -o "$1/top/lib/$2" "$work/cxx.c" -Wl,--no-as-needed -lstdc++
    readelf -d -W "$1/top/lib/$2" | grep -q 'NEEDED.*libstdc++.so.6' || fail "the fixture $2 does not need libstdc++"
}
make_tree "$work/cublas11"
add_lib_needing_libstdcxx "$work/cublas11" libcublas.so.11 _ZNKSt14error_category10equivalentERKSt10error_codei  # GLIBCXX_3.4.11
out=$(check "$work/cublas11") || fail "prebuilt cuBLAS 11 needing libstdc++ (GLIBCXX_3.4.11) fails: $out"
make_tree "$work/cublas-new"
add_lib_needing_libstdcxx "$work/cublas-new" libcublasLt.so.11 _ZSt17__istream_extractRSiPcl  # GLIBCXX_3.4.29
if out=$(check "$work/cublas-new"); then fail "a cuBLAS needing GLIBCXX_3.4.29 passes: $out"; fi
expect_out "libcublasLt.so.11 needs GLIBCXX_3.4.29 (> 3.4.28, bullseye's libstdc++)" "$out"
make_tree "$work/ours-cxx"
add_lib_needing_libstdcxx "$work/ours-cxx" libggml-cxx.so _ZNKSt14error_category10equivalentERKSt10error_codei
if out=$(check "$work/ours-cxx"); then fail "a library of ours needing libstdc++ passes: $out"; fi
expect_out "top/lib/libggml-cxx.so needs libstdc++.so.6 (must be linked statically)" "$out"
ok "NVIDIA's prebuilt cuBLAS may need bullseye's libstdc++ (no newer); a library of ours may not"

make_tree "$work/ours"
add_lib_needing_libgcc_s "$work/ours" libggml-extra.so
if out=$(check "$work/ours"); then fail "a library of ours needing libgcc_s passes: $out"; fi
expect_out "top/lib/libggml-extra.so needs libgcc_s.so.1 (must be linked statically)" "$out"
ok "a library of ours needing libgcc_s fails"

make_tree "$work/missing"
rm "$work/missing/top/lib/libthing.so"
gcc -shared -fPIC -o "$work/libthing.so" "$work/lib.c"
gcc -shared -fPIC -o "$work/missing/top/lib/libuser.so" "$work/lib.c" -L"$work" -Wl,--no-as-needed -lthing
if out=$(check "$work/missing"); then fail "a library neither shipped nor on every host passes: $out"; fi
expect_out "needs libthing.so, which is neither in lib/ nor on every host" "$out"
ok "an unshipped library fails"

make_tree "$work/runpath"
gcc -o "$work/runpath/top/bin/tool" "$work/main.c" -L"$work/runpath/top/lib" -lthing -Wl,-rpath,/opt/elsewhere -Wl,--enable-new-dtags
if out=$(check "$work/runpath"); then fail "an absolute RUNPATH passes: $out"; fi
expect_out "top/bin/tool has RUNPATH '/opt/elsewhere', expected" "$out"
ok "an executable whose RUNPATH is not \$ORIGIN/../lib fails"

if out=$(check --max-glibc 2.0 "$work/clean"); then fail "--max-glibc 2.0 passes: $out"; fi
expect_out "bin/tool needs GLIBC_" "$out"
ok "a glibc above --max-glibc fails"
