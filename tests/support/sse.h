#pragma once
// Server-sent events read as the spec reads them (HTML Living Standard, "event stream
// interpretation"): lines end in LF, CRLF or CR; a blank line ends an event; a line starting with
// ':' is a comment (the server's `: keep-alive` while a token is slow), never an event; "field:
// value" drops one space after the colon; several data lines join with LF; fields other than
// data, event, id and retry are ignored. A test that parses a stream uses this, so a slow machine's
// keep-alives never read as a malformed stream.
#include <string>
#include <vector>

namespace rc::test {

struct sse_event {
    std::string event;  // the `event:` field ("" when none came)
    std::string data;
};

struct sse_stream {
    std::vector<sse_event> events;
    int comments = 0;                 // `:` lines seen (keep-alives)
    std::vector<std::string> unknown;  // lines whose field the spec does not name
};

inline sse_stream parse_sse(const std::string & body) {
    sse_stream out;
    sse_event cur;
    bool has_data = false;
    auto dispatch = [&] {
        if (has_data) out.events.push_back(cur);
        cur = sse_event{};
        has_data = false;
    };
    size_t i = 0;
    while (i < body.size()) {
        size_t end = body.find_first_of("\r\n", i);
        if (end == std::string::npos) break;  // an unterminated last line is not part of any event
        const std::string line = body.substr(i, end - i);
        i = end + (body[end] == '\r' && end + 1 < body.size() && body[end + 1] == '\n' ? 2 : 1);
        if (line.empty()) {
            dispatch();
            continue;
        }
        if (line[0] == ':') {
            ++out.comments;
            continue;
        }
        const size_t colon = line.find(':');
        const std::string field = line.substr(0, colon);
        std::string value = colon == std::string::npos ? "" : line.substr(colon + 1);
        if (!value.empty() && value[0] == ' ') value.erase(0, 1);
        if (field == "data") {
            cur.data += (has_data ? "\n" : "") + value;
            has_data = true;
        } else if (field == "event") {
            cur.event = value;
        } else if (field != "id" && field != "retry") {
            out.unknown.push_back(line);
        }
    }
    dispatch();
    return out;
}

}  // namespace rc::test
