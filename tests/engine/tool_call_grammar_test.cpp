// The rewrites that hold a forced tool call (engine/tool_call_grammar.h), on the shapes of the
// grammars llama.cpp builds: Gemma 4's repeated messages and Command R7B's optional thinking block,
// both found by the architecture matrix letting a random-weight model ramble instead of calling.
#include <gtest/gtest.h>

#include <string>

#include "engine/tool_call_grammar.h"

namespace {

using rc::engine::drop_free_text_in_repeated;
using rc::engine::require_immediate_tool_call;

// Gemma 4's shape: messages (an optional thought, then free text) repeated before the call.
const std::string k_gemma4 =
    "content ::= until-164\n"
    "message ::= (thought | ) content\n"
    "root ::= start message*  tool-call\n"
    "start ::= \"<|turn>model\\n\"?\n"
    "thought ::= \"<|channel>thought\" space until-5 \"<channel|>\"\n"
    "tool-call ::= \"<|tool_call>call:\" \"f\" \"<tool_call|>\"\n"
    "until-164 ::= | [^<] until-164\n"
    "until-5 ::= | [^<] until-5\n";

TEST(tool_call_grammar, repeated_messages_keep_one_thought_and_no_free_text) {
    const std::string g = drop_free_text_in_repeated(k_gemma4);
    EXPECT_NE(g.find("\nmessage ::= thought\n"), std::string::npos) << g;
    EXPECT_NE(g.find("\nroot ::= start message?  tool-call\n"), std::string::npos) << g;
    EXPECT_NE(g.find("thought ::= \"<|channel>thought\" space until-5"), std::string::npos) << "the thought itself is untouched";
}

TEST(tool_call_grammar, a_grammar_without_repeated_free_text_is_left_alone) {
    const std::string plain = "root ::= \"<tool_call>\" tool-call\ntool-call ::= \"x\"\n";
    EXPECT_EQ(drop_free_text_in_repeated(plain), plain);
}

// Command R7B's shape: an optional thinking block, an optional response, then the call.
const std::string k_command_r =
    "root ::= space (\"<|START_THINKING|>\" until-4 \"<|END_THINKING|>\")? (\"<|START_RESPONSE|>\" until-9 \"<|END_RESPONSE|>\")? tool-call\n"
    "until-4 ::= | [^<] until-4\n"
    "until-9 ::= | [^<] until-9\n";

TEST(tool_call_grammar, thinking_off_takes_the_text_out_of_a_reasoning_block_too) {
    const std::string kept = require_immediate_tool_call(k_command_r);
    const std::string kept_root = kept.substr(0, kept.find('\n'));
    EXPECT_NE(kept_root.find("until-4"), std::string::npos) << "thinking on: the reasoning stays: " << kept_root;
    EXPECT_EQ(kept_root.find("until-9"), std::string::npos) << "the response text goes either way: " << kept_root;
    const std::string off = require_immediate_tool_call(k_command_r, true, false);
    const std::string root = off.substr(0, off.find('\n'));
    EXPECT_EQ(root.find("until-4"), std::string::npos) << root;
    EXPECT_NE(root.find("\"<|START_THINKING|>\"  \"<|END_THINKING|>\""), std::string::npos) << "only the empty markers may come: " << root;
}

}  // namespace
