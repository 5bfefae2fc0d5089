#include "store/blob_store.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "store_test_util.h"
#include "util/sha256.h"

using namespace rc::store;
using rc::store::test::read_file;
namespace fs = std::filesystem;

namespace {

blob_digest digest_of(const std::string & s) { return blob_digest::of(rc::sha256_of(s)); }

class blob_store_test : public rc::store::test::temp_root_test {
  protected:
    std::vector<std::string> blob_files() const { return entries(root / "blobs"); }
    std::vector<std::string> tmp_files() const { return entries(root / "tmp"); }
};

TEST_F(blob_store_test, import_with_the_right_digest_stores_a_copy) {
    blob_store store(root);
    const std::string data = "hello";
    fs::path src = write_file("incoming/model.gguf", data);
    auto d = store.import_file(src, digest_of(data));
    ASSERT_TRUE(d.ok()) << d.err().message;
    EXPECT_EQ(d.value(), digest_of(data));
    EXPECT_TRUE(store.has(d.value()));
    EXPECT_EQ(store.size(d.value()).value(), 5u);
    EXPECT_EQ(store.path(d.value()), root / "blobs" / d->str());
    EXPECT_EQ(read_file(store.path(d.value())), data);
    EXPECT_TRUE(fs::exists(src));  // copy mode keeps the source
    EXPECT_TRUE(tmp_files().empty());
    EXPECT_EQ(store.list(), std::vector<blob_digest>{d.value()});
}

TEST_F(blob_store_test, import_without_expected_digest_uses_the_computed_one) {
    blob_store store(root);
    std::string big(3 * 1024 * 1024 + 17, 'x');  // several copy chunks
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31 + 7);
    auto d = store.import_file(write_file("big.bin", big));
    ASSERT_TRUE(d.ok()) << d.err().message;
    EXPECT_EQ(d.value(), digest_of(big));
    EXPECT_EQ(store.size(d.value()).value(), big.size());
}

TEST_F(blob_store_test, wrong_digest_is_refused_and_blobs_stay_unchanged) {
    blob_store store(root);
    auto existing = store.import_file(write_file("a", "already here"));
    ASSERT_TRUE(existing.ok());
    const auto before = blob_files();

    auto d = store.import_file(write_file("b", "actual bytes"), digest_of("other bytes"));
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.err().code, rc::errc::invalid_argument);
    EXPECT_NE(d.err().message.find("digest mismatch"), std::string::npos) << d.err().message;
    EXPECT_EQ(blob_files(), before);
    EXPECT_TRUE(tmp_files().empty());
    EXPECT_FALSE(store.has(digest_of("actual bytes")));
    EXPECT_FALSE(store.has(digest_of("other bytes")));
}

TEST_F(blob_store_test, reimport_is_idempotent) {
    blob_store store(root);
    fs::path src = write_file("x", "same bytes");
    auto a = store.import_file(src);
    auto b = store.import_file(src, digest_of("same bytes"));
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a.value(), b.value());
    EXPECT_EQ(blob_files().size(), 1u);
    EXPECT_TRUE(tmp_files().empty());
}

TEST_F(blob_store_test, a_damaged_blob_is_replaced_by_a_verified_import) {
    blob_store store(root);
    const blob_digest d = digest_of("good content");
    write_file("blobs/" + d.str(), "trunc");  // wrong size under the right name
    ASSERT_TRUE(store.import_file(write_file("src", "good content"), d).ok());
    EXPECT_EQ(read_file(store.path(d)), "good content");
}

TEST_F(blob_store_test, move_mode_takes_the_file_and_a_refused_move_gives_it_back) {
    blob_store store(root);
    fs::path src = write_file("tmp/download.part", "moved bytes");
    auto bad = store.import_file(src, digest_of("something else"), import_mode::move);
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(read_file(src), "moved bytes");
    EXPECT_TRUE(blob_files().empty());

    auto d = store.import_file(src, digest_of("moved bytes"), import_mode::move);
    ASSERT_TRUE(d.ok()) << d.err().message;
    EXPECT_FALSE(fs::exists(src));
    EXPECT_EQ(read_file(store.path(d.value())), "moved bytes");
    EXPECT_EQ(tmp_files(), std::vector<std::string>{});
}

TEST_F(blob_store_test, adopt_rehashes_a_downloaded_file) {
    blob_store store(root);
    fs::path part = write_file("tmp/dl-1", "downloaded");
    auto wrong = store.adopt(part, digest_of("claimed"));
    ASSERT_FALSE(wrong.ok());
    EXPECT_TRUE(fs::exists(part));  // left for the caller to inspect or delete
    auto d = store.adopt(part, digest_of("downloaded"));
    ASSERT_TRUE(d.ok()) << d.err().message;
    EXPECT_TRUE(store.has(d.value()));
    EXPECT_FALSE(fs::exists(part));
}

TEST_F(blob_store_test, move_of_a_hard_linked_file_stores_a_private_copy) {
    blob_store store(root);
    fs::path src = write_file("a", "linked");
    fs::path other = root / "b";
    fs::create_hard_link(src, other);
    auto d = store.import_file(src, std::nullopt, import_mode::move);
    ASSERT_TRUE(d.ok()) << d.err().message;
    EXPECT_FALSE(fs::exists(src));
    struct stat blob_st {}, other_st {};
    ASSERT_EQ(::stat(store.path(d.value()).c_str(), &blob_st), 0);
    ASSERT_EQ(::stat(other.c_str(), &other_st), 0);
    EXPECT_NE(blob_st.st_ino, other_st.st_ino);  // writing through "b" cannot change the blob
}

TEST_F(blob_store_test, import_refuses_missing_files_and_directories) {
    blob_store store(root);
    auto missing = store.import_file(root / "nope");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.err().code, rc::errc::not_found);
    fs::create_directories(root / "dir");
    auto dir = store.import_file(root / "dir");
    ASSERT_FALSE(dir.ok());
    EXPECT_TRUE(blob_files().empty());
}

TEST_F(blob_store_test, streaming_writer_commits_with_the_expected_digest) {
    blob_store store(root);
    auto w = store.begin_write();
    ASSERT_TRUE(w.ok()) << w.err().message;
    std::string all;
    for (int i = 0; i < 100; ++i) {
        std::string chunk = "chunk " + std::to_string(i) + "\n";
        ASSERT_TRUE(w->write(chunk).ok());
        all += chunk;
    }
    EXPECT_EQ(w->size(), all.size());
    EXPECT_TRUE(blob_files().empty());  // nothing visible before commit
    auto d = w->commit(digest_of(all));
    ASSERT_TRUE(d.ok()) << d.err().message;
    EXPECT_EQ(read_file(store.path(d.value())), all);
    EXPECT_TRUE(tmp_files().empty());
    EXPECT_FALSE(w->write("more").ok());  // finished
    EXPECT_FALSE(w->commit().ok());
}

TEST_F(blob_store_test, streaming_writer_with_wrong_digest_stores_nothing) {
    blob_store store(root);
    auto w = store.begin_write();
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->write("body").ok());
    auto d = w->commit(digest_of("not the body"));
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.err().code, rc::errc::invalid_argument);
    EXPECT_TRUE(blob_files().empty());
    EXPECT_TRUE(tmp_files().empty());
}

TEST_F(blob_store_test, abandoned_writer_leaves_no_temp_file) {
    blob_store store(root);
    {
        auto w = store.begin_write();
        ASSERT_TRUE(w.ok());
        ASSERT_TRUE(w->write("partial upload").ok());
        EXPECT_EQ(tmp_files().size(), 1u);
        blob_writer moved = std::move(w.value());  // ownership moves with the writer
        EXPECT_EQ(tmp_files().size(), 1u);
    }
    EXPECT_TRUE(tmp_files().empty());
    EXPECT_TRUE(blob_files().empty());
}

TEST_F(blob_store_test, remove_and_list) {
    blob_store store(root);
    auto a = store.import_file(write_file("a", "aaa"));
    auto b = store.import_file(write_file("b", "bbb"));
    ASSERT_TRUE(a.ok() && b.ok());
    write_file("blobs/README", "not a blob");
    write_file("blobs/sha256-XYZ", "not a blob either");
    auto listed = store.list();
    std::vector<blob_digest> want{a.value(), b.value()};
    std::sort(want.begin(), want.end());
    EXPECT_EQ(listed, want);

    ASSERT_TRUE(store.remove(a.value()).ok());
    EXPECT_FALSE(store.has(a.value()));
    EXPECT_EQ(store.remove(a.value()).err().code, rc::errc::not_found);
    EXPECT_EQ(store.size(a.value()).err().code, rc::errc::not_found);
    EXPECT_EQ(store.list(), std::vector<blob_digest>{b.value()});
}

}  // namespace
