#pragma once
// Small statistics and the deterministic prompt generator shared by the scenarios.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace rc::bench {

// Percentile with linear interpolation between closest ranks (p in [0,100]); NaN-free: empty -> -1.
inline double percentile(std::vector<double> v, double p) {
    if (v.empty()) return -1;
    std::sort(v.begin(), v.end());
    const double rank = p / 100.0 * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(rank);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

inline double median(std::vector<double> v) { return percentile(std::move(v), 50); }

inline uint64_t splitmix64(uint64_t & x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

inline uint64_t hash_str(const std::string & s, uint64_t h = 1469598103934665603ULL) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
    return h;
}

// `n` token ids drawn from plain word pieces of the vocabulary (ids [lo, hi): no control, byte or
// special tokens), fully determined by `key`: the same key gives the same prompt on every server, a
// different key a prompt that shares no prefix with it (first tokens collide with p ~ 1/29000).
struct prompt_source {
    int lo = 1000, hi = 30000;
    std::vector<int> make(const std::string & key, int n) const {
        uint64_t s = hash_str(key);
        std::vector<int> out;
        out.reserve(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) out.push_back(lo + static_cast<int>(splitmix64(s) % static_cast<uint64_t>(hi - lo)));
        return out;
    }
};

}  // namespace rc::bench
