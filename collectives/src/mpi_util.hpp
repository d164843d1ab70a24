// Small MPI helpers shared by the Communicator front-end and the MPI backend: MPI error codes as
// Skein errors, and waiting on non-blocking MPI requests against a deadline (blocking MPI calls
// could hang forever when a rank never arrives; polling lets Skein raise TimeoutError instead).
#pragma once

#include <type_traits>

#include <vector>

#include <mutex>

#include <memory>

#include "skein/config.hpp"

#if SKEIN_HAS_MPI

#include <mpi.h>

#include <chrono>
#include <span>
#include <string>
#include <thread>

#include "backend.hpp"
#include "errors.hpp"

namespace skein::detail {

inline std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "unknown MPI error";
  return std::string(text, static_cast<std::size_t>(length));
}

// Skein's communicators use MPI_ERRORS_RETURN, so failures arrive here as return codes.
inline void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  throw RuntimeError(ErrorInfo{.what = mpi_error_string(code),
                               .call = call,
                               .code = code,
                               .has_code = true,
                               .hint = "An MPI rank probably failed or left; see its output."});
}

// Polls the requests until all complete. Throws TimeoutError (naming `what`) once `deadline`
// has passed; the requests are then left outstanding (MPI cannot cancel collectives), and the
// caller must keep their buffers alive.
inline void wait_requests(std::span<MPI_Request> requests, CollectiveClock::time_point deadline,
                          const std::string& what) {
  if (requests.empty()) return;
  const auto start = CollectiveClock::now();
  for (;;) {
    int done = 0;
    check_mpi(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done,
                          MPI_STATUSES_IGNORE),
              "MPI_Testall");
    if (done) return;
    const auto now = CollectiveClock::now();
    if (now >= deadline) {
      const double waited = std::chrono::duration<double>(now - start).count();
      throw TimeoutError(ErrorInfo{
          .what = fmt::format("{} did not complete after {:.1f} s", what, waited),
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
      std::this_thread::sleep_for(std::chrono::microseconds(waited < std::chrono::seconds(10) ? 50 : 500));
    }
  }
}

// Keeps `value` alive until the process ends. For buffers that MPI may still read or write after
// Skein gave up on an operation (MPI cannot cancel collectives): they stay reachable, so that
// nothing is freed under MPI and leak checkers see them as kept, not lost.
template <class T>
void keep_until_exit(T&& value) {
  static auto* kept = new std::vector<std::shared_ptr<void>>;
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  kept->push_back(std::make_shared<std::decay_t<T>>(std::forward<T>(value)));
}

}  // namespace skein::detail

#endif
