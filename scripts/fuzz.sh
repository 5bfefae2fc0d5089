#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) in their own clang build dir and runs each for a set time,
# starting from the seed corpus in the tree (fuzz/corpus/NAME) plus what earlier runs found
# (BUILD/corpus/NAME). Fails when any target crashes, leaks, hits UB or times out; the input that
# did it is kept under BUILD/artifacts/NAME/. Prints executions per target.
#   scripts/fuzz.sh [BUILD_DIR] [SECONDS_PER_TARGET] [TARGET ...]
set -euo pipefail
build=${1:-build-asan}
seconds=${2:-60}
shift $(( $# > 2 ? 2 : $# ))
cd "$(dirname "$0")/.."
root=$PWD

for tool in clang clang++; do
    command -v "$tool" >/dev/null || { echo "[fuzz] $tool not found: run scripts/setup.sh" >&2; exit 1; }
done
if [ ! -f "$build/build.ninja" ]; then
    # The same configuration as `make sanitize`, which runs the suite in this tree (Makefile).
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
          -DRUSTYCAGE_FUZZ=ON -DRUSTYCAGE_TESTS=ON -DRUSTYCAGE_BENCH=OFF >/dev/null
fi
cmake --build "$build" --target fuzzers -j 2

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for f in "$build"/bin/fuzz_*; do targets+=("$(basename "$f" | sed 's/^fuzz_//')"); done
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
summary=()
for t in "${targets[@]}"; do
    bin="$build/bin/fuzz_$t"
    [ -x "$bin" ] || { echo "[fuzz] no target fuzz_$t" >&2; exit 1; }
    work="$build/corpus/$t"
    artifacts="$build/artifacts/$t"
    mkdir -p "$work" "$artifacts"
    args=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1
          -artifact_prefix="$artifacts/")
    [ -f "fuzz/dict/$t.dict" ] && args+=(-dict="fuzz/dict/$t.dict")
    seeds=()
    [ -d "fuzz/corpus/$t" ] && seeds+=("fuzz/corpus/$t")
    log="$build/fuzz_$t.log"
    echo "[fuzz] $t for ${seconds}s"
    if (cd "$root" && "$bin" "${args[@]}" "$work" "${seeds[@]}") >"$log" 2>&1; then
        status=ok
    else
        status=FAILED
        failed+=("$t")
        tail -n 40 "$log" >&2
    fi
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || true)
    summary+=("$(printf '%-16s %-7s %12s execs  cov %s' "$t" "$status" "${execs:-?}" "${cov:-?}")")
done
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
    echo "[fuzz] crashes in: ${failed[*]} (inputs under $build/artifacts/; logs $build/fuzz_*.log)" >&2
    exit 1
fi
