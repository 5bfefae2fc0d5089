#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need. Idempotent and quick when nothing is
# missing; uses apt-get only (as root, or through sudo when available).
set -euo pipefail

packages=(
    build-essential cmake ninja-build ccache git pkg-config ca-certificates curl
    libssl-dev libcurl4-openssl-dev libsqlite3-dev
    libgtest-dev libgmock-dev libcli11-dev
    libxxhash-dev     # XXH3 checksums of KV disk blocks
    prometheus        # promtool checks our /metrics exposition in the tests
    etcd-server etcd-client  # the fleet's coordination service (tests start real members; docs/FLEET.md)
    chromium fonts-dejavu-core  # the web console's browser tests (tests/ui/, headless)
    clang libfuzzer-14-dev  # make fuzz: libFuzzer targets built with clang (fuzz/README.md)
)
command -v node >/dev/null && command -v npm >/dev/null || packages+=(nodejs npm)

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
