#pragma once
// Rewrites of the tool-call grammars llama.cpp's chat templates produce (GBNF text), so that what an
// OpenAI client asked for is what the sampler allows:
//   * tool_choice required / named: the reply *is* a call, so no free text may precede it;
//   * parallel_tool_calls false: at most one call.
// Each returns the grammar unchanged when its root has nothing to rewrite.
#include <string>

namespace rc::engine {

// Drops from the root rule every free-text span (llama.cpp's `until-N` rules) that may come before the
// call: a plain text prefix ("<|im_start|>assistant\n" until-61 tool-call), a response section (Command-R's
// "<|START_RESPONSE|>" until-201 "<|END_RESPONSE|>"), messages repeated before the call (gpt-oss's
// `(start any)*`, when `drop_repeated`). A reasoning block (a group that opens with a "think"
// marker) is kept, unless `keep_reasoning` is false (thinking off on a template whose generation
// prompt does not close the block itself, Command R7B's): then only its empty markers may come.
std::string require_immediate_tool_call(const std::string & gbnf, bool drop_repeated = true, bool keep_reasoning = true);

// For a grammar whose root repeats messages before the call that must stay (Gemma 4 with thinking off:
// the generation prompt holds a closed thought block the grammar is fed): takes the free text out of
// the repeated rule and allows one, `message* tool-call` with `message ::= (thought | ) content`
// becoming `message? tool-call` with `message ::= thought`: at most one reasoning block, then the call.
std::string drop_free_text_in_repeated(const std::string & gbnf);

// Removes the repetition some of llama.cpp's tool-call grammars put around the call.
std::string allow_one_tool_call(const std::string & gbnf);

}  // namespace rc::engine
