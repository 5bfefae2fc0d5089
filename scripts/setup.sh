#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need (arguments add the sets named below). Idempotent and quick when nothing is
# missing; uses apt-get only (as root, or through sudo when available).
set -euo pipefail

packages=(
    build-essential cmake ninja-build ccache git pkg-config ca-certificates curl
    libssl-dev libcurl4-openssl-dev libsqlite3-dev
    libgtest-dev libgmock-dev libcli11-dev
    libxxhash-dev     # XXH3 checksums of KV disk blocks
    prometheus        # promtool checks our /metrics exposition in the tests
    etcd-server etcd-client  # the fleet's coordination service (tests start real members; docs/FLEET.md)
    faketime          # fleet tests run an agent whose wall clock is an hour off
    chromium fonts-dejavu-core  # the web console's browser tests (tests/ui/, headless)
    clang libfuzzer-14-dev  # make fuzz: libFuzzer targets built with clang (fuzz/README.md)
)
command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)

# Extra sets, only for the targets that need them (`scripts/setup.sh release vulkan`); plain
# `make build` / `make test` never ask for these.
for extra in "$@"; do
    case "$extra" in
        release) packages+=(debootstrap patchelf binutils xz-utils systemd openssl) ;;  # make release / test-release
        vulkan) packages+=(libvulkan-dev glslc spirv-headers mesa-vulkan-drivers vulkan-tools) ;;  # GPU=vulkan, lavapipe
        *) echo "[setup] unknown package set '$extra' (release, vulkan)" >&2; exit 2 ;;
    esac
done

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "[setup] installing: ${missing[*]}" >&2
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
