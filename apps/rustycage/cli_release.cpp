// `rustycage release keygen|sign|verify`: the lab's release signing key and the detached signatures
// hosts check before they unpack an artifact (src/fleet/rollout/artifact_signature.h, docs/SECURITY.md).
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli_common.h"
#include "commands.h"
#include "fleet/rollout/artifact_signature.h"
#include "util/sha256.h"

namespace rc::cli {

namespace {

namespace fs = std::filesystem;

struct release_flags {
    std::string key, trusted_keys, signature, public_out;
    std::vector<std::string> artifacts;
};

result<std::string> sha256_file(const fs::path & p) {
    std::ifstream in(p, std::ios::binary);
    if (!in) return make_error(errc::not_found, p.string() + " cannot be read");
    sha256 h;
    std::vector<char> buf(1 << 20);
    while (in) {
        in.read(buf.data(), std::streamsize(buf.size()));
        if (in.gcount() > 0) h.feed(buf.data(), size_t(in.gcount()));
    }
    if (in.bad()) return make_error(errc::io, "reading " + p.string() + " failed");
    return to_hex(h.finish());
}

// Writes `text` to `p` readable by its owner only when `secret`.
status write_file(const fs::path & p, const std::string & text, bool secret) {
    const fs::path tmp = p.string() + ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        if (secret) ::chmod(tmp.c_str(), 0600);
        out << text;
        if (!out) return make_error(errc::io, "cannot write " + p.string());
    }
    std::error_code ec;
    fs::rename(tmp, p, ec);
    if (ec) return make_error(errc::io, "cannot write " + p.string() + ": " + ec.message());
    return {};
}

int keygen(const release_flags & f) {
    if (fs::exists(f.key)) return fail(f.key + " exists: a signing key is never overwritten");
    auto kp = fleet::generate_signing_key();
    if (!kp.ok()) return fail(kp.err());
    if (auto st = write_file(f.key, kp->private_pem, true); !st) return fail(st.err());
    const std::string pub = f.public_out.empty() ? f.key + ".pub" : f.public_out;
    if (auto st = write_file(pub, kp->public_pem, false); !st) return fail(st.err());
    std::cout << "signing key " << f.key << " (keep it secret), public key " << pub << " (key " << fleet::public_key_id(kp->public_pem).value()
              << "): give hosts the public key as --trusted-keys\n";
    return 0;
}

int sign(const release_flags & f) {
    for (const auto & a : f.artifacts) {
        auto sha = sha256_file(a);
        if (!sha.ok()) return fail(sha.err());
        auto sig = fleet::sign_artifact(f.key, sha.value());
        if (!sig.ok()) return fail(sig.err());
        if (auto st = write_file(a + ".sig", sig.value(), false); !st) return fail(st.err());
        std::cout << "signed " << a << " → " << a << ".sig\n";
    }
    return 0;
}

int verify(const release_flags & f) {
    auto keys = fleet::load_trusted_keys(f.trusted_keys);
    if (!keys.ok()) return fail(keys.err());
    const std::string & a = f.artifacts.front();
    auto sha = sha256_file(a);
    if (!sha.ok()) return fail(sha.err());
    const std::string sig_path = f.signature.empty() ? a + ".sig" : f.signature;
    std::ifstream in(sig_path);
    if (!in) return fail("the signature " + sig_path + " cannot be read");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto who = fleet::verify_artifact(keys.value(), sha.value(), text);
    if (!who.ok()) return fail(a + ": " + who.err().message);
    std::cout << a << ": signed by key " << who.value() << "\n";
    return 0;
}

}  // namespace

void register_release(CLI::App & app, std::function<int()> & action) {
    auto * cmd = app.add_subcommand("release", "Release signing: make the lab's key, sign artifacts, verify them as hosts do");
    cmd->require_subcommand(1);

    auto kf = std::make_shared<release_flags>();
    auto * kg = cmd->add_subcommand("keygen", "Make an Ed25519 signing key (PEM, mode 0600) and its public key");
    kg->add_option("--key", kf->key, "Where the private key goes")->required();
    kg->add_option("--public", kf->public_out, "Where the public key goes (default: KEY.pub)");
    kg->callback([kf, &action] { action = [kf] { return keygen(*kf); }; });

    auto sf = std::make_shared<release_flags>();
    auto * sg = cmd->add_subcommand("sign", "Write ARTIFACT.sig for each artifact");
    sg->add_option("--key", sf->key, "The private signing key (PEM)")->envname("RUSTYCAGE_SIGNING_KEY")->required();
    sg->add_option("artifacts", sf->artifacts, "Release tarballs")->required();
    sg->callback([sf, &action] { action = [sf] { return sign(*sf); }; });

    auto vf = std::make_shared<release_flags>();
    auto * vg = cmd->add_subcommand("verify", "Check an artifact's signature against trusted public keys, as a host does before unpacking");
    vg->add_option("--trusted-keys", vf->trusted_keys, "Public keys (PEM)")->required();
    vg->add_option("--signature", vf->signature, "The signature file (default: ARTIFACT.sig)");
    vg->add_option("artifact", vf->artifacts, "The release tarball")->required()->expected(1);
    vg->callback([vf, &action] { action = [vf] { return verify(*vf); }; });
}

}  // namespace rc::cli
