// rustycage: an LLM inference server on llama.cpp with block-level KV tiering.
#include "commands.h"

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
    rc::cli::register_version(app, action);
    rc::cli::register_release(app, action);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError & e) {
        return app.exit(e);
    }
    return action ? action() : 0;
}
