#pragma once
// Plain values the Hub client hands out.
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

// What download() did.
struct download_report {
    std::string sha256;          // lower-case hex of the verified file
    uint64_t size = 0;
    uint64_t resumed_from = 0;   // bytes kept from an earlier attempt (0: a fresh download)
    uint64_t transferred = 0;    // body bytes received over the network by this call
};

}  // namespace rc::hub
