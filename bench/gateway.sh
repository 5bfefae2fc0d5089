#!/usr/bin/env bash
# The fleet gateway's routing policies against each other (issue 15; docs/GATEWAY.md): 3 hosts (real
# `rustycage agent`s, each supervising a `rustycage serve`) on one etcd member, and one gateway per
# policy — cache (cached prefix against load), round-robin, least-loaded. Every policy gets a fresh
# fleet (no KV left over from the previous one) and the same prompts.
#
#   bench/gateway.sh [--smoke] [--build DIR] [--model PRESET] [--reps N] [--policies LIST] [--out DIR]
#                    [--hosts N] [--scenarios fleet_resume,conversations]
#   bench/gateway.sh --scale [--build DIR] [--model PRESET] [--reps REQUESTS] [--clients N] [--out DIR]
#
# The full run serves bench-135m (SmolLM2-135M's shape): three servers share the machine's cores, and
# on two of them bench-1b's 2k-token prefill takes most of a minute (`--model bench-1b` runs it anyway).
#
# Scenarios (rc-bench, bench/bench_scenarios.cpp):
#   fleet_resume   12+ multi-turn conversations in 3 groups with long shared and unique prefixes,
#                  resumed in random order: mean and p90 resume TTFT (target: cache ≥ 3× better mean
#                  than round-robin)
#   conversations  unique prompts, no reuse possible, 6 client threads: throughput (target: cache no
#                  worse than least-loaded)
# --scale (issue 33): the routing cost at 3, 16 and 64 hosts — 3 real servers (bench-tiny, the data
#                  path) plus simulated hosts (rc-gateway-scale, bench/sim_hosts.h: 100k blocks each,
#                  a host's real lookup work when asked), the block index against asking every host:
#                  routing overhead p50/p99, lookups per request, simulated hosts' CPU per 1k
#                  requests, hit rate (--reps: requests measured per run, default 300). --clients N
#                  adds 64-host index runs with N clients sending at once. Results: scale.jsonl and
#                  scale.md in --out.
# --smoke checks the harness on bench-tiny with few, short conversations (a minute or two); numbers
# from it mean nothing. Results: raw.jsonl and summary.md in --out (default: a temp dir; the lead
# copies a real run's summary into docs/BENCHMARKS.md, section "Fleet gateway").
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

mode=full build=build reps="" policies="cache,round-robin,least-loaded" outdir="" model_arg="" nhosts=3
clients=1
scenarios=fleet_resume,conversations
while [ $# -gt 0 ]; do
    case "$1" in
        --smoke) mode=smoke ;;
        --scale) mode=scale ;;
        --build) build=$2; shift ;;
        --model) model_arg=$2; shift ;;
        --reps) reps=$2; shift ;;
        --policies) policies=$2; shift ;;
        --hosts) nhosts=$2; shift ;;
        --clients) clients=$2; shift ;;
        --scenarios) scenarios=$2; shift ;;
        --out) outdir=$2; shift ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) echo "bench/gateway.sh: unknown argument '$1'" >&2; exit 2 ;;
    esac
    shift
done
log() { echo "[bench-gateway] $*" >&2; }
die() { echo "[bench-gateway] error: $*" >&2; exit 1; }

if [ "$mode" = scale ]; then
    model=bench-tiny
elif [ "$mode" = smoke ]; then
    reps=${reps:-1}; model=bench-tiny; threads=1; ctx=2048; parallel=2
    convs=4; groups=2; shared=64; unique=64; turn=16; gen=4; rounds=1
    nr_count=6; nr_conc=3; nr_prompt=32; nr_gen=8
else
    # One thread per host: the three hosts share this machine's cores, and three busy 2-thread
    # OpenMP pools on two cores spin against each other (the no-reuse scenario ran at 3 tokens/s).
    reps=${reps:-3}; model=bench-135m; threads=1; ctx=8192; parallel=4
    convs=12; groups=3; shared=1024; unique=1024; turn=64; gen=8; rounds=2
    nr_count=24; nr_conc=6; nr_prompt=256; nr_gen=64
fi
[ -n "$model_arg" ] && model=$model_arg
[ -z "$outdir" ] && outdir=$(mktemp -d /tmp/rc-bench-gateway.XXXXXX)
mkdir -p "$outdir"
raw=$outdir/raw.jsonl
: >"$raw"

rustycage=$build/bin/rustycage mkmodel=$build/bin/rustycage-mkmodel rcbench=$build/bin/rc-bench
for b in "$rustycage" "$mkmodel" "$rcbench"; do [ -x "$b" ] || die "$b is missing: build first (make build)"; done
etcd_bin=$(command -v etcd || true)
[ -n "$etcd_bin" ] || die "no etcd binary: scripts/setup.sh installs etcd-server"
command -v curl >/dev/null || die "curl is needed"

cache=${RUSTYCAGE_CACHE:-$HOME/.cache/rustycage}
mkdir -p "$cache/models"
model_file=$cache/models/$model.gguf
[ -f "$model_file" ] || { log "generating $model into $model_file"; "$mkmodel" --preset "$model" --out "$model_file" >&2; }

work=$(mktemp -d /tmp/rc-bench-gateway-work.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do
        for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null || true
    done
    pids=()
}
trap 'cleanup; log "logs kept in $work"' EXIT
trap 'exit 130' INT TERM

free_port() {
    local p
    for _ in $(seq 1 200); do
        p=$((20000 + RANDOM % 12000))  # below the ephemeral range (bench/run.sh)
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
    done
    die "no free port found"
}
wait_for() {  # what, command...
    local what=$1; shift
    for _ in $(seq 1 1500); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
    die "$what did not come up (logs in $work)"
}

# start_etcd DIR: one etcd member with its data in DIR; sets $etcd_url.
start_etcd() {
    local dir=$1 cport pport epid
    etcd_url=""
    # A port picked free can be taken before etcd binds it: try fresh ports a few times.
    for _ in 1 2 3; do
        cport=$(free_port); pport=$(free_port)
        rm -rf "$dir/etcd"
        "$etcd_bin" --name m0 --data-dir "$dir/etcd" --listen-client-urls "http://127.0.0.1:$cport" --advertise-client-urls "http://127.0.0.1:$cport" \
            --listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
            --initial-cluster "m0=http://127.0.0.1:$pport" >"$dir/etcd.log" 2>&1 &
        epid=$!
        for _ in $(seq 1 150); do
            kill -0 "$epid" 2>/dev/null || break
            if curl -sf "http://127.0.0.1:$cport/health" >/dev/null 2>&1; then etcd_url=http://127.0.0.1:$cport; break; fi
            sleep 0.2
        done
        [ -n "$etcd_url" ] && break
        kill -KILL "$epid" 2>/dev/null || true
    done
    [ -n "$etcd_url" ] || die "etcd did not come up (see $dir/etcd.log)"
    pids+=("$epid")
}

# fleet POLICY: etcd, $nhosts agents, a gateway with POLICY; sets $gateway_url.
fleet() {
    local policy=$1 dir=$work/$1
    mkdir -p "$dir"
    start_etcd "$dir"
    for h in $(seq -f 'h%g' 1 "$nhosts"); do
        mkdir -p "$dir/$h/models" "$dir/$h/data"
        ln -sf "$model_file" "$dir/$h/models/$model.gguf"
        "$rustycage" agent --etcd "$etcd_url" --host-id "$h" --data-dir "$dir/$h/data" --models-dir "$dir/$h/models" \
            --openai-port 0 --ollama-port 0 --threads "$threads" --ctx-size "$ctx" --parallel "$parallel" --preload "$model" \
            >"$dir/$h.log" 2>&1 &
        pids+=($!)
    done
    local gport; gport=$(free_port)
    "$rustycage" gateway --etcd "$etcd_url" --openai-port "$gport" --ollama-port -1 --route-policy "$policy" >"$dir/gateway.log" 2>&1 &
    pids+=($!)
    gateway_url=http://127.0.0.1:$gport
    # Ready when the gateway routes to every host with the model loaded.
    wait_for "the fleet ($policy)" bash -c "curl -sf '$gateway_url/v1/gateway/hosts' | grep -o '\"routable\":true' | wc -l | grep -qx $nhosts"
    log "fleet for $policy: etcd $etcd_url, gateway $gateway_url"
}

bench() {  # scenario policy rep args...
    local scenario=$1 policy=$2 rep=$3; shift 3
    "$rcbench" "$scenario" --target "$policy=$gateway_url" --model "$model" --reps 1 --seed "$rep" --variant "rep$rep" --out "$raw" "$@"
}

# The scale runs: one etcd, 3 real servers, then each fleet size with each way of routing.
if [ "$mode" = scale ]; then
    scale=$build/bin/rc-gateway-scale
    [ -x "$scale" ] || die "$scale is missing: build first (make build)"
    start_etcd "$work"
    reals=()
    for h in r1 r2 r3; do
        mkdir -p "$work/$h/models"
        ln -sf "$model_file" "$work/$h/models/scale.gguf"
        port=$(free_port)
        "$rustycage" serve --models-dir "$work/$h/models" --openai-port "$port" --ollama-port -1 --threads 1 --ctx-size 4096 --preload scale \
            >"$work/$h.log" 2>&1 &
        pids+=($!)
        reals+=(--real "http://127.0.0.1:$port")
        wait_for "server $h" curl -sf "http://127.0.0.1:$port/v1/health/ready"
    done
    : >"$outdir/scale.jsonl"
    for api in chat completions; do
        for n in 3 16 64; do
            for how in index lookup; do
                log "scale: $api, $n hosts, $how"
                "$scale" --etcd "$etcd_url" --model-file "$model_file" --model scale --hosts "$n" "${reals[@]}" --mode "$how" \
                    --api "$api" --requests "${reps:-300}" --out "$outdir/scale.jsonl" >&2
            done
        done
        if [ "$clients" -gt 1 ]; then
            log "scale: $api, 64 hosts, index, $clients clients at once"
            "$scale" --etcd "$etcd_url" --model-file "$model_file" --model scale --hosts 64 "${reals[@]}" --mode index \
                --api "$api" --requests "${reps:-300}" --clients "$clients" --out "$outdir/scale.jsonl" >&2
        fi
    done
    node - "$outdir/scale.jsonl" >"$outdir/scale.md" <<'EOF'
const rows = require('fs').readFileSync(process.argv[2], 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
console.log('| requests | hosts | routing | clients | overhead p50 (µs) | p99 (µs) | resumes p50 / p99 (µs) | new conversations p50 / p99 (µs) | lookups / request | sim. hosts\' CPU s / 1k requests | hit rate |');
console.log('|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|');
const us = (v) => (v === undefined ? '—' : v.toFixed(0));
for (const r of rows) console.log(`| ${r.api} | ${r.hosts} | ${r.mode} | ${r.clients ?? 1} | ${us(r.route_us_p50)} | ${us(r.route_us_p99)} | ${us(r.resume_us_p50)} / ${us(r.resume_us_p99)} | ${us(r.new_us_p50)} / ${us(r.new_us_p99)} (${r.new_conversations ?? '—'}) | ${r.lookups_per_request.toFixed(2)} | ${r.sim_host_cpu_s_per_1k.toFixed(2)} | ${(100 * r.hit_rate).toFixed(0)} % |`);
EOF
    cat "$outdir/scale.md"
    log "results in $outdir (scale.jsonl, scale.md)"
    exit 0
fi

# The gateway's routing counters so far (cumulative: the -resume file is taken before the no-reuse
# scenario, so the difference is how that scenario was spread over the hosts).
routed() {  # file
    curl -sf "$gateway_url/metrics" | grep -E '^rustycage_gateway_(routed_total|lookups_total|lookup_seconds_(sum|count))' >"$1" || true
}

IFS=, read -r -a policy_list <<<"$policies"
for rep in $(seq 1 "$reps"); do
    for policy in "${policy_list[@]}"; do
        fleet "$policy"
        bench warmup "$policy" "$rep"
        [[ ",$scenarios," == *,fleet_resume,* ]] && bench fleet_resume "$policy" "$rep" --convs "$convs" --groups "$groups" --shared-tokens "$shared" --unique-tokens "$unique" \
            --turn-tokens "$turn" --gen-tokens "$gen" --rounds "$rounds"
        routed "$outdir/routed-$policy-rep$rep-resume.txt"
        [[ ",$scenarios," == *,conversations,* ]] && bench conversations "$policy" "$rep" --count "$nr_count" --concurrency "$nr_conc" --prompt-tokens "$nr_prompt" --gen-tokens "$nr_gen"
        routed "$outdir/routed-$policy-rep$rep.txt"
        cleanup
    done
done

# One table: per policy, the mean over repetitions of each metric.
node - "$raw" >"$outdir/summary.md" <<'EOF'
const fs = require('fs');
const rows = fs.readFileSync(process.argv[2], 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
const by = {};
for (const r of rows) {
  if (!r.ok || r.scenario === 'warmup') continue;
  for (const [name, m] of Object.entries(r.metrics)) {
    const k = `${r.scenario} ${name}`;
    ((by[k] ??= {})[r.server] ??= []).push(m.value);
  }
}
const servers = [...new Set(rows.map((r) => r.server))];
console.log(`| metric | ${servers.join(' | ')} |`);
console.log(`|---|${servers.map(() => '---:').join('|')}|`);
for (const [k, v] of Object.entries(by)) {
  console.log(`| ${k} | ${servers.map((s) => (v[s] ? (v[s].reduce((a, b) => a + b, 0) / v[s].length).toFixed(1) : '')).join(' | ')} |`);
}
const failed = rows.filter((r) => !r.ok);
if (failed.length) console.log(`\n${failed.length} repetition(s) failed: ${failed.map((r) => `${r.server}/${r.scenario}: ${r.error}`).join('; ')}`);
EOF
cat "$outdir/summary.md"
log "results in $outdir (raw.jsonl, summary.md, routed-*.txt: after fleet_resume (-resume) and after all)"
