// Seeded, fast, platform-independent random numbers for synthetic weights.
//
// Every chunk of every tensor gets its own generator, seeded from (model seed, tensor name, chunk
// index). The bytes of a file therefore depend only on preset + seed, never on the thread count or
// on the order in which chunks are produced.
#pragma once

#include <cstdint>
#include <string_view>

namespace rc::mkmodel {

// splitmix64 step: expands one 64-bit seed into well-mixed words (used to seed xoshiro).
constexpr uint64_t splitmix64_next(uint64_t & state) {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// FNV-1a: a stable hash of a tensor name (std::hash is not stable across library versions).
constexpr uint64_t fnv1a64(std::string_view text) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const char c : text) {
        h ^= static_cast<uint8_t>(c);
        h *= 0x100000001b3ULL;
    }
    return h;
}

// The seed of chunk `chunk` of tensor `tensor_name` in a model generated with `model_seed`.
constexpr uint64_t chunk_seed(uint64_t model_seed, std::string_view tensor_name, uint64_t chunk) {
    uint64_t s = model_seed ^ fnv1a64(tensor_name);
    s = splitmix64_next(s) ^ (chunk * 0xd1b54a32d192ed03ULL);
    return splitmix64_next(s);
}

// xoshiro256** 1.0 (Blackman & Vigna): fast, good quality, trivially reproducible everywhere.
class rng_xoshiro256 {
public:
    explicit constexpr rng_xoshiro256(uint64_t seed) {
        for (uint64_t & w : s_) {
            w = splitmix64_next(seed);
        }
    }

    constexpr uint64_t next() {
        const uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }

    // Approximately N(0, 1): the Irwin-Hall sum of four 16-bit uniforms from one 64-bit draw.
    // Bounded at about ±3.46, which is what we want for weights (no rare huge outliers), and one
    // PRNG call per value keeps a 1B-parameter model fast to generate.
    constexpr float normal() {
        const uint64_t r = next();
        const int64_t sum = static_cast<int64_t>((r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48));
        // mean of the sum = 4 * 65535/2; std = sqrt(4 * (65536^2 - 1) / 12) ~= 65536 / sqrt(3)
        constexpr float inv_std = 1.7320508f / 65536.0f;
        return static_cast<float>(sum - 131070) * inv_std;
    }

private:
    static constexpr uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

    uint64_t s_[4] = {};
};

}  // namespace rc::mkmodel
