// SPDX-License-Identifier: BSD-3-Clause
// Small MPI helpers shared by the collectives layer: MPI error codes as Skein errors, and waiting
// on non-blocking MPI requests against a deadline (blocking MPI calls could hang forever when a
// rank never arrives; polling lets Skein raise TimeoutError instead). Agreement between ranks
// (sharing a rank's string or failure, comparing calls) is agreement.hpp's.
#pragma once

#include <memory>
#include <mutex>
#include <string_view>
#include <type_traits>
#include <vector>

#include "skein/config.hpp"

#if SKEIN_HAS_MPI

#include <mpi.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <exception>
#include <functional>
#include <span>
#include <string>
#include <thread>

#include "skein/detail/backend.hpp"
#include "skein/detail/errors.hpp"
#include "skein/export.hpp"

namespace skein::detail {

inline std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "unknown MPI error";
  return std::string(text, static_cast<std::size_t>(length));
}

// Skein's communicators use MPI_ERRORS_RETURN, so failures arrive here as return codes: the
// error says which call, on which rank (of MPI_COMM_WORLD), and where in Skein's source.
[[noreturn]] inline void throw_mpi_error(int code, const char* call, std::string location) {
  int initialized = 0, finalized = 0, rank = -1;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw RuntimeError(
      ErrorInfo{.what = rank >= 0 ? fmt::format("{} (on MPI rank {})", mpi_error_string(code), rank)
                                  : mpi_error_string(code),
                .call = call,
                .code = code,
                .has_code = true,
                .hint = "An MPI rank probably failed or left; see its output.",
                .location = std::move(location)});
}

// For a return code already in hand; otherwise use SKEIN_MPI_CHECK.
inline void check_mpi(int code, const char* call, std::string_view location) {
  if (code != MPI_SUCCESS) [[unlikely]]
    throw_mpi_error(code, call, std::string(location));
}
inline void check_mpi(int code, const char* call, const char* file, int line) {
  if (code != MPI_SUCCESS) [[unlikely]]
    throw_mpi_error(code, call, source_location(file, line));
}

}  // namespace skein::detail

// The one checked-call macro of MPI: SKEIN_MPI_CHECK(MPI_Allreduce, (send, recv, ...)) or, with
// what the call is for, SKEIN_MPI_CHECK(MPI_Start, (&request), "the agreement check"). A failure
// throws RuntimeError with the call, MPI's message, the rank and the place in Skein's source;
// the fast path costs one comparison.
#define SKEIN_MPI_CHECK(function, arguments, ...)                                              \
  ::skein::detail::check_mpi(::function arguments, #function __VA_OPT__(" (" __VA_ARGS__ ")"), \
                             __FILE__, __LINE__)

namespace skein::detail {

// Polls the requests until all complete. Throws TimeoutError (naming `what`) once `deadline`
// has passed; the requests are then left outstanding (MPI cannot cancel collectives), and the
// caller must keep their buffers alive.
// `statuses` (one per request), when given, receives the requests' statuses. `between`, when
// given, runs after each test that found them incomplete (it may throw to give up earlier).
inline void wait_requests(std::span<MPI_Request> requests, CollectiveClock::time_point deadline,
                          const std::string& what, MPI_Status* statuses = nullptr,
                          const std::function<void()>& between = {}) {
  if (requests.empty()) return;
  const auto start = CollectiveClock::now();
  for (;;) {
    int done = 0;
    SKEIN_MPI_CHECK(MPI_Testall, (static_cast<int>(requests.size()), requests.data(), &done,
                                  statuses ? statuses : MPI_STATUSES_IGNORE));
    if (done) return;
    if (between) between();
    const auto now = CollectiveClock::now();
    if (now >= deadline) {
      const double waited = std::chrono::duration<double>(now - start).count();
      throw TimeoutError(
          ErrorInfo{.what = fmt::format("{} did not complete after {:.1f} s", what, waited),
                    .call = "MPI_Testall"});
    }
    // MPI's non-blocking collectives only progress inside MPI calls, so a sleeping rank stalls
    // the operation for every rank (a staged all_reduce of a few MiB took 5 x longer with short
    // sleeps between tests). Poll continuously, yielding the core to ranks that share it, for
    // the first second; a wait longer than that means a late rank, and then backing off spares
    // the core it may be using.
    const auto waited = now - start;
    if (waited < std::chrono::seconds(1)) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(
          std::chrono::microseconds(waited < std::chrono::seconds(10) ? 50 : 500));
    }
  }
}

// Keeps `value` alive until the process ends. For buffers that MPI may still read or write after
// Skein gave up on an operation (MPI cannot cancel collectives): they stay reachable, so that
// nothing is freed under MPI and leak checkers see them as kept, not lost. The store is one per
// process (agreement.cpp), whichever of Skein's libraries keeps something.
SKEIN_EXPORT void keep_until_exit_erased(std::shared_ptr<void> value);
template <class T>
void keep_until_exit(T&& value) {
  keep_until_exit_erased(std::make_shared<std::decay_t<T>>(std::forward<T>(value)));
}

// MPI requests that Skein gave up on after a timeout or a failure (MPI cannot cancel collectives,
// nor a communicator's creation). They are kept here, with what they were, so that the Runtime can
// give them a last chance to complete before MPI_Finalize and say what is still outstanding;
// their buffers go to keep_until_exit. Thread-safe.
struct AbandonedRequests {
  std::mutex mutex;
  std::vector<std::pair<MPI_Request, std::string>> requests;
};
// The process's one registry (agreement.cpp; an inline function's static would be one per
// library, since Skein's libraries hide their symbols).
SKEIN_EXPORT AbandonedRequests& abandoned_requests();
inline void abandon(MPI_Request request, std::string what) {
  if (request == MPI_REQUEST_NULL) return;
  auto& a = abandoned_requests();
  std::lock_guard lock(a.mutex);
  a.requests.emplace_back(request, std::move(what));
}
// Whether any abandoned request is still registered (a communicator with one pending on it, or
// on a duplication of it, must not be freed: Open MPI crashes progressing such a request).
inline bool any_abandoned() {
  auto& a = abandoned_requests();
  std::lock_guard lock(a.mutex);
  return !a.requests.empty();
}

// Tests the abandoned requests until all have completed or `seconds` have passed; returns what is
// still outstanding. Call only from a thread that may call MPI.
inline std::vector<std::string> settle_abandoned(double seconds) {
  auto& a = abandoned_requests();
  std::lock_guard lock(a.mutex);
  const auto until = CollectiveClock::now() + std::chrono::duration_cast<CollectiveClock::duration>(
                                                  std::chrono::duration<double>(seconds));
  for (;;) {
    std::erase_if(a.requests, [](auto& r) {
      int done = 0;
      if (MPI_Test(&r.first, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return true;  // failed: gone
      return done != 0;
    });
    if (a.requests.empty() || CollectiveClock::now() >= until) break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  std::vector<std::string> left;
  for (const auto& r : a.requests) left.push_back(r.second);
  return left;
}

}  // namespace skein::detail

#endif
