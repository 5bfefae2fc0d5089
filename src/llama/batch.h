#pragma once
// RAII llama_batch with bounds-checked appends. Owned by one engine thread.
#include <llama.h>

#include <cassert>
#include <cstdint>

namespace rc::llama {

class batch {
  public:
    explicit batch(int32_t capacity) : capacity_(capacity), b_(llama_batch_init(capacity, 0, 1)) {}
    ~batch() { llama_batch_free(b_); }
    batch(const batch &) = delete;
    batch & operator=(const batch &) = delete;

    void clear() { b_.n_tokens = 0; }
    int32_t size() const { return b_.n_tokens; }
    int32_t capacity() const { return capacity_; }
    bool full() const { return b_.n_tokens >= capacity_; }

    // Returns the index of the token in the batch (the row of its logits when `logits` is set).
    int32_t add(llama_token token, llama_pos pos, llama_seq_id seq, bool logits) {
        assert(!full() && "batch capacity is sized for n_batch tokens");
        int32_t i = b_.n_tokens++;
        b_.token[i] = token;
        b_.pos[i] = pos;
        b_.n_seq_id[i] = 1;
        b_.seq_id[i][0] = seq;
        b_.logits[i] = logits;
        return i;
    }

    // A view of tokens [offset, offset + n) for decoding in pieces.
    llama_batch view(int32_t offset, int32_t n) const {
        llama_batch v = b_;
        v.n_tokens = n;
        v.token += offset;
        v.pos += offset;
        v.n_seq_id += offset;
        v.seq_id += offset;
        v.logits += offset;
        return v;
    }

    const llama_batch & get() const { return b_; }

  private:
    int32_t capacity_;
    llama_batch b_;
};

}  // namespace rc::llama
