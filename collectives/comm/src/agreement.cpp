// SPDX-License-Identifier: BSD-3-Clause
// Agreement across ranks, with deadlines (see agreement.hpp).
#include "skein/detail/agreement.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "skein/detail/env.hpp"

namespace skein::detail {

std::uint64_t agreement_hash(std::string_view text) {
  std::uint64_t h = kHashSeed;
  std::size_t i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, text.data() + i, 8);
    h = hash_mix(h, word);
  }
  if (i < text.size()) {
    std::uint64_t word = 0;
    std::memcpy(&word, text.data() + i, text.size() - i);
    h = hash_mix(h, word);
  }
  return hash_mix(h, text.size());
}

double collective_timeout(const char* call) {
  return env_seconds("SKEIN_COLLECTIVE_TIMEOUT", kDefaultCollectiveTimeout, call, "waits forever");
}

}  // namespace skein::detail

#if SKEIN_HAS_MPI

#include <algorithm>
#include <array>
#include <chrono>
#include <mutex>
#include <thread>
#include <utility>

#include "skein/detail/mpi_util.hpp"
#include "fingerprint.hpp"

namespace skein::detail {

namespace {

constexpr int kRollCallTag = 0x5ce1;  // the roll call's messages, on an Agreement's own comm
constexpr std::size_t kChunk = std::size_t{1} << 30;  // the largest piece of one MPI call

}  // namespace

// --- mpi_util.hpp's process-wide stores ---------------------------------------------------------

void keep_until_exit_erased(std::shared_ptr<void> value) {
  static auto* kept = new std::vector<std::shared_ptr<void>>;  // never destroyed: kept until exit
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  kept->push_back(std::move(value));
}

AbandonedRequests& abandoned_requests() {
  static auto* registry = new AbandonedRequests;  // never destroyed: used at exit
  return *registry;
}

CollectiveClock::time_point deadline_after(double seconds) {
  if (!(seconds > 0)) return CollectiveClock::time_point::max();
  const auto span = std::chrono::duration<double>(seconds);
  const auto now = CollectiveClock::now();
  if (span >= std::chrono::duration<double>(CollectiveClock::time_point::max() - now)) {
    return CollectiveClock::time_point::max();
  }
  return now + std::chrono::duration_cast<CollectiveClock::duration>(span);
}

void wait_or_abandon(MPI_Request& request, CollectiveClock::time_point deadline, double timeout_s,
                     const std::string& call, const std::string& step, std::shared_ptr<void> keep,
                     const std::string& hint) {
  const auto start = CollectiveClock::now();
  try {
    wait_requests(std::span(&request, 1), deadline, step);
  } catch (const TimeoutError&) {
    abandon(request, fmt::format("{}: {}", call, step));
    request = MPI_REQUEST_NULL;
    if (keep) keep_until_exit(std::move(keep));
    const double waited = std::chrono::duration<double>(CollectiveClock::now() - start).count();
    throw TimeoutError(ErrorInfo{
        .what = fmt::format(
            "{} did not complete within SKEIN_COLLECTIVE_TIMEOUT={} s (this step waited {:.1f} s)",
            step, timeout_s, waited),
        .call = call,
        .hint = hint,
        .location = SKEIN_HERE});
  }
}

MPI_Comm duplicate_comm(MPI_Comm parent, CollectiveClock::time_point deadline, double timeout_s,
                        const std::string& call, const std::string& step, const std::string& hint) {
  auto handle = std::make_shared<MPI_Comm>(MPI_COMM_NULL);
  MPI_Request request = MPI_REQUEST_NULL;
  SKEIN_MPI_CHECK(MPI_Comm_idup, (parent, handle.get(), &request));
  wait_or_abandon(request, deadline, timeout_s, call, step, handle, hint);
  SKEIN_MPI_CHECK(MPI_Comm_set_errhandler, (*handle, MPI_ERRORS_RETURN));
  return *handle;
}

// ---- Agreement --------------------------------------------------------------------------------

Agreement::Agreement(MPI_Comm parent, std::string subject, std::string mismatch_hint,
                     const std::string& call)
    : timeout_s_(collective_timeout(call.c_str())),
      subject_(std::move(subject)),
      mismatch_hint_(std::move(mismatch_hint)) {
  comm_ =
      duplicate_comm(parent, deadline_after(timeout_s_), timeout_s_, call,
                     fmt::format("duplicating the communicator for {}", subject_),
                     "Every rank of the communicator must make this call; another rank is late, "
                     "failed, or took another path. Raise SKEIN_COLLECTIVE_TIMEOUT if a rank is "
                     "legitimately slow to get here.");
  SKEIN_MPI_CHECK(MPI_Comm_rank, (comm_, &rank_));
  SKEIN_MPI_CHECK(MPI_Comm_size, (comm_, &size_));
}

Agreement::Agreement(Agreement&& other) noexcept { *this = std::move(other); }

Agreement& Agreement::operator=(Agreement&& other) noexcept {
  if (this != &other) {
    release();
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    rank_ = other.rank_;
    size_ = other.size_;
    timeout_s_ = other.timeout_s_;
    subject_ = std::move(other.subject_);
    mismatch_hint_ = std::move(other.mismatch_hint_);
    calls_ = other.calls_;
    steps_ = other.steps_;
    broken_ = std::move(other.broken_);
    abandoned_ = std::exchange(other.abandoned_, false);
  }
  return *this;
}

Agreement::~Agreement() { release(); }

void Agreement::release() {
  if (comm_ == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  // A communicator with a request given up on stays: Open MPI crashes progressing a request on a
  // freed one.
  if (!finalized && !abandoned_ && !any_abandoned()) MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
}

void Agreement::check_usable(const std::string& call) const {
  if (comm_ == MPI_COMM_NULL) {
    throw LogicError(ErrorInfo{.what = fmt::format("{} is closed", subject_),
                               .call = call,
                               .hint = "Use an open object.",
                               .location = SKEIN_HERE});
  }
  if (!broken_.empty()) {
    throw TimeoutError(ErrorInfo{
        .what = fmt::format("{} cannot be used after an earlier step timed out ({})", subject_,
                            broken_),
        .call = call,
        .hint =
            "End the job (the ranks no longer agree on where they are), and look for the rank that "
            "failed or left in the job's output.",
        .location = SKEIN_HERE});
  }
}

std::vector<std::pair<int, std::uint64_t>> roll_call(MPI_Comm comm, int tag, std::uint64_t step,
                                                     double timeout_s, const std::string& subject) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::vector<std::pair<int, std::uint64_t>> present{{rank, step}};
  if (size <= 1) return present;
  // Buffers MPI may still touch after this returns (sends to ranks that never receive): kept.
  auto mine = std::make_shared<std::uint64_t>(step);
  auto answers = std::make_shared<std::vector<std::uint64_t>>(static_cast<std::size_t>(size), 0);
  std::vector<MPI_Request> receives(static_cast<std::size_t>(size), MPI_REQUEST_NULL);
  for (int r = 0; r < size; ++r) {
    if (r == rank) continue;
    MPI_Request send = MPI_REQUEST_NULL;
    if (MPI_Isend(mine.get(), 1, MPI_UINT64_T, r, tag, comm, &send) == MPI_SUCCESS) {
      MPI_Request_free(&send);
    }
    MPI_Irecv(&(*answers)[static_cast<std::size_t>(r)], 1, MPI_UINT64_T, r, tag, comm,
              &receives[static_cast<std::size_t>(r)]);
  }
  // The others time out when their own deadline passes, a little before or after this rank.
  const double grace = std::min(2.0, std::max(0.5, timeout_s));
  const auto until = deadline_after(grace);
  std::vector<bool> answered(static_cast<std::size_t>(size), false);
  for (;;) {
    bool all = true;
    for (int r = 0; r < size; ++r) {
      auto& q = receives[static_cast<std::size_t>(r)];
      if (r == rank || answered[static_cast<std::size_t>(r)]) continue;
      int done = 0;
      if (q != MPI_REQUEST_NULL && MPI_Test(&q, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) {
        answered[static_cast<std::size_t>(r)] = true;
        present.emplace_back(r, (*answers)[static_cast<std::size_t>(r)]);
      } else {
        all = false;
      }
    }
    if (all || CollectiveClock::now() >= until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (auto& q : receives) {
    if (q == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&q);
    int done = 0;
    // A cancelled receive completes at once; should one not, it is given up on like the step.
    for (int i = 0; i < 1000 && !done; ++i) {
      if (MPI_Test(&q, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
      if (!done) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    if (!done) abandon(q, fmt::format("the roll call of {}", subject));
  }
  keep_until_exit(std::move(mine));
  keep_until_exit(std::move(answers));
  std::sort(present.begin(), present.end());
  return present;
}

std::string absent_ranks(MPI_Comm comm, int tag, std::uint64_t step, double timeout_s,
                         const std::string& subject) {
  const auto present = roll_call(comm, tag, step, timeout_s, subject);
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::vector<int> here, missing;
  for (int r = 0, i = 0; r < size; ++r) {
    if (i < static_cast<int>(present.size()) && present[static_cast<std::size_t>(i)].first == r) {
      here.push_back(r);
      ++i;
    } else {
      missing.push_back(r);
    }
  }
  if (missing.empty()) return fmt::format("every rank answered a roll call after the timeout");
  return fmt::format(
      "{} answered a roll call after the timeout; {} did not (lost: died, unreachable, "
      "or blocked in another call)",
      ranks_list(here), ranks_list(missing));
}

std::vector<std::pair<int, std::uint64_t>> Agreement::roll_call(std::uint64_t step) {
  return detail::roll_call(comm_, kRollCallTag, step, timeout_s_, subject_);
}

void Agreement::wait(MPI_Request& request, const std::string& call, const std::string& step,
                     std::shared_ptr<void> keep) {
  wait(request, call, step, std::move(keep), nullptr);
}

void Agreement::wait(MPI_Request& request, const std::string& call, const std::string& step,
                     std::shared_ptr<void> keep, MPI_Status* status) {
  const std::uint64_t number = ++steps_;
  const auto deadline = deadline_after(timeout_s_);
  try {
    wait_requests(std::span(&request, 1), deadline, step, status);
    return;
  } catch (const TimeoutError&) {
    abandon(request, fmt::format("{}: {} on {}", call, step, subject_));
    request = MPI_REQUEST_NULL;
    if (keep) keep_until_exit(std::move(keep));
    abandoned_ = true;
  }
  const auto present = roll_call(number);
  std::vector<int> here, elsewhere, missing;
  std::string where_else;
  for (int r = 0, i = 0; r < size_; ++r) {
    if (i < static_cast<int>(present.size()) && present[static_cast<std::size_t>(i)].first == r) {
      const auto at = present[static_cast<std::size_t>(i)].second;
      if (at == number) {
        here.push_back(r);
      } else {
        elsewhere.push_back(r);
        where_else +=
            fmt::format("{}rank {} at its step {}", where_else.empty() ? "" : ", ", r, at);
      }
      ++i;
    } else {
      missing.push_back(r);
    }
  }
  std::string who = fmt::format("{} waited", ranks_list(here));
  if (!elsewhere.empty())
    who += fmt::format("; {} timed out at another step ({})", ranks_list(elsewhere), where_else);
  if (!missing.empty()) {
    who += fmt::format("; {} did not arrive (died, ended, or is blocked in another call)",
                       ranks_list(missing));
  }
  broken_ =
      fmt::format("{}: {} (step {}) did not complete within SKEIN_COLLECTIVE_TIMEOUT={} s: {}",
                  call, step, number, timeout_s_, who);
  throw TimeoutError(ErrorInfo{
      .what = fmt::format("{} on {} did not complete within SKEIN_COLLECTIVE_TIMEOUT={} s: {}",
                          step, subject_, timeout_s_, who),
      .call = call,
      .hint =
          "Every rank must make the same calls on this object in the same order; look in the job's "
          "output for the rank that failed, left or took another path. Raise "
          "SKEIN_COLLECTIVE_TIMEOUT "
          "if a rank is legitimately slow to get here.",
      .location = SKEIN_HERE});
}

void Agreement::agree_on_call(const std::string& call, const std::string& description) {
  check_usable(call);
  const std::string numbered = fmt::format("#{} {}", ++calls_, description);
  const std::uint64_t h = agreement_hash(numbered);
  auto buffer =
      std::make_shared<std::array<std::uint64_t, 4>>(std::array<std::uint64_t, 4>{h, ~h, 0, 0});
  MPI_Request request = MPI_REQUEST_NULL;
  SKEIN_MPI_CHECK(MPI_Iallreduce,
                  (buffer->data(), buffer->data() + 2, 2, MPI_UINT64_T, MPI_MAX, comm_, &request));
  wait(request, call, fmt::format("comparing the ranks' calls ({})", numbered), buffer);
  if ((*buffer)[2] == h && (*buffer)[3] == ~h) return;
  const std::string first = broadcast_string(call, numbered, 0);
  throw LogicError(ErrorInfo{
      .what = fmt::format(
          "rank {}: the ranks made different calls on {}: this rank called {}, rank 0 called {}",
          rank_, subject_, numbered, first),
      .call = call,
      .hint = mismatch_hint_,
      .location = SKEIN_HERE});
}

void Agreement::broadcast_bytes(const std::string& call, std::span<std::byte> data, int root,
                                const std::shared_ptr<void>& keep) {
  check_usable(call);
  for (std::size_t done = 0; done < data.size();) {
    const std::size_t part = std::min(data.size() - done, kChunk);
    MPI_Request request = MPI_REQUEST_NULL;
    SKEIN_MPI_CHECK(MPI_Ibcast,
                    (data.data() + done, static_cast<int>(part), MPI_BYTE, root, comm_, &request));
    wait(request, call,
         fmt::format("broadcasting {} bytes from rank {} (MPI_Ibcast)", data.size(), root), keep);
    done += part;
  }
}

std::string Agreement::broadcast_string(const std::string& call, const std::string& text,
                                        int root) {
  check_usable(call);
  auto n = std::make_shared<std::uint64_t>(text.size());
  MPI_Request request = MPI_REQUEST_NULL;
  SKEIN_MPI_CHECK(MPI_Ibcast, (n.get(), 1, MPI_UINT64_T, root, comm_, &request));
  wait(request, call, fmt::format("broadcasting a length from rank {} (MPI_Ibcast)", root), n);
  auto out = std::make_shared<std::string>(rank_ == root ? text : std::string(*n, '\0'));
  broadcast_bytes(call, std::as_writable_bytes(std::span(out->data(), out->size())), root, out);
  return *out;
}

void Agreement::send(const std::string& call, std::span<const std::byte> data, int to, int tag,
                     std::shared_ptr<void> keep) {
  check_usable(call);
  if (data.size() > static_cast<std::size_t>(INT_MAX)) {
    throw LogicError(
        ErrorInfo{.what = fmt::format("{} bytes are too many for one message", data.size()),
                  .call = call,
                  .hint = "Send in pieces of at most 2 GiB.",
                  .location = SKEIN_HERE});
  }
  MPI_Request request = MPI_REQUEST_NULL;
  SKEIN_MPI_CHECK(MPI_Isend,
                  (data.data(), static_cast<int>(data.size()), MPI_BYTE, to, tag, comm_, &request));
  wait(request, call, fmt::format("sending {} bytes to rank {} (MPI_Isend)", data.size(), to),
       std::move(keep));
}

std::size_t Agreement::receive(const std::string& call, std::span<std::byte> data, int from,
                               int tag, std::shared_ptr<void> keep) {
  check_usable(call);
  if (data.size() > static_cast<std::size_t>(INT_MAX)) {
    throw LogicError(
        ErrorInfo{.what = fmt::format("{} bytes are too many for one message", data.size()),
                  .call = call,
                  .hint = "Receive in pieces of at most 2 GiB.",
                  .location = SKEIN_HERE});
  }
  MPI_Request request = MPI_REQUEST_NULL;
  SKEIN_MPI_CHECK(MPI_Irecv, (data.data(), static_cast<int>(data.size()), MPI_BYTE, from, tag,
                              comm_, &request));
  MPI_Status status{};
  wait(request, call,
       fmt::format("receiving up to {} bytes from rank {} (MPI_Irecv)", data.size(), from),
       std::move(keep), &status);
  int got = 0;
  SKEIN_MPI_CHECK(MPI_Get_count, (&status, MPI_BYTE, &got));
  return static_cast<std::size_t>(std::max(got, 0));
}

Agreement::Failure Agreement::exchange_failure_impl(const std::exception_ptr& mine,
                                                    const std::string& call, int my_kind,
                                                    const std::string& my_message) {
  check_usable(call);
  auto first =
      std::make_shared<std::array<int, 2>>(std::array<int, 2>{mine ? rank_ : INT_MAX, INT_MAX});
  MPI_Request request = MPI_REQUEST_NULL;
  SKEIN_MPI_CHECK(MPI_Iallreduce,
                  (first->data(), first->data() + 1, 1, MPI_INT, MPI_MIN, comm_, &request));
  wait(request, call, "telling the ranks whether any failed (MPI_Iallreduce)", first);
  Failure f;
  f.first = (*first)[1];
  if (f.first == INT_MAX) return f;
  auto kind = std::make_shared<int>(my_kind);
  SKEIN_MPI_CHECK(MPI_Ibcast, (kind.get(), 1, MPI_INT, f.first, comm_, &request));
  wait(request, call, fmt::format("sharing rank {}'s failure (MPI_Ibcast)", f.first), kind);
  f.kind = *kind;
  f.message = broadcast_string(call, my_message, f.first);
  return f;
}

ErrorInfo Agreement::failure_info(int first, const std::string& call, const std::string& where,
                                  std::string message) const {
  // Its message (which has its own hint and place) goes inside this one.
  if (message.rfind("skein: ", 0) == 0) message.erase(0, 7);
  while (!message.empty() && message.back() == '.') message.pop_back();
  return ErrorInfo{.what = fmt::format("rank {} failed in {} {}, so no rank went on: {}", first,
                                       call, where, message),
                   .call = call,
                   .location = SKEIN_HERE};
}

}  // namespace skein::detail

#endif
