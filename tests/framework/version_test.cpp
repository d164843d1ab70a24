// SPDX-License-Identifier: BSD-3-Clause
// skein::version() and version_numbers(): the library's version at run time, against the
// compile-time macros of the headers this test was built with (the same build, so they must agree)
// and their parts.
#include <gtest/gtest.h>

#include <skein/skein.hpp>
#include <string>
#include <vector>

namespace skein {
namespace {
namespace version_test {

// "1.22.333" -> {1, 22, 333}; an empty list when a part is not a plain decimal number.
std::vector<long> split_version(const std::string& text) {
  std::vector<long> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('.', start);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(start, end - start);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos) return {};
    parts.push_back(std::stol(part));
    start = end + 1;
  }
  return parts;
}

TEST(Version, RunTimeMatchesTheHeaders) {
  const char* text = version();
  ASSERT_NE(text, nullptr);
  EXPECT_STREQ(text, SKEIN_VERSION_STRING);
  // The same pointer every call: static storage, as documented.
  EXPECT_EQ(version(), text);
}

TEST(Version, PartsMatchTheMacros) {
  const std::vector<long> parts = split_version(version());
  ASSERT_EQ(parts.size(), 3u) << "version() = '" << version() << "' is not MAJOR.MINOR.PATCH";
  EXPECT_EQ(parts[0], SKEIN_VERSION_MAJOR);
  EXPECT_EQ(parts[1], SKEIN_VERSION_MINOR);
  EXPECT_EQ(parts[2], SKEIN_VERSION_PATCH);
  // The splitter itself refuses what is not a version, so that the check above can fail.
  EXPECT_TRUE(split_version("1..2").empty());
  EXPECT_TRUE(split_version("1.2a.3").empty());
  EXPECT_EQ(split_version("10.0.7"), (std::vector<long>{10, 0, 7}));
}

// version_numbers(): the library's numbers, equal to its string's parts and, in this build, to
// the headers' (header_version(), the macros); Version orders as numbers, not as text.
TEST(Version, NumbersMatchTheStringAndTheHeaders) {
  const Version lib = version_numbers();
  const std::vector<long> parts = split_version(version());
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(lib.major, parts[0]);
  EXPECT_EQ(lib.minor, parts[1]);
  EXPECT_EQ(lib.patch, parts[2]);
  constexpr Version headers = header_version();
  EXPECT_EQ(headers.major, SKEIN_VERSION_MAJOR);
  EXPECT_EQ(headers.minor, SKEIN_VERSION_MINOR);
  EXPECT_EQ(headers.patch, SKEIN_VERSION_PATCH);
  EXPECT_EQ(lib, headers);
  EXPECT_LT((Version{0, 9, 3}), (Version{0, 10, 0}));
  EXPECT_LT((Version{1, 2, 3}), (Version{1, 2, 4}));
  EXPECT_GT((Version{2, 0, 0}), (Version{1, 99, 99}));
  EXPECT_NE((Version{1, 2, 3}), (Version{1, 3, 2}));
}

}  // namespace version_test
}  // namespace
}  // namespace skein
