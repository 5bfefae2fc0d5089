#!/usr/bin/env bash
# The soak (tests/clients/soak.mjs): 64 concurrent mixed clients against a real server for
# SOAK_SECONDS (default 600); fails on any non-deliberate error, RSS growth beyond 5 % after the
# warm-up, or sequences left behind. Reuses the client suite's setup (pinned npm clients, models).
#   SOAK_SECONDS=60 scripts/soak.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
export SOAK_SECONDS=${SOAK_SECONDS:-600}
exec scripts/test-clients.sh "$build" soak.mjs
