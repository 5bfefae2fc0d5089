// POST /v1/responses — OpenAI's Responses API, stateless (no `previous_response_id` storage). The
// body is read into a generation_input in its own terms (responses_request.h; `max_output_tokens`
// here), and the session's events become a `response` object or,
// streamed, Responses events (`response.created`, …, `response.output_text.delta`, …,
// `response.completed`), each with a sequence_number. An error once streaming has begun ends the
// stream with `response.failed`.
#include "http/api_error.h"
#include "api/chat_messages.h"
#include "api/generation_session.h"
#include "api/openai/openai_common.h"
#include "api/openai/openai_routes.h"
#include "api/openai/responses_request.h"
#include "api/openai/responses_stream.h"
#include "api/reasoning_controls.h"
#include "http/stream_writer.h"
#include "util/safe_quote.h"

namespace rc::api::openai {
using namespace rc::http;  // written against the HTTP shell (src/http)

namespace {

http_response respond_whole(generation_session & s, const response_echo & echo, const http_request & req) {
    json out;
    s.run_whole(req, [&](const session_event & ev) {
        if (ev.kind == session_event::type::done) out = response_json(echo, ev.finish, *ev.message, ev.usage);
    });
    http_response r;
    r.body = dump(out);
    return r;
}

http_response respond_stream(std::shared_ptr<generation_session> s, response_echo echo) {
    return streamed_response("text/event-stream", sse_keep_alive, [s, echo](stream_writer & w) {
        responses_stream events(echo);
        if (!w.write(events.start())) return;
        // A failure once streaming is response.failed, never a response.completed.
        auto failed = [&](const rc::error & e) { return events.fail(e); };
        bool finished = s->run_stream(w, failed, [&](const session_event & ev) {
            std::string bytes = events.on_event(ev);
            return bytes.empty() || w.write(bytes);
        });
        if (finished) w.write(events.finish());
    });
}

http_response handle(api_context & ctx, const http_request & req) {
    json body = parse_body(req);
    generation_input in;
    in.model = require_string(body, "model");
    read_responses_request(body, in);
    in.params.max_tokens = read_max_tokens(body, ctx, {"max_output_tokens"});
    in.stream = opt_bool(body, "stream").value_or(false);

    response_echo echo;
    echo.model = in.model;
    echo.instructions = opt_string(body, "instructions");
    if (auto t = body.find("tools"); t != body.end() && !t->is_null()) echo.tools = *t;
    if (auto c = body.find("tool_choice"); c != body.end() && !c->is_null()) echo.tool_choice = *c;
    echo.parallel_tool_calls = in.chat->parallel_tool_calls;

    const auto entry = find_model_entry(ctx, in.model);  // before `in` moves into the session
    auto session = generation_session::start(ctx, entry, std::move(in), req.client_gone);
    return session->streaming() ? respond_stream(std::move(session), std::move(echo)) : respond_whole(*session, echo, req);
}

}  // namespace

route responses_route(api_context & ctx) {
    return {"POST", "/v1/responses", [&ctx](const http_request & req) { return handle(ctx, req); }};
}

}  // namespace rc::api::openai
