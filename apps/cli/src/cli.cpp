// SPDX-License-Identifier: BSD-3-Clause
#include "skein_cli/cli.hpp"

#include <CLI/CLI.hpp>
#include <optional>

namespace skein::cli {
namespace {
CLI::Option* opt(void* o) { return static_cast<CLI::Option*>(o); }
CLI::App* app(void* a) { return static_cast<CLI::App*>(a); }
}  // namespace

Option& Option::integer_range(std::int64_t min, std::int64_t max) {
  opt(option_)->check(CLI::Range(min, max));
  return *this;
}
Option& Option::unsigned_range(std::uint64_t min, std::uint64_t max) {
  opt(option_)->check(CLI::Range(min, max));
  return *this;
}
Option& Option::range(double min, double max) {
  opt(option_)->check(CLI::Range(min, max));
  return *this;
}
Option& Option::one_of(std::vector<std::string> names) {
  opt(option_)->check(CLI::IsMember(std::move(names)));
  return *this;
}
Option& Option::positive() {
  opt(option_)->check(CLI::PositiveNumber);
  return *this;
}
Option& Option::non_negative() {
  opt(option_)->check(CLI::NonNegativeNumber);
  return *this;
}
Option& Option::check(std::function<std::string(const std::string&)> check,
                      const std::string& description) {
  opt(option_)->check(CLI::Validator(
      [check = std::move(check)](std::string& text) { return check(text); }, description));
  return *this;
}
Option& Option::delimiter(char separator) {
  opt(option_)->delimiter(separator);
  return *this;
}
Option& Option::expected(int count) {
  opt(option_)->expected(count);
  return *this;
}
Option& Option::required() {
  opt(option_)->required();
  return *this;
}
Option& Option::excludes(const Option& other) {
  opt(option_)->excludes(opt(other.option_));
  return *this;
}

template <class T>
Option Command::add_option(const std::string& names, T& value, const std::string& help) {
  return Option(app(app_)->add_option(names, value, help));
}
Option Command::add_flag(const std::string& names, bool& value, const std::string& help) {
  return Option(app(app_)->add_flag(names, value, help));
}
Command Command::add_subcommand(const std::string& name, const std::string& help) {
  return Command(app(app_)->add_subcommand(name, help));
}
std::string Command::chosen_subcommand() const {
  const auto chosen = app(app_)->get_subcommands();
  return chosen.empty() ? std::string() : chosen.front()->get_name();
}

#define SKEIN_CLI_OPTION_TYPE(T)                                                               \
  template Option Command::add_option<T>(const std::string&, T&, const std::string&);          \
  template Option Command::add_option<std::vector<T>>(const std::string&, std::vector<T>&,     \
                                                      const std::string&);                     \
  template Option Command::add_option<std::optional<T>>(const std::string&, std::optional<T>&, \
                                                        const std::string&);
SKEIN_CLI_OPTION_TYPE(int)
SKEIN_CLI_OPTION_TYPE(unsigned)
SKEIN_CLI_OPTION_TYPE(long)
SKEIN_CLI_OPTION_TYPE(unsigned long)
SKEIN_CLI_OPTION_TYPE(long long)
SKEIN_CLI_OPTION_TYPE(unsigned long long)
SKEIN_CLI_OPTION_TYPE(float)
SKEIN_CLI_OPTION_TYPE(double)
SKEIN_CLI_OPTION_TYPE(std::string)
#undef SKEIN_CLI_OPTION_TYPE

struct Parser::Impl {
  explicit Impl(const std::string& description) : app(description) {}
  CLI::App app;
};

Parser::Parser(const std::string& description)
    : Command(nullptr), impl_(std::make_unique<Impl>(description)) {
  app_ = &impl_->app;
}
Parser::~Parser() = default;

void Parser::show_defaults() { impl_->app.option_defaults()->always_capture_default(); }
void Parser::version_flag(const std::string& flag, const std::string& version) {
  impl_->app.set_version_flag(flag, version);
}
void Parser::require_subcommand() { impl_->app.require_subcommand(1); }

std::optional<int> Parser::parse(int argc, char** argv) {
  try {
    impl_->app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return impl_->app.exit(e);
  }
  return std::nullopt;
}

}  // namespace skein::cli
