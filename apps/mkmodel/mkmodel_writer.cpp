#include "mkmodel_writer.h"

#include "mkmodel_loader_tensors.h"

#include "mkmodel_gguf_ptr.h"
#include "mkmodel_metadata.h"
#include "mkmodel_tensor_data.h"

#include <fcntl.h>
#include <unistd.h>

#include <cassert>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>
#include <utility>
#include <vector>

namespace rc::mkmodel {
namespace {

std::string errno_text() {
    return std::strerror(errno);
}

// The temporary output file; removed on destruction unless commit() renamed it into place.
class temp_output {
public:
    explicit temp_output(std::filesystem::path final_path)
        : final_(std::move(final_path)), temp_(final_.string() + ".tmp-" + std::to_string(::getpid())) {}
    temp_output(const temp_output &) = delete;
    temp_output & operator=(const temp_output &) = delete;

    ~temp_output() {
        if (file_ != nullptr) {
            std::fclose(file_);
        }
        if (created_ && !committed_) {
            std::error_code ec;
            std::filesystem::remove(temp_, ec);
        }
    }

    status open() {
        // O_EXCL: never truncate somebody else's file; 0666 lets the umask decide, as for any new file.
        const int fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0) {
            return make_error(errc::io, "cannot create " + temp_.string() + " (for --out " + final_.string() + "): " + errno_text());
        }
        created_ = true;
        file_ = ::fdopen(fd, "wb");
        if (file_ == nullptr) {
            ::close(fd);
            return make_error(errc::io, "cannot open " + temp_.string() + ": " + errno_text());
        }
        return {};
    }

    std::FILE * file() const { return file_; }

    // Closes the file and renames it to the final path. No fsync: this is a dev tool, the file is
    // cheap to regenerate, and syncing a 1 GB model would dominate its run time.
    status commit() {
        const int rc = std::fclose(file_);
        file_ = nullptr;
        if (rc != 0) {
            return make_error(errc::io, "cannot finish writing " + temp_.string() + ": " + errno_text());
        }
        std::error_code ec;
        std::filesystem::rename(temp_, final_, ec);
        if (ec) {
            return make_error(errc::io, "cannot rename " + temp_.string() + " to " + final_.string() + ": " + ec.message());
        }
        committed_ = true;
        return {};
    }

private:
    std::filesystem::path final_;
    std::filesystem::path temp_;
    std::FILE * file_ = nullptr;
    bool created_ = false;
    bool committed_ = false;
};

// Checks --out before spending time on generation.
status check_out_path(const std::filesystem::path & out) {
    std::error_code ec;
    if (out.empty()) {
        return make_error(errc::invalid_argument, "--out is empty");
    }
    if (std::filesystem::is_directory(out, ec)) {
        return make_error(errc::invalid_argument, "--out " + out.string() + " is a directory; give a file name");
    }
    const std::filesystem::path parent = out.has_parent_path() ? out.parent_path() : std::filesystem::path(".");
    if (!std::filesystem::is_directory(parent, ec)) {
        return make_error(errc::invalid_argument, "cannot write --out " + out.string() + ": directory " + parent.string() + " does not exist");
    }
    return {};
}

status check_spec(const preset & p, const tensor_spec & t) {
    if (t.ne.empty() || t.ne.size() > GGML_MAX_DIMS) {
        return make_error(errc::internal, "preset " + std::string(p.name) + ": tensor " + t.name + " has a bad rank");
    }
    for (const int64_t n : t.ne) {
        if (n <= 0) {
            return make_error(errc::internal, "preset " + std::string(p.name) + ": tensor " + t.name +
                         " has an empty dimension (does the vocab file provide what it needs?)");
        }
    }
    if (t.ne[0] % ggml_blck_size(t.type) != 0) {
        return make_error(errc::internal, "preset " + std::string(p.name) + ": tensor " + t.name + " row length " + std::to_string(t.ne[0]) +
                     " is not a multiple of the " + ggml_type_name(t.type) + " block size");
    }
    return {};
}

}  // namespace

result<model_report> write_model(const model_request & req) {
    assert(req.model != nullptr && "write_model needs a preset from the table");
    const preset & p = *req.model;

    if (auto s = check_out_path(req.out); !s.ok()) {
        return s.err();
    }
    auto tok = load_tokenizer(p, req.llama_src);
    if (!tok.ok()) {
        return tok.err();
    }

    gguf_ptr out_ctx(gguf_init_empty());
    set_model_keys(out_ctx.get(), p, req.name, tok.value());

    std::vector<tensor_spec> specs;
    if (p.tensors != nullptr) {
        specs = p.tensors(p, tok.value().info);
    } else {
        auto listed = tensors_from_loader(out_ctx.get(), p);
        if (!listed.ok()) {
            return listed.err();
        }
        specs = std::move(listed.value());
    }
    for (const tensor_spec & t : specs) {
        if (auto s = check_spec(p, t); !s.ok()) {
            return s.err();
        }
    }

    // Tensor descriptors only (no_alloc): gguf needs name, type and shape to lay out the file.
    const ggml_init_params params{/*.mem_size =*/(specs.size() + 1) * ggml_tensor_overhead(), /*.mem_buffer =*/nullptr,
                                  /*.no_alloc =*/true};
    ggml_ptr meta(ggml_init(params));
    model_report report;
    for (const tensor_spec & t : specs) {
        ggml_tensor * tensor = ggml_new_tensor(meta.get(), t.type, static_cast<int>(t.ne.size()), t.ne.data());
        ggml_set_name(tensor, t.name.c_str());
        gguf_add_tensor(out_ctx.get(), tensor);
        report.n_params += ggml_nelements(tensor);
    }
    report.n_tensors = specs.size();

    temp_output out(req.out);
    if (auto s = out.open(); !s.ok()) {
        return s.err();
    }

    std::vector<uint8_t> header(gguf_get_meta_size(out_ctx.get()));
    gguf_get_meta_data(out_ctx.get(), header.data());
    if (std::fwrite(header.data(), 1, header.size(), out.file()) != header.size()) {
        return make_error(errc::io, "cannot write " + req.out.string() + ": " + errno_text());
    }

    // Same layout gguf_write_to_file produces: tensors in order, each padded to the alignment.
    const size_t alignment = gguf_get_alignment(out_ctx.get());
    const std::vector<uint8_t> zeros(alignment, 0);
    uint64_t data_bytes = 0;
    for (size_t i = 0; i < specs.size(); ++i) {
        assert(data_bytes == gguf_get_tensor_offset(out_ctx.get(), static_cast<int64_t>(i)) &&
               "streamed data must land at the offset gguf recorded");
        if (auto s = write_tensor_data(out.file(), specs[i], req.seed, req.n_threads); !s.ok()) {
            return make_error(errc::io, "cannot write " + req.out.string() + ": " + s.err().message);
        }
        const size_t size = gguf_get_tensor_size(out_ctx.get(), static_cast<int64_t>(i));
        const size_t pad = GGML_PAD(size, alignment) - size;
        if (std::fwrite(zeros.data(), 1, pad, out.file()) != pad) {
            return make_error(errc::io, "cannot write " + req.out.string() + ": " + errno_text());
        }
        data_bytes += size + pad;
    }
    if (auto s = out.commit(); !s.ok()) {
        return s.err();
    }
    report.file_bytes = header.size() + data_bytes;
    return report;
}

}  // namespace rc::mkmodel
