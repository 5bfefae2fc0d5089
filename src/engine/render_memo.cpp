#include "engine/render_memo.h"

#include <chat.h>

#include <ctime>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "llama/compute_thread.h"
#include "util/log.h"

namespace rc::engine {

namespace {

// A placeholder: "⁅rc\" index "⁆" (U+2045, U+2046). Printed as it is, it survives; escaped (tojson
// doubles the backslash), sliced, or with its case changed it no longer parses, and the shape is
// not kept.
constexpr std::string_view mark_open = "\xE2\x81\x85rc\\";
constexpr std::string_view mark_close = "\xE2\x81\x86";

std::string placeholder(int i) { return std::string(mark_open) + std::to_string(i) + std::string(mark_close); }

// Whitespace a template's trim or strip could take off an end: ASCII, and the Unicode spaces.
bool space_at_end(std::string_view t, bool front) {
    static constexpr std::string_view unicode[] = {"\xC2\x85", "\xC2\xA0", "\xE1\x9A\x80", "\xE2\x80\xA8", "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80"};
    const unsigned char c = static_cast<unsigned char>(front ? t.front() : t.back());
    if (c == ' ' || (c >= '\t' && c <= '\r')) return true;
    const std::string_view end3 = t.size() < 3 ? t : front ? t.substr(0, 3) : t.substr(t.size() - 3);
    if (end3.size() == 3 && end3.starts_with("\xE2\x80") && static_cast<unsigned char>(end3[2]) >= 0x80 && static_cast<unsigned char>(end3[2]) <= 0x8A)
        return true;  // U+2000..U+200A
    for (auto u : unicode)
        if (front ? t.starts_with(u) : t.ends_with(u)) return true;
    return false;
}

// The string literals inside a template's {{ … }} and {% … %} tags, unescaped.
std::vector<std::string> template_literals(const std::string & src) {
    std::vector<std::string> out;
    size_t i = 0;
    while ((i = src.find('{', i)) != std::string::npos) {
        if (i + 1 >= src.size() || (src[i + 1] != '{' && src[i + 1] != '%')) {
            ++i;
            continue;
        }
        const std::string close = src[i + 1] == '{' ? "}}" : "%}";
        for (i += 2; i < src.size() && src.compare(i, 2, close) != 0; ++i) {
            if (src[i] != '\'' && src[i] != '"') continue;
            const char quote = src[i];
            std::string lit;
            for (++i; i < src.size() && src[i] != quote; ++i) {
                if (src[i] != '\\' || i + 1 >= src.size()) {
                    lit += src[i];
                    continue;
                }
                const char e = src[++i];
                lit += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
            }
            out.push_back(std::move(lit));
        }
    }
    return out;
}

// Whose texts are spliced: a tool result stays in the shape as it is (llama.cpp reads one that is
// JSON as an object, and templates print it that way).
bool spliced_role(const std::string & role) { return role == "user" || role == "assistant" || role == "system" || role == "developer"; }

// A request's texts → the placeholder each gets: the index of the first message with that text (so
// a template comparing two messages sees them equal exactly when they are); -1: the text as it is
// (empty, or not a spliced role's).
std::vector<int> text_slots(const chat_input & in) {
    std::vector<int> slot(in.messages.size(), -1);
    std::unordered_map<std::string_view, int> first;
    for (size_t i = 0; i < in.messages.size(); ++i) {
        const std::string & t = in.messages[i].content;
        if (!t.empty() && spliced_role(in.messages[i].role)) slot[i] = first.emplace(t, static_cast<int>(i)).first->second;
    }
    return slot;
}

void put(std::string & key, std::string_view s) {
    key += std::to_string(s.size());
    key += ':';
    key.append(s);
}

// Everything a render reads but the texts, and the clock where the template reads it (`clock`).
std::string shape_key(const chat_input & in, const std::vector<int> & slot, const std::string & clock) {
    std::string key;
    key.reserve(256);
    put(key, clock);
    put(key, std::string{static_cast<char>('0' + in.add_generation_prompt), static_cast<char>('0' + in.enable_thinking),
                         static_cast<char>('0' + in.parallel_tool_calls)});
    put(key, std::to_string(static_cast<int>(in.tool_choice)) + "/" + std::to_string(static_cast<int>(in.reasoning_format)));
    put(key, in.json_schema);
    put(key, in.grammar);
    for (const auto & [k, v] : in.template_kwargs) {
        put(key, k);
        put(key, v);
    }
    key += '|';
    for (const auto & t : in.tools) {
        put(key, t.name);
        put(key, t.description);
        put(key, t.parameters);
    }
    key += '|';
    for (size_t i = 0; i < in.messages.size(); ++i) {
        const auto & m = in.messages[i];
        put(key, m.role);
        put(key, slot[i] >= 0 ? std::to_string(slot[i]) : "=" + m.content);
        put(key, m.reasoning_content);
        put(key, m.tool_name);
        put(key, m.tool_call_id);
        for (const auto & c : m.tool_calls) {
            put(key, c.name);
            put(key, c.arguments);
            put(key, c.id);
        }
        key += ';';
    }
    return key;
}

// Conversations whose texts a template that only prints them renders the same spliced or not.
std::vector<chat_input> probe_set() {
    auto msg = [](std::string role, std::string content) {
        common_chat_msg m;
        m.role = std::move(role);
        m.content = std::move(content);
        return m;
    };
    const std::string odd = "First line\nsecond \"quoted\" line, a back\\slash \u2013 na\u00efve caf\u00e9 \u2713";
    std::vector<chat_input> out(3);
    out[0].messages = {msg("system", "Probe: answer in 'one' word."), msg("user", odd), msg("assistant", "Reply {\"a\": [1, 2]}\tdone."), msg("user", odd)};
    out[1].messages = {msg("user", odd)};
    out[2].messages = {msg("user", "a"), msg("assistant", "b"), msg("user", "c")};
    for (auto & in : out) in.prompt_only = true;
    return out;
}

}  // namespace

render_memo::render_memo(const llama::model & m, size_t max_bytes) : model_(m), max_bytes_(max_bytes) {
    if (!m.templates()) return;
    std::unordered_set<std::string> seen;
    for (const char * variant : {"", "tool_use"}) {
        const std::string src = common_chat_templates_source(m.templates(), variant);
        // strftime_now (Llama 3's "Today Date"): the shape holds the clock to the minute, or to the
        // second where a format may print seconds; llama.cpp's `datetime` context variable (a date
        // today, its format not ours to know): to the second.
        if (src.find("datetime") != std::string::npos) clock_unit_ = 1;
        if (src.find("strftime_now") != std::string::npos && clock_unit_ == 0) {
            clock_unit_ = 60;
            for (const char * spec : {"%S", "%T", "%c", "%X", "%r", "%s", "%+"})
                if (src.find(spec) != std::string::npos) clock_unit_ = 1;
        }
        for (auto & lit : template_literals(src)) {
            if (lit.empty() || !seen.insert(lit).second) continue;
            literals_.insert(lit);
            if (lit.size() >= 2 && lit.find_first_of("<>[]{}|/") != std::string::npos) markup_.push_back(lit);
        }
    }
}

std::string render_memo::clock() const { return clock_unit_ ? std::to_string(std::time(nullptr) / clock_unit_) : std::string(); }

render_memo::~render_memo() {
    {
        std::lock_guard lock(mu_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (worker_.joinable()) worker_.join();
}

bool render_memo::eligible(const chat_input & in) const {
    for (const auto & m : in.messages) {
        if (!m.content_parts.empty()) return false;
        const std::string & t = m.content;
        if (t.empty() || !spliced_role(m.role)) continue;
        if ((!edge_space_ok_ && (space_at_end(t, true) || space_at_end(t, false))) || t.find(mark_open) != std::string::npos || literals_.contains(t)) return false;
        for (const auto & lit : markup_)
            if (t.find(lit) != std::string::npos) return false;
    }
    return true;
}

std::optional<std::string> render_memo::splice(const chat_input & in, std::string_view model_name, chat_prompt & rest, bool & kept, bool * lead) {
    const auto slot = text_slots(in);
    const std::string key = shape_key(in, slot, clock());
    auto build = [&](const shape & s) {
        std::string text = s.literals.front();
        for (size_t i = 0; i < s.at.size(); ++i) {
            text += in.messages[static_cast<size_t>(s.at[i])].content;
            text += s.literals[i + 1];
        }
        rest = s.rest;
        return text;
    };
    {
        std::lock_guard lock(mu_);
        if (auto it = shapes_.find(key); it != shapes_.end()) {
            lru_.splice(lru_.begin(), lru_, it->second.lru);
            kept = false;
            if (lead) *lead = !std::exchange(it->second.led, true);
            if (!it->second.usable) return std::nullopt;
            return build(it->second);
        }
    }
    chat_input sh = in;
    for (size_t i = 0; i < sh.messages.size(); ++i)
        if (slot[i] >= 0) sh.messages[i].content = placeholder(slot[i]);
    shape s;
    if (auto r = render_chat(model_, sh, model_name); r) {
        s.usable = true;
        const std::string & text = r->text;
        std::vector<bool> seen(in.messages.size(), false);
        size_t from = 0;
        for (size_t at; (at = text.find(mark_open, from)) != std::string::npos && s.usable;) {
            size_t end = at + mark_open.size();
            int idx = 0;
            const size_t digits = end;
            while (end < text.size() && end - digits < 6 && std::isdigit(static_cast<unsigned char>(text[end]))) idx = idx * 10 + (text[end++] - '0');
            if (end == digits || text.compare(end, mark_close.size(), mark_close) != 0 || idx >= static_cast<int>(slot.size()) || slot[static_cast<size_t>(idx)] != idx) {
                s.usable = false;
                break;
            }
            s.literals.push_back(text.substr(from, at - from));
            s.at.push_back(idx);
            seen[static_cast<size_t>(idx)] = true;
            from = end + mark_close.size();
        }
        s.literals.push_back(text.substr(from));
        for (size_t i = 0; i < slot.size() && s.usable; ++i)
            if (slot[i] == static_cast<int>(i) && !seen[i]) s.usable = false;  // a text the render lost or changed
        if (s.usable) {
            s.rest = std::move(r.value());
            s.rest.text.clear();
        } else {
            s.literals.clear();
            s.at.clear();
        }
    }
    s.bytes = key.size() + sizeof(shape);
    for (const auto & l : s.literals) s.bytes += l.size();
    std::optional<std::string> out;
    if (s.usable) out = build(s);
    kept = true;
    s.led = lead != nullptr;
    if (lead) *lead = true;
    std::lock_guard lock(mu_);
    if (shapes_.contains(key)) return out;  // another thread kept it meanwhile
    lru_.push_front(key);
    s.lru = lru_.begin();
    bytes_ += s.bytes;
    shapes_.emplace(key, std::move(s));
    while (bytes_ > max_bytes_ && lru_.size() > 1) {
        auto old = shapes_.find(lru_.back());
        bytes_ -= old->second.bytes;
        shapes_.erase(old);
        lru_.pop_back();
    }
    return out;
}

bool render_memo::probe_passes(std::string & why) {
    for (auto & p : probe_set()) {
        auto full = render_chat(model_, p);
        if (!full) continue;  // a conversation this template refuses
        chat_prompt rest;
        bool kept = false;
        auto spliced = splice(p, {}, rest, kept);
        if (spliced && *spliced != full->text) {
            why = "the template changes a message's text (a probe spliced differently than it rendered)";
            return false;
        }
    }
    // Texts with whitespace at their ends: spliced too where no role's text is trimmed.
    auto msg = [](const char * role, const char * content) {
        common_chat_msg m;
        m.role = role;
        m.content = content;
        return m;
    };
    chat_input edge;
    edge.prompt_only = true;
    edge.messages = {msg("system", " Be brief. "), msg("user", "\n Hello there \n"), msg("assistant", " Hi.\n"), msg("user", "\tAnd again ")};
    if (auto full = render_chat(model_, edge)) {
        chat_prompt rest;
        bool kept = false;
        auto spliced = splice(edge, {}, rest, kept);
        edge_space_ok_ = spliced && *spliced == full->text;
    }
    return true;
}

void render_memo::turn_off(const std::string & why) {
    // Under mu_.
    if (!stats_.enabled) return;
    stats_.enabled = false;
    stats_.off_reason = why;
    shapes_.clear();
    lru_.clear();
    bytes_ = 0;
    rc::log::warn("render_memo", "off", {{"reason", why}});
}

result<chat_prompt> render_memo::compare(const chat_input & in, const std::string & spliced, std::string_view model_name) {
    auto full = render_chat(model_, in, model_name);
    if (!full) return full;  // the template refuses it (so does the host): nothing to compare
    std::lock_guard lock(mu_);
    ++stats_.checked;
    if (full->text == spliced) return full;
    ++stats_.mismatches;
    turn_off("a spliced render differed from the full render");
    return full;
}

void render_memo::enqueue(job j) {
    if (stopping_ || jobs_.size() >= max_jobs) return;
    j.in.cancelled = nullptr;  // the request's own: it may be gone before the job runs
    jobs_.push_back(std::move(j));
    if (!worker_.joinable()) worker_ = std::thread([this] { worker_main(); });
    wake_.notify_one();
}

void render_memo::worker_main() {
    // Its renders (~1 ms each) are checks and the next turn's shape: they give way to requests at once.
    (void) llama::lower_compute_priority(19);
    std::unique_lock lock(mu_);
    for (;;) {
        wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (stopping_) return;
        job j = std::move(jobs_.front());
        jobs_.pop_front();
        if (!stats_.enabled) continue;
        lock.unlock();
        if (j.spliced) {
            if (j.clock == clock()) (void) compare(j.in, *j.spliced, j.model_name);  // else the text may differ by the time alone
        } else {
            chat_prompt rest;
            bool kept = false;
            (void) splice(j.in, j.model_name, rest, kept);
        }
        lock.lock();
    }
}

result<chat_prompt> render_memo::render(const chat_input & in, std::string_view model_name) {
    if (!in.prompt_only) return render_chat(model_, in, model_name);
    bool probe = false;
    {
        std::lock_guard lock(mu_);
        probe = stats_.enabled && !probed_;
    }
    if (probe) {
        std::string why;
        const bool ok = probe_passes(why);
        std::lock_guard lock(mu_);
        probed_ = probed_.value_or(true) && ok;
        if (!ok) turn_off(why);
    }
    bool use = eligible(in);
    {
        std::lock_guard lock(mu_);
        use = use && stats_.enabled;
        if (!use) ++stats_.bypassed;
    }
    if (!use) return render_chat(model_, in, model_name);
    chat_prompt out;
    bool kept = false, lead = false;
    auto text = splice(in, model_name, out, kept, &lead);
    std::unique_lock lock(mu_);
    if (!text || !stats_.enabled) {
        ++stats_.bypassed;
        lock.unlock();
        return render_chat(model_, in, model_name);
    }
    const uint64_t n = stats_.hits + stats_.misses;
    ++(kept ? stats_.misses : stats_.hits);
    if (n < checked_first || n % check_every == 0) enqueue({in, *text, std::string(model_name), clock()});
    if (lead && in.messages.back().role == "user") {
        // The conversation's next request: this one, a reply and a question — a reply of its own,
        // and one equal to the last reply (short replies repeat: equal texts share a placeholder).
        const common_chat_msg * last_reply = nullptr;
        for (const auto & m : in.messages)
            if (m.role == "assistant" && !m.content.empty()) last_reply = &m;
        for (const bool repeated : {false, true}) {
            if (repeated && !last_reply) break;
            job next{in, std::nullopt, std::string(model_name), {}};
            common_chat_msg reply, question;
            reply.role = "assistant";
            reply.content = repeated ? last_reply->content : "rc-next-reply";
            question.role = "user";
            question.content = "rc-next-question";
            next.in.messages.push_back(std::move(reply));
            next.in.messages.push_back(std::move(question));
            enqueue(std::move(next));
        }
    }
    out.text = std::move(*text);
    return out;
}

render_memo_stats render_memo::stats() const {
    std::lock_guard lock(mu_);
    render_memo_stats s = stats_;
    s.shapes = shapes_.size();
    s.bytes = bytes_;
    return s;
}

}  // namespace rc::engine
