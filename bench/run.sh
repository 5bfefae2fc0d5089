#!/usr/bin/env bash
# Side-by-side benchmarks: Rustycage against llama-server built from the same pinned llama.cpp, same
# model (bench-1b), same threads, context size and parallelism. See bench/README.md.
#
#   bench/run.sh [--quick|--full|--kv-full|--smoke] [--gpu cuda|vulkan] [--build DIR] [--reps N] [--only LIST] [--out DIR]
#                [--wait-quiet SECONDS]
#
# Writes docs/bench/results.json, results.md and PNG plots (docs/bench/<backend>/ for --gpu), and
# regenerates docs/BENCHMARKS.md. --only takes a comma-separated subset of the groups
# core,http,mixed,kv,disk,tiering,pressure,fit,checkpoints (default: all; checkpoints: CPU only, not in --smoke). --smoke checks the harness itself with tiny
# sizes and 2 repetitions in a few minutes; it writes to a temporary directory (or --out), never to docs/.
# --kv-full runs the kv, disk, tiering and pressure groups at the KV issues' sizes (2k-token resumes,
# a 1.5k shared prefix, the single-slot and 4-stream reproductions), 3 repetitions, into
# docs/bench/kv-issue/ (about an hour on 2 cores). Every KV scenario runs at an ample pool and at a
# tight one (at most 1.5x one conversation), Rustycage with its default flags.
# --wait-quiet waits up to SECONDS for a quiet machine (1-minute load < 0.7, no compiler, ctest or
# other rustycage running) before measuring; the report says whether the run was taken under load.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

mode=quick backend=cpu build=build reps="" wait_quiet=0 only=core,http,mixed,kv,disk,tiering,pressure,fit,checkpoints outdir=""
cmdline="bench/run.sh $*"
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) mode=quick ;;
        --full) mode=full ;;
        --smoke) mode=smoke ;;
        --kv-full) mode=kvfull; only=kv,disk,tiering,pressure ;;
        --gpu) backend=$2; shift ;;
        --build) build=$2; shift ;;
        --reps) reps=$2; shift ;;
        --only) only=$2; shift ;;
        --out) outdir=$2; shift ;;
        --wait-quiet) wait_quiet=$2; shift ;;
        -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
        *) echo "bench/run.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
if [ -z "$reps" ]; then case "$mode" in smoke) reps=2 ;; kvfull) reps=3 ;; *) reps=5 ;; esac; fi
[ "$reps" -ge 1 ] || { echo "bench/run.sh: --reps must be >= 1" >&2; exit 2; }
case "$backend" in cpu|cuda|vulkan|metal) ;; *) echo "bench/run.sh: --gpu must be cuda, vulkan or metal" >&2; exit 2 ;; esac
docs_page=docs/BENCHMARKS.md
if [ "$mode" = smoke ]; then docs_page=""; fi
if [ -z "$outdir" ]; then
    if [ "$mode" = smoke ]; then outdir=$(mktemp -d /tmp/rc-bench-smoke.XXXXXX)
    elif [ "$mode" = kvfull ]; then outdir=docs/bench/kv-issue
    elif [ "$backend" = cpu ]; then outdir=docs/bench
    else outdir=docs/bench/$backend; fi
fi

log() { echo "[bench] $*" >&2; }
die() { echo "[bench] error: $*" >&2; exit 1; }
has_group() { [[ ",$only," == *",$1,"* ]]; }

# ---------------------------------------------------------------- sizes per mode
threads=2
# bench-1b prefills at ~75 tokens/s and decodes at ~12 tokens/s on 2 cores, so sizes decide the run
# time. Quick mode (~15-20 minutes on 2 cores) keeps 5 repetitions of everything with short prompts:
# prefill 512, decode 1/4/8/16 streams, a 1k-token resume, a 512-token shared prefix. Full mode uses
# the sizes of the issue (prefill up to 4096, 2k-token resume, 1.5k shared prefix, 8 conversations)
# and longer generations: several hours on 2 cores.
if [ "$mode" = smoke ]; then
    prefill_sizes="64"; decode_streams="1 2"; decode_gen=8; decode_prompt=16
    mixed_streams=2; mixed_long=1; mixed_long_tokens=128; mixed_interval=200
    rps_requests=4; rps_conc="2"
    http_requests=20; http_conc="1 4"; http_gen=16
    rss_convs=2; rss_conc=2; rss_prompt=32; rss_gen=4
    resume_a=128; resume_b=32
    shared_convs=2; shared_s=128; shared_u=32
    disk_a=128
    noreuse_count=2; noreuse_conc=2; noreuse_prompt=32; noreuse_gen=4
    kv_extra_servers="llama-server-recompute rustycage-recompute"
    repro_ctx=256; repro_a=180; repro_gen=8; burst_ctx=256; burst_prompt=64; burst_gen=64
    fit_convs=2; fit_a=128; fit_pool=256
elif [ "$mode" = kvfull ]; then
    resume_a=2048; resume_b=256
    shared_convs=6; shared_s=1536; shared_u=256; shared_turn=16
    disk_a=2048
    noreuse_count=4; noreuse_conc=4; noreuse_prompt=64; noreuse_gen=8  # as quick mode (--only tiering)
    kv_extra_servers=""  # no recompute baselines: the disk group measures recompute (a 2k-token prefill is 30-50 s here)
    repro_ctx=2560; repro_a=1825; repro_gen=16; burst_ctx=1280; burst_prompt=300; burst_gen=300
elif [ "$mode" = quick ]; then
    prefill_sizes="512"; decode_streams="1 4 8 16"; decode_gen=16; decode_prompt=16
    mixed_streams=3; mixed_long=1; mixed_long_tokens=500; mixed_interval=500
    rps_requests=16; rps_conc="4"
    http_requests=200; http_conc="1 4"; http_gen=512
    rss_convs=4; rss_conc=4; rss_prompt=64; rss_gen=8
    resume_a=1024; resume_b=64
    shared_convs=6; shared_s=512; shared_u=64
    disk_a=512
    noreuse_count=4; noreuse_conc=4; noreuse_prompt=64; noreuse_gen=8
    kv_extra_servers="llama-server-recompute"
    repro_ctx=1280; repro_a=900; repro_gen=16; burst_ctx=640; burst_prompt=150; burst_gen=150
    fit_convs=4; fit_a=600; fit_pool=1024
else
    prefill_sizes="128 512 2048 4096"; decode_streams="1 2 4 8 16"; decode_gen=128; decode_prompt=32
    mixed_streams=3; mixed_long=1; mixed_long_tokens=500; mixed_interval=500
    rps_requests=64; rps_conc="1 4 16"
    http_requests=1000; http_conc="1 4 16"; http_gen=512
    rss_convs=32; rss_conc=8; rss_prompt=256; rss_gen=32
    resume_a=2048; resume_b=256
    shared_convs=8; shared_s=1536; shared_u=256
    disk_a=2048
    noreuse_count=32; noreuse_conc=4; noreuse_prompt=512; noreuse_gen=64
    kv_extra_servers="llama-server-recompute rustycage-recompute"
    repro_ctx=2560; repro_a=1825; repro_gen=16; burst_ctx=1280; burst_prompt=300; burst_gen=300
fi
shared_turn=${shared_turn:-64}
fit_convs=${fit_convs:-6}; fit_a=${fit_a:-1536}; fit_pool=${fit_pool:-2048}; fit_turn=32; fit_rounds=2
mixed_streams=${mixed_streams:-3}; mixed_long=${mixed_long:-1}; mixed_long_tokens=${mixed_long_tokens:-500}; mixed_interval=${mixed_interval:-500}
core_ctx=16384 core_parallel=16
kv_ctx=8192                # the ample pool of the KV groups
mixed_ctx=4096 mixed_parallel=4 mixed_bg_tokens=2048
# A tight pool for a conversation of N tokens: at most 1.5x it, in llama.cpp's 256-cell steps.
tight_ctx() { local c=$(( $1 * 3 / 2 / 256 * 256 )); [ "$c" -ge 256 ] || c=256; echo "$c"; }

gpu_rc=() gpu_ls=()
if [ "$backend" != cpu ]; then gpu_rc=(--gpu-layers -1); gpu_ls=(-ngl 999); fi

# ---------------------------------------------------------------- tools, binaries, model
ensure_gnuplot() {
    command -v gnuplot >/dev/null && return 0
    log "installing gnuplot-nox for the plots"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    if ! { DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null 2>&1 \
        || { "${sudo[@]}" apt-get update -qq >/dev/null 2>&1 \
             && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends gnuplot-nox >/dev/null 2>&1; }; }; then
        log "warning: gnuplot-nox could not be installed; results without plots"
    fi
}
command -v node >/dev/null || die "node is needed for the report (scripts/setup.sh installs it)"
command -v curl >/dev/null || die "curl is needed (scripts/setup.sh installs it)"
ensure_gnuplot

rustycage=$build/bin/rustycage mkmodel=$build/bin/rustycage-mkmodel rcbench=$build/bin/rc-bench
for b in "$rustycage" "$mkmodel" "$rcbench"; do
    [ -x "$b" ] || die "$b is missing: build first (make build$( [ "$backend" = cpu ] || echo " GPU=$backend"), or --build DIR)"
done
if [ "$backend" != cpu ] && ! grep -qi "^RUSTYCAGE_${backend}:BOOL=ON" "$build/CMakeCache.txt" 2>/dev/null; then
    die "$build is not a $backend build: make bench GPU=$backend builds one (or pass --build DIR)"
fi
log "llama-server ($backend) from the pinned tree (first time: several minutes)"
llama_build=$(scripts/llama.sh server "$backend") || die "building llama-server failed"
llama_server=$llama_build/bin/llama-server
[ -x "$llama_server" ] || die "$llama_server missing after scripts/llama.sh server"

cache=${RUSTYCAGE_CACHE:-$HOME/.cache/rustycage}
model_dir=$cache/models
mkdir -p "$model_dir"
model=$model_dir/bench-1b.gguf
if [ ! -f "$model" ] && [ "$mode" != smoke ]; then
    log "generating bench-1b into $model"
    mkdir -p "$model_dir"
    "$mkmodel" --preset bench-1b --out "$model" >&2
fi

work=$(mktemp -d /tmp/rc-bench.XXXXXX)
raw=$work/raw.jsonl
: >"$raw"
mkdir -p "$work/models"
[ -f "$model" ] && ln -s "$model" "$work/models/bench-1b.gguf"
# bench-tiny (bench-1b's tokenizer on a 2-layer body) for the HTTP group: there the servers' own
# per-request and per-token costs must not drown in model compute.
tiny_model=$model_dir/bench-tiny.gguf
[ -f "$tiny_model" ] || "$mkmodel" --preset bench-tiny --out "$tiny_model" >&2
ln -s "$tiny_model" "$work/models/bench-tiny.gguf"
bench_model=bench-1b
# The smoke run checks the harness, not the numbers: everything on the tiny model, in minutes.
[ "$mode" = smoke ] && bench_model=bench-tiny

# ---------------------------------------------------------------- servers
declare -A srv_pid srv_url srv_log srv_cmd
cur_group=""
cleanup() {
    for name in "${!srv_pid[@]}"; do stop_server "$name"; done
    rm -rf "$work/models" "$work"/kvdisk-* 2>/dev/null || true
    log "server logs and raw results kept in $work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Below Linux's ephemeral range (32768-60999): a port that a client connection holds as its local
# end cannot be seen by the probe below, and a server then fails to bind it.
free_port() {
    local p
    for _ in $(seq 1 200); do
        p=$((20000 + RANDOM % 12000))
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
    done
    die "no free port found"
}

wait_healthy() {  # name
    local name=$1 deadline=$((SECONDS + 300))
    while [ $SECONDS -lt $deadline ]; do
        kill -0 "${srv_pid[$name]}" 2>/dev/null || { tail -20 "${srv_log[$name]}" >&2; die "$name exited during start"; }
        if [ -n "${srv_url[$name]:-}" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' "${srv_url[$name]}/health" || true)" = 200 ]; then return 0; fi
        sleep 0.2
    done
    die "$name did not become healthy (see ${srv_log[$name]})"
}

# start_rustycage NAME CTX PARALLEL [extra flags...]
start_rustycage() {
    local name=$1 ctx=$2 par=$3; shift 3
    local port; port=$(free_port)
    local args=(serve --host 127.0.0.1 --models-dir "$work/models" --preload "$bench_model" --ctx-size "$ctx" --parallel "$par"
                --threads "$threads" --openai-port "$port" --ollama-port -1 "${gpu_rc[@]}" "$@")
    srv_log[$name]=$work/$name.log
    srv_cmd[$name]="rustycage ${args[*]}"
    "$rustycage" "${args[@]}" >"${srv_log[$name]}" 2>&1 &
    srv_pid[$name]=$!
    srv_url[$name]=http://127.0.0.1:$port
    wait_healthy "$name"
    log "started $name (pid ${srv_pid[$name]}): ${srv_cmd[$name]}"
}

# start_llama NAME CTX PARALLEL [extra flags...]
start_llama() {
    local name=$1 ctx=$2 par=$3; shift 3
    local port; port=$(free_port)
    # --kv-unified: Rustycage's --ctx-size is one cell pool shared by all sequences; llama-server at
    # this commit splits -c into -np slices unless -kvu is given (or -np is auto). -fa off: Rustycage's
    # default (llama-server's is auto = on for CPU).
    local args=(-m "$work/models/$bench_model.gguf" -c "$ctx" -np "$par" -t "$threads" --host 127.0.0.1 --port "$port" --kv-unified -fa off
                --no-webui "${gpu_ls[@]}" "$@")
    srv_log[$name]=$work/$name.log
    srv_cmd[$name]="llama-server ${args[*]}"
    "$llama_server" "${args[@]}" >"${srv_log[$name]}" 2>&1 &
    srv_pid[$name]=$!
    srv_url[$name]=http://127.0.0.1:$port
    wait_healthy "$name"
    log "started $name (pid ${srv_pid[$name]}): ${srv_cmd[$name]}"
}

# Rustycage's /metrics says where prompt tokens came from (computed, context, host, disk): recorded per
# group and server before it stops, so the report shows that a tier actually served the resumes.
kv_sources() {  # name
    local name=$1 metrics text host_bytes
    metrics=$(curl -s --max-time 5 "${srv_url[$name]}/metrics" 2>/dev/null || true)
    text=$(echo "$metrics" | grep '^rustycage_kv_prompt_tokens_total{' || true)
    [ -n "$text" ] || return 0
    host_bytes=$(echo "$metrics" | grep '^rustycage_kv_tier_bytes{.*tier="host"' | awk '{print $2}' | head -1)
    printf '{"group":"%s","server":"%s","sources":{%s,"host_mib":%s}}\n' "$cur_group" "$name" \
        "$(echo "$text" | sed -E 's/.*source="([a-z]+)".*\} ([0-9.e+]+)$/"\1":\2/' | paste -sd, -)" \
        "$(awk "BEGIN{print ${host_bytes:-0}/1048576}")" >>"$work/kv_sources.jsonl"
}

stop_server() {  # name
    local name=$1 pid=${srv_pid[$1]:-}
    [ -n "$pid" ] || return 0
    [[ "$name" != rustycage* ]] || kv_sources "$name"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    unset "srv_pid[$name]"
}

targets() {  # names... -> --target NAME=URL ...
    local n
    for n in "$@"; do printf -- '--target %s=%s ' "$n" "${srv_url[$n]}"; done
}

failures=0
bench() {  # scenario [rc-bench args...]
    # shellcheck disable=SC2068
    "$rcbench" "$@" --model "$bench_model" --out "$raw" || { failures=$((failures + 1)); log "warning: rc-bench $1 reported failures"; }
}

# rss_record NAME VARIANT REP: one line in the raw results with the server's memory.
rss_record() {
    local name=$1 variant=$2 rep=$3 pid=${srv_pid[$1]}
    local rss anon hwm
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    anon=$(awk '/^RssAnon:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    if [ -z "$rss" ] || [ -z "$anon" ] || [ -z "$hwm" ]; then log "warning: no memory figures for $name (pid $pid)"; return 0; fi
    printf '{"scenario":"rss","variant":"%s","server":"%s","rep":%d,"ok":true,"metrics":{"rss_mib":{"value":%s,"unit":"MiB","better":"lower"},"rss_anon_mib":{"value":%s,"unit":"MiB","better":"lower"},"peak_rss_mib":{"value":%s,"unit":"MiB","better":"lower"}}}\n' \
        "$variant" "$name" "$rep" "$(awk "BEGIN{print $rss/1024}")" "$(awk "BEGIN{print $anon/1024}")" "$(awk "BEGIN{print $hwm/1024}")" >>"$raw"
}

# disk_read_record VARIANT REP DIR CACHE: how long the resume spent bringing A's blocks back (the disk
# promotion histogram: read + verify on the I/O pool, then the restore into the context) against
# reading the same block files with `cat` in the same state of the page cache. CACHE=cold: the
# resume read them after the page cache was dropped, and so does the `cat` (dropped again first);
# CACHE=warm: a restart that finds them in the page cache, and a `cat` of them there.
disk_read_record() {
    local variant=$1 rep=$2 dir=$3 cache=$4 m disk_s bytes t0 t1 restore_key read_key
    m=$(curl -s --max-time 5 "${srv_url[rustycage]}/metrics" || true)
    # The restore of the resumed request: from its admission until its prefix was in the context
    # (blocks are restored while the next are read, so this is wall time, not a sum of both).
    disk_s=$(echo "$m" | awk '/^rustycage_kv_restore_seconds_sum\{.*source="disk"/ {print $2}' | head -1)
    bytes=$(xargs -r stat -c %s <"$dir.primed" | awk '{s += $1} END {print s + 0}')
    [ "$cache" = cold ] && drop_page_cache "$dir"
    t0=$(date +%s%N)
    xargs -r cat <"$dir.primed" >/dev/null
    t1=$(date +%s%N)
    if [ "$cache" = cold ]; then restore_key=cold_restore_ms read_key=cold_read_ms; else restore_key=restore_ms read_key=page_cache_read_ms; fi
    printf '{"scenario":"disk_read","variant":"%s","server":"rustycage","rep":%d,"ok":true,"metrics":{"%s":{"value":%s,"unit":"ms","better":"lower"},"%s":{"value":%s,"unit":"ms","better":"none"},"block_mib":{"value":%s,"unit":"MiB","better":"none"}}}\n' \
        "$variant" "$rep" "$restore_key" "$(awk "BEGIN{print ${disk_s:-0} * 1000}")" "$read_key" "$(awk "BEGIN{print ($t1 - $t0) / 1e6}")" \
        "$(awk "BEGIN{print $bytes / 1048576}")" >>"$raw"
}

# drop_page_cache DIR: the block files' pages leave the page cache (not the model's).
drop_page_cache() {
    [ -d "$1" ] || return 0
    find "$1" -type f -exec dd of={} oflag=nocache conv=notrunc,fdatasync count=0 status=none \; 2>/dev/null || true
}

servers_json=$work/servers.jsonl
: >"$servers_json"
note_servers() {  # group names...
    local g=$1 n; shift
    for n in "$@"; do
        printf '{"group":"%s","server":"%s","command":%s}\n' "$g" "$n" "$(node -e 'console.log(JSON.stringify(process.argv[1]))' "${srv_cmd[$n]}")" >>"$servers_json"
    done
}

busy_count() { pgrep -c -x 'cc1plus|ctest|rustycage|llama-server' 2>/dev/null || true; }
quiet_now() { awk '{exit !($1 < 0.7)}' /proc/loadavg && [ "$(busy_count)" = 0 ]; }
if [ "$wait_quiet" -gt 0 ] && ! quiet_now; then
    log "waiting up to ${wait_quiet}s for a quiet machine (load $(cut -d' ' -f1 /proc/loadavg), $(busy_count) busy processes)"
    deadline=$((SECONDS + wait_quiet))
    while [ $SECONDS -lt $deadline ] && ! quiet_now; do sleep 10; done
    quiet_now && log "quiet: starting" || log "still not quiet: measuring anyway (the report will say so)"
fi

t_start=$SECONDS
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
busy_before=$(busy_count)

# ---------------------------------------------------------------- group: core (engine vs engine, caches off)
if has_group core; then
    cur_group=core
    log "== core: prefill, decode, HTTP, RSS (prompt caches off on both) =="
    start_rustycage rustycage "$core_ctx" "$core_parallel" --kv-cached-sequences 0 --kv-host-budget 0
    # llama-server keeps every slot's last prompt in the KV cache (even with --cache-ram 0); in a
    # unified cache those stale cells widen every attention (see docs/BENCHMARKS.md). rc-bench erases
    # its slots before each repetition (--reset-slots, needs --slot-save-path) so both servers start
    # every repetition from an empty cache, as Rustycage with --kv-cached-sequences 0 does.
    mkdir -p "$work/slots"
    start_llama llama-server "$core_ctx" "$core_parallel" --cache-ram 0 --slot-save-path "$work/slots/"
    note_servers core rustycage llama-server
    T="$(targets rustycage llama-server) --reset-slots llama-server:$core_parallel"
    # shellcheck disable=SC2086
    bench warmup $T --reps 1
    for s in rustycage llama-server; do rss_record "$s" "loaded" 0; done
    for n in $prefill_sizes; do
        # shellcheck disable=SC2086
        bench prefill $T --reps "$reps" --variant "prompt=$n" --prompt-tokens "$n"
    done
    for k in $decode_streams; do
        # shellcheck disable=SC2086
        bench decode $T --reps "$reps" --variant "streams=$k" --streams "$k" --gen-tokens "$decode_gen" --prompt-tokens "$decode_prompt"
    done
    for c in $rps_conc; do
        # shellcheck disable=SC2086
        bench rps $T --reps "$reps" --variant "concurrency=$c" --requests "$rps_requests" --concurrency "$c"
    done
    for r in $(seq 0 $((reps - 1))); do
        # shellcheck disable=SC2086
        bench conversations $T --reps 1 --rep-offset "$r" --variant "rss,count=$rss_convs" --count "$rss_convs" --concurrency "$rss_conc" \
            --prompt-tokens "$rss_prompt" --gen-tokens "$rss_gen"
        for s in rustycage llama-server; do rss_record "$s" "after ${rss_convs}..$((rss_convs * reps)) conversations" "$r"; done
    done
    stop_server rustycage; stop_server llama-server
fi

# ---------------------------------------------------------------- group: http (server overhead on a tiny model)
if has_group http; then
    cur_group=http
    log "== http: requests/s and per-token streaming latency on bench-tiny (server overhead) =="
    bench_model=bench-tiny
    start_rustycage rustycage 4096 4 --kv-cached-sequences 0 --kv-host-budget 0
    start_llama llama-server 4096 4 --cache-ram 0
    note_servers http rustycage llama-server
    T=$(targets rustycage llama-server)
    # shellcheck disable=SC2086
    bench warmup $T --reps 1
    for c in $http_conc; do
        # shellcheck disable=SC2086
        bench rps $T --reps "$reps" --variant "tiny,concurrency=$c" --requests "$http_requests" --concurrency "$c"
    done
    # shellcheck disable=SC2086
    bench decode $T --reps "$reps" --variant "tiny,streams=1" --streams 1 --gen-tokens "$http_gen" --prompt-tokens 16
    stop_server rustycage; stop_server llama-server
    bench_model=bench-1b
    [ "$mode" = smoke ] && bench_model=bench-tiny
fi

# ---------------------------------------------------------------- group: mixed (stall-free scheduling, fresh servers)
if has_group mixed; then
    cur_group=mixed
    log "== mixed: streams decode while a long prompt arrives; a fresh server per repetition =="
    # No warm-up: the chunking must hold from the first long prompt a server ever sees.
    variant="streams=$mixed_streams,long=${mixed_long}x$mixed_long_tokens,fresh"
    for r in $(seq 0 $((reps - 1))); do
        # Fresh means nothing remembered either: the step cost model is learned from this run's steps.
        rm -rf "$work/models/.state"
        start_rustycage rustycage "$mixed_ctx" "$mixed_parallel"
        start_llama llama-server "$mixed_ctx" "$mixed_parallel"
        [ "$r" = 0 ] && note_servers mixed rustycage llama-server
        # shellcheck disable=SC2046
        bench mixed $(targets rustycage llama-server) --reps 1 --rep-offset "$r" --variant "$variant" --streams "$mixed_streams" \
            --bg-max-tokens "$mixed_bg_tokens" --long-count "$mixed_long" --long-tokens "$mixed_long_tokens" --interval-ms "$mixed_interval"
        stop_server rustycage; stop_server llama-server
    done
fi

# ---------------------------------------------------------------- group: kv (resume and shared prefix, ample and tight pools)
# Rustycage runs with its default flags (idle conversations kept, host tier a quarter of RAM);
# llama-server with its RAM prompt cache, and without (recompute).
if has_group kv; then
    log "== kv: resume after eviction, shared system prompt (one slot), ample and tight pools =="
    kv_servers() {  # ctx group
        start_rustycage rustycage "$1" 1
        start_llama llama-server "$1" 1 --cache-ram 2048
        names=(rustycage llama-server)
        if [[ " $kv_extra_servers " == *" llama-server-recompute "* ]]; then
            start_llama llama-server-recompute "$1" 1 --cache-ram 0
            names+=(llama-server-recompute)
        fi
        if [[ " $kv_extra_servers " == *" rustycage-recompute "* ]]; then
            start_rustycage rustycage-recompute "$1" 1 --kv-cached-sequences 0 --kv-host-budget 0
            names+=(rustycage-recompute)
        fi
        note_servers "$2" "${names[@]}"
        # shellcheck disable=SC2086
        bench warmup $(targets "${names[@]}") --reps 1
    }
    for pool in ample tight; do
        cur_group=kv-$pool
        ctx=$kv_ctx; [ "$pool" = tight ] && ctx=$(tight_ctx $((resume_a + 64 + 8)))
        kv_servers "$ctx" "kv-$pool (resume, ctx $ctx)"
        # shellcheck disable=SC2046
        bench resume $(targets "${names[@]}") --reps "$reps" --variant "A=$resume_a,B=$resume_b,pool=$pool" --a-tokens "$resume_a" --b-tokens "$resume_b"
        for n in "${names[@]}"; do stop_server "$n"; done
        ctx=$kv_ctx; [ "$pool" = tight ] && ctx=$(tight_ctx $((shared_s + shared_u + shared_turn + 8)))
        kv_servers "$ctx" "kv-$pool (shared, ctx $ctx)"
        # shellcheck disable=SC2046
        bench shared $(targets "${names[@]}") --reps "$reps" \
            --variant "convs=$shared_convs,shared=$shared_s,unique=$shared_u,turn=$shared_turn,pool=$pool" \
            --convs "$shared_convs" --shared-tokens "$shared_s" --unique-tokens "$shared_u" --turn-tokens "$shared_turn"
        for n in "${names[@]}"; do stop_server "$n"; done
    done
fi

# ---------------------------------------------------------------- group: disk (resume after a restart)
if has_group disk; then
    log "== disk: resume after a server restart (Rustycage disk tier vs llama-server recompute), ample and tight pools =="
    kvdir=$work/kvdisk-restart
    for pool in ample tight; do
        cur_group=disk-$pool
        ctx=$kv_ctx; [ "$pool" = tight ] && ctx=$(tight_ctx $((disk_a + 64 + 8)))
        variant="restart,A=$disk_a,pool=$pool"
        for r in $(seq 0 $((reps - 1))); do
            rm -rf "$kvdir"  # each repetition primes an empty directory: it then holds A's blocks only
            for s in rustycage llama-server; do
                # Rustycage resumes twice after priming: from a dropped page cache (phase 2), then once
                # more after another restart with the block files still cached (phase 3).
                phases="1 2"; [ $s = rustycage ] && phases="1 2 3"
                for phase in $phases; do
                    if [ $s = rustycage ]; then
                        start_rustycage rustycage "$ctx" 1 --kv-disk-dir "$kvdir"
                    else
                        start_llama llama-server "$ctx" 1
                    fi
                    [ "$r$phase" = 01 ] && note_servers "disk-$pool (ctx $ctx)" "$s"
                    # The resumed request must not be the first one after start (first-call page faults and
                    # allocations); a warm-up of unrelated tokens goes first on both servers.
                    # shellcheck disable=SC2046
                    [ "$phase" != 1 ] && bench warmup $(targets "$s") --reps 1
                    if [ "$phase" = 3 ]; then
                        # A warm restore: its TTFT is not a result (the cold one of phase 2 is), its restore is
                        # (the same variant: prompts are keyed by it)
                        # shellcheck disable=SC2046
                        "$rcbench" resume $(targets "$s") --model "$bench_model" --reps 1 --rep-offset "$r" --variant "$variant" \
                            --a-tokens "$disk_a" --b-tokens 0 --phase 2 >>"$work/warm-restore.log" 2>&1 || log "warning: the warm restore failed"
                    else
                        # shellcheck disable=SC2046
                        bench resume $(targets "$s") --reps 1 --rep-offset "$r" --variant "$variant" --a-tokens "$disk_a" --b-tokens 0 --phase "$phase"
                    fi
                    [ "$s$phase" = rustycage2 ] && disk_read_record "$variant" "$r" "$kvdir" cold
                    [ "$s$phase" = rustycage3 ] && disk_read_record "$variant" "$r" "$kvdir" warm
                    stop_server "$s"
                    [ "$s$phase" = rustycage1 ] && find "$kvdir" -name '*.kvb' >"$kvdir.primed"
                    # Phase 2 reads from a dropped page cache; phase 3 from a warm one.
                    [ "$s$phase" = rustycage2 ] || drop_page_cache "$kvdir"
                done
            done
        done
        rm -rf "$kvdir" "$kvdir.primed"
    done
    if [ "$mode" = full ]; then
        log "== disk: resume beyond the host budget (no restart) =="
        cur_group=disk-spill
        kvdir=$work/kvdisk-spill
        start_rustycage rustycage "$kv_ctx" 1 --kv-cached-sequences 0 --kv-host-budget 16MiB --kv-disk-dir "$kvdir"
        start_llama llama-server "$kv_ctx" 1 --cache-ram 16
        note_servers disk-spill rustycage llama-server
        # shellcheck disable=SC2046
        bench resume $(targets rustycage llama-server) --reps "$reps" --variant "host budget 16MiB,A=$disk_a" --a-tokens "$disk_a" --b-tokens "$resume_b"
        stop_server rustycage; stop_server llama-server
        rm -rf "$kvdir"
    fi
fi

# ---------------------------------------------------------------- group: tiering (overhead with no reuse)
if has_group tiering; then
    log "== tiering: no-reuse throughput with tiering on vs off, ample and tight pools =="
    for pool in ample tight; do
        cur_group=tiering-$pool
        ctx=$kv_ctx; [ "$pool" = tight ] && ctx=$(tight_ctx $((noreuse_prompt + noreuse_gen)))
        start_rustycage rustycage "$ctx" 4
        start_rustycage rustycage-tiering-off "$ctx" 4 --kv-cached-sequences 0 --kv-host-budget 0
        start_llama llama-server "$ctx" 4 --cache-ram 2048
        names=(rustycage rustycage-tiering-off llama-server)
        note_servers "tiering-$pool (ctx $ctx)" "${names[@]}"
        T=$(targets "${names[@]}")
        # shellcheck disable=SC2086
        bench warmup $T --reps 1
        for r in $(seq 0 $((reps - 1))); do
            # shellcheck disable=SC2086
            bench conversations $T --reps 1 --rep-offset "$r" --variant "no-reuse,count=$noreuse_count,pool=$pool" --count "$noreuse_count" \
                --concurrency "$noreuse_conc" --prompt-tokens "$noreuse_prompt" --gen-tokens "$noreuse_gen"
            for s in "${names[@]}"; do rss_record "$s" "tiering: after ${noreuse_count}..$((noreuse_count * reps)) conversations, pool=$pool" "$r"; done
        done
        for s in "${names[@]}"; do stop_server "$s"; done
    done
fi

# ---------------------------------------------------------------- group: pressure (the KV-pressure issue's reproductions)
if has_group pressure; then
    cur_group=pressure
    log "== pressure: single-slot resume (A, B, A again) and four long generations on a pool that holds two =="
    kvdir=$work/kvdisk-pressure
    start_rustycage rustycage "$repro_ctx" 1 --kv-host-budget 4GiB --kv-disk-dir "$kvdir"
    start_llama llama-server "$repro_ctx" 1 --cache-ram 8192
    note_servers "pressure (single slot, ctx $repro_ctx)" rustycage llama-server
    # shellcheck disable=SC2046
    bench resume $(targets rustycage llama-server) --reps "$reps" --variant "single slot,A=$repro_a,B=$repro_a,A again" \
        --a-tokens "$repro_a" --b-tokens "$repro_a" --turn-tokens 0 --gen-tokens "$repro_gen" --again-gen-tokens 1
    stop_server rustycage; stop_server llama-server
    rm -rf "$kvdir"
    start_rustycage rustycage "$burst_ctx" 4
    start_llama llama-server "$burst_ctx" 4
    note_servers "pressure (4 streams, ctx $burst_ctx)" rustycage llama-server
    # shellcheck disable=SC2046
    bench burst $(targets rustycage llama-server) --reps "$reps" --variant "4x(${burst_prompt}+${burst_gen}),ctx=$burst_ctx" \
        --requests 4 --prompt-tokens "$burst_prompt" --gen-tokens "$burst_gen"
    stop_server rustycage; stop_server llama-server
fi

# ---------------------------------------------------------------- group: fit (issue 30: a device that holds a fraction of the conversations)
# --ctx-size asks for every conversation at once; the device holds the weights and about fit_pool
# cells. On a GPU both servers fit to the real device (llama-server with --fit on). On a CPU the
# device is Rustycage's --device-memory cap, sized from a probe of the model's own footprint; llama-
# server gets the whole --ctx-size, which is what its --fit does with a set -c (it adjusts only unset
# arguments): it moves layers off the device instead, and that costs nothing on a CPU, so the
# comparison leans its way. On a GPU llama-server gets no -ngl, so its fit chooses the layers. Both keep their default prompt caches (llama-server's RAM cache, Rustycage's tiers).
# --max-tokens tells Rustycage how large one request gets (the fit's floor; without it the floor is
# llama-server's 4096 cells, more than the quick mode's whole --ctx-size).
if has_group fit; then
    cur_group=fit
    fit_ctx=$(( (fit_convs * (fit_a + fit_rounds * fit_turn + 16) + 255) / 256 * 256 ))
    log "== fit: $fit_convs conversations of $fit_a tokens (--ctx-size $fit_ctx) on a device that holds ~$fit_pool cells =="
    fit_of() { curl -s --max-time 10 "${srv_url[$1]}/api/ps" | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const f=(JSON.parse(s).models[0]||{}).fit||{};console.log(process.argv[1].split(",").map(k=>f[k]??0).join(" "))})' "$2"; }
    if [ "$backend" = cpu ]; then
        start_rustycage rustycage-probe "$fit_ctx" 1 --device-memory 1TiB --fit-margin 0
        read -r dev_bytes ctx_bytes ctx_cells <<<"$(fit_of rustycage-probe device_bytes,context_bytes,context_cells)"
        stop_server rustycage-probe
        [ "${ctx_cells:-0}" -gt 0 ] || die "the fit probe reported no context (see $work/rustycage-probe.log)"
        fit_cap=$(( dev_bytes - ctx_bytes + ctx_bytes / ctx_cells * fit_pool ))
        start_rustycage rustycage "$fit_ctx" 1 --device-memory "$fit_cap" --fit-margin 0 --max-tokens "$fit_pool"
        start_llama llama-server "$fit_ctx" 1
    else
        start_rustycage rustycage "$fit_ctx" 1 --max-tokens "$fit_pool"
        saved_ls=("${gpu_ls[@]}"); gpu_ls=()
        start_llama llama-server "$fit_ctx" 1 --fit on
        gpu_ls=("${saved_ls[@]}")
    fi
    read -r got_layers got_total got_cells <<<"$(fit_of rustycage layers,layers_total,context_cells)"
    log "rustycage fitted $got_layers/$got_total layers and $got_cells context cells"
    note_servers "fit (ctx $fit_ctx, pool fitted to $got_cells cells)" rustycage llama-server
    # shellcheck disable=SC2046
    bench warmup $(targets rustycage llama-server) --reps 1
    # shellcheck disable=SC2046
    bench rotation $(targets rustycage llama-server) --reps "$reps" \
        --variant "convs=$fit_convs,A=$fit_a,turn=$fit_turn,rounds=$fit_rounds,ctx=$fit_ctx,pool=$got_cells" \
        --convs "$fit_convs" --a-tokens "$fit_a" --turn-tokens "$fit_turn" --rounds "$fit_rounds"
    stop_server rustycage; stop_server llama-server
fi

# ---------------------------------------------------------------- checkpoints (issue 53)
# Sliding-window and hybrid bench models resumed from checkpoints, against llama-server with its best
# flags for them: bench/checkpoints.mjs starts its own servers and writes its own table (3 repetitions).
if has_group checkpoints && [ "$backend" = cpu ] && [ "$mode" != smoke ]; then
    log "checkpoints: bench-gemma3 and bench-qwen35 against llama-server (bench/checkpoints.mjs)"
    node bench/checkpoints.mjs --build "$build" --reps 3 --out "$outdir/checkpoints" || failures=$((failures + 1))
fi

# ---------------------------------------------------------------- report
elapsed=$((SECONDS - t_start))
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
meta=$work/meta.json
node -e '
const [cmd, mode, backend, reps, threads, elapsed, loadBefore, loadAfter, busy, llamaCommit, llamaBuild] = process.argv.slice(1);
console.log(JSON.stringify({command: cmd, mode, backend, reps: +reps, threads: +threads, elapsed_s: +elapsed,
  load_before: loadBefore, load_after: loadAfter, busy_processes_before: +busy || 0,
  llama_commit: llamaCommit, llama_server: llamaBuild, model: "bench-1b (rustycage-mkmodel --preset bench-1b)"}));' \
    "$cmdline" "$mode" "$backend" "$reps" "$threads" "$elapsed" "$load_before" "$load_after" "$busy_before" \
    "$(grep -m1 '^LLAMA_COMMIT=' scripts/llama.sh | cut -d= -f2)" "$llama_server" >"$meta"
mkdir -p "$outdir"
cp "$raw" "$outdir/raw.jsonl"
touch "$work/kv_sources.jsonl"
node bench/report.mjs --raw "$raw" --meta "$meta" --servers "$servers_json" --kv-sources "$work/kv_sources.jsonl" --out "$outdir" ${docs_page:+--docs "$docs_page"}
log "done in ${elapsed}s: $outdir/results.md${docs_page:+, $docs_page}"
[ "$failures" -eq 0 ] || { log "$failures rc-bench invocations reported failures (see $outdir/raw.jsonl)"; exit 1; }
