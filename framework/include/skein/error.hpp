// SPDX-License-Identifier: BSD-3-Clause
// Skein's exception hierarchy (after PyCUDA's): every failure Skein reports is a skein::Error.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "skein/export.hpp"

namespace skein {

// Where and why a call failed. Every field is optional; the message is built from those set.
struct ErrorInfo {
  std::string what{};  // what went wrong, in words
  std::string call{};  // the backend call or Skein call that failed, e.g. "cuMemAlloc"
  // The backend's name for the error code, e.g. "CUDA_ERROR_OUT_OF_MEMORY".
  std::string code_name{};
  long long code = 0;
  bool has_code = false;
  std::string device{};    // e.g. "CUDA device 0 (NVIDIA H100 80GB HBM3)"
  std::string hint{};      // what the user can do about it
  std::string location{};  // source file:line inside Skein
};

// Base class of all of Skein's exceptions.
// Threads: an Error never changes once made, so it may be read from any number of threads at once;
// its message takes the process's error prefix (detail::error_prefix()) when it is built.
class SKEIN_EXPORT Error : public std::runtime_error {
 public:
  explicit Error(const ErrorInfo& info);
  explicit Error(const std::string& what) : Error(ErrorInfo{.what = what}) {}

  const ErrorInfo& info() const noexcept { return info_; }
  const std::string& call() const noexcept { return info_.call; }
  long long code() const noexcept { return info_.code; }

 private:
  ErrorInfo info_;
};

// The caller did something wrong: bad size, index, dtype, argument. Fix the calling code.
class SKEIN_EXPORT LogicError : public Error {
 public:
  using Error::Error;
};

// The backend failed at run time for a reason outside the caller's control.
class SKEIN_EXPORT RuntimeError : public Error {
 public:
  using Error::Error;
};

// A requested API (CUDA, OpenCL) is not usable on this machine.
class SKEIN_EXPORT ApiUnavailableError : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

// A device allocation failed or would not fit.
class SKEIN_EXPORT MemoryError : public Error {
 public:
  MemoryError(const ErrorInfo& info, std::size_t requested, std::size_t available)
      : Error(info), requested_(requested), available_(available) {}
  std::size_t requested() const noexcept { return requested_; }
  // Free memory on the device when the backend can tell, else its total memory.
  std::size_t available() const noexcept { return available_; }

 private:
  std::size_t requested_;
  std::size_t available_;
};

// A kernel launch failed.
class SKEIN_EXPORT LaunchError : public Error {
 public:
  using Error::Error;
};

// Kernel source failed to compile; keeps the compiler's log and the numbered source.
class SKEIN_EXPORT CompileError : public Error {
 public:
  CompileError(const ErrorInfo& info, std::string log, std::string source, std::string options)
      : Error(info),
        log_(std::move(log)),
        source_(std::move(source)),
        options_(std::move(options)) {}
  const std::string& log() const noexcept { return log_; }
  const std::string& source() const noexcept { return source_; }
  const std::string& options() const noexcept { return options_; }

 private:
  std::string log_;
  std::string source_;
  std::string options_;
};

// A kernel template could not be rendered: names the template and what was missing or wrong.
class SKEIN_EXPORT RenderError : public LogicError {
 public:
  using LogicError::LogicError;
};

// A collective or another blocking operation did not finish in time.
class SKEIN_EXPORT TimeoutError : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};

// A byte count as "1.5 GiB (1610612736 bytes)", for messages.
SKEIN_EXPORT std::string format_bytes(std::size_t bytes);

namespace detail {
// A prefix added to every message of this process ("rank 3: "), set by the MPI runtime. Safe to
// call from any thread (a copy is returned: another thread may set it meanwhile).
// Threads: both take one process-wide mutex, so any threads may call them at once; the prefix is
// the process's, not the thread's (a Runtime sets it and puts the previous one back when it goes).
SKEIN_EXPORT void set_error_prefix(std::string prefix);
SKEIN_EXPORT std::string error_prefix();
}  // namespace detail

}  // namespace skein
