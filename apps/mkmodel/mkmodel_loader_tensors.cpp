#include "mkmodel_loader_tensors.h"

#include "mkmodel_presets.h"

#include <ggml-backend.h>
#include <llama.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rc::mkmodel {
namespace {

// Always absent from what we write: rope frequency tables (real checkpoints carry them only for
// long-context RoPE scaling), and the per-weight ".scale" / ".input_scale" factors every architecture
// accepts for FP8 and NVFP4 checkpoints (random values there would scale each projection at random).
constexpr std::string_view k_never_written_parts[] = {"rope_freqs", "rope_factors"};
constexpr std::string_view k_never_written_suffixes[] = {".scale", ".input_scale"};

struct recorded {
    std::string name;
    std::vector<int64_t> ne;
};

void record_tensor(ggml_tensor * t, void * user_data) {
    auto & out = *static_cast<std::vector<recorded> *>(user_data);
    for (const recorded & r : out) {
        if (r.name == ggml_get_name(t)) {
            return;  // a tied lm head: token_embd again, loaded a second time as the output
        }
    }
    const int n_dims = ggml_n_dims(t);
    out.push_back({ggml_get_name(t), std::vector<int64_t>(t->ne, t->ne + n_dims)});
}

// Quiet unless llama.cpp reports an error (then the message is the generator's error too).
struct error_log {
    std::string last;
    static void callback(ggml_log_level level, const char * text, void * user_data) {
        if (level == GGML_LOG_LEVEL_ERROR) {
            static_cast<error_log *>(user_data)->last += text;
        }
    }
};

bool contains_any(std::string_view name, std::span<const std::string_view> parts) {
    for (std::string_view part : parts) {
        if (name.find(part) != std::string_view::npos) {
            return true;
        }
    }
    return false;
}

bool ends_with_any(std::string_view name, std::span<const std::string_view> suffixes) {
    for (std::string_view suffix : suffixes) {
        if (name.ends_with(suffix)) {
            return true;
        }
    }
    return false;
}

// The name without its "blk.N." prefix.
std::string_view role_of(std::string_view name) {
    if (name.starts_with("blk.")) {
        const size_t dot = name.find('.', 4);
        return dot == std::string_view::npos ? name : name.substr(dot + 1);
    }
    return name;
}

// Type and fill by role. The same rules as the hand-written lists: norms 1, biases 0, matrices
// normal at the preset's scale in its matrix type (F16 where a row is shorter than the type's block),
// the state-space parameters by Mamba's reference initialisation (see tensors_mamba).
tensor_spec spec_for(const recorded & r, const preset & p) {
    const std::string_view role = role_of(r.name);
    tensor_spec t{r.name, r.ne, GGML_TYPE_F32, fill_kind::normal, p.scales.matrix, 0.0f};
    // At most one dimension longer than 1: Mamba-2's A and D are [1, heads], still per-channel values.
    const bool vector = std::count_if(r.ne.begin(), r.ne.end(), [](int64_t n) { return n > 1; }) <= 1;
    if (role == "ssm_dt.bias") {
        t.std = 1.0f;
        t.mean = -4.600166f;  // softplus^-1(0.01), as tensors_mamba
    } else if (role.ends_with(".bias") || role == "attn_sinks.weight" || role == "attn_sinks") {
        t.fill = fill_kind::zeros;
    } else if (role.starts_with("ssm_a")) {
        t.fill = fill_kind::negative_ramp;
    } else if (role.starts_with("ssm_d") && vector) {
        t.fill = fill_kind::ones;
    } else if (role.find("norm") != std::string_view::npos) {
        t.fill = fill_kind::ones;
    } else if (role.starts_with("ssm_conv1d") || role.starts_with("shortconv.conv")) {
        t.std = 1.0f / std::sqrt(static_cast<float>(r.ne[0]));  // unit-gain depthwise kernel, kept F32
    } else if (vector || role.starts_with("ffn_gate_inp") || (role.starts_with("time_mix_") && r.ne.size() > 2)) {
        // Small per-channel parameters and the MoE router stay F32, as llama-quantize leaves them.
    } else {
        t.type = r.ne[0] % ggml_blck_size(p.matrix_type) == 0 ? p.matrix_type : GGML_TYPE_F16;
        if (role == "token_embd.weight") {
            t.std = p.scales.embd;
        } else if (role == "output.weight") {
            t.std = p.scales.output;
        }
    }
    return t;
}

}  // namespace

result<std::vector<tensor_spec>> tensors_from_loader(gguf_context * keys, const preset & p) {
    llama_backend_init();
    ggml_backend_dev_t cpu = ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (cpu == nullptr) {
        return make_error(errc::internal, "llama.cpp has no CPU backend to lay out " + std::string(p.arch));
    }
    ggml_backend_dev_t devices[] = {cpu, nullptr};
    llama_model_params params = llama_model_default_params();
    params.devices = devices;
    params.n_gpu_layers = 0;

    error_log log;
    ggml_log_callback old_callback = nullptr;
    void * old_user_data = nullptr;
    llama_log_get(&old_callback, &old_user_data);
    llama_log_set(error_log::callback, &log);
    std::vector<recorded> seen;
    llama_model * model = llama_model_init_from_user(keys, record_tensor, &seen, params);
    llama_log_set(old_callback, old_user_data);
    if (model == nullptr) {
        return make_error(errc::internal, "llama.cpp cannot build " + std::string(p.arch) + " from preset " +
                                              std::string(p.name) + ": " + log.last);
    }
    llama_model_free(model);

    std::vector<tensor_spec> out;
    for (const recorded & r : seen) {
        if (contains_any(r.name, k_never_written_parts) || ends_with_any(r.name, k_never_written_suffixes) ||
            contains_any(r.name, p.drop_tensors) ||
            (p.tied_embeddings && r.name == "output.weight")) {
            continue;
        }
        out.push_back(spec_for(r, p));
    }
    return out;
}

}  // namespace rc::mkmodel
