#!/usr/bin/env bash
# Prints the include directory whose Vulkan headers build the pinned llama.cpp's ggml-vulkan, which
# uses VK_EXT_layer_settings (vk::LayerSettingEXT). Debian 12's libvulkan-dev (1.3.239) predates it,
# so where the system headers lack it this unpacks the next Debian release's libvulkan-dev (headers
# only; the system's loader stays) into the cache, once. apt checks the package against the
# archive's signed index, as it does for every install. Exit 1, with the reason on stderr, when
# neither is possible.
#
#   scripts/vulkan-headers.sh            -> /usr/include or ~/.cache/rustycage/vulkan-headers-VER/usr/include
set -euo pipefail
SUITE=${RUSTYCAGE_VULKAN_HEADERS_SUITE:-trixie}
MIRROR=${RUSTYCAGE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${RUSTYCAGE_CACHE:-$HOME/.cache/rustycage}

has_layer_settings() { [ -f "$1/vulkan/vulkan_core.h" ] && grep -q 'VK_EXT_layer_settings' "$1/vulkan/vulkan_core.h"; }

if has_layer_settings /usr/include; then echo /usr/include; exit 0; fi
for dir in "$cache"/vulkan-headers-*/usr/include; do
    if has_layer_settings "$dir"; then echo "$dir"; exit 0; fi
done

system=$(sed -n 's/^#define VK_HEADER_VERSION \([0-9]*\).*/1.x.\1/p' /usr/include/vulkan/vulkan_core.h 2>/dev/null || true)
echo "[vulkan-headers] the system's Vulkan headers (${system:-none}) lack VK_EXT_layer_settings: fetching $SUITE's libvulkan-dev" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR $SUITE main" >"$work/sources.list"
apt_opts=(-q -o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" update >"$work/apt.log" 2>&1 \
    || { cat "$work/apt.log" >&2; echo "[vulkan-headers] cannot read $SUITE's index from $MIRROR" >&2; exit 1; }
(cd "$work" && apt-get "${apt_opts[@]}" download libvulkan-dev >>"$work/apt.log" 2>&1) \
    || { cat "$work/apt.log" >&2; echo "[vulkan-headers] cannot download $SUITE's libvulkan-dev" >&2; exit 1; }
deb=$(ls "$work"/libvulkan-dev_*.deb)
version=$(dpkg-deb -f "$deb" Version)
dest="$cache/vulkan-headers-$version"
mkdir -p "$work/x"
dpkg-deb -x "$deb" "$work/x"
has_layer_settings "$work/x/usr/include" \
    || { echo "[vulkan-headers] $SUITE's libvulkan-dev $version lacks VK_EXT_layer_settings too" >&2; exit 1; }
mkdir -p "$dest/usr"
rm -rf "$dest/usr/include"
mv "$work/x/usr/include" "$dest/usr/include"
echo "[vulkan-headers] $SUITE's Vulkan headers $version in $dest" >&2
echo "$dest/usr/include"
