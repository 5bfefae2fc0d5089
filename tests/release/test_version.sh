#!/usr/bin/env bash
# `rustycage version --json` reports this tree's VERSION and pinned llama.cpp commit, a build date,
# a backend and the devices it finds; the text form starts with the line older tools parse.
set -euo pipefail
bin=$1
here=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 missing" >&2; exit 77; }

json=$("$bin" version --json)
python3 - "$json" "$(head -1 "$here/VERSION")" "$(sed -n 's/^LLAMA_COMMIT=//p' "$here/scripts/llama.sh")" <<'PY' || exit 1
import json, re, sys
j = json.loads(sys.argv[1]); version, llama = sys.argv[2], sys.argv[3]
def check(cond, what):
    if not cond: sys.exit(f"FAIL: {what}: {json.dumps(j, indent=1)}")
check(j["version"] == version, "version is VERSION")
check(j["llama_cpp_commit"] == llama, "llama.cpp commit is the pinned one")
check(re.fullmatch(r"[0-9a-f]{40}|unknown", j["commit"]), "commit is a full sha")
check(isinstance(j["dirty"], bool), "dirty is a bool")
check(re.fullmatch(r"\d{4}-\d\d-\d\d", j["build_date"]), "build date is YYYY-MM-DD")
check(j["backend"] in ("cpu", "cuda", "vulkan", "metal"), "backend")
check(j["backend_loading"] in ("static", "dynamic"), "backend loading")
check(j["compiler"].split()[0] in ("GNU", "Clang"), "compiler")
check(any(d["type"] == "cpu" for d in j["devices"]), "a CPU device")
check(any(b["name"] == "CPU" and b["features"] for b in j["backends"]), "CPU backend features")
PY
text=$("$bin" version)
first=$(echo "$text" | head -1)
[ "$first" = "rustycage $(head -1 "$here/VERSION") (llama.cpp $(sed -n 's/^LLAMA_COMMIT=//p' "$here/scripts/llama.sh"))" ] || fail "first line: $first"
echo "$text" | grep -q '^device: *CPU' || fail "no CPU device line: $text"
nodev=$("$bin" version --json --no-devices)
python3 -c 'import json,sys; j=json.loads(sys.argv[1]); sys.exit("devices listed with --no-devices" if "devices" in j else 0)' "$nodev"
echo "ok: version --json"
