// SPDX-License-Identifier: BSD-3-Clause
// ReductionKernel's reductions in pieces (skein/reduction.hpp): partial values and their finish,
// the deterministic mode's records of a piece and their combine, one reduction over the devices
// of a queue (per_device), and the nodes of the canonical tree that a piece's records hold.
#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "reduction_impl.hpp"
#include "skein/detail/adapter.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/impl_access.hpp"

namespace skein {

Array ReductionKernel::partial(const Queue& queue, std::span<const Operand> inputs,
                               const std::optional<Array>& out) const {
  using namespace detail::red;  // the reduction's internals (reduction_impl.hpp)
  const auto& impl = *impl_;
  const char* call = "ReductionKernel::partial";
  const Resolved r = resolve(impl, queue, inputs, std::nullopt, call);
  const std::size_t d = device_of(r, queue);
  const Dtype pd = r.struct_reduce ? Dtype::uint8 : r.reduce_dtype;
  Array y =
      output_for(out, queue, pd, Shape{r.struct_reduce ? r.reduce_size : 1}, d, call, impl.name());
  auto prog = program_for(impl, queue.context(), r, Mode::fast);
  const std::size_t groups = p1_groups(impl, r, *prog, d);
  detail::codegen::Scratch scratch(queue, d, groups * r.reduce_size);
  enqueue_p1(impl, queue, d, r, *prog, scratch.buffer(), 0, groups);
  enqueue_p2(impl, queue, d, *prog, scratch.buffer(), 0, groups, false, y.data(), y.offset(),
             nullptr);
  return y;
}

Array ReductionKernel::finish(const Queue& queue, std::span<const Operand> inputs,
                              const Array& partials, const std::optional<Array>& out) const {
  using namespace detail::red;  // the reduction's internals (reduction_impl.hpp)
  const auto& impl = *impl_;
  const char* call = "ReductionKernel::finish";
  Resolved r = resolve(impl, queue, inputs, out, call);
  const Dtype pd = r.struct_reduce ? Dtype::uint8 : r.reduce_dtype;
  if (partials.dtype() != pd || !partials.is_contiguous() ||
      (r.struct_reduce && partials.size() % r.reduce_size != 0)) {
    detail::raise_in(
        SKEIN_HERE, call, "Pass partial values as partial() makes them.",
        "kernel '{}': the partials are a {} array of shape {}; partial values are {}{}",
        impl.name(), skein::name(partials.dtype()), to_string(partials.shape()), skein::name(pd),
        r.struct_reduce ? fmt::format(" x {} bytes each", r.reduce_size) : "");
  }
  if (partials.data().context_id() != detail::impl_of(queue.context()).get()) {
    detail::raise_in(SKEIN_HERE, call, "Use partials of the queue's context.",
                     "kernel '{}': the partials belong to another context", impl.name());
  }
  const std::size_t d = partials.device_idx();
  if (!queue.has_device(d)) {
    detail::raise_in(SKEIN_HERE, call, "Use a queue that contains the partials' device.",
                     "kernel '{}': the partials are on device {}, which is not in the queue",
                     impl.name(), d);
  }
  const std::uint64_t count = r.struct_reduce ? partials.size() / r.reduce_size : partials.size();
  Array y = output_for(out, queue, r.out_dtype, Shape{1}, d, call, impl.name());
  auto prog = program_for(impl, queue.context(), r, Mode::fast);
  enqueue_p2(impl, queue, d, *prog, partials.data(), partials.offset(), count, true,
             partials.data(), partials.offset(), &y);
  return y;
}

Array ReductionKernel::records(const Queue& queue, std::span<const Operand> inputs,
                               std::uint64_t global_offset, std::uint64_t global_size,
                               const std::optional<Array>& out) const {
  using namespace detail::red;  // the reduction's internals (reduction_impl.hpp)
  const auto& impl = *impl_;
  const char* call = "ReductionKernel::records";
  const Resolved r = resolve(impl, queue, inputs, std::nullopt, call);
  if (global_offset > global_size || r.n > global_size - global_offset) {
    detail::raise_in(SKEIN_HERE, call, "The piece must lie inside the global range.",
                     "kernel '{}': a piece of {} elements at offset {} does not fit in {} elements",
                     impl.name(), r.n, global_offset, global_size);
  }
  const std::size_t d = device_of(r, queue);
  const std::size_t bytes = record_capacity(global_size) * r.record_size;
  Array recs = output_for(out, queue, Dtype::uint8, Shape{bytes}, d, call, impl.name());
  auto prog = program_for(impl, queue.context(), r, Mode::det);
  const std::size_t L = prog->local_size[d];
  ScratchLayout layout;
  const std::size_t up_a = layout.add(up_bytes(r, L));
  const std::size_t up_b = layout.add(up_bytes(r, L));
  detail::codegen::Scratch scratch(queue, d, layout.total);
  enqueue_records(impl, queue, d, r, *prog, global_offset, global_size, recs.data(), recs.offset(),
                  scratch.buffer(), up_a, up_b);
  return recs;
}

Array ReductionKernel::combine(const Queue& queue, std::span<const Operand> inputs,
                               const Array& records, std::uint64_t global_size,
                               const std::optional<Array>& out) const {
  using namespace detail::red;  // the reduction's internals (reduction_impl.hpp)
  const auto& impl = *impl_;
  const char* call = "ReductionKernel::combine";
  const Resolved r = resolve(impl, queue, inputs, out, call);
  if (records.dtype() != Dtype::uint8 || !records.is_contiguous() ||
      records.nbytes() % r.record_size != 0) {
    detail::raise_in(SKEIN_HERE, call,
                     "Pass records as records() makes them (uint8, whole records).",
                     "kernel '{}': the records are a {} array of {} bytes; a record has {} bytes",
                     impl.name(), skein::name(records.dtype()), records.nbytes(), r.record_size);
  }
  if (records.data().context_id() != detail::impl_of(queue.context()).get()) {
    detail::raise_in(SKEIN_HERE, call, "Use records of the queue's context.",
                     "kernel '{}': the records belong to another context", impl.name());
  }
  const std::size_t d = records.device_idx();
  if (!queue.has_device(d)) {
    detail::raise_in(SKEIN_HERE, call, "Use a queue that contains the records' device.",
                     "kernel '{}': the records are on device {}, which is not in the queue",
                     impl.name(), d);
  }
  Array y = output_for(out, queue, r.out_dtype, Shape{1}, d, call, impl.name());
  auto prog = program_for(impl, queue.context(), r, Mode::det);
  enqueue_combine(impl, queue, d, *prog, records.data(), records.offset(),
                  records.nbytes() / r.record_size, global_size, y);
  return y;
}

Array ReductionKernel::per_device(const Queue& queue,
                                  const MultiDevice<std::vector<Operand>>& inputs,
                                  const ReductionArgs& args) const {
  using namespace detail::red;  // the reduction's internals (reduction_impl.hpp)
  const auto& impl = *impl_;
  const char* call = "ReductionKernel::per_device";
  if (args.axis || !args.axes.empty()) {
    detail::raise_in(SKEIN_HERE, call, "Reduce per axis on each device with operator().",
                     "kernel '{}': per_device reduces whole arrays", impl.name());
  }
  const auto& devs = queue.device_idxs();
  std::vector<Resolved> rs;
  std::uint64_t total = 0;
  for (std::size_t d : devs) {
    rs.push_back(resolve(impl, queue, inputs[d], std::nullopt, call, d));
    rs.back().device = d;
    total += rs.back().n;
    if (rs.back().types_sig != rs.front().types_sig) {
      detail::raise_in(SKEIN_HERE, call, "Give every device inputs of the same dtypes and kinds.",
                       "kernel '{}': device {} has inputs {}, device {} has {}", impl.name(),
                       devs.front(), rs.front().types_sig, d, rs.back().types_sig);
    }
  }
  const std::size_t first = devs.front();
  Array y = output_for(args.out, queue, rs.front().out_dtype, Shape{1}, first, call, impl.name());
  const Mode mode = args.deterministic ? Mode::det : Mode::fast;
  std::vector<std::shared_ptr<const detail::codegen::CompiledProgram>> progs;
  for (const auto& r : rs) progs.push_back(program_for(impl, queue.context(), r, mode));
  const std::size_t per =
      args.deterministic ? record_capacity(total) * rs.front().record_size : rs.front().reduce_size;
  std::vector<ScratchLayout> layouts(devs.size());
  std::vector<std::size_t> own_at(devs.size()), up_a(devs.size()), up_b(devs.size()),
      groups(devs.size());
  std::size_t gather_at = 0;
  for (std::size_t i = 0; i < devs.size(); ++i) {
    const std::size_t d = devs[i];
    const std::size_t L = progs[i]->local_size[d];
    if (args.deterministic) {
      own_at[i] = layouts[i].add(per);
      up_a[i] = layouts[i].add(up_bytes(rs[i], L));
      up_b[i] = layouts[i].add(up_bytes(rs[i], L));
    } else {
      groups[i] = p1_groups(impl, rs[i], *progs[i], d);
      up_a[i] = layouts[i].add(groups[i] * rs[i].reduce_size);
      own_at[i] = layouts[i].add(per);
    }
    if (i == 0) gather_at = layouts[i].add(per * devs.size());
  }
  std::vector<std::optional<detail::codegen::Scratch>> scratch(devs.size());
  for (std::size_t i = 0; i < devs.size(); ++i)
    scratch[i].emplace(queue, devs[i], layouts[i].total);

  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < devs.size(); ++i) {
    const std::size_t d = devs[i];
    const Buffer& buf = scratch[i]->buffer();
    if (args.deterministic) {
      enqueue_records(impl, queue, d, rs[i], *progs[i], offset, total, buf, own_at[i], buf, up_a[i],
                      up_b[i]);
    } else {
      enqueue_p1(impl, queue, d, rs[i], *progs[i], buf, up_a[i], groups[i]);
      enqueue_p2(impl, queue, d, *progs[i], buf, up_a[i], groups[i], false, buf, own_at[i],
                 nullptr);
    }
    offset += rs[i].n;
  }
  // Bring every device's values to the first device, in device order.
  const Buffer& gather = scratch[0]->buffer();
  for (std::size_t i = 0; i < devs.size(); ++i) {
    gather.get_sub_region(gather_at + i * per, per)
        .set(queue, scratch[i]->buffer().get_sub_region(own_at[i], per));
    // The source device's later work must not overwrite its scratch before the copy has read it.
    if (devs[i] != first) queue.device_queue(devs[i]).wait_for_queue(queue.device_queue(first));
  }
  if (args.deterministic) {
    enqueue_combine(impl, queue, first, *progs[0], gather, gather_at,
                    record_capacity(total) * devs.size(), total, y);
  } else {
    enqueue_p2(impl, queue, first, *progs[0], gather, gather_at, devs.size(), true, gather,
               gather_at, &y);
  }
  return y;
}

std::vector<ReductionNode> reduction_nodes(std::uint64_t offset, std::uint64_t size,
                                           std::uint64_t total) {
  if (offset > total || size > total - offset) {
    detail::raise_in(SKEIN_HERE, "skein::reduction_nodes", "The piece must lie inside [0, total).",
                     "a piece of {} elements at offset {} does not fit in {}", size, offset, total);
  }
  std::vector<ReductionNode> out;
  const std::uint64_t a = offset, b = offset + size, N = total;
  const std::uint32_t lmax = detail::red::max_level(N);
  auto full = [&](std::uint64_t p, std::uint32_t lev) {
    if (p < a || p >= N) return false;
    const std::uint64_t end = lev >= 63 ? N : p + (std::uint64_t{1} << lev);
    return std::min(end, N) <= b;
  };
  std::uint64_t p = a;
  while (p < b) {
    std::uint32_t lev = 0;
    while (lev < lmax && (p >> (lev + 1) << (lev + 1)) == p && full(p, lev + 1)) ++lev;
    out.push_back({p, lev});
    const std::uint64_t end = p + (std::uint64_t{1} << lev);
    p = std::min(end, N);
  }
  return out;
}

}  // namespace skein
