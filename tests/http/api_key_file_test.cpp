// API keys from a file (`serve --api-key-file`, `agent --api-key-file`): what is read, and every file
// that is refused — with the file named and no key in the message.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "http/api_key_file.h"
#include "support/temp_dir.h"

using namespace rc::http;
using rc::errc;

namespace {

std::string write_file(const std::filesystem::path & p, const std::string & text, mode_t mode) {
    std::ofstream(p, std::ios::binary) << text;
    ::chmod(p.c_str(), mode);
    return p.string();
}

}  // namespace

TEST(api_key_file, one_key_per_line_blank_lines_and_comments_skipped) {
    rc::test::temp_dir dir("keys");
    const auto path = write_file(dir.path() / "keys", "# the lab's clients\nkey-one\r\n\n  key-two \t\nkey-three", 0600);
    auto keys = read_api_key_file(path);
    ASSERT_TRUE(keys.ok()) << keys.err().message;
    EXPECT_EQ(keys.value(), (std::vector<std::string>{"key-one", "key-two", "key-three"}));
    EXPECT_TRUE(read_api_key_file(write_file(dir.path() / "ro", "k\n", 0400)).ok()) << "read-only for its owner is fine";
}

TEST(api_key_file, files_others_could_read_or_swap_are_refused_naming_the_file) {
    rc::test::temp_dir dir("keys");
    for (mode_t mode : {0644, 0640, 0604, 0620, 0602}) {
        const auto path = write_file(dir.path() / ("keys-" + std::to_string(mode)), "Sekret-key-1\n", mode);
        auto keys = read_api_key_file(path);
        ASSERT_FALSE(keys.ok()) << std::oct << mode;
        EXPECT_EQ(keys.err().code, errc::invalid_argument);
        EXPECT_NE(keys.err().message.find(path), std::string::npos) << keys.err().message;
        EXPECT_NE(keys.err().message.find("group or others"), std::string::npos) << keys.err().message;
        EXPECT_EQ(keys.err().message.find("Sekret"), std::string::npos) << "never the key";
    }
}

TEST(api_key_file, what_is_not_a_regular_file_with_keys_is_refused) {
    rc::test::temp_dir dir("keys");
    auto not_regular = read_api_key_file(dir.path().string());
    ASSERT_FALSE(not_regular.ok());
    EXPECT_NE(not_regular.err().message.find("not a regular file"), std::string::npos) << not_regular.err().message;

    const auto fifo = dir.path() / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    auto from_fifo = read_api_key_file(fifo.string());  // refused, not waited on
    ASSERT_FALSE(from_fifo.ok());
    EXPECT_NE(from_fifo.err().message.find("not a regular file"), std::string::npos) << from_fifo.err().message;

    for (const std::string text : {"", "\n\n", "# only a comment\n"}) {
        auto empty = read_api_key_file(write_file(dir.path() / "empty", text, 0600));
        ASSERT_FALSE(empty.ok()) << text;
        EXPECT_NE(empty.err().message.find("holds no key"), std::string::npos) << empty.err().message;
    }

    auto large = read_api_key_file(write_file(dir.path() / "large", std::string(k_max_api_key_file_bytes + 1, 'k'), 0600));
    ASSERT_FALSE(large.ok());
    EXPECT_NE(large.err().message.find("larger than 64 KiB"), std::string::npos) << large.err().message;

    auto missing = read_api_key_file((dir.path() / "missing").string());
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.err().code, errc::not_found);
    EXPECT_NE(missing.err().message.find("missing"), std::string::npos) << missing.err().message;

    auto spaced = read_api_key_file(write_file(dir.path() / "spaced", "Sekret one\n", 0600));
    ASSERT_FALSE(spaced.ok()) << "a key with a space could not be sent in a header";
    EXPECT_NE(spaced.err().message.find("spaced"), std::string::npos) << spaced.err().message;
    EXPECT_EQ(spaced.err().message.find("Sekret"), std::string::npos) << "never the key";
}

TEST(api_key_file, comma_lists_keep_empty_entries_for_the_check_to_refuse) {
    EXPECT_EQ(split_api_key_list("a, b ,c"), (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(split_api_key_list(""), (std::vector<std::string>{""}));
    EXPECT_EQ(split_api_key_list("a,"), (std::vector<std::string>{"a", ""}));
    EXPECT_EQ(split_api_key_list("a,,b"), (std::vector<std::string>{"a", "", "b"}));
}
