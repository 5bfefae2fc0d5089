// model_manager over a temp models directory of generated models: what a lease means (busy,
// counted; observers are not users), keep-alive on the reaper, unloads that never join an engine on
// the caller's thread, and the memory budget (LRU victims, waits that end when a lease does).
#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <thread>

#include "models/model_manager.h"
#include "models/quarantine.h"
#include "store/incident_log.h"
#include "support/backend_threads.h"
#include "support/model_dir.h"
#include "support/poll.h"

using namespace rc;
using namespace rc::models;
using namespace std::chrono_literals;

namespace {

class manager_test : public ::testing::Test {
  protected:
    static void SetUpTestSuite() {
        dir_ = std::make_unique<test::model_dir>(
            std::vector<std::pair<std::string, std::string>>{{"demo", "tiny-chat"}, {"other", "tiny-chat"}, {"third", "tiny-chat"}});
    }
    static void TearDownTestSuite() { dir_.reset(); }

    static engine::engine_options engine_opts() {
        engine::engine_options eo;
        eo.n_ctx = 1024;
        eo.n_parallel = 2;
        eo.n_threads = 1;
        return eo;
    }
    static local_catalog catalog() { return local_catalog(dir_->path()); }
    std::unique_ptr<model_manager> make(manager_options o = {}) {
        return std::make_unique<model_manager>(catalog(), engine_opts(), llama::model_load_options{}, std::move(o));
    }
    // What one tiny-chat takes in the budget's eyes.
    static uint64_t one_model() { return estimate_memory(catalog().find("demo").value(), engine_opts()).total(); }
    static std::vector<std::string> names(const model_manager & m) {
        std::vector<std::string> out;
        for (const auto & l : m.loaded()) out.push_back(l.name);
        return out;
    }
    static int leases_of(const model_manager & m, const std::string & name) {
        for (const auto & l : m.loaded())
            if (l.name == name) return l.leases;
        return -1;
    }

    static inline std::unique_ptr<test::model_dir> dir_;
};

}  // namespace

TEST_F(manager_test, a_lease_counts_as_a_user_and_observers_do_not) {
    auto m = make();
    {
        auto a = m->acquire("demo");
        ASSERT_TRUE(a.ok()) << a.err().message;
        EXPECT_EQ(a->name(), "demo");
        EXPECT_EQ(leases_of(*m, "demo"), 1);
        auto b = m->acquire("demo.gguf");  // an alias: the same loaded model
        ASSERT_TRUE(b.ok());
        EXPECT_EQ(&a->engine(), &b->engine());
        EXPECT_EQ(leases_of(*m, "demo"), 2);
        int visits = 0;
        m->visit_loaded([&](const loaded_model & l, const engine::engine & e) {
            ++visits;
            EXPECT_EQ(l.leases, 2);
            EXPECT_EQ(e.n_ctx(), 1024);
        });
        EXPECT_EQ(visits, 1);
        EXPECT_EQ(leases_of(*m, "demo"), 2) << "looking at a model (ps, metrics) is not using it";
        b->release();
        EXPECT_EQ(leases_of(*m, "demo"), 1);
        model_lease moved = std::move(a.value());
        EXPECT_FALSE(a.value()) << "a moved-from lease holds nothing";
        EXPECT_EQ(leases_of(*m, "demo"), 1);
    }
    EXPECT_EQ(leases_of(*m, "demo"), 0);
    EXPECT_EQ(names(*m), std::vector<std::string>{"demo"}) << "idle, still loaded for its keep_alive";
}

TEST_F(manager_test, keep_alive_unloads_an_idle_model_on_time_never_a_busy_one) {
    manager_options o;
    o.default_keep_alive = 300ms;
    auto m = make(o);
    auto lease = m->acquire("demo");
    ASSERT_TRUE(lease.ok());
    EXPECT_FALSE(test::poll_until([&] { return m->loaded().empty(); }, 800ms)) << "a held model outlives its keep_alive";
    auto released = std::chrono::steady_clock::now();
    lease->release();
    ASSERT_TRUE(test::poll_until([&] { return m->loaded().empty(); }, 10s)) << "the reaper unloads it once idle";
    EXPECT_GE(std::chrono::steady_clock::now() - released, 250ms) << "not before its keep_alive ran out";
    EXPECT_TRUE(test::poll_until([&] { return m->memory_in_use() == 0; }, 10s));

    auto forever = m->acquire("demo");
    ASSERT_TRUE(forever.ok());
    forever->set_keep_alive(std::chrono::nanoseconds::max());
    forever->release();
    EXPECT_FALSE(test::poll_until([&] { return m->loaded().empty(); }, 800ms));
    EXPECT_EQ(m->loaded().front().expires_at, std::chrono::system_clock::time_point::max());
}

TEST_F(manager_test, keep_alive_zero_unloads_when_the_last_lease_ends) {
    auto m = make();
    auto a = m->acquire("demo");
    auto b = m->acquire("demo");
    ASSERT_TRUE(a.ok() && b.ok());
    a->set_keep_alive(0ns);
    a->release();
    EXPECT_EQ(names(*m), std::vector<std::string>{"demo"}) << "another request still runs on it";
    b->release();
    EXPECT_TRUE(m->loaded().empty()) << "gone as soon as nobody uses it, before any reaper pass";
}

TEST_F(manager_test, unload_takes_it_off_the_list_and_the_reaper_tears_it_down) {
    std::mutex mu;
    std::vector<std::pair<std::string, std::thread::id>> unloaded;
    manager_options o;
    o.on_unloaded = [&](const std::string & name) {
        std::lock_guard lock(mu);
        unloaded.emplace_back(name, std::this_thread::get_id());
    };
    auto m = make(o);
    auto lease = m->acquire("demo");
    ASSERT_TRUE(lease.ok());
    EXPECT_TRUE(m->unload("demo.gguf"));
    EXPECT_TRUE(m->loaded().empty()) << "off the list at once";
    EXPECT_GT(m->memory_in_use(), 0u) << "its memory counts until it is really gone";

    // The running request still has its engine.
    engine::generation_request r;
    r.prompt = lease->engine().model().tokenize("Hello", true, false);
    r.max_tokens = 2;
    auto ch = lease->engine().submit(std::move(r));
    ASSERT_TRUE(ch.ok());
    std::optional<engine::generation_event> ev;
    while ((ev = ch.value()->pop(10s)) && ev->kind == engine::generation_event::type::text) {}
    ASSERT_TRUE(ev);
    EXPECT_EQ(ev->kind, engine::generation_event::type::done);

    lease->release();  // the last user: the teardown is the reaper's, not this thread's
    ASSERT_TRUE(test::poll_until([&] {
        std::lock_guard lock(mu);
        return !unloaded.empty();
    }, 10s));
    EXPECT_EQ(unloaded[0].first, "demo");
    EXPECT_NE(unloaded[0].second, std::this_thread::get_id());
    EXPECT_EQ(m->memory_in_use(), 0u);
    EXPECT_FALSE(m->unload("demo")) << "not loaded any more";
}

TEST_F(manager_test, the_budget_unloads_the_least_recently_used_idle_model) {
    manager_options o;
    o.memory_budget = one_model() * 5 / 2;  // two fit, three do not
    auto m = make(o);
    ASSERT_TRUE(m->acquire("demo").ok());
    ASSERT_TRUE(m->acquire("other").ok());
    ASSERT_TRUE(m->acquire("demo").ok());  // demo used last: other is the least recently used
    auto third = m->acquire("third");
    ASSERT_TRUE(third.ok()) << third.err().message;
    EXPECT_EQ(names(*m), (std::vector<std::string>{"demo", "third"}));
    EXPECT_LE(m->memory_in_use(), o.memory_budget);
}

TEST_F(manager_test, busy_models_make_a_load_wait_and_the_wait_ends_with_a_lease) {
    manager_options o;
    o.memory_budget = one_model() * 3 / 2;  // one at a time
    o.busy_wait = 300ms;
    auto m = make(o);
    auto demo = m->acquire("demo");
    ASSERT_TRUE(demo.ok());
    auto t0 = std::chrono::steady_clock::now();
    auto refused = m->acquire("other");
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.err().code, errc::unavailable);
    EXPECT_GE(std::chrono::steady_clock::now() - t0, 250ms) << "it waited for the busy model";

    auto patient = make([&] {
        manager_options p = o;
        p.busy_wait = 60s;
        return p;
    }());
    auto held = patient->acquire("demo");
    ASSERT_TRUE(held.ok());
    std::atomic<bool> loaded{false};
    std::thread waiter([&] {
        auto other = patient->acquire("other");
        EXPECT_TRUE(other.ok());
        loaded = true;
    });
    ASSERT_TRUE(test::poll_until([&] { return patient->loading(); }, 10s));
    EXPECT_FALSE(loaded.load());
    held->release();  // wakes the waiting load: no polling interval to sit out
    EXPECT_TRUE(test::poll_until([&] { return loaded.load(); }, 20s));
    waiter.join();
    EXPECT_EQ(names(*patient), std::vector<std::string>{"other"});
    demo->release();
}

TEST_F(manager_test, a_model_larger_than_the_whole_budget_is_refused_at_once) {
    manager_options o;
    o.memory_budget = one_model() / 2;
    auto m = make(o);
    auto r = m->acquire("demo");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.err().code, errc::invalid_argument);
    EXPECT_NE(r.err().message.find("--memory-budget"), std::string::npos) << r.err().message;
    EXPECT_EQ(m->memory_in_use(), 0u);
    auto unknown = m->acquire("nope");
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.err().code, errc::not_found);
}

TEST_F(manager_test, concurrent_requests_share_one_load) {
    auto m = make();
    std::vector<std::thread> threads;
    std::vector<model_lease> leases(4);
    for (int i = 0; i < 4; ++i) {
        threads.emplace_back([&, i] {
            auto l = m->acquire("demo");
            ASSERT_TRUE(l.ok());
            leases[i] = std::move(l.value());
        });
    }
    for (auto & t : threads) t.join();
    for (int i = 1; i < 4; ++i) EXPECT_EQ(&leases[i].engine(), &leases[0].engine());
    EXPECT_EQ(leases_of(*m, "demo"), 4);
    leases.clear();
    EXPECT_EQ(leases_of(*m, "demo"), 0);
}

// The device fit, on a CPU build through --device-memory (the host plays the device): a context
// that does not fit shrinks when tiers hold the rest, a set one without tiers is refused with its
// numbers, and a second model that does not fit beside an idle first one unloads it.
namespace {
fit_settings capped(uint64_t cap, bool ctx_set = false) {
    fit_settings fs;
    fs.device_memory = cap;
    fs.margin = 0;
    fs.ctx_set = ctx_set;
    fs.max_tokens = 128;
    return fs;
}
}  // namespace

TEST_F(manager_test, the_fit_shrinks_a_context_the_device_cannot_hold_when_tiers_hold_the_rest) {
    auto eo = engine_opts();
    eo.kv.host_budget = 64ull << 20;
    auto whole = plan_device(catalog().find("demo").value(), eo, {}, capped(1ull << 40), 0, 0, UINT64_MAX);
    ASSERT_TRUE(whole.ok()) << whole.err().message;
    ASSERT_TRUE(whole->fitted);
    ASSERT_TRUE(whole->whole());
    EXPECT_EQ(whole->cells, 1024);
    manager_options o;
    o.fit = capped(whole->device_bytes - 1, true);  // --ctx-size 1024 set, and one byte short of it
    model_manager m(catalog(), eo, {}, o);
    auto l = m.acquire("demo");
    ASSERT_TRUE(l.ok()) << l.err().message;
    EXPECT_EQ(l->engine().n_ctx(), 768) << "the largest pool that fits, in whole 256-cell steps";
    auto v = m.loaded();
    ASSERT_EQ(v.size(), 1u);
    EXPECT_TRUE(v[0].device.fitted);
    EXPECT_EQ(v[0].device.layers, v[0].device.layers_total) << "the weights stay whole on the device";
    EXPECT_EQ(v[0].device.cells_wanted, 1024);
    EXPECT_LE(v[0].device.device_bytes, o.fit.device_memory);
    EXPECT_EQ(m.device_in_use(), v[0].device.device_bytes);
}

TEST_F(manager_test, a_set_context_that_cannot_fit_without_tiers_is_refused_and_nothing_loads) {
    auto whole = plan_device(catalog().find("demo").value(), engine_opts(), {}, capped(1ull << 40), 0, 0, UINT64_MAX);
    ASSERT_TRUE(whole.ok() && whole->fitted);
    manager_options o;
    o.fit = capped(whole->device_bytes / 2, true);
    o.memory_budget = whole->device_bytes / 3;  // and system memory cannot take the layers that would move there
    model_manager m(catalog(), engine_opts(), {}, o);
    auto r = m.acquire("demo");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.err().code, errc::invalid_argument);
    EXPECT_NE(r.err().message.find("--ctx-size 1024"), std::string::npos) << r.err().message;
    EXPECT_TRUE(m.loaded().empty());
    EXPECT_EQ(m.device_in_use(), 0u);
    EXPECT_FALSE(m.loading());
}

TEST_F(manager_test, a_model_that_does_not_fit_beside_an_idle_one_unloads_it) {
    auto whole = plan_device(catalog().find("demo").value(), engine_opts(), {}, capped(1ull << 40), 0, 0, UINT64_MAX);
    ASSERT_TRUE(whole.ok() && whole->fitted);
    manager_options o;
    o.fit = capped(whole->device_bytes * 3 / 2, true);  // one whole model, not two
    std::mutex mu;
    std::vector<std::string> unloaded;
    o.on_unloaded = [&](const std::string & n) {
        std::lock_guard lock(mu);
        unloaded.push_back(n);
    };
    model_manager m(catalog(), engine_opts(), {}, o);
    ASSERT_TRUE(m.acquire("demo").ok());
    auto other = m.acquire("other");
    ASSERT_TRUE(other.ok()) << other.err().message;
    EXPECT_EQ(names(m), std::vector<std::string>{"other"});
    EXPECT_EQ(other->engine().n_ctx(), 1024) << "the whole model, not a squeezed one beside the idle model";
    EXPECT_LE(m.device_in_use(), o.fit.device_memory);
    std::lock_guard lock(mu);
    EXPECT_EQ(unloaded, std::vector<std::string>{"demo"});
}

// A model that fails to load is an incident in the store's log, the structured source a fleet agent
// forwards (never a log line it would have to parse); a model that loads leaves none.
TEST_F(manager_test, a_model_that_fails_to_load_is_an_incident_in_the_store_log) {
    test::model_dir dir(std::vector<std::pair<std::string, std::string>>{{"demo", "tiny-chat"}});
    {
        std::ofstream broken(dir.path() / "broken.gguf", std::ios::binary);
        broken << "GGUF" << std::string(4096, '\x7f');  // the magic, then nothing a reader can parse
    }
    auto m = std::make_unique<model_manager>(local_catalog(dir.path()), engine_opts(), llama::model_load_options{}, manager_options{});
    auto r = m->acquire("broken");
    ASSERT_FALSE(r.ok());
    auto incidents = store::incident_log::in_store(dir.path()).list(10);
    ASSERT_EQ(incidents.size(), 1u);
    EXPECT_EQ(incidents[0].kind, "model_load_failed");
    EXPECT_EQ(incidents[0].model, "broken");
    EXPECT_EQ(incidents[0].reason, r.err().message);
    ASSERT_TRUE(m->acquire("demo").ok());
    EXPECT_EQ(store::incident_log::in_store(dir.path()).list(10).size(), 1u) << "a load that succeeds records nothing";
}

// The quarantine's test generation computes graphs on the caller's thread's behalf (a pull worker, an
// HTTP thread); the OpenMP pool it needs must not stay behind on that long-lived thread, where it
// would make every engine's decode barriers sleep (llama/compute_thread.h).
TEST(quarantine, test_generation_leaves_no_threads_behind) {
    const int before = rc::test::threads_with_backend_started("tiny-chat");
    rc::models::quarantine_input in;
    in.paths = {rc::test::model_path("tiny-chat")};
    auto report = rc::models::check_model(in);
    ASSERT_TRUE(report.ok()) << report.err().message;
    EXPECT_GT(report->generated_tokens, 0);
    EXPECT_TRUE(rc::test::poll_until([&] { return rc::test::process_threads() == before; }, 10s))
        << rc::test::process_threads() - before << " thread(s) outlived the check";
}
