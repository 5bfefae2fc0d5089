// The bridge between the context's KV cells and host blobs (engine/kv_bridge.h), on whatever backend
// holds the cells: a block saved, restored into another sequence and other cells, and saved again
// must come back byte for byte, and the restored sequence must carry on as the original would. On a
// GPU build the cells live in device buffers, so this is the test that KV leaves and re-enters them
// intact (make test-vulkan runs it on lavapipe); unlike the engine's greedy-output tests it does not
// depend on how a backend's kernels round different batch shapes.
#include <llama.h>


#include "engine/kv_bridge.h"
#include "greedy_margin.h"
#include "raw_context.h"

using namespace rc;
using namespace rc::test;

namespace {

constexpr int k_block = 16;
constexpr int k_blocks = 3;
constexpr llama_seq_id k_scratch = 3;
// How far the restored sequence's next-token logits may move from the original's when only the
// order of its cells differs: an F32 cache stays within the layout bound kv_numerics_test asserts;
// an F16 one rounds the attention scores to half precision (6.7e-4 measured on the CPU). Cells
// restored wrong move them by whole logits (a block left out: 10.6).
float layout_bound(ggml_type kv_type) { return kv_type == GGML_TYPE_F32 ? k_layout_logit_bound : 1e-2f; }

std::vector<llama_token> long_prompt(const llama::model & m) {
    std::string text = "The bridge carries";
    for (int w = 0; w < 40; ++w) text += " block" + std::to_string(w * 7);
    return m.tokenize(text, true, false);
}

}  // namespace

TEST(kv_bridge, blocks_restored_into_other_cells_read_back_byte_for_byte_and_decode_as_before) {
    auto m = shared_model(k_layout_model);
    ASSERT_TRUE(m);
    for (ggml_type kv_type : {GGML_TYPE_F16, GGML_TYPE_F32}) {
        SCOPED_TRACE(ggml_type_name(kv_type));
        raw_context c(*m, 256, kv_type);
        engine::kv_bridge bridge(c.ctx, k_scratch);
        const auto p = long_prompt(*m);
        const int n = k_block * k_blocks;
        ASSERT_GT(static_cast<int>(p.size()), n);
        c.decode({{&p, 0, 0, n}});

        std::vector<kv::blob_ptr> saved;
        for (int b = 0; b < k_blocks; ++b) {
            auto blob = bridge.save(0, b * k_block, (b + 1) * k_block);
            ASSERT_TRUE(blob);
            EXPECT_EQ(blob->pos0, b * k_block);
            EXPECT_EQ(blob->n_tokens, k_block);
            saved.push_back(blob);
        }
        EXPECT_EQ(llama_memory_seq_pos_max(c.mem, k_scratch), -1) << "saving leaves the scratch sequence empty";
        const auto reference = c.logits(*m, c.decode({{&p, 0, n, n + 1}})[0]);

        // Another sequence takes the first cells and the original goes, as when it is demoted; its
        // blocks come back out of order into a third sequence, so they land in other cells.
        const std::vector<llama_token> filler(40, 1234);
        c.decode({{&filler, 1, 0, 40}});
        llama_memory_seq_rm(c.mem, 0, -1, -1);
        for (int b : {2, 0, 1}) ASSERT_TRUE(bridge.restore(*saved[static_cast<size_t>(b)], 2));
        EXPECT_EQ(llama_memory_seq_pos_min(c.mem, 2), 0);
        EXPECT_EQ(llama_memory_seq_pos_max(c.mem, 2), n - 1);
        EXPECT_EQ(llama_memory_seq_pos_max(c.mem, k_scratch), -1) << "restoring leaves the scratch sequence empty";
        EXPECT_EQ(llama_memory_seq_pos_max(c.mem, 1), 39) << "the other sequence is untouched";

        for (int b = 0; b < k_blocks; ++b) {
            auto again = bridge.save(2, b * k_block, (b + 1) * k_block);
            ASSERT_TRUE(again);
            EXPECT_TRUE(again->bytes == saved[static_cast<size_t>(b)]->bytes) << "block " << b << " changed on its way";
        }
        // The same one-token step on the restored cells: only their order in the pool differs, which
        // moves attention's sum by rounding (greedy_margin.h), never by what wrong cells would.
        const auto resumed = c.logits(*m, c.decode({{&p, 2, n, n + 1}})[0]);
        EXPECT_LT(max_abs_diff(resumed, reference), layout_bound(kv_type));
    }
}
