// SPDX-License-Identifier: BSD-3-Clause
// Batched and split-phase reductions (skein/dist_reductions.hpp): every term of a batch into one
// small array per device, then one exchange of all of them. The checks and the local steps are
// reduction_operands.hpp's.
#include <array>
#include <cstring>
#include <optional>

#include "dist_values.hpp"
#include "operand_checks.hpp"
#include "peer_combine.hpp"
#include "ordering.hpp"
#include "reduction_operands.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/host_collectives.hpp"
#include "skein/detail/host_values.hpp"
#include "skein/dist_reductions.hpp"

namespace skein::dist {

struct PendingValues::State {
  State(std::span<const reductions::Term> terms, const char* call_name)
      : ops(terms, call_name), call(call_name) {}

  reductions::Operands ops;  // handles to every operand: their blocks and the communicator
  const char* call;
  Dtype dtype = Dtype::float64;
  ReduceOp across = ReduceOp::sum;
  std::size_t count = 0;
  std::unique_ptr<detail::HostValues> host;  // count values per local device
  std::vector<Array> keep;                   // device temporaries the enqueued work uses
  std::optional<reductions::SlabTerms> slabs;
  bool exchange_on_host = false;  // wait() combines over the ranks (else the devices did)
  bool done = false;
};

PendingValues::PendingValues(std::unique_ptr<State> state) : state_(std::move(state)) {}
PendingValues::PendingValues(PendingValues&&) noexcept = default;

PendingValues& PendingValues::operator=(PendingValues&& other) noexcept {
  if (this != &other) {
    // The reduction this handle held completes first, as in the destructor.
    PendingValues old(std::move(*this));
    state_ = std::move(other.state_);
  }
  return *this;
}

PendingValues::~PendingValues() {
  if (!state_ || state_->done) return;
  try {
    (void)wait();
  } catch (...) {
    // A destructor does not throw; the communicator keeps what ended it for its next call.
  }
}

bool PendingValues::waited() const { return !state_ || state_->done; }

std::vector<double> PendingValues::wait() {
  if (!state_ || state_->done) {
    detail::raise_in(SKEIN_HERE, "dist::PendingValues::wait",
                     "Call wait() once per begin_* call, on the handle it returned.",
                     "the values were already taken (or the handle was moved from)");
  }
  State& s = *state_;
  s.done = true;
  Communicator& comm = s.ops.communicator();
  const std::size_t item = itemsize(s.dtype);
  std::vector<std::byte> bytes(s.ops.local_size() * s.count * item);
  s.host->read(bytes);
  if (s.exchange_on_host) {
    detail::all_reduce_host(comm, bytes, s.count, s.dtype, s.across, s.call);
  } else {
    detail::require_usable(comm, s.call);
  }
  std::vector<double> out(s.count);
  for (std::size_t j = 0; j < s.count; ++j)
    out[j] = values::as_double(s.dtype, bytes.data() + j * item);
  state_.reset();
  return out;
}

namespace {

// The checks both forms of a batch share (begin_terms, terms_to_devices): outside a group, one
// result dtype, at most 64 bytes of results, a deterministic mode for every term. Returns the
// results' dtype.
Dtype check_batch(const reductions::Operands& ops, std::span<const reductions::Term> terms,
                  const DistReductionOptions& options, const char* call) {
  detail::require_outside_group(ops.communicator(), call);
  const Dtype dtype = reductions::common_out_dtype(ops, terms, call);
  if (terms.size() * itemsize(dtype) > detail::HostValues::kMaxBytes) {
    detail::raise_in(
        SKEIN_HERE, call, "Split the batch: at most 64 bytes of results in one (8 float64 values).",
        "rank {}: {} reductions of {} bytes each", ops.rank(), terms.size(), itemsize(dtype));
  }
  for (const reductions::Term& t : terms) {
    if (options.deterministic && t.custom != nullptr) {
      detail::raise_in(
          SKEIN_HERE, call,
          "Use the fast mode, or the kernel without its reduction and a deterministic dist::reduce "
          "of what it wrote.",
          "rank {}: the reduction of {} has no deterministic mode", ops.rank(),
          reductions::term_name(t));
    }
  }
  return dtype;
}

// Deterministic mode: the canonical values of `terms` into `outs` (one array per local device),
// through slab copies where the blocks are not ranges of global indices (kept in `slabs`, which
// must outlive the work). Returns the temporaries the enqueued work reads.
std::vector<Array> canonical_into(const reductions::Operands& ops,
                                  std::span<const reductions::Term> terms,
                                  std::span<const Array> outs,
                                  std::optional<reductions::SlabTerms>& slabs, const char* call) {
  if (ops.in_ranges()) return reductions::canonical_values(ops, terms, outs);
  slabs.emplace(terms, ops);
  const reductions::Operands slab_ops(slabs->terms(), call);
  return reductions::canonical_values(slab_ops, slabs->terms(), outs);
}

}  // namespace

PendingValues reductions::begin_terms(std::span<const reductions::Term> terms, ReduceOp across,
                                      const DistReductionOptions& options, const char* call) {
  auto state = std::make_unique<PendingValues::State>(terms, call);
  PendingValues::State& s = *state;
  const reductions::Operands& ops = s.ops;
  Communicator& comm = ops.communicator();
  s.dtype = check_batch(ops, terms, options, call);
  s.across = across;
  s.count = terms.size();
  const Queue& queue = ops.queue();
  detail::Ordering order(queue, ops.devices());
  ops.join(order);
  const std::vector<std::size_t> devices = ops.devices();
  s.host = std::make_unique<detail::HostValues>(queue, devices, s.dtype, s.count);
  if (options.deterministic) {
    s.keep = canonical_into(ops, terms, s.host->arrays(), s.slabs, call);
  } else if (values::combine_on_devices(comm)) {
    for (std::size_t i = 0; i < ops.local_size(); ++i) {
      s.keep.push_back(
          Array::empty(queue, {s.count}, s.dtype, ops.device(i), values::temporaries(queue)));
    }
    reductions::local_values(ops, terms, s.keep);
    comm.all_reduce(queue, s.keep, s.host->arrays(), across);
  } else {
    reductions::local_values(ops, terms, s.host->arrays());
    s.exchange_on_host = true;
  }
  s.host->start_read();
  order.release();
  return PendingValues(std::move(state));
}

std::vector<Array> reductions::terms_to_devices(std::span<const reductions::Term> terms,
                                                ReduceOp across,
                                                const DistReductionOptions& options,
                                                const char* call) {
  const reductions::Operands ops(terms, call);
  const Dtype dtype = check_batch(ops, terms, options, call);
  const Queue& queue = ops.queue();
  detail::Ordering order(queue, ops.devices());
  ops.join(order);
  // The results: from the queue's array pool (as any array Skein returns).
  std::vector<Array> out;
  out.reserve(ops.local_size());
  for (std::size_t i = 0; i < ops.local_size(); ++i)
    out.push_back(Array::empty(queue, {terms.size()}, dtype, ops.device(i)));
  if (options.deterministic) {
    std::optional<reductions::SlabTerms> slabs;
    // The records are temporaries of the queue's pool, reused only by the queue's later work: they
    // may go now. The slabs are plain allocations: the work reading them must be done first.
    (void)canonical_into(ops, terms, out, slabs, call);
    if (slabs) queue.synchronize();
  } else {
    // Each device's values, then one all_reduce of them in place, on the queue (none for a
    // communicator of one member: its value is the result); where one rank holds every member
    // and its devices are peers, each device combines the members' values itself instead
    // (peer_combine.hpp: faster than an all_reduce between them).
    const std::vector<std::size_t> devices = ops.devices();
    if (values::peers_can_combine(ops.communicator(), queue, devices, dtype, across)) {
      std::vector<Array> partials;
      for (std::size_t i = 0; i < ops.local_size(); ++i)
        partials.push_back(
            Array::empty(queue, {terms.size()}, dtype, ops.device(i), values::temporaries(queue)));
      reductions::local_values(ops, terms, partials);
      values::combine_on_peers(queue, devices, partials, out, across);
    } else {
      reductions::local_values(ops, terms, out);
      if (ops.communicator().size() > 1) ops.communicator().all_reduce(queue, out, out, across);
    }
  }
  order.release();
  return out;
}

void reductions::terms_into(std::span<const reductions::Term> terms, std::span<const Array> into,
                            std::size_t slot, const char* call) {
  const reductions::Operands ops(terms, call);
  const Dtype dtype = reductions::common_out_dtype(ops, terms, call);
  const std::vector<std::size_t> devices = ops.devices();
  const std::vector<Array> arrays(into.begin(), into.end());
  const DistOperand as_operand(arrays);
  checks::check_per_member(std::span<const DistOperand>(&as_operand, 1), ops.queue(), devices,
                           ops.rank(), call);
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const Array& a = arrays[i];
    if (a.dtype() != dtype || !a.is_contiguous() || slot > a.size() ||
        a.size() - slot < terms.size()) {
      detail::raise_in(SKEIN_HERE, call,
                       "Give each member a contiguous array of the reduction's dtype with room for "
                       "the values at the slot (slot + number of reductions elements at least).",
                       "rank {}: into[{}] is a{} {} array of {} element(s); the call writes {} "
                       "{} value(s) from element {}",
                       ops.rank(), i, a.is_contiguous() ? "" : " non-contiguous", name(a.dtype()),
                       a.size(), terms.size(), name(dtype), slot);
    }
  }
  detail::Ordering order(ops.queue(), devices);
  ops.join(order);
  detail::join_per_member(order, arrays);
  std::vector<Array> views;
  views.reserve(arrays.size());
  for (const Array& a : arrays) views.push_back(a.view(slot, {terms.size()}));
  reductions::local_values(ops, terms, views);
  order.release();
}

namespace {

// What the forms of combine_members check and share: the members' communicator, queue and devices.
struct MemberValues {
  Communicator* comm = nullptr;
  Queue queue;
  int rank = 0;
  std::vector<std::size_t> devices;
  std::vector<Array> arrays;
};

MemberValues check_member_values(const DistOperand& members_of, std::span<const Array> values,
                                 const char* call) {
  const DistArray* rows = members_of.array();
  const GridArray* grid = members_of.grid();
  if (rows == nullptr && grid == nullptr) {
    detail::raise_in(SKEIN_HERE, call,
                     "Pass the DistArray or GridArray whose members the values belong to.",
                     "the first argument is {}",
                     members_of.per_member() != nullptr ? "per-member arrays" : "a scalar");
  }
  MemberValues m{
      .comm = rows != nullptr ? &rows->communicator() : &grid->communicator(),
      .queue = rows != nullptr ? rows->queue() : grid->queue(),
      .rank = rows != nullptr ? rows->rank() : grid->rank(),
      .devices = rows != nullptr ? values::local_devices(*rows) : values::local_devices(*grid),
      .arrays = std::vector<Array>(values.begin(), values.end())};
  detail::require_outside_group(*m.comm, call);
  const DistOperand as_operand(m.arrays);
  checks::check_per_member(std::span<const DistOperand>(&as_operand, 1), m.queue, m.devices, m.rank,
                           call);
  for (std::size_t i = 1; i < m.arrays.size(); ++i) {
    const Array& a = m.arrays[i];
    if (a.dtype() != m.arrays[0].dtype() || a.size() != m.arrays[0].size()) {
      detail::raise_in(SKEIN_HERE, call,
                       "Give every member an array of the same dtype and size (as the *_members "
                       "reductions fill them).",
                       "rank {}: values[{}] is {} x {}, values[0] {} x {}", m.rank, i, a.size(),
                       name(a.dtype()), m.arrays[0].size(), name(m.arrays[0].dtype()));
    }
  }
  return m;
}

// The combine itself, enqueued on `work` (after `order`'s joins).
void combine_on(const MemberValues& m, const Queue& work, ReduceOp across) {
  if (values::peers_can_combine(*m.comm, work, m.devices, m.arrays[0].dtype(), across)) {
    values::combine_on_peers(work, m.devices, m.arrays, m.arrays, across);
  } else {
    m.comm->all_reduce(work, m.arrays, m.arrays, across);
  }
}

}  // namespace

void combine_members(const DistOperand& members_of, std::span<const Array> values,
                     ReduceOp across) {
  const MemberValues m = check_member_values(members_of, values, "dist::combine_members");
  if (m.comm->size() == 1) return;  // one member: its value is the result
  detail::Ordering order(m.queue, m.devices);
  detail::join_per_member(order, m.arrays);
  combine_on(m, m.queue, across);
  order.release();
}

std::vector<Event> combine_members(const DistOperand& members_of, std::span<const Array> values,
                                   ReduceOp across, const Queue& on) {
  const char* call = "dist::combine_members";
  const MemberValues m = check_member_values(members_of, values, call);
  if (on.context() != m.queue.context()) {
    detail::raise_in(SKEIN_HERE, call, "Pass a queue of the arrays' context.",
                     "rank {}: the queue `on` is of another context", m.rank);
  }
  for (std::size_t d : m.devices) {
    if (!on.has_device(d)) {
      detail::raise_in(SKEIN_HERE, call,
                       "Pass a queue holding every local member's device (e.g. "
                       "Queue(context, devices)).",
                       "rank {}: the queue `on` lacks device {}", m.rank, d);
    }
  }
  // `on` runs after the members' queue's work so far and the values' queues; nothing waits for it.
  detail::Ordering order(on, m.devices);
  order.join(m.queue);
  detail::join_per_member(order, m.arrays);
  if (m.comm->size() > 1) combine_on(m, on, across);
  std::vector<Event> done;
  done.reserve(m.devices.size());
  for (std::size_t d : m.devices) done.push_back(on.record_marker(d));
  return done;
}

namespace {

Dtype operand_dtype(const DistOperand& a, const char* call) {
  if (a.array() != nullptr) return a.array()->dtype();
  if (a.grid() != nullptr) return a.grid()->dtype();
  detail::raise_in(SKEIN_HERE, call, "Pass DistArrays or GridArrays.",
                   "{} where an array was expected",
                   a.per_member() != nullptr ? "per-member arrays" : "a scalar");
}

}  // namespace

namespace {

// The terms of a batch, and the operand lists they point into.
struct BatchTerms {
  std::vector<std::array<DistOperand, 2>> pairs;  // reserved up front: terms point into it
  std::vector<reductions::Term> terms;
};

std::vector<reductions::Term> reduce_terms(std::span<const Reduction> batch) {
  std::vector<reductions::Term> terms;
  terms.reserve(batch.size());
  for (const Reduction& r : batch) terms.push_back({&r.kernel, r.operands});
  return terms;
}

BatchTerms dot_terms(std::span<const std::pair<DistOperand, DistOperand>> pairs, const char* call) {
  BatchTerms b;
  b.pairs.reserve(pairs.size());
  for (const auto& [x, y] : pairs) {
    b.pairs.push_back({x, y});
    b.terms.push_back(
        {&dot_kernel(operand_dtype(x, call), operand_dtype(y, call)), b.pairs.back()});
  }
  return b;
}

std::vector<reductions::Term> sum_terms(std::span<const DistOperand> arrays, const char* call) {
  std::vector<reductions::Term> terms;
  for (const DistOperand& x : arrays) {
    terms.push_back({&sum_kernel(operand_dtype(x, call)), std::span<const DistOperand>(&x, 1)});
  }
  return terms;
}

}  // namespace

PendingValues begin_reduce(std::span<const Reduction> batch, ReduceOp across,
                           const DistReductionOptions& options) {
  return reductions::begin_terms(reduce_terms(batch), across, options, "dist::begin_reduce");
}

PendingValues begin_dots(std::span<const std::pair<DistOperand, DistOperand>> pairs,
                         const DistReductionOptions& options) {
  const char* call = "dist::begin_dots";
  const BatchTerms b = dot_terms(pairs, call);
  return reductions::begin_terms(b.terms, ReduceOp::sum, options, call);
}

PendingValues begin_sums(std::span<const DistOperand> arrays, const DistReductionOptions& options) {
  const char* call = "dist::begin_sums";
  return reductions::begin_terms(sum_terms(arrays, call), ReduceOp::sum, options, call);
}

std::vector<Array> reduce_to_devices(std::span<const Reduction> batch, ReduceOp across,
                                     const DistReductionOptions& options) {
  return reductions::terms_to_devices(reduce_terms(batch), across, options,
                                      "dist::reduce_to_devices");
}

std::vector<Array> dots_to_devices(std::span<const std::pair<DistOperand, DistOperand>> pairs,
                                   const DistReductionOptions& options) {
  const char* call = "dist::dots_to_devices";
  const BatchTerms b = dot_terms(pairs, call);
  return reductions::terms_to_devices(b.terms, ReduceOp::sum, options, call);
}

std::vector<Array> sums_to_devices(std::span<const DistOperand> arrays,
                                   const DistReductionOptions& options) {
  const char* call = "dist::sums_to_devices";
  return reductions::terms_to_devices(sum_terms(arrays, call), ReduceOp::sum, options, call);
}

}  // namespace skein::dist
