#pragma once
// Plain values the Hub client hands out.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace rc::hub {

// One file of a repository at a revision.
struct repo_file {
    std::string path;     // relative to the repo root, '/'-separated ("Q4_K_M/model-00001-of-00002.gguf")
    uint64_t size = 0;    // bytes of the real content (for LFS files, not of the pointer)
    std::string sha256;   // lower-case hex of the content for LFS files (the LFS oid); empty otherwise

    bool operator==(const repo_file &) const = default;
};

// One repository of a search.
struct search_hit {
    std::string id;  // "owner/name"
    uint64_t downloads = 0;
    uint64_t likes = 0;
    std::vector<std::string> quants;  // canonical names found in its GGUF file names, best-first
};

// A download is about to try again (retry_policy.h), after `delay`.
struct retry_notice {
    int attempt = 0;       // the attempt about to start, 2..max_attempts (counted since new bytes last arrived)
    int max_attempts = 0;
    std::chrono::milliseconds delay{0};
    std::string reason;    // why the last attempt failed, short: "connection reset: ...", "HTTP 503", "stalled: no data for 30 s"
};

// What download() did.
struct download_report {
    std::string sha256;          // lower-case hex of the verified file
    uint64_t size = 0;
    uint64_t resumed_from = 0;   // bytes kept from an earlier attempt (0: a fresh download)
    uint64_t transferred = 0;    // body bytes received over the network by this call
    int attempts = 0;            // requests made for the file by this call (1 when nothing went wrong)
};

}  // namespace rc::hub
