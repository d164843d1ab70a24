// SPDX-License-Identifier: BSD-3-Clause
// The command lines of Skein's apps and benchmarks, parsed by CLI11 behind a small interface.
//
// CLI11 (2.1, header-only as Debian ships it) costs 10-15 s of compile time in every source that
// includes it: its inline code and its namespace-scope validators are compiled again each time.
// Compiled once here, it is shared by the dozen programs that read options. What they see of it
// is this header: options and flags bound to variables, the checks they use, subcommands, and a
// parse that reports --help, --version and bad input as CLI11 does.
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace skein::cli {

// An option or flag just added, for chaining its checks: parser.add_option(...).range(1, 100).
class Option {
 public:
  // The value must lie in [min, max] (integers or reals).
  template <std::integral I>
  Option& range(I min, I max) {
    if constexpr (std::is_unsigned_v<I>) {
      return unsigned_range(static_cast<std::uint64_t>(min), static_cast<std::uint64_t>(max));
    } else {
      return integer_range(static_cast<std::int64_t>(min), static_cast<std::int64_t>(max));
    }
  }
  Option& range(double min, double max);
  // The value must be one of `names`.
  Option& one_of(std::vector<std::string> names);
  Option& positive();      // > 0
  Option& non_negative();  // >= 0
  // `check` returns an empty string when the text is good, else what is wrong with it;
  // `description` is shown in --help (e.g. "in (0, 1)").
  Option& check(std::function<std::string(const std::string&)> check,
                const std::string& description);
  // Several values in one argument, split at `separator` ("--sizes 1,2,3").
  Option& delimiter(char separator);
  // Exactly `count` values.
  Option& expected(int count);
  // Must be given.
  Option& required();
  // Refused together with `other`.
  Option& excludes(const Option& other);

 private:
  friend class Command;
  Option& integer_range(std::int64_t min, std::int64_t max);
  Option& unsigned_range(std::uint64_t min, std::uint64_t max);
  explicit Option(void* option) : option_(option) {}
  void* option_;  // CLI::Option*, owned by the parser
};

// A command line or one of its subcommands.
class Command {
 public:
  // Binds an option (names as CLI11 takes them: "-n,--iters") to `value`. T: the integer and
  // floating-point types, std::string, and std::vector or std::optional of those.
  template <class T>
  Option add_option(const std::string& names, T& value, const std::string& help = "");
  Option add_flag(const std::string& names, bool& value, const std::string& help = "");
  Command add_subcommand(const std::string& name, const std::string& help);
  // The name of the subcommand given on the command line; empty when none was.
  [[nodiscard]] std::string chosen_subcommand() const;

 protected:
  explicit Command(void* app) : app_(app) {}
  void* app_;  // CLI::App*
};

// The program's command line.
class Parser : public Command {
 public:
  explicit Parser(const std::string& description);
  ~Parser();
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  // --help shows every option's default (the value its variable holds when it is added).
  void show_defaults();
  void version_flag(const std::string& flag, const std::string& version);
  // Exactly one subcommand must be given.
  void require_subcommand();
  // Parses argv into the bound variables. Returns the exit status when the program should end
  // now: 0 after --help or --version, non-zero after a bad option, with CLI11's message printed;
  // std::nullopt when it should go on.
  [[nodiscard]] std::optional<int> parse(int argc, char** argv);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace skein::cli
