// SPDX-License-Identifier: BSD-3-Clause
// The Communicator front-end's calls: each operation's argument checks (CallBuilder), the launch
// (the agreement check, the backend, the events, the watchdog's hand-off), and the accessors.
// Backends (mpi/, nccl/) only move data; communicator_impl.hpp says which file holds the rest.
//
// Every check that can fail locally runs before anything is sent, so a wrong call raises a
// LogicError instead of leaving the other ranks waiting. What cannot be checked locally (do the
// ranks make the same call?) is the agreement check: a synchronous backend (MPI) compares each
// call's fingerprint before its data leaves the rank (exchange.cpp); an asynchronous one (NCCL)
// returns once the work is enqueued, the calls are compared alongside in rounds
// (call_ledger.cpp), and no result of a call reaches the host before its comparison agreed
// (agreement_results.cpp, skein/detail/pending_results.hpp).
//
// Timeouts: a synchronous backend polls its own requests against the call's deadline and throws
// TimeoutError when it passes. An asynchronous backend's calls are followed by the watchdog
// (watchdog.cpp), which aborts the backend when a call's deadline passes or the backend reports an
// asynchronous error; the next call, and the host completions of its work, raise. Either way the
// communicator is unusable afterwards: the ranks no longer agree on which operations have
// completed.
#include "skein/communicator.hpp"

#include "communicator_impl.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <unistd.h>

#include "skein/config.hpp"
#if SKEIN_HAS_MPI
#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

#include "skein/detail/adapter.hpp"
#include "skein/detail/agreement.hpp"
#include "skein/detail/backend.hpp"
#include "skein/detail/env.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/trace.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/host_collectives.hpp"
#include "skein/detail/impl_access.hpp"
#include "skein/detail/log.hpp"
#include "skein/detail/deferred_marker.hpp"
#include "skein/detail/watch_order.hpp"
#include "call_ledger.hpp"
#include "fingerprint.hpp"
#include "host_reduce.hpp"
#include "skein/detail/mpi_util.hpp"
#include "skein/detail/pending_results.hpp"
#include "skein/detail/placement.hpp"
#include "skein/device.hpp"
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
namespace {
std::atomic<CallProfile*> g_profile{nullptr};
}  // namespace
CallProfile& call_profile() {
  static CallProfile profile{.on = detail::env_flag("SKEIN_PROFILE_COLLECTIVES", false,
                                                    "Communicator",
                                                    "print the host time per collective call")};
  g_profile.store(&profile, std::memory_order_release);
  return profile;
}
CallProfile* call_profile_if_read() noexcept { return g_profile.load(std::memory_order_acquire); }
std::optional<bool> nccl_blocking_from_environment() {
  return parse_env_flag("SKEIN_NCCL_BLOCKING", env_value("SKEIN_NCCL_BLOCKING"), "Communicator",
                        "blocking NCCL communicators, the default; 0: non-blocking, no NCCL call "
                        "ever blocks the host, at several microseconds more per collective");
}
long long& call_launch_ns() {
  thread_local long long ns = 0;
  return ns;
}
}  // namespace detail

Communicator::Impl::Impl(Context c)
    : context(std::move(c)), results(std::make_shared<AgreementResults>()) {}

Communicator::Impl::~Impl() {
  if (const auto* read = detail::call_profile_if_read(); read && read->on && read->calls > 0) {
    const auto& p = *read;
    const double n = static_cast<double>(p.calls) * 1e3;
    // A report asked for (SKEIN_PROFILE_COLLECTIVES=1): at warning, so that it shows by default.
    detail::log(LogLevel::warning, LogScope::rank,
                "{} collective calls, host us per call: checks {:.2f}, backend {:.2f} (NCCL group "
                "{:.2f}), events {:.2f}, watchdog {:.2f}",
                p.calls.load(), static_cast<double>(p.checks_ns) / n,
                static_cast<double>(p.backend_ns) / n, static_cast<double>(p.launch_ns) / n,
                static_cast<double>(p.events_ns) / n, static_cast<double>(p.watch_ns) / n);
  }
#if SKEIN_HAS_MPI
  int finalized = 0;
  MPI_Finalized(&finalized);
  // The last calls' agreement exchanges: every rank that made the same calls completes them
  // within moments; a rank that is gone or late is given at most 10 s (the timeout if shorter).
  if (!finalized && broken.empty() && async_agreement && checks()) {
    try {
      if (!settle_exchanges(deadline_in(timeout_s > 0 ? std::min(timeout_s, 10.0) : 10.0))) {
        detail::log(LogLevel::warning, LogScope::rank,
                    "a Communicator was destroyed before the other ranks confirmed its last "
                    "collective calls (the agreement check; SKEIN_COLLECTIVE_TIMEOUT={} s)",
                    timeout_s);
      }
      std::lock_guard lock(mutex);
      if (watchdog_failure && broken.empty() &&
          !results->reported.load(std::memory_order_relaxed)) {
        detail::log(LogLevel::error, LogScope::rank,
                    "{} (found when the Communicator was destroyed)", watchdog_failure->message);
      }
    } catch (const std::exception& e) {
      detail::log(LogLevel::error, LogScope::rank, "{} (when the Communicator was destroyed)",
                  e.what());
    }
  }
#endif
  if (watchdog.joinable()) {
    {
      std::lock_guard lock(mutex);
      stop = true;
    }
    wake.notify_all();
    watchdog.join();
  }
#if SKEIN_HAS_MPI
  ledger.reset();  // a round still in flight (after a failure) is kept until exit
#endif
  backend.reset();
#if SKEIN_HAS_MPI
  if (!finalized && persistent && persistent->request != MPI_REQUEST_NULL) {
    MPI_Request_free(&persistent->request);  // inactive: every start was completed
  }
  // An abandoned persistent request may still use them: MPI_Finalize releases them then.
  if (!finalized && !detail::any_abandoned()) {
    if (record_op != MPI_OP_NULL) MPI_Op_free(&record_op);
    if (record_type != MPI_DATATYPE_NULL) MPI_Type_free(&record_type);
  }
  // Communicators with an abandoned request on them (or on their duplication) stay: MPI_Finalize
  // releases them.
  if (!finalized && !detail::any_abandoned()) {
    for (MPI_Comm* c : {&comm, &fp_comm, &diag_comm, &host_comm}) {
      if (*c != MPI_COMM_NULL) MPI_Comm_free(c);
    }
  }
#endif
}

namespace {

// Checks one call's arguments and builds the backend's description of it.
class CallBuilder {
 public:
  CallBuilder(Communicator::Impl& impl, CollectiveOp op, const Queue& queue)
      : impl_(impl),
        queue_(queue),
        call_name_(call_name_of(op)),
        created_(detail::call_profile().on ? CollectiveClock::now()
                                           : CollectiveClock::time_point()) {
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
           fmt::format("{} {} arrays were given, but this rank has {} member(s)", arrays.size(),
                       role, impl_.device_idxs.size()),
           "Pass one array per local member, in local device order (Communicator::local_size()).");
    }
  }

  // Checks one member's array and returns (adapter, absolute byte offset).
  std::pair<const detail::BufferAdapter*, std::size_t> check_array(std::size_t local,
                                                                   const Array& a, const char* role,
                                                                   std::size_t expected_size) {
    const std::size_t dev = impl_.device_idxs[local];
    if (a.data().context_id() != detail::impl_of(impl_.context).get()) {
      fail(local, fmt::format("the {} array belongs to another context", role),
           "Allocate the arrays in the communicator's context (Communicator::context()).");
    }
    if (a.device_idx() != dev) {
      fail(local,
           fmt::format("the {} array is on context device {}, not on this member's device {}", role,
                       a.device_idx(), dev),
           "Pass the arrays in local device order: array i on Communicator::device_idx(i).");
    }
    if (!a.is_contiguous()) {
      fail(local, fmt::format("the {} array is not contiguous", role),
           "Pass contiguous arrays (copy a strided view into a contiguous array first).");
    }
    if (is_record(a.dtype())) {
      fail(local,
           fmt::format("the {} array's dtype '{}' is a record (struct) dtype, which the "
                       "collectives do not take",
                       role, name(a.dtype())),
           "Pass its numeric fields (extract_field in skein/records.hpp, copied into contiguous "
           "arrays), or the same memory as a uint8 Array over its buffer.");
    }
    if (dtype_ && *dtype_ != a.dtype()) {
      fail(local,
           fmt::format("the {} array's dtype is {}, but the call's dtype is {}", role,
                       name(a.dtype()), name(*dtype_)),
           "Use the same dtype for every array of the call.");
    }
    dtype_ = a.dtype();
    if (a.size() != expected_size) {
      fail(local,
           fmt::format("the {} array has {} elements, but {} are needed{}", role, a.size(),
                       expected_size, size_rule()),
           "Size the arrays as the operation requires (see <skein/communicator.hpp>).");
    }
    if (!queue_.has_device(dev)) {
      fail(local,
           fmt::format("the queue has no queue on context device {} (its devices: {})", dev,
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
      fail(local,
           fmt::format("the queue has no queue on context device {} (its devices: {})",
                       m.device_idx, fmt::join(queue_.device_idxs(), ", ")),
           "Use a queue over the communicator's devices, e.g. Queue(communicator.context()).");
    }
    // Not Queue::device_queue, which would record the marker of the previous call on the device
    // (skein/detail/deferred_marker.hpp): this call's own marker joins it.
    m.queue = &detail::unsettled_device_queue(queue_, m.device_idx);
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

  // The size rule a message states: text, or a format with two counts (written out only for a
  // message).
  void set_rule(const char* rule) { rule_ = rule; }
  void set_rule(const char* rule, std::size_t a, std::size_t b) {
    rule_ = rule;
    rule_a_ = a;
    rule_b_ = b;
  }
  std::string size_rule() const {
    return rule_ == nullptr ? std::string() : fmt::format(fmt::runtime(rule_), rule_a_, rule_b_);
  }

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
      const bool same = m.send == m.recv && m.send_offset + block * recv_block_of_send * es ==
                                                m.recv_offset + block * send_block_of_recv * es;
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
  const std::string& call_name_;
  CollectiveClock::time_point created_;
  const char* rule_ = nullptr;
  std::size_t rule_a_ = 0, rule_b_ = 0;
  std::optional<Dtype> dtype_;
  detail::CollectiveCall call_;
};

}  // namespace

#if SKEIN_HAS_MPI

namespace {

// The older constructors' request: an explicit backend wins over SKEIN_BACKEND, which replaces
// only `automatic`.
detail::CommunicatorRequest request_of(CollectiveBackend backend) {
  if (backend == CollectiveBackend::automatic) return {};
  return {.options = {.backend = backend}, .backend_pinned = true};
}

std::shared_ptr<Communicator::Impl> over_runtime(const Runtime& runtime,
                                                 const detail::CommunicatorRequest& request) {
  if (!runtime.uses_mpi()) {
    detail::raise_in(SKEIN_HERE, "Communicator",
                     "Create the Runtime with Runtime(&argc, &argv) or Runtime(comm).",
                     "the runtime does not use MPI; a Communicator needs MPI");
  }
  return detail::make_communicator_impl(runtime.comm(), runtime.context(), {}, request);
}

}  // namespace

Communicator::Communicator(MPI_Comm comm, const Context& context,
                           std::vector<std::size_t> device_idxs, const CommunicatorOptions& options)
    : impl_(detail::make_communicator_impl(comm, context, std::move(device_idxs),
                                           {.options = options})) {}

Communicator::Communicator(MPI_Comm comm, const Context& context,
                           std::vector<std::size_t> device_idxs, CollectiveBackend backend)
    : impl_(detail::make_communicator_impl(comm, context, std::move(device_idxs),
                                           request_of(backend))) {}

Communicator::Communicator(const Runtime& runtime, CollectiveBackend backend)
    : impl_(over_runtime(runtime, request_of(backend))) {}

Communicator::Communicator(const Runtime& runtime, const CommunicatorOptions& options)
    : impl_(over_runtime(runtime, {.options = options})) {}

#else

Communicator::Communicator(const Runtime&, const CommunicatorOptions&) {
  detail::raise_in(SKEIN_HERE, "Communicator", "Build Skein with MPI (SKEIN_WITH_MPI=ON).",
                   "this build of Skein has no MPI; a Communicator needs MPI");
}

Communicator::Communicator(const Runtime& runtime, CollectiveBackend)
    : Communicator(runtime, CommunicatorOptions{}) {}

#endif

Communicator::Communicator(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
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
const CommunicatorOptions& Communicator::options() const { return impl_->options; }
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
  SKEIN_MPI_CHECK(MPI_Comm_split, (impl_->comm, color, key, &part));
  try {
    // The parent's settings in effect, its backend included whatever SKEIN_BACKEND says now.
    Communicator result(
        detail::make_communicator_impl(part, impl_->context, impl_->device_idxs,
                                       {.options = impl_->options, .backend_pinned = true}));
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

// The NVTX name of each operation's range (skein/detail/trace.hpp), registered once.
detail::TraceName trace_of(CollectiveOp op) {
  constexpr std::size_t kOps = static_cast<std::size_t>(CollectiveOp::all_to_all) + 1;
  static const std::array<detail::TraceName, kOps> names = [] {
    std::array<detail::TraceName, kOps> result{};
    for (std::size_t i = 0; i < kOps; ++i) {
      const std::string text = fmt::format("collective {}", name(static_cast<CollectiveOp>(i)));
      result[i] = detail::trace_name(text.c_str());  // NVTX copies the string
    }
    return result;
  }();
  const auto i = static_cast<std::size_t>(op);
  return i < kOps ? names[i] : nullptr;
}

// The call's digest for the agreement check.
Fingerprint fingerprint_of(const detail::CollectiveCall& call) {
  Fingerprint f;
  f.sequence = call.sequence;
  f.count = call.count;
  f.op = static_cast<std::int32_t>(call.op);
  if (call.op != CollectiveOp::barrier) f.dtype = static_cast<std::int32_t>(call.dtype);
  if (has_root(call.op)) f.root = call.root;
  if (is_reduction(call.op)) f.reduction = static_cast<std::int32_t>(call.reduce_op);
  return f;
}

// The watchdog's work: the call's events. Calls on the same streams within a millisecond of the
// first of a watch not yet taken by the watchdog join that watch: it keeps the first call's start
// and deadline and the newest call's events (which complete last: the streams run in order). So
// the watchdog holds about one event per stream and millisecond, not one per call: with the
// devices a thousand calls behind the host, holding every call's event kept a thousand alive,
// more than the context's event pool keeps, and each call then created and destroyed a CUDA
// event (2.4 us per call of 8-byte all_reduces on 4 x H200, 10000-call loops).
void watch_call(Communicator::Impl& impl, const Queue& queue, const detail::CollectiveCall& call,
                const CallLabel& label, CollectiveClock::time_point start,
                const std::vector<Event>& events) {
  const auto& queue_impl = detail::impl_of(queue);
  std::uint64_t devices = 0;
  for (const auto& m : call.members) {
    devices = m.device_idx < 64 && devices != ~std::uint64_t{0}
                  ? devices | (std::uint64_t{1} << m.device_idx)
                  : ~std::uint64_t{0};
  }
  constexpr auto kJoin = std::chrono::milliseconds(1);
  const auto same_adapters = [](const std::vector<Event>& a, const std::vector<Event>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                      [](const Event& x, const Event& y) { return x.adapter() == y.adapter(); });
  };
  std::lock_guard lock(impl.mutex);
  if (!impl.watches.empty() && impl.watches.back().on_streams(queue_impl.get(), devices) &&
      start - impl.watches.back().start < kJoin) {
    // Calls in a row share their events (deferred markers) until one is recorded.
    if (!same_adapters(impl.watches.back().events, events)) impl.watches.back().events = events;
  } else {
    Communicator::Impl::Watch w;
    w.start = start;
    w.deadline = call.deadline;
    w.label = label;
    w.queue = std::static_pointer_cast<const void>(queue_impl);
    w.queue_address = queue_impl.get();
    w.has_queue = true;
    w.devices = devices;
    w.events = events;
    impl.watches.push_back(std::move(w));
  }
}

// Adds one call's phases to SKEIN_PROFILE_COLLECTIVES's sums; calls slower than 200 us in all
// (connection set-up on first use of a peer or algorithm, a full queue) are left out.
void add_to_profile(detail::CallProfile& profile, long long checks, long long backend,
                    long long events_ns, long long watch_ns) {
  if (checks + backend + events_ns + watch_ns >= 200000) return;
  constexpr auto relaxed = std::memory_order_relaxed;
  profile.calls.fetch_add(1, relaxed);
  profile.checks_ns.fetch_add(checks, relaxed);
  profile.backend_ns.fetch_add(backend, relaxed);
  profile.launch_ns.fetch_add(detail::call_launch_ns(), relaxed);
  profile.events_ns.fetch_add(events_ns, relaxed);
  profile.watch_ns.fetch_add(watch_ns, relaxed);
}

// Runs a checked call: the agreement check (collectives), the backend, and the events.
std::vector<Event> launch(Communicator::Impl& impl, CallBuilder& b, const Queue& queue) {
  detail::CollectiveCall& call = b.call();
  detail::TraceRange trace(trace_of(call.op));
  auto& profile = detail::call_profile();
  // This call's phases (add_to_profile).
  long long checks = 0, backend = 0, events_ns = 0;
  if (profile.on) {
    checks = ns_since(b.created());
    detail::call_launch_ns() = 0;
  }
  auto phase = profile.on ? CollectiveClock::now() : CollectiveClock::time_point();
  impl.check_usable(b.call_name());
  const bool collective = call.op != CollectiveOp::send && call.op != CollectiveOp::recv;
  call.sequence = collective ? ++impl.collective_sequence : ++impl.p2p_sequence;
  const CallLabel label{name(call.op), call.sequence};
  const auto start = CollectiveClock::now();
  call.deadline = impl.deadline_from(start);
  // The agreement check: a digest of the call, compared across ranks. A synchronous backend
  // completes it once the inputs are staged, before data leaves this rank (inside a group, before
  // the group runs); an asynchronous one returns at once, and the call is compared alongside
  // (detail::CallLedger: rounds run by the watchdog under MPI_THREAD_MULTIPLE, else by the calling
  // thread every few calls, and by the host completions that wait for its results), aborting the
  // communicator on a mismatch: the launch pays for a hash and a push, nothing more.
  const bool checked = collective && impl.checks();
  const bool alongside = checked && impl.async_agreement;
  const Fingerprint f = checked ? fingerprint_of(call) : Fingerprint{};
  std::shared_ptr<Communicator::Impl::Exchange> exchange;
  if (checked && !alongside) {
    exchange = std::make_shared<Communicator::Impl::Exchange>();
    exchange->mine = f;
  }
  struct Step final : detail::AgreementStep {
    Communicator::Impl* impl = nullptr;
    std::shared_ptr<Communicator::Impl::Exchange> exchange;
    CollectiveClock::time_point deadline;
    const detail::CollectiveCall* call = nullptr;
    bool carriable = false;
    void complete() override { impl->finish(exchange, deadline); }
    std::size_t payload_capacity() const override { return carriable ? kCarriedBytes : 0; }
    bool complete_carrying(std::byte* data, std::size_t bytes) override {
      if (!carriable || bytes > kCarriedBytes || exchange->posted) {
        impl->finish(exchange, deadline);
        return false;
      }
      return impl->finish_carrying(exchange, deadline, data, bytes, call->dtype, call->reduce_op);
    }
  } step;
  impl.guarded(label, b.call_name(), start, [&] {
    // Recorded before the launch, so that the ranks' records stay in call order whatever happens.
    if (alongside) impl.record_call(f);
    if (exchange) {
      // A small all_reduce's exchange starts once its data is staged, carrying it; any other
      // starts now, alongside the staging.
      step.carriable = impl.can_carry(call);
      if (!step.carriable) impl.post(*exchange);
      if (impl.group_depth > 0) {
        impl.finish(exchange, call.deadline);
      } else {
        step.impl = &impl;
        step.exchange = exchange;
        step.deadline = call.deadline;
        step.call = &call;
        call.agreement = &step;
      }
    }
    try {
      impl.backend->run(call);
    } catch (...) {
      call.agreement = nullptr;
      // Started, never compared (the backend failed first): MPI still owns it.
      if (exchange && exchange->posted && !exchange->done) {
        std::deque<std::shared_ptr<Communicator::Impl::Exchange>> left{exchange};
        impl.abandon(left);
        // The ranks can no longer pair their exchanges: nothing more goes through.
        if (impl.broken.empty())
          impl.broken = fmt::format("{} failed before its agreement check completed", label.str());
      }
      throw;
    }
    call.agreement = nullptr;
    if (exchange && !exchange->done) impl.finish(exchange, call.deadline);
  });
  if (profile.on) {
    backend = ns_since(phase);
    phase = CollectiveClock::now();
  }
  // Compared alongside: the call's results are the host's only once it agreed
  // (skein/detail/pending_results.hpp): every host completion on its queue confirms them first.
  if (alongside) {
    for (const auto& m : call.members)
      detail::hold_results(queue, m.device_idx, impl.results, call.sequence);
  }
  std::vector<Event> events(call.members.size());
  // Inside a group the work is only issued at group_end(): there is nothing to record yet.
  if (impl.group_depth > 0) return events;
  for (std::size_t i = 0; i < call.members.size(); ++i) {
    // Recorded when first needed (skein/detail/deferred_marker.hpp): a recorded event per call
    // cost 0.8-1.3 us of an 8-byte all_reduce's 8.4 us on H200s, and is most often never used.
    events[i] = detail::defer_marker(queue, call.members[i].device_idx);
  }
  if (profile.on) {
    events_ns = ns_since(phase);
    phase = CollectiveClock::now();
  }
  // The watchdog's work (watch_call: one watch per stream and millisecond, not per call).
  if (impl.asynchronous() && impl.timeout_s > 0)
    watch_call(impl, queue, call, label, start, events);
  if (profile.on) add_to_profile(profile, checks, backend, events_ns, ns_since(phase));
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
  b.set_rule(" (all_gather: recv = size() * send = {} * {})", size(), n);
  for (std::size_t l = 0; l < local_size(); ++l) b.recv(l, recv[l], size() * n);
  b.call().count = n;
  b.set_in_place(n, 0);
  return launch(*impl_, b, queue);
}

std::vector<Event> Communicator::broadcast(const Queue& queue, std::span<const Array> data,
                                           int root) {
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
  b.set_rule(" (reduce_scatter: send = size() * recv = {} * {})", size(), n);
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

std::vector<Event> Communicator::send(const Queue& queue, std::size_t local_device,
                                      const Array& data, int peer) {
  CallBuilder b(*impl_, CollectiveOp::send, queue);
  check_p2p(b, *this, local_device, peer);
  b.send(local_device, data, data.size());
  b.call().count = data.size();
  return launch(*impl_, b, queue);
}

std::vector<Event> Communicator::recv(const Queue& queue, std::size_t local_device,
                                      const Array& data, int peer) {
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
    b.fail(
        0,
        fmt::format("the send array has {} elements, not a multiple of size() = {}", total, size()),
        "Give every member size() blocks of the same count.");
  }
  b.set_rule(" (all_to_all: size() blocks of the same count, {} * {})", size(), total / size());
  for (std::size_t l = 0; l < local_size(); ++l) {
    b.send(l, send[l], total);
    b.recv(l, recv[l], total);
  }
  b.call().count = total / size();
  b.set_in_place(0, 0);
  return launch(*impl_, b, queue);
}

void Communicator::barrier(const Queue& queue) {
  // Every call before the barrier is compared across ranks first: a mismatch raises here, on
  // every rank, before the barrier's own traffic (which a rank stuck on the mismatch would never
  // join).
  if (impl_->async_agreement && impl_->checks() && impl_->group_depth == 0 &&
      impl_->broken.empty() && !impl_->settle_exchanges(impl_->deadline())) {
    impl_->backend->abort();
    impl_->broken = fmt::format(
        "the agreement check of the calls before barrier #{} did not "
        "complete within SKEIN_COLLECTIVE_TIMEOUT={} s",
        impl_->collective_sequence + 1, impl_->timeout_s);
    throw TimeoutError(ErrorInfo{.what = impl_->broken + "; the communicator was aborted",
                                 .call = "Communicator::barrier",
                                 .hint = "Another rank probably did not make these calls, or "
                                         "failed. Create a new Communicator to go on."});
  }
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
  impl_->guarded(CallLabel{"group", impl_->group_sequence}, "Communicator::group_end", start,
                 [&] { impl_->backend->group_end(); });
}

CommunicatorGroup::CommunicatorGroup(Communicator& comm) : comm_(comm) { comm_.group_start(); }

CommunicatorGroup::~CommunicatorGroup() {
  if (ended_) return;
  try {
    comm_.group_end();
  } catch (...) {
    // A destructor does not throw: the communicator keeps what ended it for its next call.
  }
}

void CommunicatorGroup::end() {
  if (ended_) {
    detail::raise_in(SKEIN_HERE, "CommunicatorGroup::end", "Call end() once per CommunicatorGroup.",
                     "the group was already ended");
  }
  ended_ = true;
  comm_.group_end();
}

namespace detail {
void compare_alongside_for_testing(Communicator& comm, bool by_watchdog) {
  auto& impl = CommunicatorAccess::impl(comm);
  impl.async_agreement = true;
  impl.thread_multiple = impl.thread_multiple && by_watchdog;
  if (!impl.watchdog.joinable()) impl.start_watchdog();
}
}  // namespace detail

}  // namespace skein
