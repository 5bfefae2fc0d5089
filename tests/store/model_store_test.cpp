#include "store/model_store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "store_test_util.h"
#include "util/sha256.h"

using namespace rc::store;
namespace fs = std::filesystem;

namespace {

class model_store_test : public rc::store::test::temp_root_test {
  protected:
    // Stores `bytes` as a blob and returns a one-layer manifest over it.
    manifest stored_manifest(model_store & store, const std::string & bytes, const std::string & filename = "m.gguf") {
        auto d = store.blobs().import_file(write_file("incoming/" + filename, bytes));
        EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.err().message);
        manifest m;
        m.layers = {{layer_kind::model, d.ok() ? d.value() : blob_digest(), bytes.size(), filename}};
        m.source = {source_kind::import, "", "", {filename}};
        return m;
    }
    static model_name name(const std::string & s) { return model_name::parse(s).value(); }
};

TEST_F(model_store_test, put_find_list) {
    model_store store(root);
    manifest m = stored_manifest(store, "weights-1");
    m.parameters = {{"temperature", 0.5}};
    ASSERT_TRUE(store.put(name("llama3"), m).ok());

    auto r = store.find("llama3:latest");
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_EQ(r->name.display(), "llama3:latest");
    EXPECT_EQ(r->m.name, "local/library/llama3:latest");
    EXPECT_EQ(r->m.parameters["temperature"], 0.5);
    EXPECT_EQ(r->m.status, model_status::quarantined);
    EXPECT_NE(r->m.created_at, sys_time{});
    ASSERT_EQ(r->model_paths.size(), 1u);
    EXPECT_EQ(r->model_paths[0], store.blobs().path(m.layers[0].digest));
    EXPECT_EQ(r->total_size, 9u);
    EXPECT_NE(r->modified, sys_time{});
    EXPECT_TRUE(fs::is_regular_file(root / "manifests/local/library/llama3/latest"));

    auto all = store.list();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].name, r->name);
}

TEST_F(model_store_test, find_errors) {
    model_store store(root);
    EXPECT_EQ(store.find("absent").err().code, rc::errc::not_found);
    EXPECT_EQ(store.find("../etc/passwd").err().code, rc::errc::invalid_argument);
    EXPECT_TRUE(store.list().empty());  // no manifests directory yet
}

TEST_F(model_store_test, split_gguf_layers_keep_their_order) {
    model_store store(root);
    manifest m = stored_manifest(store, "part-1", "x-00001-of-00002.gguf");
    manifest m2 = stored_manifest(store, "part-2", "x-00002-of-00002.gguf");
    manifest p = stored_manifest(store, "projector", "mmproj.gguf");
    m.layers.push_back(m2.layers[0]);
    p.layers[0].kind = layer_kind::projector;
    m.layers.push_back(p.layers[0]);
    ASSERT_TRUE(store.put(name("hf.co/owner/repo:Q4_K_M"), m).ok());
    auto r = store.find("hf.co/owner/repo:q4_k_m");
    ASSERT_TRUE(r.ok()) << r.err().message;
    ASSERT_EQ(r->model_paths.size(), 2u);
    EXPECT_EQ(r->model_paths[0], store.blobs().path(m.layers[0].digest));
    EXPECT_EQ(r->model_paths[1], store.blobs().path(m.layers[1].digest));
    EXPECT_EQ(r->total_size, 6u + 6u + 9u);
    EXPECT_TRUE(fs::is_regular_file(root / "manifests/hf.co/owner/repo/Q4_K_M"));
}

TEST_F(model_store_test, put_refuses_missing_blobs_and_wrong_sizes) {
    model_store store(root);
    manifest m;
    m.layers = {{layer_kind::model, blob_digest::of(rc::sha256_of("never stored")), 12, "x.gguf"}};
    auto st = store.put(name("ghost"), m);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.err().message.find("missing"), std::string::npos) << st.err().message;
    EXPECT_FALSE(fs::exists(root / "manifests/local/library/ghost"));

    manifest sized = stored_manifest(store, "12345");
    sized.layers[0].size = 4;
    EXPECT_FALSE(store.put(name("sized"), sized).ok());

    manifest no_model = stored_manifest(store, "proj");
    no_model.layers[0].kind = layer_kind::projector;
    EXPECT_FALSE(store.put(name("noproj"), no_model).ok());
    EXPECT_TRUE(store.list().empty());
}

TEST_F(model_store_test, two_names_share_a_blob_until_both_are_removed) {
    model_store store(root);
    manifest m = stored_manifest(store, "shared weights");
    const blob_digest d = m.layers[0].digest;
    ASSERT_TRUE(store.put(name("a"), m).ok());
    ASSERT_TRUE(store.copy("a", "team/b:v2").ok());

    auto b = store.find("team/b:v2");
    ASSERT_TRUE(b.ok()) << b.err().message;
    EXPECT_EQ(b->m.layers[0].digest, d);
    EXPECT_EQ(b->m.source.kind, source_kind::copy);
    EXPECT_EQ(b->m.source.repo, "local/library/a:latest");
    EXPECT_EQ(store.list().size(), 2u);

    ASSERT_TRUE(store.remove("a").ok());
    EXPECT_TRUE(store.blobs().has(d));
    EXPECT_TRUE(store.find("team/b:v2").ok());
    EXPECT_EQ(store.find("a").err().code, rc::errc::not_found);
    EXPECT_FALSE(fs::exists(root / "manifests/local/library"));  // emptied parents go too

    ASSERT_TRUE(store.remove("team/b:v2").ok());
    EXPECT_FALSE(store.blobs().has(d));
    EXPECT_TRUE(entries(root / "manifests").empty());
    EXPECT_EQ(store.remove("team/b:v2").err().code, rc::errc::not_found);
}

TEST_F(model_store_test, copy_keeps_status_and_refuses_missing_or_same) {
    model_store store(root);
    ASSERT_TRUE(store.put(name("src"), stored_manifest(store, "w")).ok());
    ASSERT_TRUE(store.set_status("src", model_status::failed, "bad tokenizer").ok());
    ASSERT_TRUE(store.copy("src", "dst").ok());
    auto dst = store.find("dst");
    ASSERT_TRUE(dst.ok());
    EXPECT_EQ(dst->m.status, model_status::failed);  // a copy does not launder a quarantine result
    EXPECT_EQ(store.copy("nope", "x").err().code, rc::errc::not_found);
    EXPECT_EQ(store.copy("src", "src:latest").err().code, rc::errc::invalid_argument);
    EXPECT_EQ(store.copy("src", "../x").err().code, rc::errc::invalid_argument);
}

TEST_F(model_store_test, replacing_a_manifest_collects_its_unshared_blobs) {
    model_store store(root);
    manifest v1 = stored_manifest(store, "version one");
    manifest v2 = stored_manifest(store, "version two");
    ASSERT_TRUE(store.put(name("m"), v1).ok());
    ASSERT_TRUE(store.put(name("keep"), v1).ok());
    ASSERT_TRUE(store.put(name("m"), v2).ok());
    EXPECT_TRUE(store.blobs().has(v1.layers[0].digest));  // still used by "keep"
    ASSERT_TRUE(store.remove("keep").ok());
    EXPECT_FALSE(store.blobs().has(v1.layers[0].digest));
    EXPECT_TRUE(store.blobs().has(v2.layers[0].digest));
}

TEST_F(model_store_test, corrupt_manifests_are_skipped_by_list) {
    model_store store(root);
    ASSERT_TRUE(store.put(name("good"), stored_manifest(store, "good")).ok());
    write_file("manifests/local/library/garbage/latest", "{\"schema_version\": 1, \"name\": \"loc");
    write_file("manifests/local/library/empty/latest", "");
    write_file("manifests/local/library/Bad Name/latest", "{}");
    manifest missing_blob = stored_manifest(store, "gone");
    ASSERT_TRUE(store.put(name("orphan"), missing_blob).ok());
    ASSERT_TRUE(store.blobs().remove(missing_blob.layers[0].digest).ok());
    fs::create_directories(root / "manifests/local/library/dir/latest");  // a directory where a file belongs

    auto all = store.list();
    ASSERT_EQ(all.size(), 1u);
    EXPECT_EQ(all[0].name.display(), "good:latest");
    EXPECT_EQ(store.find("garbage").err().code, rc::errc::invalid_argument);
    EXPECT_EQ(store.find("orphan").err().code, rc::errc::not_found);
    EXPECT_TRUE(store.remove("garbage").ok());  // an unreadable manifest can still be deleted
    write_file("manifests/hf.co/o/r/q4_k_m", rc::store::test::read_file(root / "manifests/local/library/good/latest"));
    EXPECT_EQ(store.list().size(), 1u);  // not the canonical spelling (Q4_K_M): find() could never reach it
}

TEST_F(model_store_test, unparsable_manifest_keeps_the_blobs_it_mentions) {
    model_store store(root);
    manifest m = stored_manifest(store, "maybe used");
    ASSERT_TRUE(store.put(name("a"), m).ok());
    // As a newer build might write it: this build cannot parse it, but it names the blob.
    write_file("manifests/local/library/future/latest",
               "{\"schema_version\": 9, \"layers\": [\"" + m.layers[0].digest.str() + "\"]}");
    ASSERT_TRUE(store.remove("a").ok());
    EXPECT_TRUE(store.blobs().has(m.layers[0].digest));
}

TEST_F(model_store_test, set_status) {
    model_store store(root);
    ASSERT_TRUE(store.put(name("m"), stored_manifest(store, "w")).ok());
    EXPECT_FALSE(store.find("m")->m.checked_at);

    ASSERT_TRUE(store.set_status("m", model_status::ready).ok());
    auto r = store.find("m");
    EXPECT_EQ(r->m.status, model_status::ready);
    EXPECT_TRUE(r->m.checked_at);

    ASSERT_TRUE(store.set_status("m", model_status::failed, "NaN logits").ok());
    r = store.find("m");
    EXPECT_EQ(r->m.status, model_status::failed);
    EXPECT_EQ(r->m.status_reason, "NaN logits");

    ASSERT_TRUE(store.set_status("m", model_status::quarantined).ok());
    EXPECT_FALSE(store.find("m")->m.checked_at);
    EXPECT_EQ(store.set_status("absent", model_status::ready).err().code, rc::errc::not_found);
}

TEST_F(model_store_test, list_is_sorted_by_display_name) {
    model_store store(root);
    manifest m = stored_manifest(store, "w");
    for (const char * n : {"zeta", "hf.co/o/r:Q8_0", "alpha:2", "team/mid", "alpha:1"}) ASSERT_TRUE(store.put(name(n), m).ok());
    std::vector<std::string> got;
    for (const auto & r : store.list()) got.push_back(r.name.display());
    EXPECT_EQ(got, (std::vector<std::string>{"alpha:1", "alpha:2", "hf.co/o/r:Q8_0", "team/mid:latest", "zeta:latest"}));
}

TEST_F(model_store_test, concurrent_imports_and_puts_all_land) {
    model_store store(root);
    constexpr int k_threads = 8;
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < k_threads; ++i) {
        threads.emplace_back([&, i] {
            // Each thread stores its own blob and one every thread shares, then names both.
            auto work = [&]() -> bool {
                std::string own = "weights of model " + std::to_string(i);
                auto d = store.blobs().import_file(write_file("in/" + std::to_string(i), own));
                auto shared = store.blobs().begin_write();
                if (!d || !shared || !shared->write("shared projector").ok()) return false;
                auto sd = shared->commit();
                if (!sd) return false;
                manifest m;
                m.layers = {{layer_kind::model, d.value(), own.size(), "m.gguf"}, {layer_kind::projector, sd.value(), 16, "p.gguf"}};
                return store.put(model_name::parse("m" + std::to_string(i)).value(), m).ok();
            };
            if (!work()) ++failures;
        });
    }
    for (auto & t : threads) t.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(store.list().size(), size_t(k_threads));
    EXPECT_EQ(store.blobs().list().size(), size_t(k_threads + 1));
    EXPECT_TRUE(entries(root / "tmp").empty());
}

TEST_F(model_store_test, writers_hold_an_inter_process_lock) {
    store_lock lock(root / ".store.lock");
    auto g = lock.acquire();
    ASSERT_TRUE(g.ok()) << g.err().message;
    // flock conflicts between open file descriptions, as another process's would.
    int fd = ::open((root / ".store.lock").c_str(), O_RDWR | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    EXPECT_NE(::flock(fd, LOCK_EX | LOCK_NB), 0);
    EXPECT_EQ(errno, EWOULDBLOCK);
    { auto released = std::move(g.value()); }
    EXPECT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
    ::close(fd);
}

}  // namespace
