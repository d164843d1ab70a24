// SPDX-License-Identifier: BSD-3-Clause
// Checks of errors and their messages that the test programs share (the framework tests and the
// MPI tests alike): header-only, so that each program takes them without a library.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <skein/error.hpp>
#include <string>
#include <utility>
#include <vector>

namespace skein::test {

// Whether `part` occurs in `text`.
inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The message of the skein::Error that f() throws, "(no error)" when it throws none (another
// exception propagates: the test fails with it).
template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

namespace detail_checks {

inline std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "'" : ", '") + w + "'";
  return out;
}

inline std::string context(const std::string& what) {
  return what.empty() ? "" : " (" + what + ")";
}

}  // namespace detail_checks

// Runs `bad`, which must raise E whose message holds every word of `words` (another exception
// type is a failure). `what` names the call in failure messages.
template <class E, class F>
void expect_error(F&& bad, const std::vector<std::string>& words, const std::string& what = "") {
  try {
    bad();
    ADD_FAILURE() << "no exception; expected one with " << detail_checks::joined(words)
                  << detail_checks::context(what);
  } catch (const E& e) {
    const std::string message = e.what();
    for (const auto& w : words) {
      EXPECT_NE(message.find(w), std::string::npos)
          << "'" << w << "' not in: " << message << detail_checks::context(what);
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type" << detail_checks::context(what) << ": " << e.what();
  }
}

// expect_error for LogicError.
template <class F>
void expect_logic_error(F&& bad, const std::vector<std::string>& words,
                        const std::string& what = "") {
  expect_error<LogicError>(std::forward<F>(bad), words, what);
}

}  // namespace skein::test
