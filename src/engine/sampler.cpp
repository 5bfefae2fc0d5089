#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "engine/grammar_cost.h"

namespace rc::engine {

status validate_sampling(const llama::model & m, const sampling_params & p) {
    auto finite = [](float v) { return std::isfinite(v); };
    if (!finite(p.temperature) || p.temperature < 0 || p.temperature > 100)
        return make_error(errc::invalid_argument, "temperature must be between 0 and 100");
    if (!finite(p.top_p) || p.top_p < 0 || p.top_p > 1) return make_error(errc::invalid_argument, "top_p must be between 0 and 1");
    if (!finite(p.min_p) || p.min_p < 0 || p.min_p > 1) return make_error(errc::invalid_argument, "min_p must be between 0 and 1");
    if (!finite(p.typical_p) || p.typical_p <= 0 || p.typical_p > 1)
        return make_error(errc::invalid_argument, "typical_p must be in (0, 1]");
    if (!finite(p.repeat_penalty) || p.repeat_penalty <= 0 || p.repeat_penalty > 100)
        return make_error(errc::invalid_argument, "repeat_penalty must be in (0, 100]");
    if (p.repeat_last_n < -1) return make_error(errc::invalid_argument, "repeat_last_n must be >= -1");
    if (!finite(p.presence_penalty) || std::fabs(p.presence_penalty) > 2)
        return make_error(errc::invalid_argument, "presence_penalty must be between -2 and 2");
    if (!finite(p.frequency_penalty) || std::fabs(p.frequency_penalty) > 2)
        return make_error(errc::invalid_argument, "frequency_penalty must be between -2 and 2");
    for (const auto & [tok, bias] : p.logit_bias) {
        if (!m.valid_token(tok)) return make_error(errc::invalid_argument, "logit_bias names token " + std::to_string(tok) + " outside the vocabulary");
        if (std::isnan(bias)) return make_error(errc::invalid_argument, "logit_bias values must be numbers");
    }
    return {};
}

status check_grammar_cost(const llama::model & m, const std::string & gbnf) {
    using L = grammar_limits;
    if (gbnf.size() > L::max_grammar_bytes)
        return make_error(errc::invalid_argument, "the grammar is " + std::to_string(gbnf.size()) + " bytes (at most " + std::to_string(L::max_grammar_bytes) +
                                                      "); simplify the schema or tools");
    if (const size_t nesting = gbnf_nesting(gbnf); nesting > L::max_grammar_nesting)
        return make_error(errc::invalid_argument, "the grammar nests groups " + std::to_string(nesting) + " deep (at most " + std::to_string(L::max_grammar_nesting) + ")");
    auto cost = measure_grammar(gbnf);
    if (!cost) return make_error(errc::invalid_argument, "grammar does not parse");
    const uint64_t vocab = static_cast<uint64_t>(std::max(1, m.info().n_vocab));
    const uint64_t allowed = std::max<uint64_t>(1, L::max_checks_per_token / vocab);
    if (cost->widest_point > allowed) {
        return make_error(errc::invalid_argument,
                          "the schema or tools keep up to " + (cost->widest_point >= (uint64_t(1) << 62) ? std::string("2^62") : std::to_string(cost->widest_point)) +
                              " alternatives open at once (a large enum, anyOf or choice?); constraining each token would check every one of them "
                              "against the whole vocabulary, and this model allows at most " + std::to_string(allowed) +
                              ": use fewer alternatives, or a string field validated afterwards");
    }
    return {};
}

result<sampler_ptr> make_sampler(const llama::model & m, const sampling_params & p, const constraint & c) {
    if (auto st = validate_sampling(m, p); !st) return st.err();
    if (c.grammar.rfind("%llguidance", 0) == 0) {
        // llama.cpp aborts the process on this prefix when built without llguidance.
        return make_error(errc::invalid_argument, "llguidance grammars are not supported");
    }

    common_params_sampling s;
    s.seed = p.seed ? *p.seed : std::random_device{}();
    s.temp = p.temperature;
    s.top_k = p.top_k;
    s.top_p = p.top_p;
    s.min_p = p.min_p;
    s.typ_p = p.typical_p;
    s.penalty_repeat = p.repeat_penalty;
    s.penalty_last_n = p.repeat_last_n;
    s.penalty_present = p.presence_penalty;
    s.penalty_freq = p.frequency_penalty;
    s.ignore_eos = p.ignore_eos;
    s.no_perf = true;
    for (const auto & [tok, bias] : p.logit_bias) s.logit_bias.push_back({tok, bias});
    if (p.ignore_eos) {
        for (llama_token t = 0; t < m.info().n_vocab; ++t) {
            if (m.is_eog(t)) s.logit_bias.push_back({t, -INFINITY});
        }
    }

    if (!c.empty()) {
        if (auto st = check_grammar_cost(m, c.grammar); !st) return st.err();
    }

    if (!c.empty()) {
        // Parse once on our own first: common_sampler_init leaks its half-built chain when it throws
        // on a grammar that does not parse (pinned llama.cpp), and a client can send one at will.
        llama_sampler * probe = llama_sampler_init_grammar(m.vocab(), c.grammar.c_str(), "root");
        if (!probe) return make_error(errc::invalid_argument, "grammar does not parse");
        llama_sampler_free(probe);
        s.grammar = common_grammar(c.type, c.grammar);
        s.grammar_lazy = c.lazy;
        s.generation_prompt = c.generation_prompt;
        for (const auto & word : c.preserved_tokens) {
            auto ids = m.tokenize(word, false, true);
            if (ids.size() == 1) s.preserved_tokens.insert(ids[0]);
        }
        for (const auto & t : c.triggers) {
            if (t.type == COMMON_GRAMMAR_TRIGGER_TYPE_WORD) {
                // A trigger word that is one special token triggers on the token itself.
                auto ids = m.tokenize(t.value, false, true);
                if (ids.size() == 1 && s.preserved_tokens.count(ids[0])) {
                    s.grammar_triggers.push_back({COMMON_GRAMMAR_TRIGGER_TYPE_TOKEN, t.value, ids[0]});
                    continue;
                }
            }
            s.grammar_triggers.push_back(t);
        }
        if (s.grammar_lazy && s.grammar_triggers.empty()) {
            return make_error(errc::internal, "lazy grammar without triggers");
        }
    }

    try {
        common_sampler * raw = common_sampler_init(m.get(), s);
        if (!raw) return make_error(errc::invalid_argument, "grammar does not parse");
        return sampler_ptr(raw);
    } catch (const std::exception & e) {
        // llama.cpp rethrows a grammar's refusal sliced to std::exception: say what failed.
        return make_error(errc::invalid_argument, std::string("the constrained sampler could not start: the grammar refused the template's generation prompt or a sampling value (") + e.what() + ")");
    }
}

result<sampler_ptr> take_sampler(const llama::model & m, const sampling_params & p, constraint & c) {
    if (c.prepared && c.prepared->sampler) {
        auto out = std::move(c.prepared->sampler);
        c.prepared.reset();
        return out;
    }
    return make_sampler(m, p, c);
}

}  // namespace rc::engine
