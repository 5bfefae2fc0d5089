// `rustycage run MODEL [PROMPT]`: chat in the terminal, tokens printed as they are generated.
// With PROMPT: one answer, then exit. Without: a conversation read line by line from stdin
// ("/bye" or end of input ends it).
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "commands.h"
#include "engine/chat_format.h"
#include "models/local_catalog.h"

namespace rc::cli {

namespace {

struct run_flags {
    engine_flags eng;
    std::string model;
    std::string prompt;
    std::string system;
    float temperature = 0.8f;
    int max_tokens = 512;
    long long seed = -1;
};

result<std::string> resolve_model_path(const run_flags & f) {
    if (f.model.ends_with(".gguf") && std::filesystem::is_regular_file(f.model)) return f.model;
    auto e = models::local_catalog(f.eng.models_dir).find(f.model);
    if (!e) return e.err();
    return e->path.string();
}

// One assistant turn; returns the parsed reply, or an error message.
result<common_chat_msg> answer(engine::engine & eng, const std::vector<common_chat_msg> & history, const run_flags & f) {
    engine::chat_input in;
    in.messages = history;
    auto prompt = engine::render_chat(eng.model(), in);
    if (!prompt) return prompt.err();
    engine::generation_request req;
    req.prompt = eng.model().tokenize(prompt->text, true, true);
    req.sampling.temperature = f.temperature;
    if (f.seed >= 0) req.sampling.seed = static_cast<uint32_t>(f.seed);
    req.max_tokens = f.max_tokens;
    req.stop = prompt->additional_stops;
    auto ch = eng.submit(std::move(req));
    if (!ch) return ch.err();
    std::string text;
    for (;;) {
        auto ev = ch.value()->pop(std::chrono::milliseconds(1000));
        if (!ev) continue;
        if (ev->kind == engine::generation_event::type::text) {
            text += ev->text;
            std::cout << ev->text << std::flush;
            continue;
        }
        if (ev->kind == engine::generation_event::type::error) return ev->error;
        break;
    }
    std::cout << "\n";
    return engine::parse_chat_output(text, false, prompt->parser);
}

int run(run_flags & f) {
    if (!apply_log_level(f.eng.log_level)) return 2;
    auto path = resolve_model_path(f);
    if (!path) {
        std::cerr << "error: " << path.err().message << " (looked in " << f.eng.models_dir << ")\n";
        return 1;
    }
    llama::model_load_options load;
    load.n_gpu_layers = f.eng.n_gpu_layers;
    auto m = llama::model::load(path.value(), load);
    if (!m) {
        std::cerr << "error: " << m.err().message << "\n";
        return 1;
    }
    if (m.value()->info().is_embedding) {
        std::cerr << "error: " << f.model << " is an embedding model; it cannot chat\n";
        return 1;
    }
    f.eng.engine.n_parallel = 1;
    auto eng = engine::engine::start(m.value(), f.eng.engine);
    if (!eng) {
        std::cerr << "error: " << eng.err().message << "\n";
        return 1;
    }
    std::vector<common_chat_msg> history;
    if (!f.system.empty()) history.push_back(common_chat_msg{"system", f.system, {}, {}, {}, {}, {}});

    const bool interactive = f.prompt.empty();
    const bool tty = isatty(STDIN_FILENO);
    std::string line = f.prompt;
    for (;;) {
        if (interactive) {
            if (tty) std::cout << ">>> " << std::flush;
            if (!std::getline(std::cin, line) || line == "/bye") break;
            if (line.empty()) continue;
        }
        history.push_back(common_chat_msg{"user", line, {}, {}, {}, {}, {}});
        auto reply = answer(*eng.value(), history, f);
        if (!reply) {
            std::cerr << "error: " << reply.err().message << "\n";
            return 1;
        }
        history.push_back(reply.value());
        if (!interactive) break;
    }
    return 0;
}

}  // namespace

void register_run(CLI::App & app, std::function<int()> & action) {
    auto f = std::make_shared<run_flags>();
    auto * cmd = app.add_subcommand("run", "Chat with a model in the terminal");
    cmd->add_option("model", f->model, "Model name (in --models-dir) or path to a .gguf file")->required();
    cmd->add_option("prompt", f->prompt, "Answer this one prompt and exit (default: interactive)");
    add_engine_flags(*cmd, f->eng);
    f->eng.engine.n_ctx = 4096;
    cmd->add_option("--system", f->system, "System prompt");
    cmd->add_option("--temperature", f->temperature, "Sampling temperature (0: greedy)")->check(CLI::Range(0.0, 2.0))->capture_default_str();
    cmd->add_option("-n,--max-tokens", f->max_tokens, "Most tokens per answer")->check(CLI::Range(1, 1 << 20))->capture_default_str();
    cmd->add_option("--seed", f->seed, "Sampling seed (-1: random)");
    cmd->callback([f, &action] { action = [f] { return run(*f); }; });
}

}  // namespace rc::cli
