#include "engine/logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace rc::engine {

token_choice compute_logprobs(const llama::model & m, const float * logits, llama_token chosen, int n_top) {
    const int n_vocab = m.info().n_vocab;
    float max_logit = *std::max_element(logits, logits + n_vocab);
    double sum = 0;
    for (int i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i] - max_logit));
    const float log_z = max_logit + static_cast<float>(std::log(sum));

    auto entry = [&](llama_token t) { return token_logprob{t, m.token_to_piece(t, true), logits[t] - log_z}; };
    token_choice out;
    out.chosen = entry(chosen);
    if (n_top > 0) {
        n_top = std::min(n_top, n_vocab);
        std::vector<llama_token> ids(n_vocab);
        std::iota(ids.begin(), ids.end(), 0);
        std::partial_sort(ids.begin(), ids.begin() + n_top, ids.end(),
                          [&](llama_token a, llama_token b) { return logits[a] > logits[b]; });
        for (int i = 0; i < n_top; ++i) out.top.push_back(entry(ids[i]));
    }
    return out;
}

}  // namespace rc::engine
