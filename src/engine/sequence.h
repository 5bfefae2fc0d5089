#pragma once
// The engine thread's record of one admitted request: its sequence id in the llama_context, what of
// its tokens is already in KV, its sampler and stop matcher. Engine-thread only.
#include <llama.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/request.h"
#include "engine/request_channel.h"
#include "engine/sampler.h"
#include "engine/stop_matcher.h"
#include "kv/block_key.h"

namespace rc::engine {

using steady = std::chrono::steady_clock;

struct sequence {
    llama_seq_id id = -1;
    generation_request req;
    std::shared_ptr<request_channel> channel;
    sampler_ptr sampler;
    stop_matcher stops{{}};

    std::vector<llama_token> tokens;  // prompt, then generated tokens
    kv::key_chain keys;               // block keys of `tokens`, extended as they are needed; truncated with them
    int n_prompt = 0;
    // Tokens to put in the context before the next token is sampled: the prompt; for a sequence that
    // was swapped out while decoding, everything it had (its last sampled token included).
    int prefill_end = 0;
    int n_past = 0;                   // tokens whose KV is in the context (positions [0, n_past))
    int n_generated = 0;
    bool decoding = false;            // prefill_end reached, sampling tokens
    bool resumed = false;             // swapped out once (preempted): its first token was already sent
    int checkpoint_at = -1;           // stop the prefill here and store the state (kv_planner::checkpoint_at)
    int logits_row = -1;              // row of this sequence's logits in the current batch, -1: none
    bool done = false;                // finished; its cells are freed, removed at the end of the step
    bool idle = false;                // finished but kept: its cells serve later prompts with the same prefix
    int n_reused = 0;                 // prompt tokens taken from a cache (context or tiers), not computed
    uint64_t order = 0;               // admission order (larger = younger); kept across a preemption
    uint64_t last_used = 0;           // idle: when it finished (larger = more recent)

    steady::time_point submitted;
    steady::time_point admitted;
    steady::time_point first_token;

    int prompt_remaining() const {
        if (decoding) return 0;
        const int end = checkpoint_at > n_past ? checkpoint_at : prefill_end;
        return end - n_past;
    }
    bool live() const { return !done && !idle; }
};

}  // namespace rc::engine
