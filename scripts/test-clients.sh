#!/usr/bin/env bash
# Runs the real-client compatibility suite (tests/clients/): the official `openai` and `ollama` npm
# clients against a real `rustycage serve`.
#
#   scripts/test-clients.sh [BUILD_DIR] [node --test args…]
#   scripts/test-clients.sh build                                 # every *.test.mjs
#   scripts/test-clients.sh build ollama.test.mjs                 # one file (relative to tests/clients)
#   scripts/test-clients.sh build --test-name-pattern=embed       # matching tests only
#
# Installs the pinned clients with `npm ci` (skipped while package-lock.json is unchanged), writes
# the test models into BUILD_DIR/test-models when the ctest fixture has not, then runs node's test
# runner. Exits non-zero on any failure; the output ends with node's test summary.
set -euo pipefail

build=${1:-build}
shift || true
cd "$(dirname "$0")/.."
root=$PWD
case "$build" in /*) ;; *) build="$root/$build" ;; esac
# Another node suite with the same layout (tests/ui) runs through here too: scripts/test-ui.sh.
clients="$root/${RUSTYCAGE_NODE_SUITE:-tests/clients}"

say() { echo "[test-clients] $*" >&2; }
die() { say "error: $*"; exit 1; }

command -v node >/dev/null || die "node is not installed (scripts/setup.sh installs it)"
command -v npm >/dev/null || die "npm is not installed (scripts/setup.sh installs it)"
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 18 ] || die "node >= 18 is needed, found $(node --version)"

bin="$build/bin/rustycage"
mkmodel="$build/bin/rustycage-mkmodel"
[ -x "$bin" ] || die "$bin not found: build first (make build)"

# --- the pinned clients ---------------------------------------------------------------------------
stamp="$clients/node_modules/.rustycage-install-stamp"
want=$(cat "$clients/package.json" "$clients/package-lock.json" | sha256sum | cut -d' ' -f1)-$(node --version)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    :
else
    say "npm ci (tests/clients)"
    (cd "$clients" && npm ci --no-audit --no-fund --loglevel=error) >&2
    echo "$want" >"$stamp"
fi

# --- the generated test models (normally written by the ctest fixture) ------------------------------
models="$build/test-models"
mkdir -p "$models"
for spec in "tiny-chat:--preset tiny-chat" "tiny-embed:--preset tiny-embed"; do
    name=${spec%%:*}
    file="$models/$name.gguf"
    # Like the ctest fixture: reuse unless the generator is newer (same preset + seed ⇒ same bytes).
    [ -f "$file" ] && ! [ "$mkmodel" -nt "$file" ] && continue
    [ -x "$mkmodel" ] || die "$file is missing and $mkmodel was not built"
    say "generating $file"
    # shellcheck disable=SC2086  # the preset args are meant to split
    "$mkmodel" ${spec#*:} --out "$file.tmp.$$" >&2 || { rm -f "$file.tmp.$$"; die "rustycage-mkmodel failed for $name"; }
    mv -f "$file.tmp.$$" "$file"
done

# --- run ------------------------------------------------------------------------------------------
# Each test file starts its own server and records its pid here; whatever a crashed test process
# left running is killed on the way out.
pids=$(mktemp -d "${TMPDIR:-/tmp}/rc-clients-pids.XXXXXX")
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    for f in "$pids"/*; do
        [ -f "$f" ] || continue
        pid=$(basename "$f")
        if [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$bin")" ]; then
            say "killing leftover rustycage serve (pid $pid)"
            kill -KILL "$pid" 2>/dev/null || true
        fi
        dir=$(sed -n 2p "$f")
        case "$dir" in */rc-clients-*) rm -rf "$dir" ;; esac
    done
    rm -rf "$pids"
}
trap cleanup EXIT

# Per-test timeout where node has the flag (20.11+); the suites carry a 30-minute backstop.
opts=()
if node --help 2>/dev/null | grep -q -- '--test-timeout'; then
    # The soak runs SOAK_SECONDS by design: its timeout leaves it five minutes past that.
    timeout_ms=600000
    [ -n "${SOAK_SECONDS:-}" ] && timeout_ms=$(( (SOAK_SECONDS + 300) * 1000 > timeout_ms ? (SOAK_SECONDS + 300) * 1000 : timeout_ms ))
    opts+=(--test-timeout=$timeout_ms)
fi
# node wants its options before the test files.
files=()
for a in "$@"; do # options take their value with '=': --test-name-pattern=embed
    case "$a" in -*) opts+=("$a") ;; *) files+=("$a") ;; esac
done
if [ ${#files[@]} -eq 0 ]; then
    shopt -s nullglob
    files=("$clients"/*.test.mjs)
    [ ${#files[@]} -gt 0 ] || die "no *.test.mjs in $clients"
    files=("${files[@]#"$clients/"}")
fi

cd "$clients"
set +e
RUSTYCAGE_BIN="$bin" RUSTYCAGE_BUILD_DIR="$build" RUSTYCAGE_TEST_MODELS="$models" RUSTYCAGE_CLIENTS_PIDS="$pids" \
    node --test --test-reporter=spec "${opts[@]+"${opts[@]}"}" "${files[@]}"
rc=$?
set -e
exit $rc
