// GGUF headers as read for listings (llama/gguf_metadata, through ggml's gguf reader): the input is
// written to a file and read back like a model file a user dropped into the models directory.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include <ggml.h>

#include "llama/gguf_metadata.h"

namespace {

const std::string & scratch_path() {
    static const std::string p = [] {
        char tmpl[] = "/tmp/rc-fuzz-gguf-XXXXXX";
        int fd = ::mkstemp(tmpl);
        if (fd >= 0) ::close(fd);
        return std::string(tmpl);
    }();
    return p;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    ggml_log_set([](ggml_log_level, const char *, void *) {}, nullptr);  // every refused file would print a line
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t * data, size_t size) {
    const std::string & path = scratch_path();
    FILE * f = std::fopen(path.c_str(), "wb");
    if (!f) return 0;
    std::fwrite(data, 1, size, f);
    std::fclose(f);
    auto md = rc::llama::read_gguf_metadata(path);
    if (md) {
        (void) rc::llama::quantization_level(*md);
        (void) md->get_string("general.architecture");
        (void) md->get_uint("general.file_type");
    }
    return 0;
}
