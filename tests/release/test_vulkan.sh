#!/usr/bin/env bash
# `make test-vulkan`: the engine, KV tier (context ⇄ host RAM ⇄ disk, restarts) and API suites of a
# GPU=vulkan build, run on Mesa's lavapipe — a Vulkan device on the CPU — so the model's weights and
# its KV cache live in Vulkan device buffers and every KV move goes through them.
#
#   tests/release/test_vulkan.sh BUILD_DIR [ctest -R regex]
#
# Suites: everything but the ones whose expectations are about CPU kernels specifically (listed
# below with the reason); the first step proves the build runs on the lavapipe device.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [regex]}
pattern=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

icd=$(ls /usr/share/vulkan/icd.d/lvp_icd*.json 2>/dev/null | head -1)
[ -n "$icd" ] || fail "lavapipe not installed (scripts/setup.sh vulkan: mesa-vulkan-drivers)"
export VK_ICD_FILENAMES=$icd           # lavapipe only, whatever else the machine has
export GGML_VK_VISIBLE_DEVICES=0       # ggml skips CPU-type Vulkan devices unless named
export LP_NUM_THREADS=${LP_NUM_THREADS:-2}

"$build/bin/rustycage" version --json >"$build/vulkan-version.json" 2>/dev/null
python3 - "$build/vulkan-version.json" <<'PY' || exit 1
import json, sys
j = json.load(open(sys.argv[1]))
if j["backend"] != "vulkan": sys.exit("FAIL: not a Vulkan build: backend=%s" % j["backend"])
vk = [d for d in j["devices"] if d["name"].startswith("Vulkan")]
if not vk: sys.exit("FAIL: no Vulkan device: %s" % j["devices"])
print("ok: Vulkan device %s (%s), %d MiB" % (vk[0]["name"], vk[0]["description"], vk[0]["memory_total"] >> 20))
PY

# Vulkan's shaders round a one-token step and a batch differently, so a resumed, restored or shared
# prefix gives other greedy tokens on a random-weight model: the tests that compare such outputs
# check everything else (tests/support/exact_kernels.h), and kv_bridge_test checks that KV leaves
# the device buffers and comes back byte for byte.
export RUSTYCAGE_TEST_INEXACT_KERNELS=1
# Left out, and why:
#  * kv_numerics_test, mkmodel_test's bit-exactness cases: assert bit-identical logits across batch
#    shapes, a property of llama.cpp's CPU integer kernels (tests/engine/README.md), not of Vulkan's.
#  * the Node client suites: they test the HTTP surface, which does not depend on the backend.
exclude='kv_numerics|mkmodel'
start=$(date +%s)
args=(--test-dir "$build" --output-on-failure -j 2 --timeout 900 -E "$exclude")
[ -z "$pattern" ] || args+=(-R "$pattern")
ctest "${args[@]}"
echo "PASS: Vulkan leg on lavapipe ($(( $(date +%s) - start ))s)"
