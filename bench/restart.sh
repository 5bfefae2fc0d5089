#!/usr/bin/env bash
# The restart scenario of issue 34, side by side with llama-server from the same pinned tree:
# bench-1b, one conversation of A tokens, `--parallel 1 --ctx-size 2560`, disk tier on; the server
# restarts and the conversation is resumed. Measured from "server ready" (its health check says 200)
# to the first token, on both sides:
#   preloaded  rustycage serve --preload auto: the model loads before ready; the resume is a restore
#   lazy       rustycage serve without --preload: the first request pays the load, then the restore
#   llama      llama-server (loads before ready) recomputes the conversation
# and, from Rustycage's log and /metrics, the parts: load (event=loaded ms), whether the step cost
# was remembered (event=step_cost source=…: no timed decodes at load either way) and the restore
# (rustycage_kv_restore_seconds_sum, source="disk").
#
#   bench/restart.sh [--reps N] [--a-tokens N] [--build DIR] [--out DIR]
# Prints a Markdown table of medians and ratios; raw records in OUT/restart.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."

reps=3 a_tokens=1825 build=build out=""
while [ $# -gt 0 ]; do
    case $1 in
        --reps) reps=$2; shift ;;
        --a-tokens) a_tokens=$2; shift ;;
        --build) build=$2; shift ;;
        --out) out=$2; shift ;;
        *) echo "usage: bench/restart.sh [--reps N] [--a-tokens N] [--build DIR] [--out DIR]" >&2; exit 2 ;;
    esac
    shift
done
log() { echo "[restart] $*" >&2; }
die() { echo "[restart] error: $*" >&2; exit 1; }

rustycage=$build/bin/rustycage rcbench=$build/bin/rc-bench mkmodel=$build/bin/rustycage-mkmodel
for b in "$rustycage" "$rcbench" "$mkmodel"; do [ -x "$b" ] || die "$b is missing: make build first"; done
llama_build=$(scripts/llama.sh server cpu) || die "building llama-server failed"
llama_server=$llama_build/bin/llama-server
model=${RUSTYCAGE_CACHE:-$HOME/.cache/rustycage}/models/bench-1b.gguf
[ -f "$model" ] || { mkdir -p "$(dirname "$model")"; "$mkmodel" --preset bench-1b --out "$model" >&2; }

work=$(mktemp -d /tmp/rc-restart.XXXXXX)
out=${out:-$work}
mkdir -p "$out" "$work/models"
ln -s "$model" "$work/models/bench-1b.gguf"
raw=$out/restart.jsonl
: >"$raw"
pid=""
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null || true' EXIT

free_port() {
    local p
    for _ in $(seq 1 200); do
        p=$((20000 + RANDOM % 12000))
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
    done
    die "no free port"
}
# start NAME CMD...: runs the server on $port, returns once /health says 200.
start() {
    local name=$1; shift
    "$@" >"$work/$name.log" 2>&1 &
    pid=$!
    while [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/health" || true)" != 200 ]; do
        kill -0 "$pid" 2>/dev/null || { tail -20 "$work/$name.log" >&2; die "$name exited during start"; }
        sleep 0.05
    done
}
stop() {
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=""
}
rc_args() {  # extra flags...
    echo serve --host 127.0.0.1 --models-dir "$work/models" --ctx-size 2560 --parallel 1 --threads 2 \
        --openai-port "$port" --ollama-port -1 --kv-disk-dir "$work/kv" "$@"
}
# resume NAME PHASE REP: rc-bench's resume scenario (phase 1 primes A, 2 resends A + a turn).
resume() {
    "$rcbench" resume --target "$1=http://127.0.0.1:$port" --model bench-1b --reps 1 --rep-offset "$3" \
        --variant "restart,A=$a_tokens" --a-tokens "$a_tokens" --b-tokens 0 --turn-tokens 0 --phase "$2" --out "$work/rcbench.jsonl" >&2
}
parts() {  # NAME REP: load, step cost source and restore of the run just finished
    local name=$1 rep=$2 load src restore
    load=$(grep -o 'event=loaded.* ms=[0-9.]*' "$work/$name.log" | grep -o 'ms=[0-9.]*' | head -1 | cut -d= -f2)
    src=$(grep -o 'event=step_cost source="\?[a-z]*' "$work/$name.log" | head -1 | cut -d= -f3 | tr -d '"')
    restore=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^rustycage_kv_restore_seconds_sum\{.*source="disk"/ {print $2 * 1000}' | head -1)
    printf '{"server":"%s","rep":%d,"load_ms":%s,"step_cost":"%s","restore_ms":%s}\n' "$name" "$rep" "${load:-0}" "${src:-none}" "${restore:-0}" >>"$raw"
}

for r in $(seq 0 $((reps - 1))); do
    rm -rf "$work/kv"
    port=$(free_port)
    # shellcheck disable=SC2046
    start prime "$rustycage" $(rc_args --preload bench-1b)
    resume prime 1 "$r"
    stop
    for name in preloaded lazy; do
        port=$(free_port)
        if [ $name = preloaded ]; then
            # shellcheck disable=SC2046
            start "$name" "$rustycage" $(rc_args --preload auto)
        else
            # shellcheck disable=SC2046
            start "$name" "$rustycage" $(rc_args)
        fi
        resume "$name" 2 "$r"
        parts "$name" "$r"
        stop
    done
    port=$(free_port)
    start llama "$llama_server" -m "$model" -c 2560 -np 1 -t 2 --host 127.0.0.1 --port "$port" --kv-unified -fa off --no-webui
    resume llama 2 "$r"
    stop
    log "repetition $((r + 1)) of $reps done"
done

node - "$work/rcbench.jsonl" "$raw" <<'JS'
const fs = require('fs');
const lines = f => fs.readFileSync(f, 'utf8').split('\n').filter(Boolean).map(JSON.parse);
const bench = lines(process.argv[2]), parts = lines(process.argv[3]);
const median = xs => { const s = [...xs].sort((a, b) => a - b); const n = s.length; return n ? (n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2) : NaN; };
const ttft = name => median(bench.filter(l => l.server === name && l.ok && l.metrics.resume_ttft_ms).map(l => l.metrics.resume_ttft_ms.value));
const part = (name, k) => median(parts.filter(p => p.server === name).map(p => p[k]));
const f = x => x.toFixed(0);
const llama = ttft('llama');
console.log('| run | ready → first token (ms) | load (ms) | restore (ms) | step cost at load | vs llama-server recompute |');
console.log('|---|---|---|---|---|---|');
for (const name of ['preloaded', 'lazy']) {
  const t = ttft(name), src = [...new Set(parts.filter(p => p.server === name).map(p => p.step_cost))].join(', ');
  console.log(`| rustycage ${name} | ${f(t)} | ${f(part(name, 'load_ms'))}${name === 'preloaded' ? ' (before ready)' : ''} | ${f(part(name, 'restore_ms'))} | ${src} | ${(llama / t).toFixed(1)}× faster |`);
}
console.log(`| llama-server (recompute) | ${f(llama)} | (before ready) | — | — | 1.0× |`);
const pre = ttft('preloaded'), restore = part('preloaded', 'restore_ms');
console.log(`\npreloaded: first token ${(pre / restore).toFixed(2)}× the restore; medians of ${parts.filter(p => p.server === 'preloaded').length} repetitions`);
JS
log "raw records: $raw, $work/rcbench.jsonl; logs in $work"
