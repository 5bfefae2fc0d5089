#pragma once
// Chat renders kept by the conversation's shape, for prompt-only renders (the fleet gateway's key
// chains, gateway/prompt_keys.h). llama.cpp's Jinja interpreter spends ~50 µs a message, so a
// 20-message conversation costs about a millisecond per routed request. A shape is everything a
// render reads (roles, tool calls, names, tools, flags, today's date) with each message's text
// replaced by a placeholder; it is rendered once, and a request of a known shape is that render
// with its texts spliced in — microseconds.
//
// The result is render_chat's, or render_chat is called:
// * a request is spliced only when every message text is plain (no content parts), holds neither
//   a placeholder's mark nor a markup literal of the template (`'</think>' in content`,
//   `'[TOOL_CALLS]'`, …) and equals no literal of it, and — unless a probe showed that the
//   template trims no role's text — starts and ends with no whitespace;
// * a shape is kept only when every text's placeholder comes out of the render intact (a template
//   that escapes, slices or changes a text's case loses it: that shape renders in full);
// * before first use the template renders a probe set both ways (quotes, backslashes, newlines,
//   non-ASCII, a repeated text): any difference turns the memo off for the model;
// * the first `checked_first` splices are compared with a full render, then one in `check_every`
//   (on a background thread, off the request's path): any difference turns the memo off (logged).
// A chat's next turn is a new shape (two more messages): when a shape ending in a user's message is
// first used, the background thread also renders the shape one turn on (with a reply of its own,
// and with one equal to the last reply), so a conversation's next request finds it kept. The clock is part of the shape only for templates that read it (to the
// minute, or to the second where they may print seconds).
// A template error, a shape that throws: rendered in full (the error is render_chat's own).
// Thread-safe; the model must outlive the memo.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <ctime>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/chat_format.h"
#include "llama/model.h"

namespace rc::engine {

struct render_memo_stats {
    uint64_t hits = 0;        // spliced from a kept shape
    uint64_t misses = 0;      // shape rendered and kept (or found unusable)
    uint64_t bypassed = 0;    // rendered in full: not eligible, or the memo is off
    uint64_t checked = 0;     // splices compared with a full render
    uint64_t mismatches = 0;  // of those, different (turns the memo off)
    size_t shapes = 0;
    size_t bytes = 0;
    bool enabled = true;
    std::string off_reason;
};

class render_memo {
  public:
    static constexpr size_t default_bytes = size_t{8} << 20;
    static constexpr int checked_first = 16;
    static constexpr int check_every = 64;

    explicit render_memo(const llama::model & m, size_t max_bytes = default_bytes);
    ~render_memo();
    render_memo(const render_memo &) = delete;
    render_memo & operator=(const render_memo &) = delete;

    // render_chat(m, in, model_name) for a prompt-only `in` (others go to render_chat as they are).
    result<chat_prompt> render(const chat_input & in, std::string_view model_name = {});

    render_memo_stats stats() const;

  private:
    struct shape {
        bool usable = false;
        bool led = false;                   // its next turn's shape was queued
        std::vector<std::string> literals;  // literals[0] text[at[0]] literals[1] … literals.back()
        std::vector<int> at;                // the message whose text goes between literals i and i + 1
        chat_prompt rest;                   // stops and tool-id style of the render (text empty)
        size_t bytes = 0;
        std::list<std::string>::iterator lru;
    };
    struct job {
        chat_input in;
        std::optional<std::string> spliced;  // set: compare with a full render; unset: keep `in`'s shape
        std::string model_name;
        std::string clock;  // a check: the clock the splice was made at
    };
    static constexpr size_t max_jobs = 16;

    bool eligible(const chat_input & in) const;
    std::string clock() const;
    bool probe_passes(std::string & why);  // also sets edge_space_ok_
    // `lead`: set where this shape's next turn has not been queued yet (and marks it queued).
    std::optional<std::string> splice(const chat_input & in, std::string_view model_name, chat_prompt & rest, bool & kept, bool * lead = nullptr);
    result<chat_prompt> compare(const chat_input & in, const std::string & spliced, std::string_view model_name);
    void turn_off(const std::string & why);
    void enqueue(job j);  // under mu_
    void worker_main();

    const llama::model & model_;
    const size_t max_bytes_;
    std::unordered_set<std::string> literals_;  // the template's string literals
    std::vector<std::string> markup_;           // those that look like markup
    std::atomic<bool> edge_space_ok_{false};  // the probe: no role's text is trimmed
    std::time_t clock_unit_ = 0;                // seconds: the clock in the shape (0: not read)

    mutable std::mutex mu_;
    std::unordered_map<std::string, shape> shapes_;
    std::list<std::string> lru_;  // most recent first
    size_t bytes_ = 0;
    std::optional<bool> probed_;
    render_memo_stats stats_;

    std::condition_variable wake_;
    std::deque<job> jobs_;
    bool stopping_ = false;
    std::thread worker_;
};

}  // namespace rc::engine
