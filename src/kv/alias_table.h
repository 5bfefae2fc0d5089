#pragma once
// Prompt-end aliases (ARCHITECTURE.md §5): the key a resume would look up where a prompt ended inside
// a stored block (the prompt's end, and one token before it for a regenerate), pointing at that block,
// so a conversation diverging there restores the block and trims it. Bounded (the oldest go first)
// and, with a disk tier, persisted as records beside the disk blocks so they survive a restart.
// Owned by the engine's KV executor, read by the planner. Engine thread only.
#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

#include "kv/block_key.h"

namespace rc::kv {

class kv_manager;

struct block_alias {
    block_key target;
    int from = 0;   // the target block's first token
    int cells = 0;  // tokens the target holds
};

class alias_table {
  public:
    // `tiers` (may be null): where aliases are persisted, and read back from now.
    alias_table(const kv_identity & id, int block_size, kv_manager * tiers);

    std::optional<block_alias> find(const block_key & alias_key) const;
    void remember(const block_key & alias_key, const block_alias & a);

  private:
    void add(const block_key & alias_key, const block_alias & a);
    void load();

    digest256 ident_;
    int block_size_;
    kv_manager * tiers_;
    std::unordered_map<block_key, block_alias, block_key_hash> aliases_;
    std::deque<block_key> order_;  // oldest first, bounded
};

}  // namespace rc::kv
