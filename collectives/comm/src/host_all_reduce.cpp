// SPDX-License-Identifier: BSD-3-Clause
// Reductions of host values over the Communicator's ranks (detail::all_reduce_host, behind
// dist::sum, min, max, dot), and the checks the distributed layer asks of a communicator.
#include "communicator_impl.hpp"

#include "host_reduce.hpp"
#include "skein/detail/host_collectives.hpp"

namespace skein {

namespace detail {

namespace {
// What all_reduce_host gathers from every rank: its call's fingerprint (so that ranks that made
// different calls find out from the data's own exchange, whatever their sizes) and its values.
struct HostRecord {
  Fingerprint call;
  std::byte values[kCarriedBytes];
};
}  // namespace

void require_usable(Communicator& comm, const char* call) {
  CommunicatorAccess::impl(comm).check_usable(call);
}

void require_outside_group(Communicator& comm, const char* call) {
  if (CommunicatorAccess::impl(comm).group_depth > 0) [[unlikely]] {
    raise_in(SKEIN_HERE, call, "Call it before group_start() or after group_end().",
             "a reduction to one value on the host cannot be part of a group of collectives "
             "(the group's calls run at group_end())");
  }
}

#if SKEIN_HAS_MPI
namespace {

// `e` with the backend's roll call after it (which ranks are still there: the MPI backend's own
// timeouts take the same roll call, so a rank that timed out in another call answers it too).
TimeoutError with_roll_call(Communicator::Impl& impl, const TimeoutError& e) {
  const std::string ranks = impl.backend ? impl.backend->roll_call_after_timeout() : std::string();
  if (ranks.empty()) return e;
  ErrorInfo info = e.info();
  info.what = fmt::format("{}; {}", info.what, ranks);
  return TimeoutError(info);
}

}  // namespace
#endif

void all_reduce_host(Communicator& comm, std::span<std::byte> values, std::size_t count,
                     Dtype dtype, ReduceOp op, const char* call) {
  Communicator::Impl& impl = CommunicatorAccess::impl(comm);
  impl.check_usable(call);
  const std::size_t bytes = count * itemsize(dtype);
  if (count == 0 || bytes > kCarriedBytes || values.size() < bytes || values.size() % bytes != 0 ||
      op == ReduceOp::avg) [[unlikely]] {
    raise_in(SKEIN_HERE, call, "This is a bug in Skein.",
             "all_reduce_host: {} bytes of values for {} element(s) of {}, reduction {}",
             values.size(), count, name(dtype), name(op));
  }
  require_outside_group(comm, call);
  // This rank's values first, in member order.
  for (std::size_t at = bytes; at < values.size(); at += bytes) {
    reduce_bytes(dtype, values.data(), values.data() + at, count, op);
  }
  if (impl.mpi_size == 1) return;
#if SKEIN_HAS_MPI
  Fingerprint f;
  f.sequence = ++impl.collective_sequence;
  f.count = count;
  f.op = kHostAllReduce;
  f.dtype = static_cast<std::int32_t>(dtype);
  f.reduction = static_cast<std::int32_t>(op);
  const CallLabel label = label_parts(f);
  const auto start = CollectiveClock::now();
  const auto deadline = impl.deadline();
  impl.guarded(label, call, start, [&] {
    if (impl.checks()) {
      if (!impl.async_agreement) {
        // A synchronous backend's check is one exchange at a time, here and now: it carries the
        // values (one MPI call for both), or it is completed before they move.
        auto x = std::make_shared<Communicator::Impl::Exchange>();
        x->mine = f;
        try {
          if (impl.persistent) {
            if (impl.finish_carrying(x, deadline, values.data(), bytes, dtype, op)) return;
          } else {
            impl.finish(x, deadline);
          }
        } catch (const TimeoutError& e) {
          throw with_roll_call(impl, e);
        }
      } else {
        // Compared alongside, in order with the calls before it, as an asynchronous backend's
        // calls are: a rank that made another call at this point is found there.
        impl.record_call(f);
      }
    }
    auto mine = std::make_shared<HostRecord>();
    mine->call = f;
    std::memcpy(mine->values, values.data(), bytes);
    auto all = std::make_shared<std::vector<HostRecord>>(static_cast<std::size_t>(impl.mpi_size));
    MPI_Request request = MPI_REQUEST_NULL;
    SKEIN_MPI_CHECK(MPI_Iallgather,
                    (mine.get(), sizeof(HostRecord), MPI_BYTE, all->data(), sizeof(HostRecord),
                     MPI_BYTE, impl.host_comm, &request),
                    "all_reduce of host values");
    // The communicator ends with the agreement check's verdict (as check_usable() raises it).
    auto fail = [&](const Communicator::Impl::Verdict& verdict) {
      impl.backend->abort();
      impl.broken = verdict.message;
      impl.raise_verdict(verdict, call);
    };
    auto watchdog_verdict = [&] {
      std::lock_guard lock(impl.mutex);
      return impl.watchdog_failure;
    };
    const bool alongside = impl.checks() && impl.async_agreement;
    try {
      // Between the tests, the verdict on the calls compared alongside: a rank that made another
      // call at this point never joins this gather.
      wait_requests(std::span(&request, 1), deadline, label.str() + "'s MPI_Iallgather", nullptr,
                    [&] {
                      if (!alongside) return;
                      impl.progress_shared();
                      if (auto verdict = watchdog_verdict()) fail(*verdict);
                    });
    } catch (...) {
      // MPI still owns the gather and its buffers.
      abandon(request, label.str() + "'s MPI_Iallgather");
      keep_until_exit(std::move(mine));
      keep_until_exit(std::move(all));
      try {
        throw;
      } catch (const TimeoutError& e) {
        throw with_roll_call(impl, e);
      }
    }
    const std::uint64_t agreed = digest(f);
    if (std::any_of(all->begin(), all->end(),
                    [&](const HostRecord& r) { return digest(r.call) != agreed; })) {
      if (alongside) {
        // This call's exchange differs too, and comparing it is collective (the fingerprints are
        // gathered after a mismatch): finish it as the other ranks do, whichever way they found
        // the mismatch, and report what it found.
        impl.settle_exchanges(deadline);
        if (auto verdict = watchdog_verdict()) fail(*verdict);
      }
      std::vector<Fingerprint> calls;
      for (const auto& r : *all) calls.push_back(r.call);
      fail({Communicator::Impl::Failure::mismatch, describe_differences(calls, f), {}});
    }
    // Combined in rank order on every rank: the same result everywhere.
    std::memcpy(values.data(), (*all)[0].values, bytes);
    for (std::size_t r = 1; r < all->size(); ++r) {
      reduce_bytes(dtype, values.data(), (*all)[r].values, count, op);
    }
  });
#endif
}

}  // namespace detail

}  // namespace skein
