// What llama.cpp's CPU kernels guarantee about logits when the same prompt is computed with a
// different batch composition or a different layout of its KV cells in the pool — the ground the
// engine's "greedy output identical" tests stand on (greedy_margin.h, src/engine/README.md).
//  * tiny-chat-q8 with an F32 KV cache: bit-identical across batch compositions (prefill and decode).
//  * tiny-chat-f32 with an F32 KV cache, flash attention off: within k_layout_logit_bound of the
//    contiguous layout for every layout the engine produces. (On tiny-chat-q8 the same layouts move
//    logits by tenths: a one-ULP change in attention flips an 8-bit activation rounding.)
#include <llama.h>

#include <algorithm>
#include <cmath>

#include "greedy_margin.h"
#include "raw_context.h"

using namespace rc;
using namespace rc::test;

namespace {

using context = raw_context;

std::vector<llama_token> thread_prompt(const llama::model & m, int c) {
    std::string text = "Thread " + std::to_string(c) + " says";
    for (int w = 0; w < 4 + 2 * c; ++w) text += " w" + std::to_string(c * 31 + w);
    return m.tokenize(text, true, false);
}

enum class layout { contiguous, shifted, shared_prefix_then_gap, holes_out_of_order, chunks_with_gap, batched_with_others };

// The logits after the last token of `p` (sequence 1), its cells laid out as named.
std::vector<float> prompt_logits(const llama::model & m, const std::vector<llama_token> & p, layout how) {
    context c(m, 256);
    const std::vector<llama_token> filler(256, 1234);
    const int n = static_cast<int>(p.size());
    int row = -1;
    switch (how) {
        case layout::contiguous: row = c.decode({{&p, 1, 0, n}})[0]; break;
        case layout::shifted:  // another sequence holds the first cells
            c.decode({{&filler, 0, 0, 61}});
            row = c.decode({{&p, 1, 0, n}})[0];
            break;
        case layout::shared_prefix_then_gap:  // prefix reuse: a donor's cells sit between the prefix and the rest
            c.decode({{&p, 0, 0, 2}});
            c.decode({{&filler, 0, 2, 61}});
            llama_memory_seq_cp(c.mem, 0, 1, 0, 2);
            row = c.decode({{&p, 1, 2, n}})[0];
            break;
        case layout::holes_out_of_order:  // later positions fill a hole before earlier ones
            c.decode({{&filler, 0, 0, 30}});
            c.decode({{&p, 1, 0, 20}});
            c.decode({{&filler, 2, 0, 206}});
            llama_memory_seq_rm(c.mem, 0, -1, -1);
            c.decode({{&p, 1, 20, 50}});
            llama_memory_seq_rm(c.mem, 2, -1, -1);
            row = c.decode({{&p, 1, 50, n}})[0];
            break;
        case layout::chunks_with_gap:
            c.decode({{&filler, 0, 0, 30}});
            c.decode({{&p, 1, 0, 20}});
            c.decode({{&filler, 2, 0, 20}});
            llama_memory_seq_rm(c.mem, 0, -1, -1);
            c.decode({{&p, 1, 20, 50}});
            row = c.decode({{&p, 1, 50, n}})[0];
            break;
        case layout::batched_with_others: {
            auto a = thread_prompt(m, 2), b = thread_prompt(m, 8);
            row = c.decode({{&a, 0, 0, static_cast<int>(a.size())}, {&p, 1, 0, n}, {&b, 2, 0, static_cast<int>(b.size())}})[1];
            break;
        }
    }
    return c.logits(m, row);
}

}  // namespace

TEST(kv_numerics, q8_weights_give_bit_identical_logits_in_any_batch_composition) {
    auto m = shared_model("tiny-chat-q8");
    ASSERT_TRUE(m);
    auto p = thread_prompt(*m, 5);
    EXPECT_EQ(prompt_logits(*m, p, layout::batched_with_others), prompt_logits(*m, p, layout::contiguous));

    // Greedy decoding of four sequences in one batch per step equals decoding each alone.
    auto greedy = [&](const std::vector<int> & which) {
        context c(*m, 1024);
        std::vector<std::vector<llama_token>> toks;
        for (int w : which) toks.push_back(thread_prompt(*m, w));
        std::vector<context::span> spans;
        for (size_t i = 0; i < toks.size(); ++i) spans.push_back({&toks[i], static_cast<int>(i), 0, static_cast<int>(toks[i].size())});
        std::vector<std::vector<float>> last;
        for (int step = 0; step < 8; ++step) {
            auto rows = c.decode(spans);
            last.clear();
            for (size_t i = 0; i < toks.size(); ++i) {
                last.push_back(c.logits(*m, rows[i]));
                toks[i].push_back(static_cast<llama_token>(std::max_element(last[i].begin(), last[i].end()) - last[i].begin()));
                const int n = static_cast<int>(toks[i].size());
                spans[i] = {&toks[i], static_cast<int>(i), n - 1, n};
            }
        }
        return std::make_pair(toks, last);
    };
    auto [alone_tokens, alone_logits] = greedy({5});
    auto [batch_tokens, batch_logits] = greedy({2, 5, 8, 1});
    EXPECT_EQ(batch_tokens[1], alone_tokens[0]);
    EXPECT_EQ(batch_logits[1], alone_logits[0]) << "the last step's logits, bit for bit";
}

TEST(kv_numerics, f32_weights_keep_logits_within_the_layout_bound_for_every_cell_layout) {
    auto m = shared_model(k_layout_model);
    ASSERT_TRUE(m);
    for (int c : {5, 7, 9}) {
        auto p = thread_prompt(*m, c);
        ASSERT_GE(p.size(), 50u) << "the layouts below cut the prompt at 20 and 50 tokens";
        auto base = prompt_logits(*m, p, layout::contiguous);
        for (auto how : {layout::shifted, layout::shared_prefix_then_gap, layout::holes_out_of_order, layout::chunks_with_gap,
                         layout::batched_with_others}) {
            EXPECT_LT(max_abs_diff(prompt_logits(*m, p, how), base), k_layout_logit_bound)
                << "prompt " << c << " layout " << static_cast<int>(how);
        }
    }
}
