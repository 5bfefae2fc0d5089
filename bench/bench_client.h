#pragma once
// One OpenAI /v1/completions request against any server (Rustycage, llama-server), streamed over SSE,
// with client-side timestamps for every token chunk. Thread-safe: each call opens its own connection.
#include <atomic>
#include <string>
#include <vector>

namespace rc::bench {

// Seconds on a steady clock, from a process-wide origin (so times of concurrent requests compare).
double now_s();

struct target {
    std::string name;  // label in results, e.g. "rustycage", "llama-server"
    std::string host = "127.0.0.1";
    int port = 0;
};

// Parses NAME=http://HOST:PORT; returns false when malformed.
bool parse_target(const std::string & spec, target & out);

struct completion_params {
    std::string model;
    std::vector<int> prompt;  // token ids: exact prompt lengths on every server, no tokenizer in the way
    int max_tokens = 16;
    bool stream = true;
    std::vector<int> banned;  // token ids given logit_bias -100 (see rc-bench --ban-tokens)
    double timeout_s = 900;
    const std::atomic<bool> * stop = nullptr;  // when set and true, the client disconnects (server cancels)
    std::atomic<int> * tokens_seen = nullptr;  // when set, incremented on every token chunk (for pacing)
};

struct completion_result {
    bool ok = false;
    bool stopped = false;  // ended by `stop`, not by the server
    int status = 0;
    std::string error;
    double t_send = 0;               // now_s() when the request was sent
    double t_end = 0;                // last byte received
    std::vector<double> token_times; // now_s() of each chunk that carried text
    int prompt_tokens = -1;          // from usage, when the server sent it
    int completion_tokens = -1;
    int cached_tokens = -1;          // usage.prompt_tokens_details.cached_tokens, when present
    double ttft() const { return token_times.empty() ? -1 : token_times.front() - t_send; }
};

completion_result run_completion(const target & t, const completion_params & p);

// GET path; returns the HTTP status (0 when unreachable).
int http_get_status(const target & t, const std::string & path, double timeout_s = 2);

// POST path with an empty JSON body; returns the HTTP status (0 when unreachable).
int http_post_status(const target & t, const std::string & path, double timeout_s = 60);

}  // namespace rc::bench
