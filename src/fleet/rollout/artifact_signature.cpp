#include "fleet/rollout/artifact_signature.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <openssl/x509.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "fleet/etcd/etcd_gateway.h"  // the base64 codec

namespace rc::fleet {

namespace {

using pkey_ptr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using bio_ptr = std::unique_ptr<BIO, decltype(&BIO_free)>;
using md_ctx_ptr = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

std::string statement(const std::string & sha256) { return "rustycage-artifact 1\nsha256 " + sha256 + "\n"; }

std::string hex(const unsigned char * p, size_t n) {
    static const char * d = "0123456789abcdef";
    std::string out;
    for (size_t i = 0; i < n; ++i) {
        out += d[p[i] >> 4];
        out += d[p[i] & 15];
    }
    return out;
}

std::string der_of(EVP_PKEY * k) {
    unsigned char * buf = nullptr;
    const int n = i2d_PUBKEY(k, &buf);
    if (n <= 0) return {};
    std::string der(reinterpret_cast<char *>(buf), size_t(n));
    OPENSSL_free(buf);
    return der;
}

std::string id_of_der(const std::string & der) {
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char *>(der.data()), der.size(), md);
    return hex(md, 8);
}

std::string pem_of(EVP_PKEY * k, bool private_key) {
    bio_ptr bio(BIO_new(BIO_s_mem()), BIO_free);
    const int ok = private_key ? PEM_write_bio_PrivateKey(bio.get(), k, nullptr, nullptr, 0, nullptr, nullptr) : PEM_write_bio_PUBKEY(bio.get(), k);
    if (ok != 1) return {};
    char * data = nullptr;
    const long n = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, size_t(n));
}

result<std::string> read_small_file(const std::filesystem::path & p, const char * what) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return make_error(errc::invalid_argument, std::string(what) + " " + p.string() + " cannot be read");
    std::ostringstream ss;
    ss << in.rdbuf();
    if (ss.str().size() > (1u << 20)) return make_error(errc::invalid_argument, std::string(what) + " " + p.string() + " is larger than 1 MiB");
    return ss.str();
}

// OpenSSL 1.1.1 (the bullseye build root of release artifacts) and 3.x both have these calls.
bool is_ed25519(EVP_PKEY * k) { return k && EVP_PKEY_id(k) == EVP_PKEY_ED25519; }

}  // namespace

result<key_pair_pem> generate_signing_key() {
    std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr), EVP_PKEY_CTX_free);
    EVP_PKEY * raw = nullptr;
    if (ctx && EVP_PKEY_keygen_init(ctx.get()) == 1) EVP_PKEY_keygen(ctx.get(), &raw);
    pkey_ptr k(raw, EVP_PKEY_free);
    if (!k) return make_error(errc::internal, "OpenSSL could not generate an Ed25519 key");
    key_pair_pem out{pem_of(k.get(), true), pem_of(k.get(), false)};
    if (out.private_pem.empty() || out.public_pem.empty()) return make_error(errc::internal, "OpenSSL could not write the key as PEM");
    return out;
}

result<std::string> public_key_id(const std::string & public_pem) {
    bio_ptr bio(BIO_new_mem_buf(public_pem.data(), int(public_pem.size())), BIO_free);
    pkey_ptr k(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
    if (!is_ed25519(k.get())) return make_error(errc::invalid_argument, "not an Ed25519 public key (PEM)");
    return id_of_der(der_of(k.get()));
}

result<std::string> sign_artifact(const std::filesystem::path & private_key, const std::string & sha256) {
    auto pem = read_small_file(private_key, "the signing key");
    if (!pem.ok()) return pem.err();
    bio_ptr bio(BIO_new_mem_buf(pem->data(), int(pem->size())), BIO_free);
    pkey_ptr k(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
    if (!is_ed25519(k.get()))
        return make_error(errc::invalid_argument, "the signing key " + private_key.string() + " is not an Ed25519 private key (PEM)");
    const std::string msg = statement(sha256);
    md_ctx_ptr ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    unsigned char sig[64];
    size_t len = sizeof sig;
    if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, k.get()) != 1 ||
        EVP_DigestSign(ctx.get(), sig, &len, reinterpret_cast<const unsigned char *>(msg.data()), msg.size()) != 1)
        return make_error(errc::internal, "OpenSSL could not sign");
    return "rustycage-signature 1\nkey " + id_of_der(der_of(k.get())) + "\nsha256 " + sha256 + "\ned25519 " +
           etcd_base64_encode(std::string(reinterpret_cast<char *>(sig), len)) + "\n";
}

result<std::vector<trusted_key>> load_trusted_keys(const std::filesystem::path & pem_file) {
    auto pem = read_small_file(pem_file, "the trusted keys file");
    if (!pem.ok()) return pem.err();
    bio_ptr bio(BIO_new_mem_buf(pem->data(), int(pem->size())), BIO_free);
    std::vector<trusted_key> out;
    for (;;) {
        pkey_ptr k(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
        if (!k) break;
        if (!is_ed25519(k.get())) return make_error(errc::invalid_argument, "the trusted keys file " + pem_file.string() + " holds a key that is not Ed25519");
        const std::string der = der_of(k.get());
        out.push_back({id_of_der(der), der});
    }
    if (out.empty()) return make_error(errc::invalid_argument, "the trusted keys file " + pem_file.string() + " holds no public key (PEM)");
    return out;
}

result<std::string> verify_artifact(const std::vector<trusted_key> & keys, const std::string & sha256, const std::string & signature_text) {
    std::istringstream in(signature_text);
    std::string line, key_id, signed_sha, sig_b64;
    bool header = false;
    while (std::getline(in, line)) {
        if (line == "rustycage-signature 1") header = true;
        else if (line.starts_with("key ")) key_id = line.substr(4);
        else if (line.starts_with("sha256 ")) signed_sha = line.substr(7);
        else if (line.starts_with("ed25519 ")) sig_b64 = line.substr(8);
    }
    if (!header || key_id.empty() || signed_sha.empty() || sig_b64.empty())
        return make_error(errc::invalid_argument, "the signature file is not a rustycage signature (rustycage-signature 1, key, sha256, ed25519)");
    if (signed_sha != sha256)
        return make_error(errc::permission_denied, "the signature is for another artifact (sha256 " + signed_sha.substr(0, 16) + "…, not " + sha256.substr(0, 16) + "…)");
    const trusted_key * key = nullptr;
    for (const auto & k : keys)
        if (k.id == key_id) key = &k;
    if (!key) return make_error(errc::permission_denied, "signed by key " + key_id + ", which is not among this host's trusted keys");
    auto sig = etcd_base64_decode(sig_b64);
    if (!sig || sig->size() != 64) return make_error(errc::permission_denied, "the signature is malformed (not 64 bytes of base64)");
    const auto * p = reinterpret_cast<const unsigned char *>(key->der.data());
    pkey_ptr pub(d2i_PUBKEY(nullptr, &p, long(key->der.size())), EVP_PKEY_free);
    const std::string msg = statement(sha256);
    md_ctx_ptr ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (!pub || !ctx || EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, pub.get()) != 1 ||
        EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char *>(sig->data()), sig->size(),
                         reinterpret_cast<const unsigned char *>(msg.data()), msg.size()) != 1)
        return make_error(errc::permission_denied, "the signature does not verify with key " + key_id);
    return key_id;
}

}  // namespace rc::fleet
