#!/usr/bin/env bash
# `make fleet-demo`: a local fleet on loopback — a 3-member etcd cluster and 3 agents, each
# supervising its own `rustycage serve` on a generated model (random weights) with its own data
# directory — then `rustycage fleet status`. Ctrl-C stops everything and removes the directory.
set -euo pipefail
build=${1:-build}
bin="$build/bin/rustycage"
mkmodel="$build/bin/rustycage-mkmodel"
command -v etcd >/dev/null || { echo "etcd is missing: run scripts/setup.sh" >&2; exit 1; }
dir=$(mktemp -d /tmp/rustycage-fleet-demo.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT INT TERM

# A port in the ephemeral range that nothing answers on (and that this script has not handed out).
used=" "
free_port() {
    while :; do
        local p=$((20000 + RANDOM % 12000))  # below the ephemeral range
        [[ "$used" == *" $p "* ]] && continue
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then used+="$p "; echo "$p"; return; fi
    done
}

"$mkmodel" --preset tiny-chat --out "$dir/demo.gguf" >/dev/null
# A throwaway release key: the agents run only artifacts it signed (rustycage release sign --key).
"$bin" release keygen --key "$dir/release.pem" --public "$dir/trusted-keys.pem" >/dev/null
cluster="" endpoints=""
declare -a cport pport
for i in 0 1 2; do
    cport[$i]=$(free_port); used+="${cport[$i]} "; pport[$i]=$(free_port); used+="${pport[$i]} "
    cluster+="${cluster:+,}m$i=http://127.0.0.1:${pport[$i]}"
    endpoints+="${endpoints:+,}http://127.0.0.1:${cport[$i]}"
done
for i in 0 1 2; do
    etcd --name "m$i" --data-dir "$dir/etcd-m$i" --logger zap --log-level error \
        --listen-client-urls "http://127.0.0.1:${cport[$i]}" --advertise-client-urls "http://127.0.0.1:${cport[$i]}" \
        --listen-peer-urls "http://127.0.0.1:${pport[$i]}" --initial-advertise-peer-urls "http://127.0.0.1:${pport[$i]}" \
        --initial-cluster "$cluster" --initial-cluster-state new >"$dir/etcd-m$i.log" 2>&1 &
    pids+=($!)
done
echo "etcd: $endpoints"
for h in lab-a lab-b lab-c; do
    mkdir -p "$dir/$h/models"
    ln -s "$dir/demo.gguf" "$dir/$h/models/demo.gguf"
    "$bin" agent --etcd "$endpoints" --host-id "$h" --data-dir "$dir/$h/agent" --heartbeat-ttl 4s --trusted-keys "$dir/trusted-keys.pem" \
        --models-dir "$dir/$h/models" --openai-port 0 --ollama-port 0 --threads 1 --ctx-size 1024 --preload demo --quiet-server \
        --log-level warn >"$dir/$h/agent.log" 2>&1 &
    pids+=($!)
    echo "agent $h: log $dir/$h/agent.log"
done
for _ in $(seq 1 120); do
    up=$("$bin" fleet status --etcd "$endpoints" --json 2>/dev/null | grep -c '"state": "up"' || true)
    [ "$up" -ge 3 ] && break
    sleep 0.5
done
echo
"$bin" fleet status --etcd "$endpoints"
echo
echo "Try:  $bin fleet status --etcd $endpoints"
echo "      $bin incidents list --etcd $endpoints"
echo "      $bin release sign --key $dir/release.pem ARTIFACT   # then: fleet upgrade --etcd $endpoints --to V --artifact ARTIFACT --sha256 …"
echo "Ctrl-C stops the fleet and removes $dir."
wait
