// SPDX-License-Identifier: BSD-3-Clause
// Skein's one reader of its environment variables (skein/detail/env.hpp, the framework's internal
// interface): one rule for every SKEIN_* variable. Unset or empty is unset; a bad value raises
// LogicError naming the variable, the value, what it accepts and the call.
#include <gtest/gtest.h>

#include <string>

#include "skein/detail/env.hpp"
#include "checks.hpp"
#include "scoped_env.hpp"
#include "skein/error.hpp"

namespace {
namespace env_test {

using skein::LogicError;
using skein::test::expect_logic_error;
using skein::test::ScopedEnv;
namespace d = skein::detail;

TEST(Environment, EmptyIsUnset) {
  {
    ScopedEnv v("SKEIN_TEST_ENV_READER", std::nullopt);
    EXPECT_FALSE(d::env_value("SKEIN_TEST_ENV_READER").has_value());
    EXPECT_TRUE(d::env_flag("SKEIN_TEST_ENV_READER", true, "test", "on"));
    EXPECT_EQ(d::env_seconds("SKEIN_TEST_ENV_READER", 300.0, "test", "waits forever"), 300.0);
  }
  {
    ScopedEnv v("SKEIN_TEST_ENV_READER", "");
    EXPECT_FALSE(d::env_value("SKEIN_TEST_ENV_READER").has_value());
    EXPECT_FALSE(d::env_flag("SKEIN_TEST_ENV_READER", false, "test", "on"));
    EXPECT_EQ(d::env_seconds("SKEIN_TEST_ENV_READER", 7.5, "test", "waits forever"), 7.5);
    EXPECT_FALSE(
        (d::env_choice<int>("SKEIN_TEST_ENV_READER", "test", {{"a", 1, "one"}}).has_value()));
  }
  ScopedEnv v("SKEIN_TEST_ENV_READER", " x");
  EXPECT_EQ(d::env_value("SKEIN_TEST_ENV_READER"), std::optional<std::string>(" x"));
}

TEST(Environment, Flags) {
  for (const char* yes : {"1", "true", "yes", "on", "TRUE", "Yes", "ON"}) {
    EXPECT_EQ(d::parse_env_flag("SKEIN_X", std::string(yes), "test", "on"),
              std::optional<bool>(true))
        << yes;
  }
  for (const char* no : {"0", "false", "no", "off", "FALSE", "No", "Off"}) {
    EXPECT_EQ(d::parse_env_flag("SKEIN_X", std::string(no), "test", "on"),
              std::optional<bool>(false))
        << no;
  }
  for (const char* bad : {"2", "maybe", "enabled", " 1", "1 "}) {
    expect_logic_error(
        [&] { d::parse_env_flag("SKEIN_X", std::string(bad), "Communicator", "check calls"); },
        {"SKEIN_X='", bad, "Communicator", "1, true, yes or on (check calls)", "unset it"});
  }
}

TEST(Environment, Seconds) {
  EXPECT_EQ(d::parse_env_seconds("SKEIN_T", std::string("2.5"), "test", "forever"),
            std::optional<double>(2.5));
  EXPECT_EQ(d::parse_env_seconds("SKEIN_T", std::string("0"), "test", "forever"),
            std::optional<double>(0.0));
  EXPECT_EQ(d::parse_env_seconds("SKEIN_T", std::string("1e-6"), "test", "forever"),
            std::optional<double>(1e-6));
  for (const char* bad : {"abc", "-1", "inf", "nan", "1e999", "5s", " "}) {
    expect_logic_error(
        [&] { d::parse_env_seconds("SKEIN_T", std::string(bad), "Communicator", "waits forever"); },
        {"SKEIN_T='", "a number of seconds >= 0", "0 waits forever", "Communicator"});
  }
}

TEST(Environment, Choices) {
  ScopedEnv v("SKEIN_TEST_ENV_READER", "mpi");
  auto read = [] {
    return d::env_choice<int>("SKEIN_TEST_ENV_READER", "Communicator",
                              {{"auto", 0, "pick"}, {"nccl", 1, "NCCL"}, {"mpi", 2, "MPI"}});
  };
  EXPECT_EQ(read(), std::optional<int>(2));
  ScopedEnv bad("SKEIN_TEST_ENV_READER", "MPI");  // exact words only
  expect_logic_error(read, {"SKEIN_TEST_ENV_READER='MPI'", "auto (pick), nccl (NCCL) or mpi (MPI)",
                            "Communicator"});
}

}  // namespace env_test
}  // namespace
