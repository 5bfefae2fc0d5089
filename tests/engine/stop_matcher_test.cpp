#include "engine/stop_matcher.h"

#include <gtest/gtest.h>

using rc::engine::stop_matcher;

namespace {
// Feeds pieces and returns everything emitted plus the flush.
std::string run(stop_matcher & m, std::initializer_list<std::string> pieces, bool * stopped = nullptr) {
    std::string out;
    bool s = false;
    for (const auto & p : pieces) {
        auto st = m.feed(p);
        out += st.visible;
        s = s || st.stopped;
    }
    out += m.flush();
    if (stopped) *stopped = s;
    return out;
}
}  // namespace

TEST(stop_matcher, passes_text_through_without_stops) {
    stop_matcher m({});
    EXPECT_EQ(run(m, {"hello", " ", "world"}), "hello world");
}

TEST(stop_matcher, stop_string_split_across_pieces_is_cut) {
    stop_matcher m({"END"});
    bool stopped = false;
    EXPECT_EQ(run(m, {"abc E", "N", "Dxyz"}, &stopped), "abc ");
    EXPECT_TRUE(stopped);
}

TEST(stop_matcher, holds_back_only_while_a_match_is_possible) {
    stop_matcher m({"</s>"});
    auto a = m.feed("hi <");
    EXPECT_EQ(a.visible, "hi ");
    auto b = m.feed("b>");  // "<b>" can no longer become "</s>"
    EXPECT_EQ(b.visible, "<b>");
    EXPECT_FALSE(b.stopped);
}

TEST(stop_matcher, earliest_of_several_stops_wins) {
    stop_matcher m({"world", "lo"});
    auto st = m.feed("hello world");
    EXPECT_TRUE(st.stopped);
    EXPECT_EQ(st.visible, "hel");
    EXPECT_EQ(st.stop_word, "lo");
    EXPECT_TRUE(m.feed("more").stopped);
    EXPECT_EQ(m.flush(), "");
}

TEST(stop_matcher, incomplete_utf8_is_held_until_complete) {
    stop_matcher m({});
    std::string euro = "\xE2\x82\xAC";
    EXPECT_EQ(m.feed("a" + euro.substr(0, 1)).visible, "a");
    EXPECT_EQ(m.feed(euro.substr(1)).visible, euro);
}

TEST(stop_matcher, unmatched_tail_is_released_at_the_end) {
    stop_matcher m({"STOP"});
    EXPECT_EQ(m.feed("go ST").visible, "go ");
    EXPECT_EQ(m.flush(), "ST");
}
