#pragma once
// Signed release artifacts (Ed25519, OpenSSL): what lets a host run a build because the lab's release
// key signed it, never because a rollout record carried a hash. docs/SECURITY.md "The fleet".
//
// A signature is a small text file beside the artifact (`<artifact>.sig`):
//
//   rustycage-signature 1
//   key <key id>             first 16 hex digits of the SHA-256 of the public key (DER)
//   sha256 <hex>             the artifact's SHA-256
//   ed25519 <base64>         the signature of "rustycage-artifact 1\nsha256 <hex>\n"
//
// The statement signed names the artifact's SHA-256, so the signature covers every byte of it (the
// tarball's VERSION, checked at unpack, binds the version).
//
// Keys are PEM: a private key (PKCS#8, `openssl genpkey -algorithm ed25519` makes the same) and a
// trusted-keys file of one or more public keys ("-----BEGIN PUBLIC KEY-----" blocks).
//
// Contract: verify_artifact checks the hash the host computed itself against a key of its own file;
// nothing in the signature file or a rollout record chooses the key. Errors:
// * invalid_argument: a key or signature file that cannot be read or parsed (which, and why);
// * permission_denied: signed by a key that is not trusted, a signature that does not verify, or a
//   signature for another artifact.
#include <filesystem>
#include <string>
#include <vector>

#include "util/result.h"

namespace rc::fleet {

struct key_pair_pem {
    std::string private_pem, public_pem;
};
result<key_pair_pem> generate_signing_key();

// The .sig text for an artifact with this SHA-256 (lower-case hex), signed with a private key PEM file.
result<std::string> sign_artifact(const std::filesystem::path & private_key, const std::string & sha256);

struct trusted_key {
    std::string id;   // 16 hex digits
    std::string der;  // SubjectPublicKeyInfo
};
// Every public key of a PEM file (at least one).
result<std::vector<trusted_key>> load_trusted_keys(const std::filesystem::path & pem_file);
result<std::string> public_key_id(const std::string & public_pem);

// Verifies `signature_text` for the artifact whose SHA-256 the host computed (`sha256`). Returns the
// id of the key that signed it.
result<std::string> verify_artifact(const std::vector<trusted_key> & keys, const std::string & sha256, const std::string & signature_text);

}  // namespace rc::fleet
