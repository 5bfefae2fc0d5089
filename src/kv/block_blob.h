#pragma once
// One block's KV, as llama_state_seq_get_data serialised it for positions [pos0, pos0 + n_tokens)
// of a scratch sequence. Immutable once made; shared by the tiers through shared_ptr so an eviction
// never frees bytes a restore or a write-back is still using.
#include <cstdint>
#include <memory>
#include <vector>

namespace rc::kv {

struct block_blob {
    int32_t pos0 = 0;
    int32_t n_tokens = 0;
    std::vector<uint8_t> bytes;
};

using blob_ptr = std::shared_ptr<const block_blob>;

}  // namespace rc::kv
