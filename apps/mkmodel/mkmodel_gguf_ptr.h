// Owning pointers for the C contexts of ggml/gguf.
#pragma once

#include <ggml.h>
#include <gguf.h>

#include <memory>

namespace rc::mkmodel {

struct gguf_context_deleter {
    void operator()(gguf_context * ctx) const { gguf_free(ctx); }
};
using gguf_ptr = std::unique_ptr<gguf_context, gguf_context_deleter>;

struct ggml_context_deleter {
    void operator()(ggml_context * ctx) const { ggml_free(ctx); }
};
using ggml_ptr = std::unique_ptr<ggml_context, ggml_context_deleter>;

}  // namespace rc::mkmodel
