#!/usr/bin/env bash
# The fit's Vulkan leg (issue 30): Rustycage and llama-server from the same pinned llama.cpp on Mesa's
# lavapipe (a Vulkan device on the CPU with a 2 GiB heap), default flags, side by side:
#   long-context  bench-1b with --ctx-size 98304: its KV alone (32 KiB a cell in f16, 3 GiB) is more
#                 than the device holds
#   big-model     bench-1b in f32 (4.2 GB of weights, more than the device), --ctx-size 4096
# llama-server runs twice per case: with its default --fit on, and --fit off (what a load without a
# fit does). For each: whether it started (else its last error), the layers and KV on the device, and
# requests (a different ~100-token prompt each, 8 tokens out; lavapipe computes at a few tokens a
# second): HTTP status and latency.
#
#   bench/fit-vulkan.sh [--build build-vulkan] [--out docs/bench/fit-vulkan] [--ctx 98304] [--reps 2]
# Needs `make build BUILD=build-vulkan GPU=vulkan` (or make test-vulkan) and lavapipe
# (mesa-vulkan-drivers). Heavy: run on a quiet machine, not in make test.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-vulkan out=docs/bench/fit-vulkan ctx=98304 reps=2 threads=2
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --ctx) ctx=$2; shift 2 ;;
        --reps) reps=$2; shift 2 ;;
        *) echo "usage: $0 [--build DIR] [--out DIR] [--ctx N] [--reps N]" >&2; exit 2 ;;
    esac
done
log() { echo "[fit-vulkan] $*" >&2; }
die() { echo "[fit-vulkan] error: $*" >&2; exit 1; }

icd=$(ls /usr/share/vulkan/icd.d/lvp_icd*.json 2>/dev/null | head -1)
[ -n "$icd" ] || die "lavapipe not installed (scripts/setup.sh vulkan: mesa-vulkan-drivers)"
export VK_ICD_FILENAMES=$icd           # lavapipe only, whatever else the machine has
export GGML_VK_VISIBLE_DEVICES=0       # ggml skips CPU-type Vulkan devices unless named
export LP_NUM_THREADS=${LP_NUM_THREADS:-$threads}
rustycage=$build/bin/rustycage
[ -x "$rustycage" ] || die "$rustycage missing: make build BUILD=$build GPU=vulkan"
"$rustycage" version --json | grep -q '"backend": "vulkan"' || die "$build is not a Vulkan build"
llama_server=$(scripts/llama.sh server vulkan)/bin/llama-server
models=${RUSTYCAGE_CACHE:-$HOME/.cache/rustycage}/models
[ -f "$models/bench-1b.gguf" ] || "$build/bin/rustycage-mkmodel" --preset bench-1b --out "$models/bench-1b.gguf" >&2
[ -f "$models/bench-1b-f32.gguf" ] || "$build/bin/rustycage-mkmodel" --preset bench-1b --type f32 --out "$models/bench-1b-f32.gguf" >&2
heap=$(vulkaninfo 2>/dev/null | awk '/memoryHeaps\[0\]/ {getline; print $3; exit}' || true)
log "device heap: ${heap:-unknown} bytes"

work=$(mktemp -d /tmp/rc-fit-vulkan.XXXXXX)
mkdir -p "$work/models" "$out"
ln -s "$models/bench-1b.gguf" "$models/bench-1b-f32.gguf" "$work/models/"
pid=""
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null || true; log "logs kept in $work"' EXIT

free_port() { local p; for _ in $(seq 1 200); do p=$((20000 + RANDOM % 12000)); (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }; done; die "no free port"; }

# Starts a server (command in the rest of the args, PORT replaced); 0 when /health answers 200, 1 when it exits.
start() {  # log, command...
    local logf=$1; shift
    port=$(free_port)
    "${@//PORT/$port}" >"$logf" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health" || true)" != 200 ] || return 0
        sleep 0.5
    done
    wait "$pid" 2>/dev/null || true
    pid=""
    return 1
}
stop() { [ -z "$pid" ] || { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""; }; }

prompt() {  # rep → a ~100-token prompt of its own (no prefix shared with the other reps)
    local i words=""
    for i in $(seq 1 24); do words+="river stone$1 cloud light "; done
    echo "$1: $words"
}
ask() {  # model, rep → "status seconds"
    local body
    body=$(printf '{"model":"%s","messages":[{"role":"user","content":"%s"}],"max_tokens":8,"temperature":0}' "$1" "$(prompt "$2")")
    curl -s -o "$work/answer.json" -w '%{http_code} %{time_total}' --max-time 900 "http://127.0.0.1:$port/v1/chat/completions" \
        -H 'Content-Type: application/json' -d "$body" || echo "000 0"
}

rows=()
run_case() {  # case, server label, model name, log, command...
    local case=$1 label=$2 model=$3 logf=$4; shift 4
    log "$case / $label: $*"
    local started=yes placement="" results="" statuses="" r
    if ! start "$logf" "$@"; then
        started="no: $(grep -iE 'error|fail|out of memory|unable' "$logf" | grep -v '^\s*$' | tail -2 | tr '\n' ' ' | tr '|' '/' | cut -c1-220)"
        rows+=("| $case | $label | $started | | |")
        return
    fi
    if [ "$label" = rustycage ]; then
        placement=$(curl -s "http://127.0.0.1:$port/api/ps" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const f=(JSON.parse(s).models[0]||{}).fit||{};const M=(b)=>(b/1048576).toFixed(0)+" MiB";console.log(`${f.layers}/${f.layers_total} layers, ${f.context_cells} of ${f.cells_wanted} cells on the device (device ${M(f.device_bytes||0)}, host ${M(f.host_bytes||0)}); tiers hold the rest`)})')
    else
        local off kv_dev kv_cpu final
        final=$(tac "$logf" | sed '/offloaded .* layers to GPU/q' | tac)  # the real load, after the fit's trial loads
        off=$(sed -n 's/.*offloaded \([0-9]*\/[0-9]*\) layers to GPU.*/\1/p' <<<"$final" | tail -1)
        kv_dev=$(sed -n 's/.*Vulkan0 KV buffer size = *\([0-9.]*\) MiB.*/\1/p' <<<"$final" | tail -1)
        kv_cpu=$(sed -n 's/.*CPU KV buffer size = *\([0-9.]*\) MiB.*/\1/p' <<<"$final" | tail -1)
        placement="${off:-?} layers, KV ${kv_dev:-0} MiB on the device + ${kv_cpu:-0} MiB on the host"
    fi
    for r in $(seq 1 "$reps"); do
        read -r status secs <<<"$(ask "$model" "$r")"
        statuses+="$status "
        [ "$status" != 200 ] || results+="$secs "
    done
    local median
    median=$(tr ' ' '\n' <<<"$results" | grep . | sort -n | awk '{a[NR]=$1} END {if (NR) printf "%.1f s", a[int((NR+1)/2)]; else print "-"}')
    kill -0 "$pid" 2>/dev/null || started="yes, then exited"
    rows+=("| $case | $label | $started | $placement | ${statuses% } → median $median |")
    stop
}

long_rc=("$rustycage" serve --host 127.0.0.1 --models-dir "$work/models" --preload bench-1b --ctx-size "$ctx" --threads "$threads" --openai-port PORT --ollama-port -1)
long_ls=("$llama_server" -m "$work/models/bench-1b.gguf" -c "$ctx" -t "$threads" --host 127.0.0.1 --port PORT --no-webui -lv 4)  # -lv 4: the load log (layers, KV buffers)
run_case "long-context (-c $ctx)" rustycage bench-1b "$work/long-rc.log" "${long_rc[@]}"
run_case "long-context (-c $ctx)" "llama-server" bench-1b "$work/long-ls.log" "${long_ls[@]}"
run_case "long-context (-c $ctx)" "llama-server --fit off" bench-1b "$work/long-ls-off.log" "${long_ls[@]}" --fit off

big_rc=("$rustycage" serve --host 127.0.0.1 --models-dir "$work/models" --preload bench-1b-f32 --ctx-size 4096 --threads "$threads" --openai-port PORT --ollama-port -1)
big_ls=("$llama_server" -m "$work/models/bench-1b-f32.gguf" -c 4096 -t "$threads" --host 127.0.0.1 --port PORT --no-webui -lv 4)  # -lv 4: the load log (layers, KV buffers)
run_case "big-model (f32, 4.2 GB)" rustycage bench-1b-f32 "$work/big-rc.log" "${big_rc[@]}"
run_case "big-model (f32, 4.2 GB)" "llama-server" bench-1b-f32 "$work/big-ls.log" "${big_ls[@]}"
run_case "big-model (f32, 4.2 GB)" "llama-server --fit off" bench-1b-f32 "$work/big-ls-off.log" "${big_ls[@]}" --fit off

{
    echo "# The fit on lavapipe (Vulkan, a ${heap:+$((heap / 1048576)) MiB }device heap)"
    echo
    echo "\`bench/fit-vulkan.sh --ctx $ctx --reps $reps\`, $(date -u +%Y-%m-%d), $(nproc) cores, llama.cpp $(sed -n 's/^LLAMA_COMMIT=//p' scripts/llama.sh | cut -c1-12)."
    echo "Each request: a different ~100-token prompt, 8 tokens out; latency is the whole request."
    echo
    echo "| case | server | started | on the device | requests (HTTP status) |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
} >"$out/results.md"
cat "$out/results.md"
