#!/usr/bin/env bash
# Whether this machine's Vulkan headers can build the pinned llama.cpp's ggml-vulkan: it uses
# VK_EXT_layer_settings (vk::LayerSettingEXT), which Vulkan-Headers 1.3.239 (Debian 12's
# libvulkan-dev) predates. Exit 0 when they can; otherwise 1, with the reason on stderr.
set -euo pipefail
header=${VULKAN_CORE_H:-/usr/include/vulkan/vulkan_core.h}
[ -f "$header" ] || { echo "no Vulkan headers ($header): scripts/setup.sh vulkan installs libvulkan-dev" >&2; exit 1; }
version=$(sed -n 's/^#define VK_HEADER_VERSION \([0-9]*\).*/\1/p' "$header")
grep -q 'VK_EXT_layer_settings' "$header" || {
    echo "Vulkan headers 1.3.${version:-?} lack VK_EXT_layer_settings, which the pinned ggml-vulkan needs (docs/RELEASING.md)" >&2
    exit 1
}
