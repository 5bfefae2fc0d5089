#include "api/sampling_fields.h"

#include <climits>

namespace rc::api {

namespace {

using params = engine::sampling_params;

struct accepted_range {
    bool accepted = false;
    double min = 0, max = 0;
};
constexpr accepted_range not_read{};
constexpr accepted_range range(double min, double max) { return {true, min, max}; }

struct sampling_field {
    const char * name;
    float params::*real = nullptr;  // exactly one of real and integer
    int params::*integer = nullptr;
    accepted_range openai, ollama;
};

const sampling_field fields_table[] = {
    {"temperature", &params::temperature, nullptr, range(0, 2), range(0, 100)},
    {"top_k", nullptr, &params::top_k, range(0, 1000000), range(-1, 1000000)},
    {"top_p", &params::top_p, nullptr, range(0, 1), range(0, 1)},
    {"min_p", &params::min_p, nullptr, range(0, 1), range(0, 1)},
    {"typical_p", &params::typical_p, nullptr, range(0.000001, 1), range(0.000001, 1)},
    {"repeat_last_n", nullptr, &params::repeat_last_n, not_read, range(-1, INT_MAX)},
    {"repeat_penalty", &params::repeat_penalty, nullptr, range(0.000001, 100), range(0.000001, 100)},
    {"presence_penalty", &params::presence_penalty, nullptr, range(-2, 2), range(-2, 2)},
    {"frequency_penalty", &params::frequency_penalty, nullptr, range(-2, 2), range(-2, 2)},
};

}  // namespace

void read_sampling_fields(const http::json & fields, sampling_dialect dialect, engine::sampling_params & s) {
    for (const auto & f : fields_table) {
        const accepted_range & r = dialect == sampling_dialect::openai ? f.openai : f.ollama;
        if (!r.accepted) continue;
        if (f.real) {
            if (auto v = http::opt_number(fields, f.name, r.min, r.max)) s.*f.real = static_cast<float>(*v);
        } else if (auto v = http::opt_int(fields, f.name, static_cast<long long>(r.min), static_cast<long long>(r.max))) {
            s.*f.integer = static_cast<int>(*v);
        }
    }
    const long long seed_min = dialect == sampling_dialect::openai ? -LLONG_MAX : LLONG_MIN;
    if (auto v = http::opt_int(fields, "seed", seed_min, LLONG_MAX)) {
        if (dialect == sampling_dialect::openai || *v >= 0) s.seed = static_cast<uint32_t>(*v);
    }
}

}  // namespace rc::api
