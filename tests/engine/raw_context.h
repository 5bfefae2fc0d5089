#pragma once
// A bare llama_context on a generated model, for tests below the engine (kv_numerics, kv_bridge):
// decode spans of token lists into sequences, read the logits of a batch row, compare logits.
#include <gtest/gtest.h>
#include <llama.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "llama/batch.h"
#include "llama/model.h"

namespace rc::test {

struct raw_context {
    llama_context * ctx = nullptr;
    llama_memory_t mem = nullptr;
    llama::batch batch{512};
    raw_context(const llama::model & m, int n_ctx, ggml_type kv_type = GGML_TYPE_F32) {
        auto cp = llama_context_default_params();
        cp.n_ctx = static_cast<uint32_t>(n_ctx);
        cp.n_seq_max = 4;
        cp.kv_unified = true;
        cp.n_threads = cp.n_threads_batch = 1;
        cp.type_k = cp.type_v = kv_type;
        cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
        cp.n_batch = cp.n_ubatch = 512;
        ctx = llama_init_from_model(m.get(), cp);
        mem = llama_get_memory(ctx);
    }
    ~raw_context() { llama_free(ctx); }
    raw_context(const raw_context &) = delete;
    raw_context & operator=(const raw_context &) = delete;

    struct span {
        const std::vector<llama_token> * tokens;
        int seq, p0, p1;
    };
    // Decodes the spans in one batch; returns the batch rows of each span's last token.
    std::vector<int> decode(const std::vector<span> & spans) {
        batch.clear();
        std::vector<int> rows;
        for (const auto & s : spans) {
            for (int p = s.p0; p < s.p1; ++p) {
                int row = batch.add((*s.tokens)[p], p, s.seq, p + 1 == s.p1);
                if (p + 1 == s.p1) rows.push_back(row);
            }
        }
        EXPECT_EQ(llama_decode(ctx, batch.get()), 0);
        return rows;
    }
    std::vector<float> logits(const llama::model & m, int row) const {
        const float * l = llama_get_logits_ith(ctx, row);
        return {l, l + m.info().n_vocab};
    }
};

inline float max_abs_diff(const std::vector<float> & a, const std::vector<float> & b) {
    float d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
    return d;
}

}  // namespace rc::test
