// SPDX-License-Identifier: BSD-3-Clause
// The agreement check of a synchronous backend's call (the MPI backend): one exchange per call, on
// a persistent request, completed before the call's data leaves the rank (it may carry a small
// all_reduce's data).
#include "communicator_impl.hpp"

#include "host_reduce.hpp"

namespace skein {

#if SKEIN_HAS_MPI
namespace {
// The records' MPI operation: inout = in (op) inout, record by record.
void combine_records(void* in, void* inout, int* len, MPI_Datatype*) {
  for (int i = 0; i < *len; ++i) {
    AgreementRecord a, b;  // copied: MPI's buffers are not promised to be aligned
    std::memcpy(&a, static_cast<const std::byte*>(in) + i * sizeof a, sizeof a);
    std::memcpy(&b, static_cast<const std::byte*>(inout) + i * sizeof b, sizeof b);
    const bool same = a.max_digest == ~a.max_complement && b.max_digest == ~b.max_complement &&
                      a.max_digest == b.max_digest;
    // Equal digests: equal calls, so the same dtype, reduction and size.
    const bool carry = same && a.carried != 0 && b.carried != 0;
    if (carry) {
      const auto dtype = static_cast<Dtype>(b.dtype);
      detail::reduce_bytes(dtype, b.payload, a.payload, b.bytes / itemsize(dtype),
                           static_cast<ReduceOp>(b.reduction));
    }
    b.max_digest = std::max(a.max_digest, b.max_digest);
    b.max_complement = std::max(a.max_complement, b.max_complement);
    b.carried = carry ? 1 : 0;
    std::memcpy(static_cast<std::byte*>(inout) + i * sizeof b, &b, sizeof b);
  }
}
}  // namespace
#endif

#if SKEIN_HAS_MPI

void Communicator::Impl::make_persistent() {
#if MPI_VERSION >= 4 || defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
  auto p = std::make_shared<Persistent>();
  if (record_type == MPI_DATATYPE_NULL) {
    SKEIN_MPI_CHECK(MPI_Type_contiguous,
                    (static_cast<int>(sizeof(AgreementRecord)), MPI_BYTE, &record_type),
                    "the agreement check");
    SKEIN_MPI_CHECK(MPI_Type_commit, (&record_type), "the agreement check");
  }
  if (record_op == MPI_OP_NULL) {
    SKEIN_MPI_CHECK(MPI_Op_create, (&combine_records, 1, &record_op), "the agreement check");
  }
#if MPI_VERSION >= 4
  const int rc = MPI_Allreduce_init(&p->send, &p->recv, 1, record_type, record_op, fp_comm,
                                    MPI_INFO_NULL, &p->request);
#else
  const int rc = MPIX_Allreduce_init(&p->send, &p->recv, 1, record_type, record_op, fp_comm,
                                     MPI_INFO_NULL, &p->request);
#endif
  // Without it (an MPI library that refuses), each exchange posts an MPI_Iallreduce instead.
  if (rc == MPI_SUCCESS) persistent = std::move(p);
#endif
}

void Communicator::Impl::post(Exchange& x) {
  const std::uint64_t d = digest(x.mine);
  x.send[0] = d;
  x.send[1] = ~d;
  if (persistent && !async_agreement) {
    // One exchange at a time here: the synchronous path completes each before the next.
    persistent->send.max_digest = x.send[0];
    persistent->send.max_complement = x.send[1];
    persistent->send.carried = 0;
    SKEIN_MPI_CHECK(MPI_Start, (&persistent->request), "the agreement check");
    x.persistent = true;
  } else {
    SKEIN_MPI_CHECK(MPI_Iallreduce, (x.send, x.recv, 2, MPI_UINT64_T, MPI_MAX, fp_comm, &x.request),
                    "the agreement check");
  }
  x.posted = true;
}

void Communicator::Impl::post_carrying(Exchange& x, const std::byte* data, std::size_t bytes,
                                       Dtype dtype, ReduceOp op) {
  const std::uint64_t d = digest(x.mine);
  x.send[0] = d;
  x.send[1] = ~d;
  AgreementRecord& r = persistent->send;
  r.max_digest = d;
  r.max_complement = ~d;
  r.carried = 1;
  r.dtype = static_cast<std::int32_t>(dtype);
  r.reduction = static_cast<std::int32_t>(op == ReduceOp::avg ? ReduceOp::sum : op);
  r.bytes = static_cast<std::uint32_t>(bytes);
  std::memcpy(r.payload, data, bytes);
  SKEIN_MPI_CHECK(MPI_Start, (&persistent->request), "the agreement check");
  x.persistent = true;
  x.posted = true;
}

bool Communicator::Impl::test(Exchange& x) {
  if (x.done) return true;
  int flag = 0;
  MPI_Request& request = x.persistent ? persistent->request : x.request;
  SKEIN_MPI_CHECK(MPI_Test, (&request, &flag, MPI_STATUS_IGNORE), "the agreement check");
  x.done = flag != 0;
  if (x.done && x.persistent) {
    x.recv[0] = persistent->recv.max_digest;
    x.recv[1] = persistent->recv.max_complement;
  }
  return x.done;
}

std::string Communicator::Impl::differences(const Exchange& x) {
  // max(digest) == ~max(~digest) == min(digest): every rank has the same digest.
  if (x.recv[0] == ~x.recv[1]) return {};
  auto all = std::make_shared<std::vector<Fingerprint>>(static_cast<std::size_t>(mpi_size));
  auto mine = std::make_shared<Fingerprint>(x.mine);
  MPI_Request request = MPI_REQUEST_NULL;
  SKEIN_MPI_CHECK(MPI_Iallgather,
                  (mine.get(), sizeof(Fingerprint), MPI_BYTE, all->data(), sizeof(Fingerprint),
                   MPI_BYTE, diag_comm, &request),
                  "the agreement check");
  try {
    detail::wait_requests(std::span(&request, 1), deadline(),
                          "the agreement check's MPI_Iallgather of the fingerprints");
  } catch (const TimeoutError&) {
    detail::abandon(request, "the agreement check's MPI_Iallgather of the fingerprints");
    detail::keep_until_exit(std::move(all));
    detail::keep_until_exit(std::move(mine));
    return fmt::format(
        "{}: the ranks made different calls (the fingerprints could not be "
        "gathered within SKEIN_COLLECTIVE_TIMEOUT={} s to say what differs)",
        label_of(x.mine), timeout_s);
  }
  return describe_differences(*all, x.mine);
}

void Communicator::Impl::finish(const std::shared_ptr<Exchange>& x,
                                CollectiveClock::time_point until) {
  if (!x->posted) post(*x);
  if (!x->done) {
    try {
      MPI_Request& request = x->persistent ? persistent->request : x->request;
      detail::wait_requests(std::span(&request, 1), until, "the agreement check's MPI_Allreduce");
    } catch (const TimeoutError&) {
      std::deque<std::shared_ptr<Exchange>> left{x};
      abandon(left);
      throw;
    }
    x->done = true;
    if (x->persistent) {
      x->recv[0] = persistent->recv.max_digest;
      x->recv[1] = persistent->recv.max_complement;
    }
  }
  const std::string text = differences(*x);
  if (!text.empty()) {
    throw LogicError(ErrorInfo{
        .what = text,
        .call = call_of(x->mine),
        .hint = "Every rank must make the same collective calls, in the same order, with the "
                "same counts, dtypes, roots and reductions."});
  }
}

bool Communicator::Impl::finish_carrying(const std::shared_ptr<Exchange>& x,
                                         CollectiveClock::time_point until, std::byte* data,
                                         std::size_t bytes, Dtype dtype, ReduceOp op) {
  post_carrying(*x, data, bytes, dtype, op);
  finish(x, until);  // raises on a mismatch
  if (persistent->recv.carried == 0) return false;
  std::memcpy(data, persistent->recv.payload, bytes);
  return true;
}

void Communicator::Impl::abandon(std::deque<std::shared_ptr<Exchange>>& xs) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  for (auto& x : xs) {
    if (!x->posted || x->done || x->abandoned) continue;
    x->abandoned = true;
    if (x->persistent) {
      // Still started: it and its buffers stay MPI's; later exchanges would post afresh.
      if (!finalized) detail::abandon(persistent->request, "the agreement check's MPI_Allreduce");
      detail::keep_until_exit(std::move(persistent));
      persistent.reset();
    } else if (!finalized) {
      detail::abandon(x->request, "the agreement check's MPI_Iallreduce");
    }
    detail::keep_until_exit(std::move(x));
  }
  xs.clear();
}

#else

void Communicator::Impl::post(Exchange&) {}
bool Communicator::Impl::test(Exchange&) { return true; }
std::string Communicator::Impl::differences(const Exchange&) { return {}; }
void Communicator::Impl::finish(const std::shared_ptr<Exchange>&, CollectiveClock::time_point) {}
void Communicator::Impl::post_carrying(Exchange&, const std::byte*, std::size_t, Dtype, ReduceOp) {}
bool Communicator::Impl::finish_carrying(const std::shared_ptr<Exchange>&,
                                         CollectiveClock::time_point, std::byte*, std::size_t,
                                         Dtype, ReduceOp) {
  return false;
}
void Communicator::Impl::abandon(std::deque<std::shared_ptr<Exchange>>& xs) { xs.clear(); }

#endif

}  // namespace skein
