#!/usr/bin/env bash
# scripts/install.sh into a temporary root (--root) on this machine, from a tarball of this build
# (scripts/release-package.sh --dev): layout, user, hardened units that `systemd-analyze verify`
# accepts, a generated model served by the installed binary, a second run that changes nothing, an
# upgrade that keeps an edited rustycage.env, a fleet install (agent unit), signatures checked with
# --trusted-keys (an untrusted one refused), a tampered tarball refused, --uninstall keeping the models and --purge removing them.
#
#   tests/release/test_installer.sh --build BUILD_DIR
# Exit 77 (skip) when not root or a tool is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

build=""
while [ $# -gt 0 ]; do case "$1" in --build) build=$2; shift 2 ;; *) echo "usage: $0 --build DIR" >&2; exit 2 ;; esac; done
[ -n "$build" ] || { echo "usage: $0 --build DIR" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "skip: the installer test needs root (useradd --root, chown)"; exit 77; }
for tool in useradd systemctl systemd-analyze curl readelf; do
    command -v "$tool" >/dev/null || { echo "skip: $tool missing"; exit 77; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/rc-installer.XXXXXX")
trap 'rm -rf "$work"' EXIT
version=$(head -1 "$repo/VERSION")

# The artifact: this build packed as a release (dev-marked, fast compression).
tarball=$("$repo/scripts/release-package.sh" --build "$build" --flavour cpu --out "$work/dist" --dev --fast)
(cd "$work/dist" && sha256sum "$(basename "$tarball")" >SHA256SUMS)
ok "packed $(basename "$tarball") ($(du -h "$tarball" | cut -f1))"

# A target root with the files useradd --root needs (a bare system's /etc).
root="$work/root"
mkdir -p "$root/etc" "$root/usr/sbin"
printf 'root:x:0:0:root:/root:/bin/bash\n' >"$root/etc/passwd"
printf 'root:x:0:\nvideo:x:44:\nrender:x:105:\n' >"$root/etc/group"
printf 'root:*:19000:0:99999:7:::\n' >"$root/etc/shadow"
printf 'root:*::\nvideo:*::\nrender:*::\n' >"$root/etc/gshadow"
chmod 0640 "$root/etc/shadow" "$root/etc/gshadow"
printf 'rustycage-test\n' >"$root/etc/hostname"

install() { bash "$repo/scripts/install.sh" --root "$root" --yes --models none "$@"; }

# --- first install
out=$(install --offline "$tarball" 2>&1) || fail "install failed: $out"
expect_out "installed rustycage $version (cpu)" "$out"
opt="$root/opt/rustycage"
expect_file "$opt/$version/bin/rustycage"
expect_link "$opt/current" "$version"
expect_link "$root/usr/local/bin/rustycage" /opt/rustycage/current/bin/rustycage
expect_link "$root/usr/local/bin/rustycage-mkmodel" /opt/rustycage/current/bin/rustycage-mkmodel
grep -q '^rustycage:x:[0-9]*:[0-9]*:.*:/var/lib/rustycage:/usr/sbin/nologin$' "$root/etc/passwd" || fail "no rustycage system user: $(cat "$root/etc/passwd")"
grep -q '^video:.*rustycage' "$root/etc/group" || fail "rustycage is not in the video group"
uid=$(awk -F: '$1 == "rustycage" {print $3}' "$root/etc/passwd")
[ "$(stat -c %u "$root/var/lib/rustycage/models")" = "$uid" ] || fail "models dir not owned by rustycage"
[ "$(stat -c %a "$root/var/lib/rustycage")" = 750 ] || fail "data dir mode $(stat -c %a "$root/var/lib/rustycage")"
env="$root/etc/rustycage/rustycage.env"
expect_grep '^RUSTYCAGE_MODELS_DIR=/var/lib/rustycage/models$' "$env"
[ "$(stat -c %a "$env")" = 640 ] || fail "rustycage.env mode $(stat -c %a "$env") (it may hold API keys)"
unit="$root/etc/systemd/system/rustycage.service"
expect_grep '^ReadWritePaths=/var/lib/rustycage$' "$unit"
for key in NoNewPrivileges=yes ProtectSystem=strict Restart=on-failure EnvironmentFile=/etc/rustycage/rustycage.env User=rustycage; do
    expect_grep "^$key\$" "$unit"
done
expect_link "$root/etc/systemd/system/multi-user.target.wants/rustycage.service" /etc/systemd/system/rustycage.service
expect_no "$root/etc/systemd/system/rustycage-agent.service"
ok "first install: layout, user, env file, unit enabled"

# The installed binary runs from its new home and reports this tree's version.
"$opt/current/bin/rustycage" version --json >"$work/version.json" || fail "installed rustycage version failed"
grep -q "\"version\": \"$version\"" "$work/version.json" || fail "version: $(cat "$work/version.json")"

# systemd accepts the unit as installed: verified with this host's systemd, its /opt paths pointed
# into the root (so ExecStart must exist there). Any line it prints is a finding: it warns about
# unknown keys and bad values but still exits 0.
verify_unit() {  # unit
    local dir="$work/verify" log="$work/verify-$1.log"
    mkdir -p "$dir"
    sed "s|/opt/rustycage/|$root/opt/rustycage/|g" "$root/etc/systemd/system/$1" >"$dir/$1"
    if ! systemd-analyze verify --man=no "$dir/$1" >"$log" 2>&1; then fail "systemd-analyze verify $1: $(cat "$log")"; fi
    [ ! -s "$log" ] || fail "systemd-analyze verify $1 warns: $(cat "$log")"
}
verify_unit rustycage.service
ok "systemd-analyze verify rustycage.service"

# A generated model, served by the installed binary with the installed env file's settings.
"$opt/current/bin/rustycage-mkmodel" --preset tiny-chat --type q8_0 --out "$root/var/lib/rustycage/models/demo.gguf" >/dev/null
answer=$(set -a; . "$env"; set +a
         RUSTYCAGE_MODELS_DIR="$root/var/lib/rustycage/models" RUSTYCAGE_KV_DISK_DIR="$root/var/lib/rustycage/kv" \
         serve_and_ask demo "$work/serve.log" "$opt/current/bin/rustycage" serve)
expect_out '"object":"chat.completion"' "$answer"
rm -f "$root/var/lib/rustycage/models/demo.gguf"
ok "the installed binary serves a generated model"

# --- a second run changes nothing
fingerprint_list "$root" >"$work/before"
out=$(install --offline "$tarball" 2>&1) || fail "second install failed: $out"
expect_out "nothing changed" "$out"
expect_unchanged "$work/before" "$root"
ok "second run: a no-op"

# --- upgrade: the operator's env file survives byte for byte; the old version stays for rollback
echo "RUSTYCAGE_API_KEYS=operator-secret" >>"$env"
sed -i 's/^RUSTYCAGE_OPENAI_PORT=.*/RUSTYCAGE_OPENAI_PORT=18080/' "$env"
env_sum=$(sha256sum <"$env")
next=$(repack_as_version "$tarball" 9.9.9 "$work/dist2")
# Staged first (a rollout's first step): the version is there, nothing else moved.
out=$(install --offline "$next" --stage 2>&1) || fail "stage failed: $out"
expect_file "$opt/9.9.9/bin/rustycage"
expect_link "$opt/current" "$version"
out=$(install --offline "$next" 2>&1) || fail "upgrade failed: $out"
expect_out "current -> 9.9.9 (was $version)" "$out"
expect_out "kept /etc/rustycage/rustycage.env" "$out"
[ "$(sha256sum <"$env")" = "$env_sum" ] || fail "the upgrade changed rustycage.env"
expect_file "$root/etc/rustycage/rustycage.env.dist"
expect_link "$opt/current" 9.9.9
expect_file "$opt/$version/bin/rustycage"
case "$out" in *operator-secret*) fail "the installer printed a setting's value" ;; esac
ok "upgrade keeps the edited rustycage.env and the previous version"

# --- fleet: the agent unit, enabled in place of the server's; fleet keys appended to the env file
out=$(install --offline "$next" --fleet --etcd http://127.0.0.1:2379 --host-id lab-7 2>&1) || fail "fleet install failed: $out"
agent="$root/etc/systemd/system/rustycage-agent.service"
expect_grep '^ExecStart=/opt/rustycage/current/bin/rustycage agent --etcd \$\{RUSTYCAGE_ETCD\} --host-id \$\{RUSTYCAGE_HOST_ID\} --data-dir /var/lib/rustycage$' "$agent"
expect_grep '^EnvironmentFile=/etc/rustycage/rustycage.env$' "$agent"
expect_grep '^RUSTYCAGE_ETCD=http://127.0.0.1:2379$' "$env"
expect_grep '^RUSTYCAGE_HOST_ID=lab-7$' "$env"
expect_grep '^RUSTYCAGE_API_KEYS=operator-secret$' "$env"
expect_link "$root/etc/systemd/system/multi-user.target.wants/rustycage-agent.service" /etc/systemd/system/rustycage-agent.service
expect_no "$root/etc/systemd/system/multi-user.target.wants/rustycage.service"
verify_unit rustycage-agent.service
out=$(install --offline "$next" --fleet --etcd http://10.0.0.1:2379 2>&1) || fail "fleet rerun failed: $out"
expect_out "kept RUSTYCAGE_ETCD=http://127.0.0.1:2379" "$out"
ok "fleet install: agent unit verified and enabled, env keys added once"

# --- signed: --trusted-keys checks the artifact's .sig and installs the keys the agent verifies rollouts with
"$repo/scripts/release-sign.sh" --keygen "$work/lab.pem" >/dev/null
"$repo/scripts/release-sign.sh" --keygen "$work/other.pem" >/dev/null
"$repo/scripts/release-sign.sh" --key "$work/other.pem" "$next" >/dev/null
fingerprint_list "$root" >"$work/before"
if out=$(install --offline "$next" --trusted-keys "$work/lab.pem.pub" 2>&1); then fail "an artifact signed by an untrusted key was installed: $out"; fi
expect_out "is not signed by a trusted key" "$out"
expect_unchanged "$work/before" "$root"
"$repo/scripts/release-sign.sh" --key "$work/lab.pem" "$next" >/dev/null
out=$(install --offline "$next" --fleet --etcd http://127.0.0.1:2379 --trusted-keys "$work/lab.pem.pub" 2>&1) || fail "a signed install failed: $out"
expect_out "signature of $(basename "$next") verified" "$out"
cmp -s "$work/lab.pem.pub" "$root/etc/rustycage/trusted-keys.pem" || fail "trusted-keys.pem was not installed"
rm "$next.sig"
ok "a signature by an untrusted key refused; the lab's key installed for the agent"

# --- a tampered artifact is refused and changes nothing
bad="$work/dist3/$(basename "$next")"
mkdir -p "$work/dist3"
cp "$next" "$bad"
cp "$work/dist2/SHA256SUMS" "$work/dist3/SHA256SUMS"
printf 'x' | dd of="$bad" bs=1 seek=1000 conv=notrunc status=none
fingerprint_list "$root" >"$work/before"
if out=$(install --offline "$bad" 2>&1); then fail "a tampered tarball was installed: $out"; fi
expect_out "does not match SHA256SUMS" "$out"
expect_unchanged "$work/before" "$root"
rm "$work/dist3/SHA256SUMS"
if out=$(install --offline "$bad" 2>&1); then fail "an unverifiable tarball was installed"; fi
expect_out "refusing an unverified artifact" "$out"
ok "tampered and unverifiable artifacts refused"

# --- uninstall keeps models and settings; purge removes them and the user
touch "$root/var/lib/rustycage/models/keep.gguf"
out=$(bash "$repo/scripts/install.sh" --root "$root" --uninstall 2>&1) || fail "uninstall failed: $out"
expect_no "$opt"
expect_no "$root/usr/local/bin/rustycage"
expect_no "$unit"
expect_no "$agent"
expect_no "$root/etc/systemd/system/multi-user.target.wants/rustycage-agent.service"
expect_file "$root/var/lib/rustycage/models/keep.gguf"
expect_file "$env"
out=$(bash "$repo/scripts/install.sh" --root "$root" --uninstall 2>&1) || fail "second uninstall failed: $out"
expect_out "nothing to remove" "$out"
out=$(bash "$repo/scripts/install.sh" --root "$root" --uninstall --purge 2>&1) || fail "purge failed: $out"
expect_no "$root/var/lib/rustycage"
expect_no "$root/etc/rustycage"
grep -q '^rustycage:' "$root/etc/passwd" && fail "purge left the rustycage user"
ok "uninstall keeps models and settings; purge removes everything"
echo "PASS: installer in a temporary root"
