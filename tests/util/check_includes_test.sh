#!/usr/bin/env bash
# scripts/check-includes.sh on a made-up tree: a module including one its README does not allow is
# named (file, line, both modules) and fails the check; the same tree without it passes.
set -euo pipefail
check=$1
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/kv" "$tree/engine"
printf '# kv\n\nMay include: `util/` only. Never `engine/`.\n' > "$tree/kv/README.md"
printf '# engine\n\nMay include: `kv/`, `util/`.\n' > "$tree/engine/README.md"
printf '#include "kv/block_key.h"\n#include <nlohmann/json.hpp>\n' > "$tree/engine/engine.cpp"
printf '#include "kv/disk_store.h"\n' > "$tree/kv/planner.cpp"
"$check" "$tree" >/dev/null || { echo "FAIL: a clean tree was refused"; "$check" "$tree"; exit 1; }
printf '#include "kv/disk_store.h"\n#include "engine/engine.h"\n' > "$tree/kv/planner.cpp"
if out=$("$check" "$tree"); then echo "FAIL: kv/ including engine/ passed: $out"; exit 1; fi
grep -q "kv/planner.cpp:2: kv/ includes engine/" <<<"$out" || { echo "FAIL: the message does not name the include: $out"; exit 1; }
echo "ok: $out"
