#include "gateway/prompt_keys.h"

#include <algorithm>
#include <climits>

#include "api/request_prompt.h"
#include "kv/block_key.h"
#include "util/log.h"

namespace rc::gateway {

std::vector<short_key> prompt_chain(const std::string & identity_hex, int block_size, const std::string & cache_salt, std::span<const int32_t> tokens) {
    digest256 identity;
    if (block_size <= 0 || !from_hex(identity_hex, identity)) return {};
    const auto keys = kv::full_block_keys(kv::root_key(identity, cache_salt), tokens, block_size);
    std::vector<short_key> out;
    out.reserve(keys.size());
    for (const auto & k : keys) out.push_back(short_key_of(k.d.data()));
    return out;
}

namespace {

// What a lookup answers of `held`: the prompt's last token is always computed (its logits start
// the generation), so at most prompt_tokens − 1 are reused; the blocks past that come off the
// slowest tier first.
kv_answer answer_of(held_prefix held, int prompt_tokens) {
    int excess = held.tokens() - std::max(0, prompt_tokens - 1);
    for (int * tier : {&held.disk, &held.host, &held.context}) {
        const int cut = std::clamp(excess, 0, *tier);
        *tier -= cut;
        excess -= cut;
    }
    return {true, prompt_tokens, held.context, held.host, held.disk};
}

}  // namespace

indexed_prompt answer_from_index(const model_vocab & vocab, const nlohmann::ordered_json & body, const std::vector<host_view> & candidates,
                                 const kv_event_feed & feed, const block_index & index) {
    indexed_prompt out;
    api::request_prompt prompt;
    try {
        nlohmann::ordered_json copy = body;  // the readers take fields out of it
        const int n_ctx = vocab.model->info().n_ctx_train > 0 ? vocab.model->info().n_ctx_train : INT_MAX / 2;
        prompt = api::read_request_prompt(vocab.entry, *vocab.model, n_ctx, copy, body.value("api", "openai"), vocab.memo.get());
        out.rendered = true;
    } catch (const std::exception & e) {
        // A body the hosts would refuse: they say why (the lookup or the forwarded request gets the 400).
        rc::log::debug("gateway", "prompt_not_rendered", {{"model", vocab.entry.name}, {"error", e.what()}});
    }
    if (!out.rendered) {
        for (const auto & h : candidates) out.ask.push_back(h.id);
        return out;
    }
    out.prompt_tokens = static_cast<int>(prompt.tokens.size());
    const std::span<const int32_t> tokens(prompt.tokens.data(), prompt.tokens.size());
    // One chain per (identity, block size), walked once over every host (a fleet has one or two).
    std::vector<std::pair<const model_keys *, std::map<std::string, held_prefix>>> walks;
    const auto trusted = feed.trusted_for(vocab.entry.name);
    const auto overflowed = index.overflowed(vocab.entry.name);
    for (const auto & h : candidates) {
        const auto t = trusted.find(h.id);
        const model_keys * keys = t == trusted.end() ? nullptr : t->second.keys.get();
        if (!keys) {
            // A trusted stream without the model: not loaded there (its load would announce it).
            if (t != trusted.end() && !h.model_loaded(vocab.entry.name)) out.answers[h.id] = {false, out.prompt_tokens, 0, 0, 0};
            else out.ask.push_back(h.id);
            continue;
        }
        if (overflowed.contains(h.id)) {
            out.ask.push_back(h.id);
            continue;
        }
        auto walked = std::find_if(walks.begin(), walks.end(), [&](const auto & w) {
            return w.first->block_size == keys->block_size && w.first->identity == keys->identity;
        });
        if (walked == walks.end()) {
            const auto chain = prompt_chain(keys->identity, keys->block_size, prompt.cache_salt, tokens);
            ++out.chains;
            walks.emplace_back(keys, index.walk(vocab.entry.name, chain, keys->block_size));
            walked = walks.end() - 1;
        }
        auto held = walked->second.find(h.id);
        out.answers[h.id] = answer_of(held == walked->second.end() ? held_prefix{} : held->second, out.prompt_tokens);
    }
    return out;
}

}  // namespace rc::gateway
