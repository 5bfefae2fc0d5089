#!/usr/bin/env bash
# Runs the web console's suite (tests/ui/): headless Chromium (Debian's /usr/bin/chromium, driven by
# the pinned puppeteer-core) on /ui of a real `rustycage serve`, plus the console's pure modules.
#
#   scripts/test-ui.sh [BUILD_DIR] [node --test args…]
#   scripts/test-ui.sh build                          # every *.test.mjs
#   scripts/test-ui.sh build console.test.mjs         # one file (relative to tests/ui)
#   scripts/test-ui.sh build --test-name-pattern=chat # matching tests only
#
# Installs puppeteer-core with `npm ci` (skipped while package-lock.json is unchanged), writes the
# test models into BUILD_DIR/test-models when the ctest fixture has not, and runs node's test
# runner. Screenshots of every page land in BUILD_DIR/ui-screenshots/. Exits non-zero on failure.
set -euo pipefail

build=${1:-build}
shift || true
cd "$(dirname "$0")/.."
root=$PWD
case "$build" in /*) ;; *) build="$root/$build" ;; esac
suite="$root/tests/ui"

say() { echo "[test-ui] $*" >&2; }
die() { say "error: $*"; exit 1; }

command -v node >/dev/null || die "node is not installed (scripts/setup.sh installs it)"
command -v npm >/dev/null || die "npm is not installed (scripts/setup.sh installs it)"
chromium=${RUSTYCAGE_CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium" ] || die "$chromium not found (scripts/setup.sh installs Debian's chromium)"
bin="$build/bin/rustycage"
mkmodel="$build/bin/rustycage-mkmodel"
[ -x "$bin" ] || die "$bin not found: build first (make build)"

stamp="$suite/node_modules/.rustycage-install-stamp"
want=$(cat "$suite/package.json" "$suite/package-lock.json" | sha256sum | cut -d' ' -f1)-$(node --version)
if ! [ -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    say "npm ci (tests/ui)"
    (cd "$suite" && npm ci --no-audit --no-fund --loglevel=error) >&2
    echo "$want" >"$stamp"
fi

models="$build/test-models"
mkdir -p "$models"
for name in tiny-chat tiny-embed; do
    file="$models/$name.gguf"
    [ -f "$file" ] && ! [ "$mkmodel" -nt "$file" ] && continue
    [ -x "$mkmodel" ] || die "$file is missing and $mkmodel was not built"
    say "generating $file"
    "$mkmodel" --preset "$name" --out "$file.tmp.$$" >&2 || { rm -f "$file.tmp.$$"; die "rustycage-mkmodel failed for $name"; }
    mv -f "$file.tmp.$$" "$file"
done

# Servers started by the tests register here (tests/clients/lib/server.mjs); whatever a crashed
# test process left running is killed on the way out.
pids=$(mktemp -d "${TMPDIR:-/tmp}/rc-ui-pids.XXXXXX")
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

opts=()
if node --help 2>/dev/null | grep -q -- '--test-timeout'; then
    opts+=(--test-timeout=600000)
fi
files=()
for a in "$@"; do
    case "$a" in -*) opts+=("$a") ;; *) files+=("$a") ;; esac
done
if [ ${#files[@]} -eq 0 ]; then
    shopt -s nullglob
    files=("$suite"/*.test.mjs)
    [ ${#files[@]} -gt 0 ] || die "no *.test.mjs in $suite"
    files=("${files[@]#"$suite/"}")
fi

artifacts="$build/ui-screenshots"
rm -rf "$artifacts"
cd "$suite"
set +e
RUSTYCAGE_BIN="$bin" RUSTYCAGE_TEST_MODELS="$models" RUSTYCAGE_CLIENTS_PIDS="$pids" RUSTYCAGE_CHROMIUM="$chromium" \
    RUSTYCAGE_UI_ARTIFACTS="$artifacts" node --test --test-reporter=spec "${opts[@]+"${opts[@]}"}" "${files[@]}"
rc=$?
set -e
[ -d "$artifacts" ] && say "screenshots: $artifacts"
exit $rc
