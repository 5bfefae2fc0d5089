// fit_to_device, the tier-aware policy alone: weights on the device first, then the largest context
// pool beside them, down to one request of --max-tokens; a set --ctx-size stays whole only without
// tiers; a set --gpu-layers is kept or refused; every refusal names its numbers. And flash attention
// by the plan (model_fit.h).
#include <gtest/gtest.h>

#include "models/device_fit.h"
#include "models/model_fit.h"

using namespace rc;
using namespace rc::models;

namespace {

constexpr uint64_t MiB = 1ull << 20;

// A 32-layer model: 4 GiB of weights, 128 KiB a cell (every layer), 256 MiB of compute.
fit_inputs model_8b() {
    fit_inputs in;
    in.layers = 32;
    in.weights = 4096 * MiB;
    in.cell_bytes = 128 * 1024;
    in.compute = 256 * MiB;
    in.cells = 32768;  // 4 GiB of KV
    in.floor_cells = 4096;
    in.tiers = true;
    return in;
}

}  // namespace

TEST(device_fit, everything_whole_when_the_device_holds_it) {
    auto in = model_8b();
    in.available = 9000 * MiB;
    auto c = fit_to_device(in);
    ASSERT_TRUE(c.ok()) << c.err().message;
    EXPECT_EQ(c->layers, 32);
    EXPECT_EQ(c->cells, 32768);
    EXPECT_EQ(c->device_bytes, in.compute + in.weights + 32768ull * in.cell_bytes);
    EXPECT_EQ(c->host_bytes, 0u);
}

TEST(device_fit, all_layers_with_a_smaller_pool_before_fewer_layers) {
    auto in = model_8b();
    in.available = 6000 * MiB;  // weights and compute leave 1648 MiB: 13184 cells
    auto c = fit_to_device(in);
    ASSERT_TRUE(c.ok()) << c.err().message;
    EXPECT_EQ(c->layers, 32) << "the tiers absorb the context; the layers stay";
    EXPECT_EQ(c->cells % 256, 0);
    EXPECT_LE(c->device_bytes, in.available);
    EXPECT_GT(c->cells, 12800);
    EXPECT_LT(c->cells, 32768);
}

TEST(device_fit, weights_that_do_not_fit_go_partly_to_system_memory) {
    auto in = model_8b();
    in.available = 3000 * MiB;
    auto c = fit_to_device(in);
    ASSERT_TRUE(c.ok()) << c.err().message;
    EXPECT_LT(c->layers, 32);
    EXPECT_GT(c->layers, 0);
    EXPECT_GE(c->cells, in.floor_cells);
    EXPECT_LE(c->device_bytes, in.available);
    EXPECT_GT(c->host_bytes, 0u);
    auto one_more = footprint(in, c->layers + 1, in.floor_cells);
    EXPECT_GT(one_more.device_bytes, in.available) << "as many layers as fit beside one request";
}

TEST(device_fit, a_set_context_without_tiers_stays_whole_and_moves_layers) {
    auto in = model_8b();
    in.available = 6000 * MiB;
    in.tiers = false;
    in.cells_set = true;
    auto c = fit_to_device(in);
    ASSERT_TRUE(c.ok()) << c.err().message;
    EXPECT_EQ(c->cells, 32768);
    EXPECT_LT(c->layers, 32);
    EXPECT_LE(c->device_bytes, in.available);

    in.tiers = true;  // with tiers the same set value may shrink: the tiers hold the rest
    auto tiered = fit_to_device(in);
    ASSERT_TRUE(tiered.ok());
    EXPECT_EQ(tiered->layers, 32);
    EXPECT_LT(tiered->cells, 32768);
}

TEST(device_fit, the_default_context_shrinks_even_without_tiers) {
    auto in = model_8b();
    in.available = 6000 * MiB;
    in.tiers = false;
    auto c = fit_to_device(in);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->layers, 32);
    EXPECT_LT(c->cells, 32768);
}

TEST(device_fit, a_set_gpu_layers_is_kept_or_refused_with_its_numbers) {
    auto in = model_8b();
    in.available = 6000 * MiB;
    in.user_layers = 20;
    auto kept = fit_to_device(in);
    ASSERT_TRUE(kept.ok());
    EXPECT_EQ(kept->layers, 20);
    EXPECT_EQ(kept->cells, 32768) << "20 layers leave room for the whole pool";

    in.available = 1000 * MiB;
    auto refused = fit_to_device(in);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.err().code, errc::invalid_argument);
    EXPECT_NE(refused.err().message.find("--gpu-layers 20"), std::string::npos) << refused.err().message;
    EXPECT_NE(refused.err().message.find("1000.0 MiB"), std::string::npos) << refused.err().message;
}

TEST(device_fit, a_set_context_that_cannot_fit_is_refused_with_its_numbers) {
    auto in = model_8b();
    in.tiers = false;
    in.cells_set = true;
    in.cells = 1 << 20;  // 128 GiB of KV: not on the device, nor beside it
    in.available = 6000 * MiB;
    in.host_available = 16384 * MiB;
    auto r = fit_to_device(in);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.err().message.find("--ctx-size 1048576"), std::string::npos) << r.err().message;
    EXPECT_NE(r.err().message.find("does not fit"), std::string::npos) << r.err().message;
}

TEST(device_fit, not_even_one_request_says_so) {
    auto in = model_8b();
    in.available = 200 * MiB;  // less than the compute buffers
    auto r = fit_to_device(in);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.err().message.find("one request of --max-tokens (4096"), std::string::npos) << r.err().message;
}

TEST(device_fit, what_stays_off_the_device_must_fit_in_system_memory) {
    auto in = model_8b();
    in.available = 1000 * MiB;
    in.host_available = 1024 * MiB;  // most weights would land here, and they are 4 GiB
    auto r = fit_to_device(in);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.err().message.find("system memory"), std::string::npos) << r.err().message;
}

TEST(device_fit, the_floor_never_exceeds_the_pool_wanted) {
    auto in = model_8b();
    in.cells = 2048;
    in.floor_cells = 4096;
    in.available = 9000 * MiB;
    auto c = fit_to_device(in);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(c->cells, 2048);
}

// Flash attention follows the plan unless --flash-attn was given: on with layers on a GPU device, off
// on the CPU (the host standing in for a device included) and for a plan with no layers offloaded.
TEST(device_fit, flash_attention_on_for_gpu_layers_unless_set) {
    engine::engine_options eo;
    eo.flash_attn_auto = true;
    device_plan gpu;
    gpu.fitted = true;
    gpu.gpu = true;
    gpu.layers = 16;
    device_plan host = gpu;
    host.gpu = false;
    device_plan none = gpu;
    none.layers = 0;
    EXPECT_TRUE(flash_attn_for(eo, gpu));
    EXPECT_FALSE(flash_attn_for(eo, host));
    EXPECT_FALSE(flash_attn_for(eo, none));
    EXPECT_FALSE(flash_attn_for(eo, device_plan{}));
    eo.flash_attn_auto = false;  // --flash-attn=false
    EXPECT_FALSE(flash_attn_for(eo, gpu));
    eo.flash_attn = true;  // --flash-attn
    EXPECT_TRUE(flash_attn_for(eo, host));
}

// Round three: compute buffers that grow with the context (no flash attention) are counted per cell
// of the pool chosen, not for the whole --ctx-size: all layers with a smaller pool, where a fixed
// compute at 32768 cells would have pushed every layer off the device.
TEST(device_fit, compute_that_grows_with_the_pool_is_counted_for_the_pool_chosen) {
    auto in = model_8b();
    in.available = 6000 * MiB;
    in.compute = 256 * MiB;
    in.compute_per_cell = 64 * 1024;  // 2 GiB more at 32768 cells
    auto c = fit_to_device(in);
    ASSERT_TRUE(c.ok()) << c.err().message;
    EXPECT_EQ(c->layers, 32);
    EXPECT_LT(c->cells, 32768);
    EXPECT_EQ(c->compute_bytes, in.compute + in.compute_per_cell * static_cast<uint64_t>(c->cells));
    EXPECT_LE(c->device_bytes, in.available);
    auto fixed = in;  // the same buffers reserved for the whole context
    fixed.compute = in.compute + in.compute_per_cell * 32768;
    fixed.compute_per_cell = 0;
    auto f = fit_to_device(fixed);
    ASSERT_TRUE(f.ok()) << f.err().message;
    EXPECT_LT(f->layers, 32) << "what the whole --ctx-size's buffers cost: layers";
}
