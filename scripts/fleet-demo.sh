#!/usr/bin/env bash
# `make fleet-demo`: a local fleet on loopback — a 3-member etcd cluster over TLS with
# authentication on (certificates made here with openssl, roles by scripts/fleet-etcd-setup.sh) and
# 3 agents, each with its own etcd user, supervising its own `rustycage serve` on a generated model
# (random weights) with its own data directory — then `rustycage fleet status`. Ctrl-C stops
# everything and removes the directory.
set -euo pipefail
build=${1:-build}
bin="$build/bin/rustycage"
mkmodel="$build/bin/rustycage-mkmodel"
command -v etcd >/dev/null && command -v etcdctl >/dev/null || { echo "etcd is missing: run scripts/setup.sh" >&2; exit 1; }
command -v openssl >/dev/null || { echo "openssl is missing: apt-get install openssl" >&2; exit 1; }
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
# A throwaway CA, the members' certificate and one client certificate (no CommonName: etcd's JSON
# gateway refuses one with a CN; identities are etcd users).
pki="$dir/pki"
mkdir -p "$pki"
(
    cd "$pki"
    ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
    openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 7 -subj /CN=rustycage-demo-ca
    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >server.ext
    openssl req "${ec[@]}" -keyout server.key -out server.csr -subj /CN=etcd
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 7 -out server.pem -extfile server.ext
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    openssl req "${ec[@]}" -keyout client.key -out client.csr -subj /O=rustycage-demo
    openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 7 -out client.pem -extfile client.ext
) >/dev/null 2>&1 || { echo "openssl could not make the demo certificates" >&2; exit 1; }
for u in root viewer ops lab-a lab-b lab-c; do head -c 18 /dev/urandom | base64 >"$pki/$u.pw"; done
tls=(--etcd-cacert "$pki/ca.pem" --etcd-cert "$pki/client.pem" --etcd-key "$pki/client.key")

cluster="" endpoints=""
declare -a cport pport
for i in 0 1 2; do
    cport[$i]=$(free_port); used+="${cport[$i]} "; pport[$i]=$(free_port); used+="${pport[$i]} "
    cluster+="${cluster:+,}m$i=http://127.0.0.1:${pport[$i]}"
    endpoints+="${endpoints:+,}https://127.0.0.1:${cport[$i]}"
done
for i in 0 1 2; do
    etcd --name "m$i" --data-dir "$dir/etcd-m$i" --logger zap --log-level error \
        --cert-file "$pki/server.pem" --key-file "$pki/server.key" --trusted-ca-file "$pki/ca.pem" --client-cert-auth \
        --listen-client-urls "https://127.0.0.1:${cport[$i]}" --advertise-client-urls "https://127.0.0.1:${cport[$i]}" \
        --listen-peer-urls "http://127.0.0.1:${pport[$i]}" --initial-advertise-peer-urls "http://127.0.0.1:${pport[$i]}" \
        --initial-cluster "$cluster" --initial-cluster-state new >"$dir/etcd-m$i.log" 2>&1 &
    pids+=($!)
done
echo "etcd: $endpoints (TLS, authentication on)"
for _ in $(seq 1 60); do
    ETCDCTL_API=3 etcdctl --endpoints "$endpoints" --cacert "$pki/ca.pem" --cert "$pki/client.pem" --key "$pki/client.key" \
        endpoint health >/dev/null 2>&1 && break
    sleep 0.5
done
scripts/fleet-etcd-setup.sh --endpoints "$endpoints" --cacert "$pki/ca.pem" --cert "$pki/client.pem" --key "$pki/client.key" \
    --root-password-file "$pki/root.pw" --viewer "viewer:$pki/viewer.pw" --operator "ops:$pki/ops.pw" \
    --agent "lab-a:$pki/lab-a.pw" --agent "lab-b:$pki/lab-b.pw" --agent "lab-c:$pki/lab-c.pw" >"$dir/setup.log" 2>&1 ||
    { cat "$dir/setup.log" >&2; exit 1; }
viewer=(--etcd "$endpoints" "${tls[@]}" --etcd-user viewer --etcd-password-file "$pki/viewer.pw")
operator=(--etcd "$endpoints" "${tls[@]}" --etcd-user ops --etcd-password-file "$pki/ops.pw")
for h in lab-a lab-b lab-c; do
    mkdir -p "$dir/$h/models"
    ln -s "$dir/demo.gguf" "$dir/$h/models/demo.gguf"
    "$bin" agent --etcd "$endpoints" "${tls[@]}" --etcd-user "$h" --etcd-password-file "$pki/$h.pw" \
        --host-id "$h" --data-dir "$dir/$h/agent" --heartbeat-ttl 4s --trusted-keys "$dir/trusted-keys.pem" \
        --models-dir "$dir/$h/models" --openai-port 0 --ollama-port 0 --threads 1 --ctx-size 1024 --preload demo --quiet-server \
        --log-level warn >"$dir/$h/agent.log" 2>&1 &
    pids+=($!)
    echo "agent $h: log $dir/$h/agent.log"
done
for _ in $(seq 1 120); do
    up=$("$bin" fleet status "${viewer[@]}" --json 2>/dev/null | grep -c '"state": "up"' || true)
    [ "$up" -ge 3 ] && break
    sleep 0.5
done
echo
"$bin" fleet status "${viewer[@]}"
echo
echo "Try:  $bin fleet status ${viewer[*]}"
echo "      $bin incidents list ${viewer[*]}"
echo "      $bin release sign --key $dir/release.pem ARTIFACT"
echo "      $bin fleet upgrade ${operator[*]} --to V --artifact ARTIFACT --sha256 …"
echo "Ctrl-C stops the fleet and removes $dir."
wait
