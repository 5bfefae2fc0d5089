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

indexed_prompt answer_from_index(const model_vocab & vocab, const nlohmann::ordered_json & body, const route_view & view, const kv_event_feed & feed,
                                 const block_index & index) {
    const auto candidates = view.hosts();
    indexed_prompt out;
    out.answers.resize(candidates.size());
    api::request_prompt prompt;
    try {
        nlohmann::ordered_json copy = body;  // the readers take fields out of it
        const int n_ctx = vocab.model->info().n_ctx_train > 0 ? vocab.model->info().n_ctx_train : INT_MAX / 2;
        prompt = api::read_request_prompt(vocab.entry, *vocab.model, n_ctx, copy, body.value("api", "openai"), vocab.memo.get());
        out.rendered = true;
    } catch (const std::exception & e) {
        // A body the hosts would refuse: they say why (the lookup or the forwarded request gets the 400).
        rc::log::debug("gateway", "prompt_not_rendered", {{"model", vocab.entry.name}, {"error", e.what()}});
        return out;
    }
    out.prompt_tokens = static_cast<int>(prompt.tokens.size());
    const std::span<const int32_t> tokens(prompt.tokens.data(), prompt.tokens.size());
    std::vector<kv_event_feed::host_keys> keys;
    feed.keys_for(vocab.entry.name, view.feed_numbers, keys);
    // The candidates by KV identity (a fleet has one or two): one chain and one walk for each.
    struct identity_group {
        const model_keys * keys;
        std::vector<size_t> members;
    };
    std::vector<identity_group> groups;
    for (size_t i = 0; i < candidates.size(); ++i) {
        const model_keys * k = keys[i].keys.get();
        if (!k) {
            // A trusted stream without the model: not loaded there (its load would announce it).
            if (keys[i].trusted && !view.candidates->loaded[i]) out.answers[i] = kv_answer{false, out.prompt_tokens, 0, 0, 0};
            continue;
        }
        auto g = std::find_if(groups.begin(), groups.end(), [&](const auto & x) { return x.keys->block_size == k->block_size && x.keys->identity == k->identity; });
        if (g == groups.end()) g = groups.insert(groups.end(), {k, {}});
        g->members.push_back(i);
    }
    std::vector<block_index::host_number> numbers;
    std::vector<host_walk> walks;
    for (const auto & g : groups) {
        const auto chain = prompt_chain(g.keys->identity, g.keys->block_size, prompt.cache_salt, tokens);
        ++out.chains;
        numbers.clear();
        for (size_t i : g.members) numbers.push_back(view.index_numbers[i]);
        index.walk(vocab.entry.name, chain, g.keys->block_size, numbers, walks);
        for (size_t j = 0; j < g.members.size(); ++j)
            if (!walks[j].overflowed) out.answers[g.members[j]] = answer_of(walks[j].held, out.prompt_tokens);
    }
    return out;
}

}  // namespace rc::gateway
