// The Communicator front-end: membership, the choice of backend, argument checks, the agreement
// check across ranks, and the timeouts. Backends (mpi/, nccl/) only move data.
//
// Every check that can fail locally runs before anything is sent, so a wrong call raises a
// LogicError instead of leaving the other ranks waiting. What cannot be checked locally (do the
// ranks make the same call?) is the agreement check: each rank contributes a small fingerprint of
// its call, gathered with a non-blocking MPI_Iallgather under the same timeout as the call.
//
// Timeouts: a synchronous backend (MPI) polls its own requests against the call's deadline and
// throws TimeoutError when it passes. An asynchronous backend (NCCL) returns once the work is
// enqueued; a watchdog thread then follows the call's events and aborts the backend when the
// deadline passes or the backend reports an asynchronous error, and the next call on the
// communicator raises. The watchdog also watches the call itself while it runs (a blocking NCCL
// call can wait on the host for a peer): past the deadline it aborts the backend, which makes the
// stuck call return, and the call raises TimeoutError. Either way the communicator is unusable afterwards: the ranks no longer
// agree on which operations have completed.
#include "skein/communicator.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "adapter.hpp"
#include "backend.hpp"
#include "errors.hpp"
#include "front.hpp"
#include "mpi_util.hpp"
#include "skein/error.hpp"

namespace skein {

std::string_view name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::prod: return "prod";
    case ReduceOp::min: return "min";
    case ReduceOp::max: return "max";
    case ReduceOp::avg: return "avg";
  }
  return "?";
}

std::string_view name(CollectiveBackend backend) {
  switch (backend) {
    case CollectiveBackend::automatic: return "automatic";
    case CollectiveBackend::nccl: return "NCCL";
    case CollectiveBackend::mpi: return "MPI";
  }
  return "?";
}

std::string_view name(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce: return "all_reduce";
    case CollectiveOp::all_gather: return "all_gather";
    case CollectiveOp::broadcast: return "broadcast";
    case CollectiveOp::reduce: return "reduce";
    case CollectiveOp::reduce_scatter: return "reduce_scatter";
    case CollectiveOp::send: return "send";
    case CollectiveOp::recv: return "recv";
    case CollectiveOp::barrier: return "barrier";
    case CollectiveOp::all_to_all: return "all_to_all";
  }
  return "?";
}

namespace detail {
CallProfile& call_profile() {
  static CallProfile profile = [] {
    CallProfile p;
    const char* v = std::getenv("SKEIN_PROFILE_COLLECTIVES");
    p.on = v != nullptr && std::string(v) == "1";
    return p;
  }();
  return profile;
}
}  // namespace detail

namespace {

using detail::CollectiveClock;

long long ns_since(CollectiveClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(CollectiveClock::now() - t).count();
}

// SKEIN_CHECK_COLLECTIVES: unset -> on in debug builds only; "1" on; "0" off.
bool agreement_check_from_environment() {
  const char* value = std::getenv("SKEIN_CHECK_COLLECTIVES");
  if (!value) {
#ifndef NDEBUG
    return true;
#else
    return false;
#endif
  }
  const std::string v(value);
  if (v == "1") return true;
  if (v == "0") return false;
  detail::raise_in(SKEIN_HERE, "Communicator", "Set SKEIN_CHECK_COLLECTIVES to 1 or 0, or unset it.",
                   "SKEIN_CHECK_COLLECTIVES={} is invalid: it takes 1 (check that the ranks make "
                   "the same collective calls) or 0 (do not)",
                   v);
}

// SKEIN_COLLECTIVE_TIMEOUT: seconds (a non-negative number; 0 waits forever), default 300.
double timeout_from_environment() {
  const char* value = std::getenv("SKEIN_COLLECTIVE_TIMEOUT");
  if (!value) return 300.0;
  const std::string v(value);
  char* end = nullptr;
  errno = 0;
  const double seconds = v.empty() ? -1.0 : std::strtod(v.c_str(), &end);
  if (v.empty() || errno != 0 || *end != '\0' || !std::isfinite(seconds) || seconds < 0) {
    detail::raise_in(SKEIN_HERE, "Communicator",
                     "Set SKEIN_COLLECTIVE_TIMEOUT to a number of seconds (e.g. 300; 0 waits "
                     "forever), or unset it for the default of 300 s.",
                     "SKEIN_COLLECTIVE_TIMEOUT={} is not a valid number of seconds", v);
  }
  return seconds;
}

bool is_reduction(CollectiveOp op) {
  return op == CollectiveOp::all_reduce || op == CollectiveOp::reduce ||
         op == CollectiveOp::reduce_scatter;
}
bool has_root(CollectiveOp op) { return op == CollectiveOp::broadcast || op == CollectiveOp::reduce; }

// One rank's description of a collective call, compared across ranks.
struct Fingerprint {
  std::uint64_t sequence = 0;
  std::uint64_t count = 0;
  std::int32_t op = 0;
  std::int32_t dtype = -1;      // -1: not applicable (barrier)
  std::int32_t root = -1;       // -1: not applicable
  std::int32_t reduction = -1;  // -1: not applicable
};

std::string ranks_list(const std::vector<int>& ranks) {
  return fmt::format("{} {}", ranks.size() == 1 ? "rank" : "ranks", fmt::join(ranks, ", "));
}

}  // namespace

struct Communicator::Impl {
#if SKEIN_HAS_MPI
  MPI_Comm comm = MPI_COMM_NULL;  // Skein's own duplicate, with MPI_ERRORS_RETURN
#endif
  int mpi_rank = 0;
  int mpi_size = 1;
  Context context;
  std::vector<std::size_t> device_idxs;
  detail::MemberMap map;
  std::size_t first_member = 0;
  std::unique_ptr<detail::CollectiveBackendAdapter> backend;
  bool check_agreement = false;
  double timeout_s = 300.0;
  std::uint64_t collective_sequence = 0;
  std::uint64_t p2p_sequence = 0;
  int group_depth = 0;
  std::uint64_t group_sequence = 0;
  // Set once the backend was aborted: every later call raises this.
  std::string broken;

  // The watchdog of asynchronous backends.
  struct Watch {
    std::vector<Event> events;
    CollectiveClock::time_point start;
    CollectiveClock::time_point deadline;
    std::string label;  // "all_reduce #7"
  };
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<Watch> watches;
  std::optional<Watch> in_call;  // the call now running on the host (asynchronous backends)
  std::optional<std::pair<bool, std::string>> watchdog_failure;  // (timed out?, message)
  bool stop = false;
  std::thread watchdog;

  explicit Impl(Context c) : context(std::move(c)) {}
  ~Impl();

  CollectiveClock::time_point deadline() const {
    if (timeout_s <= 0) return CollectiveClock::time_point::max();
    return CollectiveClock::now() +
           std::chrono::duration_cast<CollectiveClock::duration>(std::chrono::duration<double>(timeout_s));
  }
  bool asynchronous() const { return backend && backend->kind() == CollectiveBackend::nccl; }
  void start_watchdog();
  void watchdog_loop();
  void check_usable(const std::string& call);
  // Runs `f` (which talks to other ranks); a failure other than a LogicError aborts the backend
  // and breaks the communicator, and a timeout becomes the TimeoutError the user sees.
  template <class F>
  void guarded(const std::string& label, const std::string& call, CollectiveClock::time_point start, F&& f);
  void agree(const std::string& label, const Fingerprint& mine, CollectiveClock::time_point deadline);
};

Communicator::Impl::~Impl() {
  if (const auto& p = detail::call_profile(); p.on && p.calls > 0) {
    const double n = static_cast<double>(p.calls) * 1e3;
    std::fprintf(stderr,
                 "[skein rank %d] %lld collective calls, host us per call: checks %.2f, backend "
                 "%.2f (NCCL group %.2f), events %.2f, watchdog %.2f\n",
                 mpi_rank, p.calls, static_cast<double>(p.checks_ns) / n,
                 static_cast<double>(p.backend_ns) / n, static_cast<double>(p.launch_ns) / n,
                 static_cast<double>(p.events_ns) / n, static_cast<double>(p.watch_ns) / n);
  }
  if (watchdog.joinable()) {
    {
      std::lock_guard lock(mutex);
      stop = true;
    }
    wake.notify_all();
    watchdog.join();
  }
  backend.reset();
#if SKEIN_HAS_MPI
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm);
#endif
}

void Communicator::Impl::start_watchdog() {
  watchdog = std::thread([this] { watchdog_loop(); });
}

void Communicator::Impl::watchdog_loop() {
  // Calls do not wake this thread (a wake-up costs the caller a system call, which small
  // collectives would feel): it looks every few milliseconds while there is work, else every
  // 100 ms, which is nothing against timeouts of seconds.
  std::unique_lock lock(mutex);
  while (!stop) {
    wake.wait_for(lock, std::chrono::milliseconds(watches.empty() ? 100 : 5));
    if (stop) break;
    const auto now = CollectiveClock::now();
    if (in_call && now >= in_call->deadline) {
      backend->abort();
      const double waited = std::chrono::duration<double>(now - in_call->start).count();
      watchdog_failure = {true, fmt::format("{} did not return within {} s (waited {:.1f} s)",
                                            in_call->label, timeout_s, waited)};
      in_call.reset();
      watches.clear();
      continue;
    }
    while (!watches.empty()) {
      Watch& w = watches.front();
      const bool done = std::all_of(w.events.begin(), w.events.end(),
                                    [](const Event& e) { return !e.valid() || e.query(); });
      if (done) {
        watches.pop_front();
        continue;
      }
      std::string error = backend->async_error();
      if (error.empty() && now < w.deadline) break;
      backend->abort();
      const double waited = std::chrono::duration<double>(now - w.start).count();
      if (!error.empty()) {
        watchdog_failure = {false, fmt::format("{} failed: {}", w.label, error)};
      } else {
        watchdog_failure = {true, fmt::format("{} did not finish within {} s (waited {:.1f} s)",
                                              w.label, timeout_s, waited)};
      }
      watches.clear();
    }
  }
}

void Communicator::Impl::check_usable(const std::string& call) {
  if (watchdog.joinable()) {
    std::lock_guard lock(mutex);
    if (watchdog_failure && broken.empty()) {
      broken = watchdog_failure->second;
      const bool timed_out = watchdog_failure->first;
      ErrorInfo info{.what = broken + "; the communicator was aborted",
                     .call = call,
                     .hint = "Another rank probably did not make this call, or failed. Create a "
                             "new Communicator to go on."};
      if (timed_out) throw TimeoutError(info);
      throw RuntimeError(info);
    }
  }
  if (!broken.empty()) {
    throw RuntimeError(ErrorInfo{.what = fmt::format("the communicator was aborted earlier ({})", broken),
                                 .call = call,
                                 .hint = "Create a new Communicator."});
  }
}

template <class F>
void Communicator::Impl::guarded(const std::string& label, const std::string& call,
                                 CollectiveClock::time_point start, F&& f) {
  const bool watched = watchdog.joinable() && timeout_s > 0;
  if (watched) {
    std::lock_guard lock(mutex);
    in_call = Watch{{}, start, deadline(), label};
  }
  // What the watchdog concluded if it aborted the backend during this call.
  auto watchdog_verdict = [&]() -> std::optional<std::pair<bool, std::string>> {
    if (!watched) return std::nullopt;
    std::lock_guard lock(mutex);
    in_call.reset();
    return watchdog_failure;
  };
  try {
    f();
  } catch (const LogicError&) {
    watchdog_verdict();
    throw;
  } catch (const TimeoutError& e) {
    watchdog_verdict();
    backend->abort();
    const double waited = std::chrono::duration<double>(CollectiveClock::now() - start).count();
    broken = fmt::format("{} did not finish within {} s", label, timeout_s);
    throw TimeoutError(ErrorInfo{
        .what = fmt::format("{} did not finish within SKEIN_COLLECTIVE_TIMEOUT={} s (waited {:.1f} s; "
                            "{}); the communicator was aborted",
                            label, timeout_s, waited, e.info().what),
        .call = call,
        .hint = "Another rank probably did not make this call, made a different one, or died. "
                "Create a new Communicator to go on."});
  } catch (const Error& e) {
    const auto verdict = watchdog_verdict();
    backend->abort();
    if (verdict && verdict->first) {
      // The watchdog ended a call that was stuck on the host: that is the error to report.
      broken = verdict->second;
      throw TimeoutError(ErrorInfo{
          .what = fmt::format("{} (SKEIN_COLLECTIVE_TIMEOUT={} s); the communicator was aborted",
                              verdict->second, timeout_s),
          .call = call,
          .hint = "Another rank probably did not make this call, made a different one, or died. "
                  "Create a new Communicator to go on."});
    }
    broken = fmt::format("{} failed: {}", label, e.info().what);
    throw;
  }
  watchdog_verdict();
}

void Communicator::Impl::agree(const std::string& label, const Fingerprint& mine,
                               CollectiveClock::time_point deadline) {
#if SKEIN_HAS_MPI
  if (mpi_size == 1) return;
  std::vector<Fingerprint> all(static_cast<std::size_t>(mpi_size));
  MPI_Request request = MPI_REQUEST_NULL;
  detail::check_mpi(MPI_Iallgather(&mine, sizeof(Fingerprint), MPI_BYTE, all.data(),
                                   sizeof(Fingerprint), MPI_BYTE, comm, &request),
                    "MPI_Iallgather");
  try {
    detail::wait_requests(std::span(&request, 1), deadline, "the agreement check's MPI_Iallgather");
  } catch (const TimeoutError&) {
    // MPI may still read or write the fingerprints later.
    detail::keep_until_exit(std::move(all));
    detail::keep_until_exit(mine);
    throw;
  }
  std::vector<std::string> differences;
  auto compare = [&](const char* field, auto get, auto show) {
    std::map<decltype(get(mine)), std::vector<int>> by_value;
    for (int r = 0; r < mpi_size; ++r) by_value[get(all[static_cast<std::size_t>(r)])].push_back(r);
    if (by_value.size() < 2) return;
    std::vector<std::pair<int, std::string>> parts;  // ordered by first rank
    for (const auto& [value, ranks] : by_value) {
      parts.emplace_back(ranks.front(), fmt::format("{} {} {}", ranks_list(ranks),
                                                    ranks.size() == 1 ? "has" : "have", show(value)));
    }
    std::sort(parts.begin(), parts.end());
    std::vector<std::string> texts;
    for (auto& p : parts) texts.push_back(std::move(p.second));
    differences.push_back(fmt::format("{} differs: {}", field, fmt::join(texts, ", ")));
  };
  auto as_is = [](auto v) { return fmt::format("{}", v); };
  compare("operation", [](const Fingerprint& f) { return f.op; },
          [](std::int32_t v) { return std::string(name(static_cast<CollectiveOp>(v))); });
  compare("sequence number", [](const Fingerprint& f) { return f.sequence; }, as_is);
  compare("count", [](const Fingerprint& f) { return f.count; }, as_is);
  compare("dtype", [](const Fingerprint& f) { return f.dtype; }, [](std::int32_t v) {
    return v < 0 ? std::string("none") : std::string(name(static_cast<Dtype>(v)));
  });
  compare("root", [](const Fingerprint& f) { return f.root; },
          [](std::int32_t v) { return v < 0 ? std::string("none") : std::to_string(v); });
  compare("reduction", [](const Fingerprint& f) { return f.reduction; }, [](std::int32_t v) {
    return v < 0 ? std::string("none") : std::string(name(static_cast<ReduceOp>(v)));
  });
  if (!differences.empty()) {
    throw LogicError(ErrorInfo{
        .what = fmt::format("{}: the ranks made different calls: {}", label, fmt::join(differences, "; ")),
        .call = "Communicator::" + std::string(name(static_cast<CollectiveOp>(mine.op))),
        .hint = "Every rank must make the same collective calls, in the same order, with the same "
                "counts, dtypes, roots and reductions."});
  }
#else
  (void)label, (void)mine, (void)deadline;
#endif
}

namespace {

// Checks one call's arguments and builds the backend's description of it.
class CallBuilder {
 public:
  CallBuilder(Communicator::Impl& impl, CollectiveOp op, const Queue& queue)
      : impl_(impl), queue_(queue), call_name_("Communicator::" + std::string(name(op))),
        created_(detail::call_profile().on ? CollectiveClock::now() : CollectiveClock::time_point()) {
    call_.op = op;
    if (!(queue.context() == impl.context)) {
      fail(std::nullopt, "the queue belongs to another context than the communicator's",
           "Use a queue of the communicator's context (Communicator::context()).");
    }
  }

  [[noreturn]] void fail(std::optional<std::size_t> local, const std::string& what,
                         const std::string& hint) const {
    ErrorInfo info{.call = call_name_, .hint = hint};
    if (local) {
      const std::size_t dev = impl_.device_idxs[*local];
      info.device = impl_.context.device(dev).description();
      info.what = fmt::format("rank {}, member {} (local device {}, context device {}): {}",
                              impl_.mpi_rank, impl_.first_member + *local, *local, dev, what);
    } else {
      info.what = fmt::format("rank {}: {}", impl_.mpi_rank, what);
    }
    throw LogicError(info);
  }

  void check_span(std::span<const Array> arrays, const char* role) const {
    if (arrays.size() != impl_.device_idxs.size()) {
      fail(std::nullopt,
           fmt::format("{} {} arrays were given, but this rank has {} member(s)", arrays.size(), role,
                       impl_.device_idxs.size()),
           "Pass one array per local member, in local device order (Communicator::local_size()).");
    }
  }

  // Checks one member's array and returns (adapter, absolute byte offset).
  std::pair<const detail::BufferAdapter*, std::size_t> check_array(
      std::size_t local, const Array& a, const char* role, std::size_t expected_size) {
    const std::size_t dev = impl_.device_idxs[local];
    if (a.data().context_id() != impl_.context.impl().get()) {
      fail(local, fmt::format("the {} array belongs to another context", role),
           "Allocate the arrays in the communicator's context (Communicator::context()).");
    }
    if (a.device_idx() != dev) {
      fail(local, fmt::format("the {} array is on context device {}, not on this member's device {}",
                              role, a.device_idx(), dev),
           "Pass the arrays in local device order: array i on Communicator::device_idx(i).");
    }
    if (!a.is_contiguous()) {
      fail(local, fmt::format("the {} array is not contiguous", role),
           "Pass contiguous arrays (copy a strided view into a contiguous array first).");
    }
    if (dtype_ && *dtype_ != a.dtype()) {
      fail(local, fmt::format("the {} array's dtype is {}, but the call's dtype is {}", role,
                              name(a.dtype()), name(*dtype_)),
           "Use the same dtype for every array of the call.");
    }
    dtype_ = a.dtype();
    if (a.size() != expected_size) {
      fail(local, fmt::format("the {} array has {} elements, but {} are needed{}", role, a.size(),
                              expected_size, size_rule_),
           "Size the arrays as the operation requires (see <skein/communicator.hpp>).");
    }
    if (!queue_.has_device(dev)) {
      fail(local, fmt::format("the queue has no queue on context device {} (its devices: {})", dev,
                              fmt::join(queue_.device_idxs(), ", ")),
           "Use a queue over the communicator's devices, e.g. Queue(communicator.context()).");
    }
    const auto& buffer = a.data();
    return {buffer.adapter().get(), buffer.offset() + a.offset()};
  }

  detail::MemberBuffers& member(std::size_t local) {
    for (auto& m : call_.members) {
      if (m.local_device == local) return m;
    }
    detail::MemberBuffers m;
    m.local_device = local;
    m.device_idx = impl_.device_idxs[local];
    if (!queue_.has_device(m.device_idx)) {
      fail(local, fmt::format("the queue has no queue on context device {} (its devices: {})",
                              m.device_idx, fmt::join(queue_.device_idxs(), ", ")),
           "Use a queue over the communicator's devices, e.g. Queue(communicator.context()).");
    }
    m.queue = &queue_.device_queue(m.device_idx);
    call_.members.push_back(m);
    return call_.members.back();
  }

  void send(std::size_t local, const Array& a, std::size_t expected) {
    auto [adapter, offset] = check_array(local, a, "send", expected);
    auto& m = member(local);
    m.send = adapter;
    m.send_offset = offset;
  }
  void recv(std::size_t local, const Array& a, std::size_t expected) {
    auto [adapter, offset] = check_array(local, a, "recv", expected);
    auto& m = member(local);
    m.recv = adapter;
    m.recv_offset = offset;
  }

  void set_rule(std::string rule) { size_rule_ = std::move(rule); }

  void check_root(int root) {
    if (root < 0 || static_cast<std::size_t>(root) >= impl_.map.member_rank.size()) {
      fail(std::nullopt,
           fmt::format("root {} is not a member (the communicator has {} members, 0 to {})", root,
                       impl_.map.member_rank.size(), impl_.map.member_rank.size() - 1),
           "Pass a communicator rank (Communicator::rank_of()) as the root.");
    }
    call_.root = root;
  }

  void check_reduction(ReduceOp op) {
    call_.reduce_op = op;
    if (!impl_.backend->supports(call_.dtype, op)) {
      fail(std::nullopt,
           fmt::format("Backend {} does not support {} with {}", name(impl_.backend->kind()),
                       name(op), name(call_.dtype)),
           "Use another dtype or reduction, or another backend.");
    }
  }

  // In place when every member's send and recv start at the same byte (for all_gather and
  // reduce_scatter: when the smaller array is the member's own block of the larger, as NCCL
  // defines it).
  void set_in_place(std::size_t send_block_of_recv, std::size_t recv_block_of_send) {
    const std::size_t es = itemsize(call_.dtype);
    bool all = !call_.members.empty();
    for (const auto& m : call_.members) {
      if (m.recv == nullptr) continue;  // reduce: members other than the root receive nothing
      const std::size_t block = impl_.first_member + m.local_device;
      const bool same =
          m.send == m.recv &&
          m.send_offset + block * recv_block_of_send * es == m.recv_offset + block * send_block_of_recv * es;
      all = all && same;
    }
    call_.in_place = all;
  }

  detail::CollectiveCall& call() {
    if (dtype_) call_.dtype = *dtype_;
    return call_;
  }
  void set_dtype_now() {
    if (dtype_) call_.dtype = *dtype_;
  }
  const std::string& call_name() const { return call_name_; }
  CollectiveClock::time_point created() const { return created_; }

 private:
  Communicator::Impl& impl_;
  const Queue& queue_;
  std::string call_name_;
  CollectiveClock::time_point created_;
  std::string size_rule_;
  std::optional<Dtype> dtype_;
  detail::CollectiveCall call_;
};

}  // namespace

// --- construction ----------------------------------------------------------------------------

#if SKEIN_HAS_MPI
namespace {

std::unique_ptr<Communicator::Impl> make_impl(MPI_Comm user_comm, const Context& context,
                                              std::vector<std::size_t> device_idxs,
                                              CollectiveBackend requested) {
  // Everything that can fail locally fails before the first collective, identically on every
  // rank that has the same environment.
  const bool check_agreement = agreement_check_from_environment();
  const double timeout_s = timeout_from_environment();
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    detail::raise_in(SKEIN_HERE, "Communicator", "Create a skein::Runtime first, or call MPI_Init.",
                     "MPI is not initialised");
  }
  if (user_comm == MPI_COMM_NULL) {
    detail::raise_in(SKEIN_HERE, "Communicator", "Pass a valid communicator, e.g. MPI_COMM_WORLD.",
                     "the MPI communicator is MPI_COMM_NULL");
  }
  if (device_idxs.empty()) {
    for (std::size_t i = 0; i < context.num_devices(); ++i) device_idxs.push_back(i);
  }
  for (std::size_t i = 0; i < device_idxs.size(); ++i) {
    detail::check_device_idx(context, device_idxs[i], "Communicator");
    for (std::size_t j = 0; j < i; ++j) {
      if (device_idxs[i] == device_idxs[j]) {
        detail::raise_in(SKEIN_HERE, "Communicator", "List each device once.",
                         "device {} is listed twice in the communicator's devices ({})",
                         device_idxs[i], fmt::join(device_idxs, ", "));
      }
    }
  }
#if !SKEIN_HAS_NCCL
  if (requested == CollectiveBackend::nccl) {
    detail::raise_in(SKEIN_HERE, "Communicator",
                     "Use CollectiveBackend::mpi or automatic, or build Skein with NCCL.",
                     "this build of Skein has no NCCL backend");
  }
#endif

  auto impl = std::make_unique<Communicator::Impl>(context);
  impl->check_agreement = check_agreement;
  impl->timeout_s = timeout_s;
  impl->device_idxs = device_idxs;
  const auto deadline = impl->deadline();

  // Skein's own communicator: its traffic never mixes with the user's, and MPI errors on it
  // come back as codes (raised as exceptions) instead of aborting the job.
  MPI_Request request = MPI_REQUEST_NULL;
  detail::check_mpi(MPI_Comm_idup(user_comm, &impl->comm, &request), "MPI_Comm_idup");
  try {
    detail::wait_requests(std::span(&request, 1), deadline, "MPI_Comm_idup (creating a Communicator)");
  } catch (...) {
    impl->comm = MPI_COMM_NULL;  // never completed: it must not be freed
    throw;
  }
  detail::check_mpi(MPI_Comm_set_errhandler(impl->comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  detail::check_mpi(MPI_Comm_rank(impl->comm, &impl->mpi_rank), "MPI_Comm_rank");
  detail::check_mpi(MPI_Comm_size(impl->comm, &impl->mpi_size), "MPI_Comm_size");

  // Members: each rank's count, and whether its devices are all CUDA.
  const bool cuda = context.api().id() == ApiId::cuda;
  // On the heap: after a timeout MPI may still use the buffers, which are then leaked.
  auto exchange = std::make_unique<std::vector<int>>(2 + 2 * static_cast<std::size_t>(impl->mpi_size));
  int* mine = exchange->data();
  mine[0] = static_cast<int>(device_idxs.size());
  mine[1] = cuda ? 1 : 0;
  detail::check_mpi(MPI_Iallgather(mine, 2, MPI_INT, mine + 2, 2, MPI_INT, impl->comm, &request),
                    "MPI_Iallgather");
  try {
    detail::wait_requests(std::span(&request, 1), deadline, "MPI_Iallgather (creating a Communicator)");
  } catch (...) {
    (void)exchange.release();
    throw;
  }
  const int* all = mine + 2;
  auto& map = impl->map;
  std::vector<int> non_cuda_ranks;
  for (int r = 0; r < impl->mpi_size; ++r) {
    const auto count = static_cast<std::size_t>(all[2 * r]);
    map.first_member_of_rank.push_back(map.member_rank.size());
    map.members_of_rank.push_back(count);
    for (std::size_t i = 0; i < count; ++i) map.member_rank.push_back(r);
    if (!all[2 * r + 1]) non_cuda_ranks.push_back(r);
  }
  impl->first_member = map.first_member_of_rank[static_cast<std::size_t>(impl->mpi_rank)];

  CollectiveBackend chosen = requested;
  if (requested == CollectiveBackend::automatic) {
    chosen = SKEIN_HAS_NCCL && non_cuda_ranks.empty() ? CollectiveBackend::nccl : CollectiveBackend::mpi;
  } else if (requested == CollectiveBackend::nccl && !non_cuda_ranks.empty()) {
    // Raised on every rank (the flags were gathered), so that no rank waits in NCCL's set-up.
    std::vector<std::string> mine_described;
    for (auto idx : device_idxs) mine_described.push_back(context.device(idx).description());
    const bool me = std::find(non_cuda_ranks.begin(), non_cuda_ranks.end(), impl->mpi_rank) !=
                    non_cuda_ranks.end();
    detail::raise_in(SKEIN_HERE, "Communicator",
                     "Use CollectiveBackend::mpi or automatic (MPI works with any device), or give "
                     "every rank CUDA devices.",
                     "the NCCL backend needs CUDA devices, but {} {} other devices{}",
                     ranks_list(non_cuda_ranks), non_cuda_ranks.size() == 1 ? "has" : "have",
                     me ? fmt::format(" (this rank's: {})", fmt::join(mine_described, ", ")) : "");
  }
  const int first = static_cast<int>(impl->first_member);
#if SKEIN_HAS_NCCL
  if (chosen == CollectiveBackend::nccl) {
    impl->backend = detail::make_nccl_backend(impl->comm, map, first, context, device_idxs, timeout_s);
  }
#endif
  if (chosen == CollectiveBackend::mpi) {
    impl->backend = detail::make_mpi_backend(impl->comm, map, first, context, device_idxs, timeout_s);
  }
  if (impl->asynchronous()) impl->start_watchdog();
  return impl;
}

}  // namespace

Communicator::Communicator(MPI_Comm comm, const Context& context, std::vector<std::size_t> device_idxs,
                           CollectiveBackend backend)
    : impl_(make_impl(comm, context, std::move(device_idxs), backend)) {}

Communicator::Communicator(const Runtime& runtime, CollectiveBackend backend) {
  if (!runtime.uses_mpi()) {
    detail::raise_in(SKEIN_HERE, "Communicator",
                     "Create the Runtime with Runtime(&argc, &argv) or Runtime(comm).",
                     "the runtime does not use MPI; a Communicator needs MPI");
  }
  impl_ = make_impl(runtime.comm(), runtime.context(), {}, backend);
}

#else

Communicator::Communicator(const Runtime&, CollectiveBackend) {
  detail::raise_in(SKEIN_HERE, "Communicator", "Build Skein with MPI (SKEIN_WITH_MPI=ON).",
                   "this build of Skein has no MPI; a Communicator needs MPI");
}

#endif

Communicator::Communicator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;

std::size_t Communicator::size() const { return impl_->map.member_rank.size(); }
std::size_t Communicator::local_size() const { return impl_->device_idxs.size(); }

int Communicator::rank_of(std::size_t local_device) const {
  if (local_device >= local_size()) {
    detail::raise_in(SKEIN_HERE, "Communicator::rank_of", "Pass an index below local_size().",
                     "local device {} does not exist (this rank has {} member(s))", local_device,
                     local_size());
  }
  return static_cast<int>(impl_->first_member + local_device);
}

std::size_t Communicator::device_idx(std::size_t local_device) const {
  if (local_device >= local_size()) {
    detail::raise_in(SKEIN_HERE, "Communicator::device_idx", "Pass an index below local_size().",
                     "local device {} does not exist (this rank has {} member(s))", local_device,
                     local_size());
  }
  return impl_->device_idxs[local_device];
}

const Context& Communicator::context() const { return impl_->context; }
CollectiveBackend Communicator::backend() const { return impl_->backend->kind(); }
std::string Communicator::backend_description() const { return impl_->backend->description(); }
#if SKEIN_HAS_MPI
MPI_Comm Communicator::mpi_comm() const { return impl_->comm; }
#endif

Communicator Communicator::split(int color, int key) const {
#if SKEIN_HAS_MPI
  impl_->check_usable("Communicator::split");
  if (color < 0) {
    detail::raise_in(SKEIN_HERE, "Communicator::split", "Pass a non-negative color.",
                     "color {} is negative", color);
  }
  MPI_Comm part = MPI_COMM_NULL;
  detail::check_mpi(MPI_Comm_split(impl_->comm, color, key, &part), "MPI_Comm_split");
  try {
    Communicator result(part, impl_->context, impl_->device_idxs, backend());
    MPI_Comm_free(&part);
    return result;
  } catch (...) {
    MPI_Comm_free(&part);
    throw;
  }
#else
  (void)color, (void)key;
  detail::raise_in(SKEIN_HERE, "Communicator::split", "", "this build of Skein has no MPI");
#endif
}

// --- operations ------------------------------------------------------------------------------

namespace {

// Runs a checked call: the agreement check (collectives), the backend, and the events.
std::vector<Event> launch(Communicator::Impl& impl, CallBuilder& b, const Queue& queue) {
  detail::CollectiveCall& call = b.call();
  auto& profile = detail::call_profile();
  // This call's phases; calls slower than 200 us in all (connection set-up on first use of a
  // peer or algorithm, a full queue) are left out of the averages.
  long long checks = 0, backend = 0, events_ns = 0, launch_before = profile.launch_ns;
  if (profile.on) checks = ns_since(b.created());
  auto phase = profile.on ? CollectiveClock::now() : CollectiveClock::time_point();
  impl.check_usable(b.call_name());
  const bool collective = call.op != CollectiveOp::send && call.op != CollectiveOp::recv;
  call.sequence = collective ? ++impl.collective_sequence : ++impl.p2p_sequence;
  const std::string label = fmt::format("{} #{}", name(call.op), call.sequence);
  const auto start = CollectiveClock::now();
  call.deadline = impl.deadline();
  impl.guarded(label, b.call_name(), start, [&] {
    if (collective && impl.check_agreement) {
      Fingerprint f;
      f.sequence = call.sequence;
      f.count = call.count;
      f.op = static_cast<std::int32_t>(call.op);
      if (call.op != CollectiveOp::barrier) f.dtype = static_cast<std::int32_t>(call.dtype);
      if (has_root(call.op)) f.root = call.root;
      if (is_reduction(call.op)) f.reduction = static_cast<std::int32_t>(call.reduce_op);
      impl.agree(label, f, call.deadline);
    }
    impl.backend->run(call);
  });
  if (profile.on) {
    backend = ns_since(phase);
    phase = CollectiveClock::now();
  }
  std::vector<Event> events(call.members.size());
  // Inside a group the work is only issued at group_end(): there is nothing to record yet.
  if (impl.group_depth > 0) return events;
  for (std::size_t i = 0; i < call.members.size(); ++i) {
    // Untimed: cheaper to record, and these only say when the call is done.
    events[i] = queue.record_marker(call.members[i].device_idx);
  }
  if (profile.on) {
    events_ns = ns_since(phase);
    phase = CollectiveClock::now();
  }
  if (impl.asynchronous() && impl.timeout_s > 0) {
    {
      std::lock_guard lock(impl.mutex);
      impl.watches.push_back({events, start, call.deadline, label});
    }
  }
  if (profile.on) {
    const long long watch = ns_since(phase);
    if (checks + backend + events_ns + watch < 200000) {
      ++profile.calls;
      profile.checks_ns += checks;
      profile.backend_ns += backend;
      profile.events_ns += events_ns;
      profile.watch_ns += watch;
    } else {
      profile.launch_ns = launch_before;  // its NCCL group time goes too
    }
  }
  return events;
}

}  // namespace

std::vector<Event> Communicator::all_reduce(const Queue& queue, std::span<const Array> send,
                                            std::span<const Array> recv, ReduceOp op) {
  CallBuilder b(*impl_, CollectiveOp::all_reduce, queue);
  b.check_span(send, "send");
  b.check_span(recv, "recv");
  const std::size_t n = send[0].size();
  b.set_rule(" (all_reduce: every member's send and recv have the same size)");
  for (std::size_t l = 0; l < local_size(); ++l) {
    b.send(l, send[l], n);
    b.recv(l, recv[l], n);
  }
  b.set_dtype_now();
  b.check_reduction(op);
  b.call().count = n;
  b.set_in_place(0, 0);
  return launch(*impl_, b, queue);
}

std::vector<Event> Communicator::all_gather(const Queue& queue, std::span<const Array> send,
                                            std::span<const Array> recv) {
  CallBuilder b(*impl_, CollectiveOp::all_gather, queue);
  b.check_span(send, "send");
  b.check_span(recv, "recv");
  const std::size_t n = send[0].size();
  b.set_rule(" (all_gather: every member sends the same count)");
  for (std::size_t l = 0; l < local_size(); ++l) b.send(l, send[l], n);
  b.set_rule(fmt::format(" (all_gather: recv = size() * send = {} * {})", size(), n));
  for (std::size_t l = 0; l < local_size(); ++l) b.recv(l, recv[l], size() * n);
  b.call().count = n;
  b.set_in_place(n, 0);
  return launch(*impl_, b, queue);
}

std::vector<Event> Communicator::broadcast(const Queue& queue, std::span<const Array> data, int root) {
  CallBuilder b(*impl_, CollectiveOp::broadcast, queue);
  b.check_span(data, "data");
  b.check_root(root);
  const std::size_t n = data[0].size();
  b.set_rule(" (broadcast: every member's data has the same size)");
  for (std::size_t l = 0; l < local_size(); ++l) {
    b.send(l, data[l], n);
    b.recv(l, data[l], n);
  }
  b.call().count = n;
  b.call().in_place = true;
  return launch(*impl_, b, queue);
}

std::vector<Event> Communicator::reduce(const Queue& queue, std::span<const Array> send,
                                        std::span<const Array> recv, ReduceOp op, int root) {
  CallBuilder b(*impl_, CollectiveOp::reduce, queue);
  b.check_span(send, "send");
  b.check_span(recv, "recv");
  b.check_root(root);
  const std::size_t n = send[0].size();
  b.set_rule(" (reduce: every member sends the same count, and the root's recv has that size)");
  for (std::size_t l = 0; l < local_size(); ++l) {
    b.send(l, send[l], n);
    // Only the root's recv is written; the others may be anything (empty arrays, typically).
    if (rank_of(l) == root) b.recv(l, recv[l], n);
  }
  b.set_dtype_now();
  b.check_reduction(op);
  b.call().count = n;
  b.set_in_place(0, 0);
  return launch(*impl_, b, queue);
}

std::vector<Event> Communicator::reduce_scatter(const Queue& queue, std::span<const Array> send,
                                                std::span<const Array> recv, ReduceOp op) {
  CallBuilder b(*impl_, CollectiveOp::reduce_scatter, queue);
  b.check_span(send, "send");
  b.check_span(recv, "recv");
  const std::size_t n = recv[0].size();
  b.set_rule(" (reduce_scatter: every member receives the same count)");
  for (std::size_t l = 0; l < local_size(); ++l) b.recv(l, recv[l], n);
  b.set_rule(fmt::format(" (reduce_scatter: send = size() * recv = {} * {})", size(), n));
  for (std::size_t l = 0; l < local_size(); ++l) b.send(l, send[l], size() * n);
  b.set_dtype_now();
  b.check_reduction(op);
  b.call().count = n;
  b.set_in_place(0, n);
  return launch(*impl_, b, queue);
}

namespace {

void check_p2p(CallBuilder& b, const Communicator& c, std::size_t local_device, int peer) {
  if (local_device >= c.local_size()) {
    b.fail(std::nullopt,
           fmt::format("local device {} does not exist (this rank has {} member(s))", local_device,
                       c.local_size()),
           "Pass an index below local_size().");
  }
  if (peer < 0 || static_cast<std::size_t>(peer) >= c.size()) {
    b.fail(local_device,
           fmt::format("peer {} is not a member (the communicator has {} members)", peer, c.size()),
           "Pass a communicator rank (0 to size() - 1) as the peer.");
  }
  if (peer == c.rank_of(local_device)) {
    b.fail(local_device, fmt::format("peer {} is this member itself", peer),
           "Send to another member; copy locally instead of sending to oneself.");
  }
  b.call().peer = peer;
}

}  // namespace

std::vector<Event> Communicator::send(const Queue& queue, std::size_t local_device, const Array& data,
                                      int peer) {
  CallBuilder b(*impl_, CollectiveOp::send, queue);
  check_p2p(b, *this, local_device, peer);
  b.send(local_device, data, data.size());
  b.call().count = data.size();
  return launch(*impl_, b, queue);
}

std::vector<Event> Communicator::recv(const Queue& queue, std::size_t local_device, const Array& data,
                                      int peer) {
  CallBuilder b(*impl_, CollectiveOp::recv, queue);
  check_p2p(b, *this, local_device, peer);
  b.recv(local_device, data, data.size());
  b.call().count = data.size();
  return launch(*impl_, b, queue);
}

std::vector<Event> Communicator::all_to_all(const Queue& queue, std::span<const Array> send,
                                            std::span<const Array> recv) {
  CallBuilder b(*impl_, CollectiveOp::all_to_all, queue);
  b.check_span(send, "send");
  b.check_span(recv, "recv");
  const std::size_t total = send[0].size();
  if (total % size() != 0) {
    b.fail(0, fmt::format("the send array has {} elements, not a multiple of size() = {}", total, size()),
           "Give every member size() blocks of the same count.");
  }
  b.set_rule(fmt::format(" (all_to_all: size() blocks of the same count, {} * {})", size(), total / size()));
  for (std::size_t l = 0; l < local_size(); ++l) {
    b.send(l, send[l], total);
    b.recv(l, recv[l], total);
  }
  b.call().count = total / size();
  b.set_in_place(0, 0);
  return launch(*impl_, b, queue);
}

void Communicator::barrier(const Queue& queue) {
  CallBuilder b(*impl_, CollectiveOp::barrier, queue);
  for (std::size_t l = 0; l < local_size(); ++l) b.member(l);
  b.call().count = 0;
  auto events = launch(*impl_, b, queue);
  // Asynchronous backends enqueue the barrier: wait for it here, as the call promises.
  if (impl_->group_depth == 0) {
    for (auto& e : events) e.wait();
    impl_->check_usable("Communicator::barrier");
  }
}

void Communicator::group_start() {
  impl_->check_usable("Communicator::group_start");
  if (impl_->group_depth++ == 0) ++impl_->group_sequence;
  impl_->backend->group_start();
}

void Communicator::group_end() {
  impl_->check_usable("Communicator::group_end");
  if (impl_->group_depth == 0) {
    detail::raise_in(SKEIN_HERE, "Communicator::group_end", "Call group_start() first.",
                     "group_end() without a matching group_start()");
  }
  --impl_->group_depth;
  const auto start = CollectiveClock::now();
  impl_->guarded(fmt::format("group #{}", impl_->group_sequence), "Communicator::group_end", start,
                 [&] { impl_->backend->group_end(); });
}

}  // namespace skein
