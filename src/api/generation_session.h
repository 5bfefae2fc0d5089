#pragma once
// How a request becomes engine work — the one path for every generating route of both dialects.
//
//   dialect handler (openai/, ollama/, server_routes): JSON → generation_input (its own field names
//     in its 4xx), catalog entry → generation_session::start → run → events shaped into its JSON
//   generation_session::start: leases the model (one load, no second catalog lookup), checks what
//     needs the model (token ids in the vocabulary, embedding vs text model, thinking), renders the
//     chat template or tokenizes the prompts, builds the grammar and stops, submits every choice
//   generation_session::run: pulls the choices' engine events on the HTTP thread, meters them, runs
//     each choice's text through its chat_output_parser and hands out typed session_events;
//     checks every few hundred milliseconds, events or not, that the client is still there
//
// Everything the session refuses before the first event is an api_error thrown from start() (4xx,
// or 503 when the queue is full); once events flow, errors are events. Destroying the session
// cancels what is still running and ends the model lease.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/api_context.h"
#include "api/chat_output.h"
#include "api/generation_meter.h"
#include "http/stream_writer.h"
#include "engine/chat_format.h"
#include "engine/render_memo.h"
#include "engine/engine.h"
#include "models/model_manager.h"

namespace rc::api {
using namespace rc::http;  // written against the HTTP shell (src/http)

// Most messages a chat request may carry: refused before any template work, so that a huge array
// costs a scan, not minutes of rendering. Far above what fits any context a model serves here.
inline constexpr size_t max_chat_messages = 4096;

// A prompt as the client gave it: text to tokenize, or token ids (checked against the vocabulary).
struct prompt_input {
    std::string text;
    std::vector<int32_t> tokens;
    bool is_tokens = false;

    static prompt_input of_text(std::string t) { return {std::move(t), {}, false}; }
    static prompt_input of_tokens(std::vector<int32_t> t) { return {{}, std::move(t), true}; }
};

// A generation request in no dialect's words.
struct generation_input {
    // Chat messages, tools and output constraints, rendered with the model's chat template; their
    // output is parsed into content, reasoning and tool calls. Unset: `prompts` as they are.
    std::optional<engine::chat_input> chat;
    engine::render_memo * render_memo = nullptr;  // a prompt-only chat renders through it (may be null)
    std::vector<prompt_input> prompts;   // without chat: each prompt gets `n` choices (completions take lists)
    bool parse_special = false;          // text prompts: "<|im_start|>" is the special token (raw mode)
    std::string output_schema;           // without chat: a JSON schema the output must satisfy
    std::vector<int32_t> context;        // tokens of an earlier reply to continue (Ollama's `context`)

    engine::generation_request params;   // sampling (logit_bias ids are checked here), stop, max_tokens, logprobs, salt
    int n = 1;                           // choices per prompt
    bool stream = false;                 // parse output while it arrives (else once, at the end)
    bool think = false;                  // the client asked for reasoning: 400 when the template cannot
    std::optional<std::chrono::nanoseconds> keep_alive;  // set on the model when leased (Ollama)

    // For errors in the client's words.
    std::string model;                   // as the client named it
    std::string task = "generate";       // "chat", "generate", "completions": "x does not support <task>"
    std::string prompt_field = "prompt"; // the field holding messages or prompt ("messages", "input", "prompt")
    std::string schema_field = "format"; // the field holding output_schema
};

// One thing that happened to one choice.
struct session_event {
    enum class type {
        delta,  // new output (possibly empty: tokens whose text the parser holds back)
        done,   // the choice ended; `message` is its whole reply
        error,  // the choice failed
        idle,   // nothing arrived for a while (a stream's chance to keep alive)
    };
    type kind = type::delta;
    size_t choice = 0;
    output_delta delta;                        // delta
    std::vector<engine::token_choice> tokens;  // delta: the tokens behind it (with logprobs when asked)
    engine::finish_reason finish = engine::finish_reason::none;  // done
    engine::usage_stats usage;                 // done
    const common_chat_msg * message = nullptr; // done: content, reasoning_content, tool_calls (ids set)
    rc::error error;                           // error
};

class generation_session {
  public:
    using clock = std::chrono::steady_clock;
    // How often run() asks whether the client is still there, whatever arrives.
    static constexpr std::chrono::milliseconds client_check{200};

    // Leases `model`, prepares and submits every choice. Throws api_error: 400 (bad token ids,
    // template or schema refused, wrong kind of model, context overflow), 503 (queue full, memory
    // budget busy), 500 (load failed).
    // `client_gone` (may be empty) stops the chat template's render when the client leaves.
    static std::shared_ptr<generation_session> start(api_context & ctx, const models::model_entry & model, generation_input in,
                                                     std::function<bool()> client_gone = {});
    ~generation_session();
    generation_session(const generation_session &) = delete;
    generation_session & operator=(const generation_session &) = delete;

    // Hands every event to `on_event` until each choice has ended. `client_alive` (may be empty) is
    // asked every client_check; when it says no, or `on_event` returns false, the rest is cancelled
    // (the engine frees their sequences at its next step) and run returns false.
    bool run(const std::function<bool()> & client_alive, const std::function<bool(const session_event &)> & on_event);

    // How routes use run(). A reply sent whole: the request's connection is the client; an error
    // event is thrown as its api_error, a client that left as client_went_away(). `on_event` sees
    // delta and done events.
    void run_whole(const http_request & req, const std::function<void(const session_event &)> & on_event);
    // A streamed reply: `w`'s connection is the client; quiet spells become the stream's
    // keep-alives; an error event is written as `error_chunk` shapes it and ends the stream.
    // `on_event` sees delta and done events and returns false once a write failed. True when
    // every choice ended (the stream may be closed properly).
    bool run_stream(stream_writer & w, const std::function<std::string(const rc::error &)> & error_chunk,
                    const std::function<bool(const session_event &)> & on_event);

    size_t choices() const { return choices_.size(); }
    bool streaming() const { return stream_; }
    const std::string & model_name() const { return model_name_; }  // as the client named it
    const llama::model & model() const { return lease_.engine().model(); }
    // The prompt tokens choice `i` was submitted with (context included).
    const std::vector<llama_token> & prompt_tokens(size_t i) const { return prompts_[choices_[i].prompt]; }
    std::chrono::nanoseconds load_time() const { return load_time_; }

  private:
    struct choice {
        std::shared_ptr<engine::request_channel> channel;
        chat_output_parser output;
        size_t prompt = 0;
        bool finished = false;
    };

    generation_session(api_context & ctx, models::model_lease lease, std::string model_name);
    void prepare(const models::model_entry & model, generation_input & in);
    void submit(generation_input & in);
    // One engine event of choice `i`; false when on_event asked to stop.
    bool handle(size_t i, engine::generation_event & ev, const std::function<bool(const session_event &)> & on_event);
    void cancel_and_drain();

    api_context & ctx_;
    models::model_lease lease_;
    std::string model_name_;
    std::chrono::nanoseconds load_time_{0};
    bool stream_ = false;
    std::optional<common_chat_parser_params> parser_;  // chat: the template's output parser
    engine::tool_id_style tool_ids_ = engine::tool_id_style::any;  // and the form of its tool-call ids
    engine::constraint grammar_;
    std::vector<std::string> template_stops_;
    std::vector<std::vector<llama_token>> prompts_;
    std::vector<int> message_boundaries_;  // of a chat, for a model kept as whole states (engine/message_boundaries.h)
    std::vector<choice> choices_;
    size_t open_ = 0;
    std::optional<generation_meter> meter_;
};

// The prompt tokens a session submits for `in` — the chat rendered with the model's template, or each
// prompt tokenized, after `context` — and the rendered chat's grammar, stops and parser. Throws
// api_error 400 like start(). Also for routes that ask about a prompt without generating
// (POST /v1/kv/lookup).
struct rendered_prompts {
    std::vector<std::vector<llama_token>> prompts;
    std::optional<engine::chat_prompt> chat;
};
rendered_prompts render_prompts(const engine::engine & eng, const generation_input & in);
// The same for a model without an engine (a vocab-only load: the fleet gateway's key chains),
// bounded by a context of `n_ctx` tokens.
rendered_prompts render_prompts(const llama::model & m, int n_ctx, const generation_input & in);

// Prompt text longer than the model's context could hold (n_ctx tokens × the longest token's
// bytes) is a 400 naming `field`, before it is tokenized: tokenizing 30 MB took minutes and
// gigabytes, for a prompt that could never have been served.
void check_prompt_text(const engine::engine & eng, size_t bytes, const std::string & field);
void check_prompt_text(const llama::model & m, int n_ctx, size_t bytes, const std::string & field);
// The text of chat messages (content, parts, reasoning, tool calls): what check_prompt_text bounds
// before a template renders them.
size_t chat_text_bytes(const std::vector<common_chat_msg> & messages);

// The catalog entry for a name a client sent: 404 naming `field` when unknown, 400 for a malformed
// name (bounded and printable in the message). The one catalog lookup of a request.
models::model_entry find_model_entry(api_context & ctx, const std::string & name, const std::string & field = "model");

// A lease on `model` (loading it when needed) with `keep_alive` set when given, for routes that do
// not generate (embeddings, tokenize, load). `load_time` receives the time it took. Throws
// api_error: 400 (quarantined model), 503 (memory budget busy), 500 (load failed).
models::model_lease lease_model(api_context & ctx, const models::model_entry & model,
                                std::optional<std::chrono::nanoseconds> keep_alive = std::nullopt,
                                std::chrono::nanoseconds * load_time = nullptr);

}  // namespace rc::api
