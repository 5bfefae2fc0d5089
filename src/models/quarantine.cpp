#include "models/quarantine.h"

#include <llama.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "llama/compute_thread.h"
#include "llama/gguf_metadata.h"
#include "llama/model.h"
#include "util/log.h"
#include "util/sha256.h"

namespace rc::models {

namespace {

using steady = std::chrono::steady_clock;
double ms_since(steady::time_point t) { return std::chrono::duration<double, std::milli>(steady::now() - t).count(); }

error refused(const std::string & why) { return make_error(errc::invalid_argument, why); }

status verify_digest(const std::string & path, const std::string & digest) {
    std::unique_ptr<FILE, int (*)(FILE *)> f(std::fopen(path.c_str(), "rb"), std::fclose);
    if (!f) return refused("cannot read " + path);
    rc::sha256 h;
    std::vector<char> buf(1 << 20);
    for (size_t n; (n = std::fread(buf.data(), 1, buf.size(), f.get())) > 0;) h.feed(buf.data(), n);
    std::string actual = "sha256-" + rc::to_hex(h.finish());
    if (actual != digest) return refused("digest mismatch: blob " + digest + " hashes to " + actual);
    return {};
}

status header_sane(const std::string & first_path, quarantine_report & rep) {
    auto md = llama::read_gguf_metadata(first_path);
    if (!md) return refused("not a GGUF file: " + md.err().message);
    rep.architecture = md->get_string("general.architecture");
    if (rep.architecture.empty()) return refused("GGUF header has no general.architecture");
    if (md->n_params == 0) return refused("GGUF header lists no tensors");
    return {};
}

bool finite_row(const float * v, int n) {
    for (int i = 0; i < n; ++i)
        if (!std::isfinite(v[i])) return false;
    return true;
}

struct ctx_free {
    void operator()(llama_context * c) const { llama_free(c); }
};

status try_generation(const llama::model & m, quarantine_report & rep) {
    auto cp = llama_context_default_params();
    cp.n_ctx = 256;
    cp.n_batch = 64;
    cp.n_ubatch = 64;
    cp.n_seq_max = 1;
    cp.n_threads = cp.n_threads_batch = 2;
    cp.embeddings = m.info().is_embedding;
    std::unique_ptr<llama_context, ctx_free> ctx(llama_init_from_model(m.get(), cp));
    if (!ctx) return refused("llama.cpp could not create a context for it");

    auto tokens = m.tokenize("The quick brown fox", true, false);
    if (tokens.empty()) return refused("its tokenizer produced no tokens for a plain English prompt");
    if (m.info().is_embedding) {
        if (llama_decode(ctx.get(), llama_batch_get_one(tokens.data(), static_cast<int32_t>(tokens.size()))) != 0)
            return refused("embedding computation failed");
        const float * e = llama_get_embeddings_seq(ctx.get(), 0);
        if (!e) e = llama_get_embeddings_ith(ctx.get(), -1);
        if (!e || !finite_row(e, m.info().n_embd_out > 0 ? m.info().n_embd_out : m.info().n_embd)) return refused("non-finite embedding");
        rep.stop_reason = "embedding";
        return {};
    }
    constexpr int max_new = 8;
    for (int step = 0; step <= max_new; ++step) {
        if (step == max_new) {
            rep.stop_reason = "length";
            break;
        }
        if (llama_decode(ctx.get(), llama_batch_get_one(tokens.data(), static_cast<int32_t>(tokens.size()))) != 0)
            return refused("decode failed at step " + std::to_string(step));
        const float * logits = llama_get_logits_ith(ctx.get(), -1);
        if (!logits || !finite_row(logits, m.info().n_vocab)) return refused("non-finite logits at step " + std::to_string(step));
        llama_token best = 0;
        for (int i = 1; i < m.info().n_vocab; ++i)
            if (logits[i] > logits[best]) best = i;
        ++rep.generated_tokens;
        if (m.is_eog(best)) {
            rep.stop_reason = "stop";
            break;
        }
        tokens = {best};
    }
    if (rep.generated_tokens == 0) return refused("generated no tokens");
    return {};
}

}  // namespace

result<quarantine_report> check_model(const quarantine_input & in) {
    quarantine_report rep;
    if (in.paths.empty()) return refused("no model files");
    for (size_t i = 0; i < in.paths.size() && i < in.digests.size(); ++i) {
        if (in.digests[i].empty()) continue;
        if (auto st = verify_digest(in.paths[i], in.digests[i]); !st) return st.err();
    }
    if (auto st = header_sane(in.paths.front(), rep); !st) return st.err();

    llama::model_load_options lo;
    lo.n_gpu_layers = 0;  // the check is about the file, not the device
    lo.check_tensors = true;
    lo.chat_template = in.chat_template;
    auto t0 = steady::now();
    auto m = llama::model::load(in.paths, lo);
    rep.load_ms = ms_since(t0);
    if (!m) return refused("llama.cpp refused to load it (tensor validation on): " + m.err().message);

    t0 = steady::now();
    if (auto st = llama::on_own_thread([&] { return try_generation(**m, rep); }); !st) return st.err();
    rep.generate_ms = ms_since(t0);
    rc::log::info("models", "quarantine_passed", {{"path", in.paths.front()}, {"arch", rep.architecture}, {"tokens", rep.generated_tokens},
                                                  {"stop", rep.stop_reason}, {"load_ms", rep.load_ms}, {"generate_ms", rep.generate_ms}});
    return rep;
}

}  // namespace rc::models
