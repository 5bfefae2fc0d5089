#!/usr/bin/env bash
# `make test-release`: the proofs on the artifacts of `make release` (dist/).
#  1. SHA256SUMS matches; every ELF of every artifact passes scripts/release-check.sh with nothing
#     above GLIBC_2.31 (bin/ and lib/ alike, every flavour).
#  2. The CPU artifact chooses its kernels at run time: each libggml-cpu-<variant>.so scores this
#     host (0 = unsupported), and `rustycage version --json` reports the features of a variant this
#     host supports, not the baseline.
#  3. In a fresh Debian bullseye root (glibc 2.31, systemd 247): install.sh --offline installs it;
#     `rustycage version`, `rustycage run` on a generated model and `rustycage serve` answering a chat
#     completion all run there; bullseye's `systemd-analyze verify` accepts the units; a second run
#     changes nothing; an upgrade keeps an edited rustycage.env; --uninstall removes it.
#  4. Each GPU artifact in dist/ (vulkan, cuda11, cuda13), unpacked in that root, which has no GPU,
#     no Vulkan loader and no NVIDIA driver: `rustycage version` runs and `rustycage serve` answers a
#     chat completion on the CPU backend it ships (the GPU backend fails to load and is skipped),
#     which is built for AVX2. A CUDA artifact's libggml-cuda.so carries exactly the code and PTX
#     its BUILDINFO's architectures name (fatbin_archs.py); cuda11's includes sm_61 and sm_86. Where this host has Mesa's
#     lavapipe, the vulkan artifact runs a model on it, every layer offloaded to the Vulkan device.
#
#   tests/release/test_release.sh [DIST]     (root; DIST defaults to dist/)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
dist=$(cd "${1:-$repo/dist}" && pwd)
[ "$(id -u)" -eq 0 ] || fail "needs root (chroot)"
version=$(head -1 "$repo/VERSION")
cpu="$dist/rustycage-$version-linux-x86_64-cpu.tar.gz"
# The CPU artifact's proofs (2, 3) need it; `make test-release` always builds it. A dist/ of GPU
# flavours alone (`make release FLAVOURS=cuda11`) gets 1 and 4.
[ -f "$cpu" ] || echo "SKIP: no cpu artifact in $dist: proofs 2 and 3 are not run"
t0=$(date +%s)

# --- 1. sums and ELF checks
(cd "$dist" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not match dist/"
for tarball in "$dist"/rustycage-"$version"-linux-x86_64-*.tar.gz; do
    flavour=$(basename "$tarball" .tar.gz); flavour=${flavour##*-}
    report=$("$repo/scripts/release-check.sh" --max-glibc 2.31 "$tarball") || { echo "$report"; fail "$flavour artifact fails the ELF checks"; }
    ok "$flavour: $(echo "$report" | tail -1) ($(du -h "$tarball" | cut -f1))"
    echo "$report" | grep -v '^0\.0 ' | sed 's/^/    /'
done

work=$(mktemp -d "${TMPDIR:-/tmp}/rc-release-test.XXXXXX")
rt="$work/bullseye"
cleanup() {
    if findmnt -rn -o TARGET | grep -q "^$rt/"; then echo "mounts left under $rt; not removing $work" >&2; return; fi
    rm -rf "$work"
}
trap cleanup EXIT

# The bullseye root every proof below runs in.
"$repo/scripts/release-chroot.sh" runtime-root "$rt" >/dev/null
in_root() { "$repo/scripts/release-chroot.sh" exec "$rt" -- "$@"; }
# systemd-analyze verify starts a manager, which needs to find its cgroup under /sys/fs/cgroup.
verify_in_root() { "$repo/scripts/release-chroot.sh" exec "$rt" --bind /sys/fs/cgroup:/sys/fs/cgroup:ro -- systemd-analyze verify --man=no "$@"; }
glibc=$(in_root getconf GNU_LIBC_VERSION)
ok "bullseye root: $glibc, $(in_root systemctl --version | head -1)"

cpu_proofs() {
    # --- 2. run-time kernel choice
    mkdir -p "$work/cpu"
    tar -xzf "$cpu" -C "$work/cpu"
    tree=$(ls -d "$work"/cpu/*)
    variants=$(ls "$tree/lib" | grep -c '^libggml-cpu-.*\.so$' || true)
    [ "$variants" -ge 10 ] || fail "expected every x86 CPU variant in lib/, found $variants"
    scores=$(python3 - "$tree/lib" <<'PY'
import ctypes, glob, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "libggml-cpu-*.so"))):
    lib = ctypes.CDLL(path)
    lib.ggml_backend_score.restype = ctypes.c_int
    print(os.path.basename(path)[len("libggml-cpu-"):-3], lib.ggml_backend_score())
PY
    )
    echo "$scores" | sed 's/^/    score /'
    echo "$scores" | awk '$2 == 0' | grep -q . || ok "(this host supports every variant)"
    best=$(echo "$scores" | sort -k2 -n | tail -1 | cut -d' ' -f1)
    [ "$best" != x64 ] || fail "only the baseline variant scores on this host"
    "$tree/bin/rustycage" version --json >"$work/version.json"
    if grep -qw avx2 /proc/cpuinfo; then
        python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); f=[b for b in j["backends"] if b["name"]=="CPU"][0]["features"]; sys.exit(0 if f.get("AVX2")=="1" else "loaded CPU backend lacks AVX2: %s" % f)' "$work/version.json" \
            || fail "rustycage did not pick an AVX2 variant on an AVX2 host"
    fi
    if ! grep -qw avx512f /proc/cpuinfo; then
        python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); f=[b for b in j["backends"] if b["name"]=="CPU"][0]["features"]; sys.exit("AVX512 variant loaded on a host without AVX-512" if f.get("AVX512")=="1" else 0)' "$work/version.json" || fail "wrong variant"
    fi
    ok "run-time CPU variant: best here is $best; rustycage loaded $(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(" ".join(k for k,v in [b for b in j["backends"] if b["name"]=="CPU"][0]["features"].items() if v=="1"))' "$work/version.json")"

    # --- 3. install, run, serve, upgrade, uninstall in the bullseye root
    mkdir -p "$rt/tmp/dist"
    cp "$cpu" "$dist/SHA256SUMS" "$dist/install.sh" "$rt/tmp/dist/"
    name=$(basename "$cpu")

    out=$(in_root bash /tmp/dist/install.sh --offline "/tmp/dist/$name" --yes --models none 2>&1) || fail "install in bullseye failed: $out"
    expect_out "installed rustycage $version (cpu)" "$out"
    expect_out "systemd is not running here" "$out"
    expect_link "$rt/opt/rustycage/current" "$version"
    in_root getent passwd rustycage >/dev/null || fail "no rustycage user in the bullseye root"
    ok "install.sh in bullseye"

    in_root /usr/local/bin/rustycage version >"$work/bullseye-version.txt" || fail "rustycage version failed in bullseye: $(cat "$work/bullseye-version.txt")"
    expect_grep "^rustycage $version " "$work/bullseye-version.txt"
    sed 's/^/    /' "$work/bullseye-version.txt"
    # The generator takes its tokenizer and chat template from the pinned llama.cpp tree (bound in).
    "$repo/scripts/release-chroot.sh" exec "$rt" --bind "$("$repo/scripts/llama.sh" src):/llama-src:ro" -- \
        runuser -u rustycage -- /usr/local/bin/rustycage-mkmodel --preset tiny-chat --type q8_0 --llama-src /llama-src \
        --out /var/lib/rustycage/models/demo.gguf >/dev/null || fail "rustycage-mkmodel failed in bullseye"
    run_out=$(in_root runuser -u rustycage -- /usr/local/bin/rustycage run demo "Hello" -n 8 --seed 1 --threads 2 --ctx-size 512 \
              --models-dir /var/lib/rustycage/models 2>"$work/run.err") || fail "rustycage run failed in bullseye: $(tail -20 "$work/run.err")"
    [ -n "$run_out" ] || fail "rustycage run printed nothing: $(tail -5 "$work/run.err")"
    ok "rustycage run on a generated model in bullseye ($(echo "$run_out" | wc -c) bytes of output)"

    # serve as the unit would: the rustycage user, the env file's settings (ports overridden to 0).
    answer=$(serve_and_ask demo "$work/serve.log" "$repo/scripts/release-chroot.sh" exec "$rt" -- \
        runuser -u rustycage -- sh -c 'set -a; . /etc/rustycage/rustycage.env; set +a; exec /opt/rustycage/current/bin/rustycage serve "$@"' serve)
    expect_out '"object":"chat.completion"' "$answer"
    ok "rustycage serve in bullseye answers a chat completion"

    for unit in rustycage.service; do
        v=$(verify_in_root "/etc/systemd/system/$unit" 2>&1) || fail "bullseye systemd-analyze verify $unit: $v"
        [ -z "$v" ] || fail "bullseye systemd-analyze verify $unit warns: $v"
    done
    ok "systemd 247 verifies rustycage.service"

    watched=("$rt/opt" "$rt/etc/rustycage" "$rt/etc/systemd/system" "$rt/usr/local/bin" "$rt/var/lib/rustycage" "$rt/etc/passwd" "$rt/etc/group")
    rm -f "$rt/var/lib/rustycage/models/demo.gguf"
    fingerprint_list "${watched[@]}" >"$work/before"
    out=$(in_root bash /tmp/dist/install.sh --offline "/tmp/dist/$name" --yes --models none 2>&1) || fail "second install failed: $out"
    expect_out "nothing changed" "$out"
    expect_unchanged "$work/before" "${watched[@]}"
    ok "second run in bullseye: a no-op"

    env="$rt/etc/rustycage/rustycage.env"
    echo "RUSTYCAGE_LOG_LEVEL=debug" >>"$env"
    env_sum=$(sha256sum <"$env")
    next=$(repack_as_version "$cpu" 9.9.9 "$rt/tmp/dist2")
    out=$(in_root bash /tmp/dist/install.sh --offline "/tmp/dist2/$(basename "$next")" --yes --models none 2>&1) || fail "upgrade failed: $out"
    expect_out "current -> 9.9.9" "$out"
    [ "$(sha256sum <"$env")" = "$env_sum" ] || fail "the upgrade changed rustycage.env"
    out=$(in_root bash /tmp/dist/install.sh --fleet --etcd http://127.0.0.1:2379 --offline "/tmp/dist2/$(basename "$next")" --yes --models none 2>&1) || fail "fleet install failed: $out"
    v=$(verify_in_root /etc/systemd/system/rustycage-agent.service 2>&1) || fail "bullseye systemd-analyze verify agent: $v"
    [ -z "$v" ] || fail "bullseye systemd-analyze verify rustycage-agent.service warns: $v"
    ok "upgrade in bullseye keeps rustycage.env; the agent unit verifies under systemd 247"

    out=$(in_root bash /tmp/dist/install.sh --uninstall 2>&1) || fail "uninstall failed: $out"
    [ ! -e "$rt/opt/rustycage" ] && [ ! -e "$rt/usr/local/bin/rustycage" ] && [ ! -e "$rt/etc/systemd/system/rustycage.service" ] \
        || fail "uninstall left files: $out"
    [ -d "$rt/var/lib/rustycage/models" ] || fail "uninstall removed the models"
    ok "--uninstall in bullseye"
}
[ ! -f "$cpu" ] || cpu_proofs

# --- 4. GPU artifacts on the CPU fallback, in the same root (no GPU, no loader, no driver)
mkdir -p "$rt/tmp/models"
for tarball in "$dist"/rustycage-"$version"-linux-x86_64-*.tar.gz; do
    flavour=$(basename "$tarball" .tar.gz); flavour=${flavour##*-}
    [ "$flavour" != cpu ] || continue
    dir="$rt/tmp/gpu-$flavour"
    mkdir -p "$dir"
    tar -xzf "$tarball" -C "$dir" --strip-components=1
    [ -f "$rt/tmp/models/demo.gguf" ] || "$repo/scripts/release-chroot.sh" exec "$rt" --bind "$("$repo/scripts/llama.sh" src):/llama-src:ro" -- \
        "/tmp/gpu-$flavour/bin/rustycage-mkmodel" --preset tiny-chat --type q8_0 --llama-src /llama-src --out /tmp/models/demo.gguf >/dev/null \
        || fail "$flavour: rustycage-mkmodel failed in bullseye"
    in_root "/tmp/gpu-$flavour/bin/rustycage" version >"$work/$flavour-version.txt" 2>&1 \
        || fail "$flavour: rustycage version failed in bullseye: $(tail -5 "$work/$flavour-version.txt")"
    expect_grep "^rustycage $version " "$work/$flavour-version.txt"
    # The one CPU backend a GPU artifact ships is built for AVX2 (docs/INSTALL.md): the fallback, and
    # the layers a partial offload leaves on the CPU, run on it.
    if grep -qw avx2 /proc/cpuinfo; then
        grep -q '^features:.*CPU:.* AVX2 ' "$work/$flavour-version.txt" \
            || fail "$flavour: its CPU backend lacks AVX2: $(grep features "$work/$flavour-version.txt")"
    fi
    grep -q "flavour=$flavour" "$dir/share/rustycage/BUILDINFO" || fail "$flavour: BUILDINFO names another flavour"
    answer=$(serve_and_ask demo "$work/$flavour-serve.log" "$repo/scripts/release-chroot.sh" exec "$rt" -- \
        "/tmp/gpu-$flavour/bin/rustycage" serve --models-dir /tmp/models)
    expect_out '"object":"chat.completion"' "$answer"
    ok "$flavour artifact in bullseye without a GPU: version runs, serve answers on the CPU backend"
    # The Vulkan backend on a Vulkan device: Mesa's lavapipe on this host, when it is installed
    # (scripts/setup.sh vulkan); the artifact runs here as it would on any host of glibc >= 2.31.
    lvp=$(ls /usr/share/vulkan/icd.d/lvp_icd*.json 2>/dev/null | head -1 || true)
    if [ "$flavour" = vulkan ] && [ -n "$lvp" ]; then
        VK_ICD_FILENAMES=$lvp GGML_VK_VISIBLE_DEVICES=0 LP_NUM_THREADS=2 RUSTYCAGE_LOG_LEVEL=debug \
            "$dir/bin/rustycage" run "$rt/tmp/models/demo.gguf" "hello" -n 4 --ctx-size 512 >"$work/vulkan-run.out" 2>"$work/vulkan-run.log" \
            || fail "vulkan: rustycage run on lavapipe failed: $(tail -5 "$work/vulkan-run.log")"
        layers=$(grep -o 'offloaded [0-9]*/[0-9]* layers to GPU' "$work/vulkan-run.log" | head -1)
        [ -n "$layers" ] && [ "$(echo "$layers" | awk '{split($2, a, "/"); print (a[1] == a[2] && a[1] > 0)}')" = 1 ] \
            || fail "vulkan: the model was not offloaded to the Vulkan device: ${layers:-no offload line}"
        [ -s "$work/vulkan-run.out" ] || fail "vulkan: rustycage run on lavapipe generated nothing"
        ok "vulkan artifact on lavapipe: $layers, generates"
    elif [ "$flavour" = vulkan ]; then
        echo "SKIP: no lavapipe on this host (scripts/setup.sh vulkan): the vulkan artifact's device path is not run"
    fi
    # The GPU code libggml-cuda.so carries is what BUILDINFO says it was built for (fatbin_archs.py
    # reads the fatbin: no cuobjdump here reads CUDA 13's); cuda11's includes sm_61 and sm_86.
    if [ "${flavour#cuda}" != "$flavour" ]; then
        archs=$(sed -n 's/^cuda_architectures=//p' "$dir/share/rustycage/BUILDINFO")
        [ -n "$archs" ] || fail "$flavour: BUILDINFO names no cuda_architectures"
        code=$("$here/fatbin_archs.py" "$dir/lib/libggml-cuda.so" "$archs") || fail "$flavour libggml-cuda.so: $code"
        if [ "$flavour" = cuda11 ]; then
            case "$code" in "elf: "*sm_61*sm_86*"  ptx:"*) ;; *) fail "cuda11: libggml-cuda.so lacks sm_61 or sm_86 code: $code" ;; esac
        fi
        ok "$flavour libggml-cuda.so carries what it was built for ($archs): $code"
    fi
done
echo "PASS: release artifacts ($(( $(date +%s) - t0 ))s)"
