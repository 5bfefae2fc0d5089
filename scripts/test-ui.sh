#!/usr/bin/env bash
# Runs the web console's suite (tests/ui/): headless Chromium (Debian's /usr/bin/chromium, driven by
# the pinned puppeteer-core) on /ui of a real `rustycage serve`, plus the console's pure modules.
#
#   scripts/test-ui.sh [BUILD_DIR] [node --test args…]
#   scripts/test-ui.sh build                          # every *.test.mjs
#   scripts/test-ui.sh build console.test.mjs         # one file (relative to tests/ui)
#
# The suite has the client suite's layout, so scripts/test-clients.sh runs it (npm ci when the lock
# changed, the test models, leftover servers killed, node's test runner). Screenshots of every page
# land in BUILD_DIR/ui-screenshots/.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
case "$build" in /*) ;; *) build="$PWD/$build" ;; esac
chromium=${RUSTYCAGE_CHROMIUM:-/usr/bin/chromium}
if ! [ -x "$chromium" ]; then
    echo "[test-ui] error: $chromium not found (scripts/setup.sh installs Debian's chromium)" >&2
    exit 1
fi
artifacts="$build/ui-screenshots"
rm -rf "$artifacts"
set +e
RUSTYCAGE_NODE_SUITE=tests/ui RUSTYCAGE_CHROMIUM="$chromium" RUSTYCAGE_UI_ARTIFACTS="$artifacts" scripts/test-clients.sh "$@"
rc=$?
set -e
[ -d "$artifacts" ] && echo "[test-ui] screenshots: $artifacts" >&2
exit $rc
