#!/usr/bin/env bash
# The artifacts of the rollout tests, made from THIS build tree (a ctest fixture, once per run):
#   good.tar.gz   scripts/release-package.sh --version 0.2.0-test --dev --fast of the build
#   bad.tar.gz    the same tree as 0.2.0-bad, whose bin/rustycage is a wrapper that serves from an
#                 empty models directory: it starts and is ready, but cannot load any model, so the
#                 smoke test fails
# with good.sha256 / bad.sha256 (hex) beside them, both signed (good.tar.gz.sig, bad.tar.gz.sig) by
# release.pem, whose public key is trusted.pem (the agents' --trusted-keys); good.tar.gz.stranger.sig
# is good signed by a key no host trusts.
#
#   tests/fleet/make_rollout_artifacts.sh BUILD_DIR OUT_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
out=$2
repo=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/rc-rollout-artifacts.XXXXXX")
trap 'rm -rf "$work"' EXIT

good=$("$repo/scripts/release-package.sh" --build "$build" --flavour cpu --out "$work/dist" --version 0.2.0-test --dev --fast | tail -1)
mv "$good" "$out/good.tar.gz"

tar -xzf "$out/good.tar.gz" -C "$work"
top="$work/rustycage-0.2.0-bad-linux-x86_64-cpu"
mv "$work/rustycage-0.2.0-test-linux-x86_64-cpu" "$top"
echo 0.2.0-bad >"$top/VERSION"
mv "$top/bin/rustycage" "$top/bin/rustycage.real"
cat >"$top/bin/rustycage" <<'SH'
#!/bin/sh
# A broken build for the rollout tests: the real server, but pointed at an empty models directory.
empty=$(mktemp -d)
n=$#
prev=""
for a in "$@"; do
    if [ "$prev" = "--models-dir" ]; then set -- "$@" "$empty"; else set -- "$@" "$a"; fi
    prev=$a
done
shift "$n"
exec "$(dirname "$0")/rustycage.real" "$@"
SH
chmod 0755 "$top/bin/rustycage"
tar -C "$work" --owner=0 --group=0 -cf - "$(basename "$top")" | gzip -1 >"$out/bad.tar.gz"

for a in good bad; do sha256sum "$out/$a.tar.gz" | cut -d' ' -f1 >"$out/$a.sha256"; done
rc="$build/bin/rustycage"
"$rc" release keygen --key "$out/release.pem" --public "$out/trusted.pem" >/dev/null
"$rc" release sign --key "$out/release.pem" "$out/good.tar.gz" "$out/bad.tar.gz" >/dev/null
"$rc" release keygen --key "$work/stranger.pem" >/dev/null
cp "$out/good.tar.gz" "$work/good.tar.gz"
"$rc" release sign --key "$work/stranger.pem" "$work/good.tar.gz" >/dev/null
mv "$work/good.tar.gz.sig" "$out/good.tar.gz.stranger.sig"
echo "rollout artifacts in $out: $(du -h "$out/good.tar.gz" | cut -f1) each"
