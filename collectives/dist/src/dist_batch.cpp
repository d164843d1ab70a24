// SPDX-License-Identifier: BSD-3-Clause
// Batched and split-phase reductions (skein/dist_reductions.hpp): every term of a batch into one
// small array per device, then one exchange of all of them. The checks and the local steps are
// reduction_operands.hpp's.
#include <array>
#include <cstring>
#include <optional>

#include "dist_values.hpp"
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

PendingValues reductions::begin_terms(std::span<const reductions::Term> terms, ReduceOp across,
                                      const DistReductionOptions& options, const char* call) {
  auto state = std::make_unique<PendingValues::State>(terms, call);
  PendingValues::State& s = *state;
  const reductions::Operands& ops = s.ops;
  Communicator& comm = ops.communicator();
  detail::require_outside_group(comm, call);
  s.dtype = reductions::common_out_dtype(ops, terms, call);
  s.across = across;
  s.count = terms.size();
  if (s.count * itemsize(s.dtype) > detail::HostValues::kMaxBytes) {
    detail::raise_in(
        SKEIN_HERE, call, "Split the batch: at most 64 bytes of results in one (8 float64 values).",
        "rank {}: {} reductions of {} bytes each", ops.rank(), s.count, itemsize(s.dtype));
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
  const Queue& queue = ops.queue();
  detail::Ordering order(queue, ops.devices());
  ops.join(order);
  const std::vector<std::size_t> devices = ops.devices();
  s.host = std::make_unique<detail::HostValues>(queue, devices, s.dtype, s.count);
  if (options.deterministic) {
    if (ops.in_ranges()) {
      s.keep = reductions::canonical_values(ops, terms, s.host->arrays());
    } else {
      s.slabs.emplace(terms, ops);
      const reductions::Operands slab_ops(s.slabs->terms(), call);
      s.keep = reductions::canonical_values(slab_ops, s.slabs->terms(), s.host->arrays());
    }
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

namespace {

Dtype operand_dtype(const DistOperand& a, const char* call) {
  if (a.array() != nullptr) return a.array()->dtype();
  if (a.grid() != nullptr) return a.grid()->dtype();
  detail::raise_in(SKEIN_HERE, call, "Pass DistArrays or GridArrays.",
                   "a scalar where an array was expected");
}

}  // namespace

PendingValues begin_reduce(std::span<const Reduction> batch, ReduceOp across,
                           const DistReductionOptions& options) {
  std::vector<reductions::Term> terms;
  terms.reserve(batch.size());
  for (const Reduction& r : batch) terms.push_back({&r.kernel, r.operands});
  return reductions::begin_terms(terms, across, options, "dist::begin_reduce");
}

PendingValues begin_dots(std::span<const std::pair<DistOperand, DistOperand>> pairs,
                         const DistReductionOptions& options) {
  const char* call = "dist::begin_dots";
  std::vector<std::array<DistOperand, 2>> operands;
  operands.reserve(pairs.size());
  std::vector<reductions::Term> terms;
  for (const auto& [x, y] : pairs) {
    operands.push_back({x, y});
    terms.push_back({&dot_kernel(operand_dtype(x, call), operand_dtype(y, call)), operands.back()});
  }
  return reductions::begin_terms(terms, ReduceOp::sum, options, call);
}

PendingValues begin_sums(std::span<const DistOperand> arrays, const DistReductionOptions& options) {
  const char* call = "dist::begin_sums";
  std::vector<reductions::Term> terms;
  for (const DistOperand& x : arrays) {
    terms.push_back({&sum_kernel(operand_dtype(x, call)), std::span<const DistOperand>(&x, 1)});
  }
  return reductions::begin_terms(terms, ReduceOp::sum, options, call);
}

}  // namespace skein::dist
