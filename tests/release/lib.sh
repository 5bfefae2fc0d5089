# Shared by the release shell tests (sourced). Assertions, a tree fingerprint, serving a model.

fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
expect_file() { [ -f "$1" ] || fail "missing file $1"; }
expect_no() { [ ! -e "$1" ] && [ ! -L "$1" ] || fail "$1 should not exist"; }
expect_link() { [ "$(readlink "$1" 2>/dev/null)" = "$2" ] || fail "$1 -> '$(readlink "$1" 2>/dev/null)', expected -> $2"; }
expect_grep() { grep -qE -- "$1" "$2" || fail "'$1' not in $2: $(head -c 2000 "$2")"; }
expect_out() { case "$2" in *"$1"*) ;; *) fail "'$1' not in output: $2" ;; esac; }

# Every path with its type, mode, size, mtime and link target: equal fingerprints mean nothing changed.
fingerprint_list() {  # dirs...
    local d
    for d in "$@"; do [ -e "$d" ] && find "$d" -printf "%p %y %m %s %T@ %l\n"; done | sort
}
fingerprint() { fingerprint_list "$@" | sha256sum | cut -d' ' -f1; }
# Fails naming what differs between a fingerprint_list taken before (file $1) and the tree now.
expect_unchanged() {  # before-list file, dirs...
    local before=$1; shift
    local diff
    diff=$(diff "$before" <(fingerprint_list "$@") || true)
    [ -z "$diff" ] || fail "the tree changed: $diff"
}

# A tiny release tree → tarball with SHA256SUMS: repacks an artifact under another version (an
# "upgrade" for installer tests; the binaries are the same, the installer only reads VERSION).
repack_as_version() {  # tarball, new version, out dir
    local src=$1 v=$2 out=$3 t name
    t=$(mktemp -d)
    tar -xzf "$src" -C "$t"
    name=$(ls "$t")
    local new=${name/-[0-9]*.[0-9]*.[0-9]*-linux/-$v-linux}
    mv "$t/$name" "$t/$new"
    echo "$v" >"$t/$new/VERSION"
    sed -i "s/^version=.*/version=$v/" "$t/$new/share/rustycage/BUILDINFO"
    mkdir -p "$out"
    tar -C "$t" -czf "$out/$new.tar.gz" "$new"
    rm -rf "$t"
    (cd "$out" && sha256sum ./*.tar.gz | sed 's| \./| |' >SHA256SUMS)
    echo "$out/$new.tar.gz"
}

# Starts `rustycage serve` (a command prefix given as args) on free ports, waits for its
# "listening" line, asks the OpenAI API for a completion of MODEL, stops it. Prints the answer.
serve_and_ask() {  # model, log file, command...
    local model=$1 log=$2; shift 2
    # Its own process group (setsid), so stopping it stops what it started: a server run through
    # release-chroot.sh exec is the grandchild of unshare and outlived a kill of the script alone.
    setsid "$@" --openai-port 0 --ollama-port 0 --threads 1 --ctx-size 512 --parallel 1 >"$log" 2>&1 &
    local pid=$! port=""
    for _ in $(seq 1 600); do
        port=$(sed -n 's/.*listening openai=http:\/\/[^:]*:\([0-9]*\).*/\1/p' "$log" | head -1)
        [ -n "$port" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$port" ]; then kill -- "-$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fail "serve did not start: $(tail -20 "$log")"; fi
    local answer
    answer=$(curl -sS --max-time 120 "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' \
        -d "{\"model\":\"$model\",\"messages\":[{\"role\":\"user\",\"content\":\"Hello\"}],\"max_tokens\":4}") || answer="curl failed"
    kill -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    echo "$answer"
}
