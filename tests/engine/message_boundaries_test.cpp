// Message boundaries (engine/message_boundaries.h), over every chat template in the pinned llama.cpp
// tree: what a model kept as whole states stores a state at must be a prefix the next requests share.
//  * the history boundary: the next turn's prompt (this reply and a new question appended) agrees with
//    this prompt up to it;
//  * the system boundary: another conversation with the same system prompt agrees up to it.
// And on the templates the lab runs most, each reaches past the text it marks.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/message_boundaries.h"
#include "test_models.h"

using namespace rc;
using namespace rc::engine;

namespace {

std::shared_ptr<llama::model> with_template(const std::filesystem::path & file) {
    std::ifstream in(file);
    std::stringstream s;
    s << in.rdbuf();
    llama::model_load_options lo;
    lo.vocab_only = true;
    lo.chat_template = s.str();
    auto m = llama::model::load(test::model_path("tiny-chat"), lo);
    return m && m.value()->templates() ? m.value() : nullptr;
}

common_chat_msg msg(const std::string & role, const std::string & content) {
    common_chat_msg m;
    m.role = role;
    m.content = content;
    return m;
}

const std::string k_system = "You are the lab's assistant. Answer in one short paragraph and name the host you mean.";

chat_input chat_of(std::vector<common_chat_msg> messages) {
    chat_input in;
    in.messages = std::move(messages);
    in.prompt_only = true;
    return in;
}

std::optional<std::vector<llama_token>> tokens_of(const llama::model & m, const chat_input & in) {
    auto r = render_chat(m, in);
    if (!r) return std::nullopt;
    return m.tokenize(r->text, true, true);
}

size_t common(const std::vector<llama_token> & a, const std::vector<llama_token> & b) {
    return static_cast<size_t>(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin());
}

struct measured {
    int system = 0, history = 0, prompt = 0;
};

// Boundaries of [system, user] and whether they hold against the next turn and a second conversation.
std::optional<measured> check(const llama::model & m, const std::string & name) {
    const auto turn1 = chat_of({msg("system", k_system), msg("user", "Which cards do we run?")});
    const auto turn2 = chat_of({msg("system", k_system), msg("user", "Which cards do we run?"), msg("assistant", "Two old ones."),
                                msg("user", "And how much memory?")});
    const auto other = chat_of({msg("system", k_system), msg("user", "Restart the agent on rack four.")});
    auto p1 = tokens_of(m, turn1), p2 = tokens_of(m, turn2), po = tokens_of(m, other);
    if (!p1 || !p2 || !po) return std::nullopt;  // a template that refuses one of these chats
    const auto b = message_boundaries(m, turn1, *p1, nullptr);
    measured out{b.system_end, b.history_end, static_cast<int>(p1->size())};
    EXPECT_LE(out.history, out.prompt) << name;
    EXPECT_LE(static_cast<size_t>(out.history), common(*p1, *p2)) << name << ": the next turn does not share the history boundary";
    EXPECT_LE(static_cast<size_t>(out.system), common(*p1, *po)) << name << ": another conversation does not share the system boundary";
    const auto positions = b.positions(out.prompt);
    EXPECT_TRUE(std::is_sorted(positions.begin(), positions.end())) << name;
    for (int at : positions) EXPECT_TRUE(at > 0 && at < out.prompt) << name;
    return out;
}

}  // namespace

TEST(message_boundaries, every_template_marks_prefixes_that_the_next_turn_and_other_conversations_share) {
    size_t templates = 0, with_history = 0, with_system = 0;
    for (const auto & f : std::filesystem::directory_iterator(RC_LLAMA_TEMPLATES_DIR)) {
        if (f.path().extension() != ".jinja") continue;
        auto m = with_template(f.path());
        if (!m) continue;
        auto r = check(*m, f.path().filename().string());
        if (!r) continue;
        ++templates;
        with_history += r->history > 0;
        with_system += r->system > 0;
    }
    EXPECT_GT(templates, 50u);
    EXPECT_GT(with_history, templates * 9 / 10) << "nearly every template has a history boundary";
    std::printf("templates=%zu with_history=%zu with_system=%zu\n", templates, with_history, with_system);
    EXPECT_GT(with_system, templates / 2) << "most templates have a system boundary";
}

TEST(message_boundaries, on_the_lab_templates_each_boundary_covers_the_text_before_it) {
    for (const char * name : {"Qwen-Qwen3-0.6B.jinja", "google-gemma-2-2b-it.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja",
                              "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja", "google-gemma-4-31B-it.jinja"}) {
        auto m = with_template(std::filesystem::path(RC_LLAMA_TEMPLATES_DIR) / name);
        ASSERT_TRUE(m) << name;
        auto r = check(*m, name);
        ASSERT_TRUE(r) << name;
        const int system_text = static_cast<int>(m->tokenize(k_system, false, false).size());
        const int question = static_cast<int>(m->tokenize("Which cards do we run?", false, false).size());
        EXPECT_GE(r->system, system_text) << name << ": the system boundary lies inside the system prompt";
        EXPECT_GE(r->history, r->system + question) << name << ": the history boundary lies inside the question";
    }
}
