// SPDX-License-Identifier: BSD-3-Clause
// The thread's last error (skein_last_error_message, skein_last_error_status) and the mapping of
// each of Skein's exception types to a skein_status.
#include "errors.hpp"
#include "skein/config.h"

#include <exception>
#include <new>
#include <string>

#include "skein/checkpoint.hpp"
#include "skein/error.hpp"

namespace skein::capi {

namespace {

struct LastError {
  skein_status status = SKEIN_SUCCESS;
  std::string message;
};

LastError& last_error() {
  thread_local LastError error;
  return error;
}

// The most derived of Skein's types first: CheckpointError and TimeoutError are RuntimeErrors,
// and ApiUnavailableError too.
skein_status status_of_current() noexcept {
  try {
    throw;
  } catch (const CheckpointError&) {
    return SKEIN_ERROR_CHECKPOINT;
  } catch (const TimeoutError&) {
    return SKEIN_ERROR_TIMEOUT;
  } catch (const ApiUnavailableError&) {
    return SKEIN_ERROR_API_UNAVAILABLE;
  } catch (const MemoryError&) {
    return SKEIN_ERROR_OUT_OF_MEMORY;
  } catch (const CompileError&) {
    return SKEIN_ERROR_COMPILE;
  } catch (const LaunchError&) {
    return SKEIN_ERROR_LAUNCH;
  } catch (const LogicError&) {
    return SKEIN_ERROR_INVALID_ARGUMENT;
  } catch (const Error&) {
    return SKEIN_ERROR_RUNTIME;
  } catch (const Unsupported&) {
    return SKEIN_ERROR_UNSUPPORTED;
  } catch (...) {
    return SKEIN_ERROR_INTERNAL;
  }
}

std::string message_of_current() noexcept {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return "out of host memory (std::bad_alloc). Free host memory or use smaller sizes.";
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception that is not a std::exception. This is a bug: report it.";
  }
}

}  // namespace

void unsupported(const char* function, const std::string& lacks) {
  throw Unsupported(std::string(function) + " needs " + lacks +
                    ", which this build of Skein lacks (skein_has_mpi(), skein_has_hdf5() say "
                    "what it has). Use a Skein built with it.");
}

void need_hdf5(const char* function) {
  if (!(SKEIN_HAS_HDF5 && SKEIN_HAS_MPI)) unsupported(function, "HDF5 with MPI");
}

skein_status fail(const char* function) noexcept {
  const skein_status status = status_of_current();
  try {
    LastError& error = last_error();
    error.status = status;
    error.message = std::string(function) + ": " + message_of_current();
  } catch (...) {
    // Out of memory for the message itself: the status still says what kind of error it was.
  }
  return status;
}

}  // namespace skein::capi

extern "C" {

const char* skein_last_error_message(void) { return skein::capi::last_error().message.c_str(); }

skein_status skein_last_error_status(void) { return skein::capi::last_error().status; }

void skein_clear_error(void) {
  auto& error = skein::capi::last_error();
  error.status = SKEIN_SUCCESS;
  error.message.clear();
}

const char* skein_status_name(skein_status status) {
  switch (status) {
    case SKEIN_SUCCESS: return "SKEIN_SUCCESS";
    case SKEIN_ERROR_INVALID_ARGUMENT: return "SKEIN_ERROR_INVALID_ARGUMENT";
    case SKEIN_ERROR_RUNTIME: return "SKEIN_ERROR_RUNTIME";
    case SKEIN_ERROR_API_UNAVAILABLE: return "SKEIN_ERROR_API_UNAVAILABLE";
    case SKEIN_ERROR_OUT_OF_MEMORY: return "SKEIN_ERROR_OUT_OF_MEMORY";
    case SKEIN_ERROR_LAUNCH: return "SKEIN_ERROR_LAUNCH";
    case SKEIN_ERROR_COMPILE: return "SKEIN_ERROR_COMPILE";
    case SKEIN_ERROR_TIMEOUT: return "SKEIN_ERROR_TIMEOUT";
    case SKEIN_ERROR_CHECKPOINT: return "SKEIN_ERROR_CHECKPOINT";
    case SKEIN_ERROR_UNSUPPORTED: return "SKEIN_ERROR_UNSUPPORTED";
    case SKEIN_ERROR_INTERNAL: return "SKEIN_ERROR_INTERNAL";
  }
  return "unknown status";
}

}  // extern "C"
