#pragma once
// The engine thread's record of one admitted request: its sequence id in the llama_context, what of
// its tokens is already in KV, its sampler and stop matcher. Engine-thread only.
#include <llama.h>

#include <chrono>
#include <memory>
#include <vector>

#include "engine/request.h"
#include "engine/request_channel.h"
#include "engine/sampler.h"
#include "engine/stop_matcher.h"

namespace rc::engine {

using steady = std::chrono::steady_clock;

struct sequence {
    llama_seq_id id = -1;
    generation_request req;
    std::shared_ptr<request_channel> channel;
    sampler_ptr sampler;
    stop_matcher stops{{}};

    std::vector<llama_token> tokens;  // prompt, then generated tokens
    int n_prompt = 0;
    int n_past = 0;                   // tokens whose KV is in the context (positions [0, n_past))
    int n_generated = 0;
    bool decoding = false;            // prompt fully in the context, sampling tokens
    int logits_row = -1;              // row of this sequence's logits in the current batch, -1: none
    bool done = false;                // finished; its cells are freed, removed at the end of the step
    bool idle = false;                // finished but kept: its cells serve later prompts with the same prefix
    int n_saved = 0;
    int n_reused = 0;                 // prompt tokens taken from a cache (context or tiers), not computed                  // leading tokens whose blocks are already stored below the context
    steady::time_point last_used;

    steady::time_point submitted;
    steady::time_point admitted;
    steady::time_point first_token;

    int prompt_remaining() const { return decoding ? 0 : n_prompt - n_past; }
    bool live() const { return !done && !idle; }
};

}  // namespace rc::engine
