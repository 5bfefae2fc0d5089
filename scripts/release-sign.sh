#!/usr/bin/env bash
# Signs release artifacts for the fleet (docs/SECURITY.md "The fleet"): writes ARTIFACT.sig in the
# format `rustycage release sign` writes and hosts verify (src/fleet/rollout/artifact_signature.h), with
# the openssl command line only, so a release machine needs no rustycage build to sign.
#
#   scripts/release-sign.sh --key KEY.pem ARTIFACT...        sign
#   scripts/release-sign.sh --keygen KEY.pem                 make an Ed25519 key (and KEY.pem.pub)
#   scripts/release-sign.sh --verify PUB.pem ARTIFACT...     check ARTIFACT.sig as a host does
set -euo pipefail

die() { echo "[release-sign] $*" >&2; exit 1; }
command -v openssl >/dev/null || die "openssl is missing (apt-get install openssl)"

key_id() {  # first 16 hex of the SHA-256 of the public key (DER)
    openssl pkey "$@" -pubout -outform DER 2>/dev/null | sha256sum | cut -c1-16
}
statement() { printf 'rustycage-artifact 1\nsha256 %s\n' "$1"; }

case "${1:-}" in
    --keygen)
        [ $# -eq 2 ] || die "usage: $0 --keygen KEY.pem"
        [ ! -e "$2" ] || die "$2 exists: a signing key is never overwritten"
        (umask 077 && openssl genpkey -algorithm ed25519 -out "$2")
        openssl pkey -in "$2" -pubout -out "$2.pub"
        echo "signing key $2 (keep it secret), public key $2.pub (key $(key_id -in "$2"))"
        ;;
    --key)
        [ $# -ge 3 ] || die "usage: $0 --key KEY.pem ARTIFACT..."
        key=$2
        shift 2
        id=$(key_id -in "$key")
        [ -n "$id" ] || die "$key is not a private key openssl can read"
        work=$(mktemp -d)
        trap 'rm -rf "$work"' EXIT
        for a in "$@"; do
            sha=$(sha256sum "$a" | cut -d' ' -f1)
            statement "$sha" >"$work/statement"
            openssl pkeyutl -sign -inkey "$key" -rawin -in "$work/statement" -out "$work/sig" || die "openssl could not sign $a"
            printf 'rustycage-signature 1\nkey %s\nsha256 %s\ned25519 %s\n' "$id" "$sha" "$(base64 -w0 "$work/sig")" >"$a.sig"
            echo "signed $a → $a.sig (key $id)"
        done
        ;;
    --verify)
        [ $# -ge 3 ] || die "usage: $0 --verify PUB.pem ARTIFACT..."
        pub=$2
        shift 2
        work=$(mktemp -d)
        trap 'rm -rf "$work"' EXIT
        for a in "$@"; do
            sha=$(sha256sum "$a" | cut -d' ' -f1)
            [ "$(sed -n 's/^sha256 //p' "$a.sig")" = "$sha" ] || die "$a: the signature is for another artifact"
            sed -n 's/^ed25519 //p' "$a.sig" | base64 -d >"$work/sig"
            statement "$sha" >"$work/statement"
            openssl pkeyutl -verify -pubin -inkey "$pub" -rawin -in "$work/statement" -sigfile "$work/sig" >/dev/null 2>&1 ||
                die "$a: the signature does not verify with $pub"
            echo "$a: signed by key $(key_id -pubin -in "$pub")"
        done
        ;;
    *) die "usage: $0 --key KEY.pem ARTIFACT... | --keygen KEY.pem | --verify PUB.pem ARTIFACT..." ;;
esac
