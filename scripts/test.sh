#!/usr/bin/env bash
# Runs the whole suite: C++ unit and integration tests (ctest), then the Node client suites and the
# web console's browser suite when present. Test models are generated into the build dir by a ctest fixture.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
ctest --test-dir "$build" --output-on-failure -j 2 --timeout 600
if [ -f tests/clients/package.json ]; then
    scripts/test-clients.sh "$build"
fi
if [ -f tests/ui/package.json ]; then
    scripts/test-ui.sh "$build"
fi
