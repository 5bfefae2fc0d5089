# Writes the test models unless they exist and are newer than the generator (same preset + seed ⇒
# same bytes, so reuse is safe).
#   tiny-chat      F16 chat model with a tool-capable template — most tests
#   tiny-chat-q8   the same shape in Q8_0: with an F32 KV cache llama.cpp's CPU kernels are bit-exact
#                  across batch shapes (integer dot products), so tests that demand bit-identical
#                  greedy output across batch compositions use it
#   tiny-chat-f32  the same shape in F32: not bit-exact across batch shapes or KV cell layouts, but off
#                  by less than 1e-4 in logits (tiny-chat-q8 amplifies a one-ULP difference to tenths), so
#                  tests that compare greedy output across different KV layouts use it (greedy_margin.h)
#   tiny-embed     BERT embedding model
#   tiny-mamba     recurrent (Mamba-1) chat model: per-sequence state instead of a KV cache
#   bench-tiny     2 layers x 256 with a 32k vocabulary: its compute buffers grow with the context
#                  (tiny-chat's are its 152k-token logits whatever the context), for the fit's tests
#   <family>-f32   the architecture matrix (tests/integration/architecture_matrix_test.cpp): one model per
#                  family the lab runs, in F32 so that resuming from a tier must give identical greedy
#                  output (docs/KV_TIERING.md, "Numerics")
set(families tiny-llama3 tiny-qwen3 tiny-gemma3 tiny-cohere2 tiny-qwen3moe tiny-gpt-oss tiny-deepseek2
             tiny-qwen35 tiny-granite4 tiny-lfm2 tiny-mamba2 tiny-rwkv7)
set(family_specs "")
foreach(family ${families})
  list(APPEND family_specs "${family}-f32|--preset|${family}|--type|f32")
endforeach()
file(MAKE_DIRECTORY ${OUT})
foreach(spec "tiny-chat|--preset;tiny-chat" "tiny-chat-q8|--preset;tiny-chat;--type;q8_0"
             "tiny-chat-f32|--preset;tiny-chat;--type;f32" "tiny-embed|--preset;tiny-embed"
             "tiny-mamba|--preset;tiny-mamba" "bench-tiny|--preset;bench-tiny" ${family_specs})
  string(REPLACE "|" ";" parts "${spec}")
  list(GET parts 0 name)
  list(SUBLIST parts 1 -1 args)
  set(file ${OUT}/${name}.gguf)
  if(NOT EXISTS ${file} OR ${MKMODEL} IS_NEWER_THAN ${file})
    execute_process(COMMAND ${MKMODEL} ${args} --out ${file} RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "rustycage-mkmodel ${args} failed")
    endif()
  endif()
endforeach()
