// SPDX-License-Identifier: BSD-3-Clause
// HDF5's error stack as the text of Skein's exceptions (SKEIN_H5_CHECK, hdf5_support.hpp).
#include "hdf5_support.hpp"

#if SKEIN_HAS_HDF5 && SKEIN_HAS_MPI

namespace skein::hdf5 {

namespace internal {

namespace {

herr_t collect_error(unsigned, const H5E_error2_t* error, void* data) {
  auto* lines = static_cast<std::vector<std::string>*>(data);
  lines->push_back(fmt::format("{}(): {}", error->func_name ? error->func_name : "?",
                               error->desc ? error->desc : "(no description)"));
  return 0;
}

}  // namespace

std::vector<std::string> hdf5_error_lines() {
  std::vector<std::string> lines;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &lines);
  H5Eclear2(H5E_DEFAULT);
  return lines;
}

std::string hdf5_error_stack(std::vector<std::string> lines) {
  if (lines.empty()) return "HDF5 gave no details";
  if (lines.size() > 4) {
    lines = {lines[0], "...", lines[lines.size() - 2], lines.back()};
  }
  return fmt::format("{}", fmt::join(lines, "; "));
}

std::string hdf5_error_stack() { return hdf5_error_stack(hdf5_error_lines()); }

[[noreturn]] void raise_hdf5(const char* call, const std::string& where, const char* file,
                             int line) {
  throw RuntimeError(ErrorInfo{
      .what = fmt::format("{}: {}", where, hdf5_error_stack()),
      .call = call,
      .hint = "HDF5's messages above say what failed: a path that does not exist or cannot be "
              "written, a full disk, a file that is not HDF5 or is damaged, or a file system "
              "without file locks (then set HDF5_USE_FILE_LOCKING=FALSE).",
      .location = detail::source_location(file, line)});
}

}  // namespace internal

}  // namespace skein::hdf5

#endif
