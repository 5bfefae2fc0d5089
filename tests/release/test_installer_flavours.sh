#!/usr/bin/env bash
# Which flavour scripts/install.sh picks for a host, from what the host's tools report: fake
# nvidia-smi (with and without the compute_cap field, as drivers before R510), vulkaninfo, ldconfig
# and lspci first on PATH, and a CPU given through RUSTYCAGE_CPUINFO. `install.sh --detect` says the
# pick and why; a --stage install from a dist of four flavours shows the artifact's BUILDINFO is
# checked again (a cuda11 artifact without code for the card is passed over).
#
#   tests/release/test_installer_flavours.sh
# Exit 77 (skip) when not root (the --stage install needs it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

work=$(mktemp -d "${TMPDIR:-/tmp}/rc-flavours.XXXXXX")
trap 'rm -rf "$work"' EXIT
fakes="$work/bin"
mkdir -p "$fakes"
printf 'flags\t\t: fpu sse sse2 avx avx2 fma\n' >"$work/cpuinfo"

# A host: $1 driver ("" = no driver), $2 GPUs "name|cc;name|cc" (cc "" = a driver before R510,
# which refuses the compute_cap field), $3 a Vulkan GPU's name ("" = none), $4 lspci lines.
host() {
    local driver=$1 gpus=$2 vulkan=$3 pci=${4:-}
    local old=false
    case ";$gpus" in *"|;"*|*"|") old=true ;; esac
    {
        echo '#!/bin/bash'
        if [ -z "$driver" ]; then
            echo 'echo "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver." >&2; exit 9'
        else
            echo 'case "$*" in'
            if [ "$old" = true ]; then
                echo '  *compute_cap*) echo "Field \"compute_cap\" is not a valid field to query." >&2; exit 2 ;;'
            fi
            echo '  *--query-gpu=driver_version,compute_cap,name*)'
            local g; IFS=';' read -r -a list <<<"$gpus"
            for g in "${list[@]}"; do echo "    echo '$driver, ${g#*|}, ${g%|*}'"; done
            echo '    ;;'
            echo '  *--query-gpu=driver_version,name*)'
            for g in "${list[@]}"; do echo "    echo '$driver, ${g%|*}'"; done
            echo '    ;;'
            echo '  *) exit 2 ;;'
            echo 'esac'
        fi
    } >"$fakes/nvidia-smi"
    if [ -n "$vulkan" ]; then
        printf '#!/bin/sh\necho "\tlibvulkan.so.1 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libvulkan.so.1"\n' >"$fakes/ldconfig"
        printf '#!/bin/sh\nprintf "GPU0:\\n\\tdeviceType         = PHYSICAL_DEVICE_TYPE_DISCRETE_GPU\\n\\tdeviceName         = %s\\n"\n' "$vulkan" >"$fakes/vulkaninfo"
    else
        printf '#!/bin/sh\necho "\tlibc.so.6 (libc6,x86-64) => /lib/x86_64-linux-gnu/libc.so.6"\n' >"$fakes/ldconfig"
        printf '#!/bin/sh\nexit 1\n' >"$fakes/vulkaninfo"
    fi
    printf '#!/bin/sh\nprintf "%%s" "%s"\n' "$pci" >"$fakes/lspci"
    chmod +x "$fakes"/*
}

installer() { PATH="$fakes:/usr/sbin:/usr/bin:/sbin:/bin" RUSTYCAGE_CPUINFO="$work/cpuinfo" bash "$repo/scripts/install.sh" "$@" 2>&1; }
picks() {  # expected flavour, case name: the pick, and its reason printed
    local out
    out=$(installer --detect) || fail "$2: --detect failed: $out"
    expect_out "would install: $1" "$out"
    echo "$out"
}

# --- the tables the installer picks by are the build's own
out=$(installer --detect)
for f in cuda11 cuda13; do
    facts=$("$repo/scripts/build-cuda.sh" facts "$f")
    expect_out "$f runs with driver >= $(sed -n 's/^cuda_driver_floor=//p' <<<"$facts") on $(sed -n 's/^cuda_architectures=//p' <<<"$facts")" "$out"
done
ok "install.sh's CUDA table equals scripts/build-cuda.sh's"

# --- the five hosts of the issue
host 470.256.02 "NVIDIA GeForce GTX 1080|" ""
out=$(picks cuda11 "GTX 1080 on R470")
expect_out "compute capability 6.1, driver 470.256.02" "$out"
expect_out "not cuda13: it needs NVIDIA driver 580.65.06 or newer, this host has 470.256.02" "$out"
expect_out "flavour: cuda11: driver 470.256.02 >= 450.80.02, code for every GPU (compute capability 6.1)" "$out"
ok "GTX 1080 on R470 (no compute_cap field: from the name) -> cuda11"

host 580.95.05 "NVIDIA GeForce RTX 3090|8.6" ""
out=$(picks cuda13 "RTX 3090 on R580")
expect_out "flavour: cuda13: driver 580.95.05 >= 580.65.06" "$out"
ok "RTX 3090 on R580 -> cuda13"

host 580.95.05 "Tesla P40|6.1;NVIDIA RTX A4000|8.6" ""
out=$(picks cuda11 "P40 + A4000")
expect_out "not cuda13: it has no code for Tesla P40 (compute capability 6.1" "$out"
expect_out "code for every GPU (compute capability 6.1 8.6)" "$out"
ok "P40 + A4000 -> cuda11 (the newest that runs on both)"

host "" "" "AMD Radeon RX 6800 (RADV NAVI21)"
out=$(picks vulkan "Vulkan only")
expect_out "vulkan: a Vulkan loader and a GPU driver (AMD Radeon RX 6800 (RADV NAVI21))" "$out"
ok "no NVIDIA GPU, a Vulkan GPU -> vulkan"

host "" "" ""
out=$(picks cpu "nothing")
expect_out "flavour: cpu: no GPU this release can use" "$out"
ok "nothing -> cpu"

# --- the harder hosts
host 470.256.02 "NVIDIA GeForce RTX 3090|" ""
picks cuda11 "RTX 3090 on R470" >/dev/null
ok "RTX 3090 on an old driver -> cuda11"

host 470.256.02 "Tesla K80|" ""
out=$(picks cpu "K80")
expect_out "no CUDA build runs on these GPUs" "$out"
ok "K80 (compute capability 3.7) -> cpu, saying why"

host 390.157 "NVIDIA GeForce GTX 1080|" "NVIDIA GeForce GTX 1080"
out=$(picks vulkan "GTX 1080 on R390")
expect_out "not cuda11: it needs NVIDIA driver 450.80.02 or newer, this host has 390.157" "$out"
ok "a driver too old for CUDA 11 but with Vulkan -> vulkan"

host "" "" "" "01:00.0 VGA compatible controller [0300]: NVIDIA Corporation GP104 [GeForce GTX 1080] [10de:1b80]"
out=$(picks cpu "no driver")
expect_out "but no working driver (nvidia-smi)" "$out"
ok "an NVIDIA card without a driver -> cpu, naming the driver to install"

host 470.256.02 "NVIDIA GeForce GTX 1080|" ""
out=$(installer --detect --flavour cuda13)
expect_out "flavour: --flavour cuda13" "$out"
ok "--flavour overrides the pick"

for pair in "Tesla P100-PCIE-16GB=6.0" "Tesla V100-SXM2-16GB=7.0" "Tesla T4=7.5" "NVIDIA A100-SXM4-40GB=8.0" \
            "NVIDIA A10=8.6" "NVIDIA GeForce RTX 4090=8.9" "Quadro RTX 5000=7.5" "NVIDIA TITAN Xp=6.1" \
            "GeForce GTX TITAN X=5.2" "NVIDIA H100 PCIe=9.0" "NVIDIA L4=8.9" "Tesla M40=5.2" "Tesla P4=6.1"; do
    host 470.256.02 "${pair%=*}|" ""
    out=$(installer --detect)
    expect_out "${pair%=*}, compute capability ${pair#*=}," "$out"
done
ok "compute capability from the card's name for drivers before R510"

# --- the artifact's own BUILDINFO decides last: a --stage install from a dist of every flavour
[ "$(id -u)" -eq 0 ] || { echo "skip: the --stage install needs root"; exit 77; }
version=$(head -1 "$repo/VERSION")
dist="$work/dist"
mkdir -p "$dist"
fake_artifact() {  # flavour, BUILDINFO lines...
    local f=$1; shift
    local name="rustycage-$version-linux-x86_64-$f" t="$work/art"
    rm -rf "$t"; mkdir -p "$t/$name/bin" "$t/$name/share/rustycage"
    printf '#!/bin/sh\necho rustycage %s\n' "$f" >"$t/$name/bin/rustycage"; chmod +x "$t/$name/bin/rustycage"
    echo "$version" >"$t/$name/VERSION"
    printf 'name=rustycage\nversion=%s\nflavour=%s\nglibc_floor=2.31\n' "$version" "$f" >"$t/$name/share/rustycage/BUILDINFO"
    printf '%s\n' "$@" >>"$t/$name/share/rustycage/BUILDINFO"
    tar -C "$t" -czf "$dist/$name.tar.gz" "$name"
}
fake_artifact cpu
fake_artifact vulkan
fake_artifact cuda13 "$("$repo/scripts/build-cuda.sh" facts cuda13)"
fake_artifact cuda11 cuda_architectures=75-real cuda_driver_floor=450.80.02   # a build without Pascal code
(cd "$dist" && sha256sum ./*.tar.gz | sed 's| \./| |' >SHA256SUMS)
host 470.256.02 "NVIDIA GeForce GTX 1080|" ""
out=$(installer --root "$work/root" --dist "$dist" --stage --yes) || fail "stage failed: $out"
expect_out "the cuda11 build has no code for NVIDIA GeForce GTX 1080 (compute capability 6.1; built for 75-real)" "$out"
expect_grep '^flavour=cpu$' "$work/root/opt/rustycage/$version/share/rustycage/BUILDINFO"
fake_artifact cuda11 "$("$repo/scripts/build-cuda.sh" facts cuda11)"
(cd "$dist" && sha256sum ./*.tar.gz | sed 's| \./| |' >SHA256SUMS)
out=$(installer --root "$work/root" --dist "$dist" --stage --yes) || fail "stage failed: $out"
expect_out "artifact: rustycage-$version-linux-x86_64-cuda11.tar.gz (rustycage $version, cuda11" "$out"
expect_grep '^flavour=cuda11$' "$work/root/opt/rustycage/$version/share/rustycage/BUILDINFO"
ok "GTX 1080 on R470 from a dist of four flavours: cuda11 staged; a cuda11 without its code passed over"
echo "PASS: the installer's flavour pick"
