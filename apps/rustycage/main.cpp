// rustycage: an LLM inference server on llama.cpp with block-level KV tiering.
#include <iostream>

#include "commands.h"
#include "version.h"

int main(int argc, char ** argv) {
    CLI::App app{"Rustycage — OpenAI- and Ollama-compatible LLM server on llama.cpp"};
    app.require_subcommand(1);
    std::function<int()> action;
    rc::cli::register_serve(app, action);
    rc::cli::register_run(app, action);
    for (auto reg : {rc::cli::register_pull, rc::cli::register_list, rc::cli::register_show, rc::cli::register_rm, rc::cli::register_cp,
                     rc::cli::register_create, rc::cli::register_search, rc::cli::register_ps})
        reg(app, action);
    for (auto reg : {rc::cli::register_agent, rc::cli::register_fleet, rc::cli::register_incidents, rc::cli::register_gateway})
        reg(app, action);
    app.add_subcommand("version", "Print the version and the pinned llama.cpp commit")->callback([&action] {
        action = [] {
            std::cout << "rustycage " << RUSTYCAGE_VERSION << " (llama.cpp " << RUSTYCAGE_LLAMA_COMMIT << ")\n";
            return 0;
        };
    });
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError & e) {
        return app.exit(e);
    }
    return action ? action() : 0;
}
