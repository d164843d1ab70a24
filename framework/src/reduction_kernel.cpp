// SPDX-License-Identifier: BSD-3-Clause
// ReductionKernel (skein/reduction.hpp): a call resolved against its inputs, the programs it
// compiles, and the whole-array call (through the plans kept for repeated calls, or the full way
// to the fast, deterministic or per-axis path); the test switches of reduction_paths.hpp. The
// other files of the kernel are listed in reduction_impl.hpp.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <atomic>

#include "codegen/group_counter.hpp"
#include "codegen/types.hpp"
#include "reduction_impl.hpp"
#include "skein/detail/adapter.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/impl_access.hpp"
#include "skein/detail/reduction_paths.hpp"

namespace skein::detail::red {

namespace {

constexpr std::string_view kReserved[] = {"i", "n", "a", "b", "reduce_t"};

void check_alignment(const Array& a, const std::string& call, const std::string& kernel,
                     const std::string& param) {
  const std::size_t isz = a.itemsize();
  bool ok = codegen::address_in_allocation(a) % isz == 0;
  for (std::size_t d = 0; ok && d < a.ndim(); ++d)
    ok = a.shape()[d] <= 1 || a.strides()[d] % isz == 0;
  if (!ok) {
    detail::raise_in(SKEIN_HERE, call,
                     "Use views whose offset and strides are multiples of the itemsize.",
                     "kernel '{}': argument '{}' has elements that are not aligned to their size",
                     kernel, param);
  }
}

// Test switch (reduction_paths.hpp): force two launches, and count the calls.
std::atomic<bool> force_two_launches{false};
std::atomic<bool> count_finishes{false};
std::atomic<std::uint64_t> finished_one_group{0}, finished_one_launch{0}, finished_two_launches{0};
std::atomic<std::size_t> finished_last_groups{0};

void count_finish(std::size_t groups, bool one_launch) {
  if (!count_finishes.load(std::memory_order_relaxed)) return;
  auto& counter = groups == 1  ? finished_one_group
                  : one_launch ? finished_one_launch
                               : finished_two_launches;
  counter.fetch_add(1, std::memory_order_relaxed);
  finished_last_groups.store(groups, std::memory_order_relaxed);
}

}  // namespace

// `launch_device`: the device of a per-device launch, where every array must be.
Resolved resolve(const ReductionKernel::Impl& impl, const Queue& queue,
                 std::span<const Operand> inputs, const std::optional<Array>& out, const char* call,
                 std::optional<std::size_t> launch_device) {
  const std::string& kname = impl.name();
  const auto& params = impl.params;
  if (inputs.size() != params.size()) {
    std::vector<std::string> parts;
    for (const auto& p : params)
      parts.push_back(fmt::format("{}{} {}", p.raw ? "raw " : "", p.type, p.name));
    detail::raise_in(
        SKEIN_HERE, call,
        "Pass one operand per input parameter (the output goes in ReductionArgs::out).",
        "kernel '{}' takes {} input(s) ({}); {} were given", kname, params.size(),
        fmt::join(parts, ", "), inputs.size());
  }
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].is_scalar() && params[k].raw) {
      detail::raise_in(SKEIN_HERE, call, "Pass an Array for it.",
                       "kernel '{}': raw parameter '{}' was given the scalar {}", kname,
                       params[k].name, inputs[k].to_string());
    }
    if (inputs[k].is_array()) {
      check_alignment(inputs[k].array(), call, kname, params[k].name);
      if (params[k].raw && !inputs[k].array().is_contiguous()) {
        detail::raise_in(SKEIN_HERE, call, "Pass a contiguous array (copy the view first).",
                         "kernel '{}': raw argument '{}' is a strided view", kname, params[k].name);
      }
    }
  }
  Resolved r;
  r.args.assign(inputs.begin(), inputs.end());
  // The output binds its placeholder too when given.
  std::vector<codegen::ParamDecl> all = params;
  all.push_back(impl.out);
  std::vector<Operand> ops(inputs.begin(), inputs.end());
  if (out) ops.emplace_back(*out);
  r.bindings = codegen::bind_types(all, ops, call, kname);
  for (const auto& p : params) r.dtypes.push_back(codegen::param_dtype(p, r.bindings, call, kname));
  r.out_dtype = codegen::param_dtype(impl.out, r.bindings, call, kname);
  if (impl.options.reduce_struct) {
    r.struct_reduce = true;
    r.reduce_size = impl.options.reduce_struct->itemsize();
    r.reduce_align = impl.options.reduce_struct->alignment();
  } else {
    r.reduce_dtype = codegen::compute_dtype(impl.options.reduce_type.value_or(r.out_dtype));
    r.reduce_size = itemsize(r.reduce_dtype);
    r.reduce_align = alignment_of(r.reduce_dtype);
  }
  const std::size_t ra = std::max<std::size_t>(8, r.reduce_align);
  r.record_size = round_up(16 + r.reduce_size, ra);
  r.device = codegen::common_device(queue, ops, all, launch_device, call, kname);

  std::vector<bool> take(inputs.size());
  bool any_raw = false, any_take = false;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    take[k] = !params[k].raw && inputs[k].is_array();
    any_raw |= params[k].raw;
    any_take |= take[k];
  }
  if (any_raw && !any_take) {
    detail::raise_in(
        SKEIN_HERE, call, "Pass a non-raw array too: its shape sets the number of elements.",
        "kernel '{}': only raw arrays among the inputs, so the number of elements is unknown",
        kname);
  }
  r.shape = codegen::broadcast_shapes(inputs, take, params, call, kname);
  r.n = shape_size(r.shape);
  r.layout_index.assign(inputs.size(), npos);
  std::vector<codegen::ArrayShape> shapes;
  std::size_t W = 1, sum_isz = 0;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    r.is_array.push_back(inputs[k].is_array());
    if (!take[k]) continue;
    r.layout_index[k] = shapes.size();
    shapes.push_back(codegen::shape_of(inputs[k].array()));
    W = std::max(W, codegen::vector_width(itemsize(r.dtypes[k])));
    sum_isz += itemsize(r.dtypes[k]);
  }
  r.layout_count = shapes.size();
  r.layout = codegen::make_layout(r.shape, shapes);
  r.W = W;
  r.U = std::clamp<std::size_t>(
      detail::floor_pow2(std::max<std::size_t>(1, 256 / std::max<std::size_t>(1, r.W * sum_isz))),
      1, 4);

  std::string sig;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    sig += fmt::format("|{}{}", params[k].raw ? 'R' : r.is_array[k] ? 'A' : 'S', name(r.dtypes[k]));
  }
  sig += fmt::format("|o{}", name(r.out_dtype));
  r.types_sig = std::move(sig);
  return r;
}

// On CUDA always (no options); on OpenCL where each device's OpenCL C has device-scope fences,
// under one -cl-std for all. Elsewhere (OpenCL C 1.2: mem_fence orders only within a work group)
// std::nullopt: two launches.
std::optional<std::vector<std::string>> one_launch_options(const Context& context) {
  if (context.api().id() == ApiId::cuda) return std::vector<std::string>{};
  std::optional<std::string> common;
  for (const auto& device : context.devices()) {
    const auto version = codegen::opencl_device_fence_std(device.params());
    if (!version || (common && *common != *version)) return std::nullopt;
    common = version;
  }
  if (!common) return std::nullopt;
  return std::vector<std::string>{"-cl-std=" + *common};
}

std::shared_ptr<const codegen::CompiledProgram> program_for(const ReductionKernel::Impl& impl,
                                                            const Context& context,
                                                            const Resolved& r, Mode mode) {
  const std::size_t L = codegen::group_size_for(context);
  std::string sig;
  std::vector<std::string> kernels;
  const std::string& k = impl.name();
  ProgramOptions options;
  options.name = k;
  std::function<std::string()> build;
  const std::string layout_sig =
      r.layout.contiguous ? "c" : fmt::format("s{}", r.layout.shape.size());
  switch (mode) {
    case Mode::fast: {
      const auto one = one_launch_options(context);
      sig = fmt::format("red1|fast|{}|L{}{}{}", layout_sig, L, one ? "|one" : "", r.types_sig);
      kernels = {k + "_p1", k + "_p2"};
      build = [&, one_launch = one.has_value()] { return fast_source(impl, r, L, one_launch); };
      if (one) options.compiler_options = *one;
      break;
    }
    case Mode::det:
      sig = fmt::format("red1|det|{}|L{}{}", layout_sig, L, r.types_sig);
      kernels = {k + "_dleaf", k + "_dmid", k + "_dcombine"};
      build = [&] { return det_source(impl, r, L); };
      if (context.api().id() == ApiId::cuda) options.compiler_options.emplace_back("--fmad=false");
      break;
    case Mode::axis:
      sig = fmt::format("red1|axis|L{}{}", L, r.types_sig);
      kernels = {k + "_rows", k + "_cols", k + "_cols2"};
      build = [&] { return axis_source(impl, r, L); };
      break;
  }
  return codegen::cached_program(
      impl.owner, context, sig,
      [&] {
        impl.built += 1;
        return build();
      },
      kernels, options);
}

namespace {

void check_out(const Array& out, Dtype dtype, std::size_t elements, std::size_t device,
               const Queue& queue, const char* call, const std::string& kname) {
  if (out.dtype() != dtype || out.size() != elements || !out.is_contiguous()) {
    detail::raise_in(
        SKEIN_HERE, call, "Pass a contiguous output of the result's dtype and size, or none.",
        "kernel '{}': the output is a {} array of shape {}{}; the result needs {} x {}", kname,
        name(out.dtype()), to_string(out.shape()), out.is_contiguous() ? "" : " (strided)",
        elements, name(dtype));
  }
  if (out.data().context_id() != detail::impl_of(queue.context()).get()) {
    detail::raise_in(SKEIN_HERE, call, "Use an output of the queue's context.",
                     "kernel '{}': the output belongs to another context", kname);
  }
  if (out.device_idx() != device) {
    detail::raise_in(SKEIN_HERE, call, "Put the output on the device the reduction runs on.",
                     "kernel '{}': the output is on device {}, the reduction runs on device {}",
                     kname, out.device_idx(), device);
  }
}

}  // namespace

Array output_for(const std::optional<Array>& out, const Queue& queue, Dtype dtype, Shape shape,
                 std::size_t device, const char* call, const std::string& kname) {
  if (out) {
    check_out(*out, dtype, shape_size(shape), device, queue, call, kname);
    return *out;
  }
  return Array::empty(queue, std::move(shape), dtype, device);
}

namespace {

// Runs `launch`, the one-launch K_p1 counting in `counter`. Should it fail, the queue's counter is
// replaced by a fresh zeroed one for later calls: the error may come from an earlier kernel that
// stopped between its groups' tickets and the last group's reset (see codegen::group_counter).
template <class Launch>
void with_counter(const Queue& queue, std::size_t device, const Buffer& counter, Launch&& launch) {
  try {
    launch();
  } catch (...) {
    codegen::drop_group_counter(queue, device, counter);
    throw;
  }
}

// A whole-array reduction through a kept plan; nothing when none matches.
std::optional<Array> call_fast(const ReductionKernel::Impl& impl, const Queue& queue,
                               std::span<const Operand> inputs, const std::optional<Array>& out,
                               const codegen::CallKey& key) {
  const auto plan = codegen::find_plan(impl.fast_mutex, impl.fast_plans,
                                       detail::impl_of(queue.context()).get(), key);
  if (!plan) return std::nullopt;
  const auto program = plan->program.lock();  // the program (and so the context) still alive
  if (!program) return std::nullopt;
  codegen::StackArgs pack;
  const std::size_t n_args = 2 * inputs.size() + plan->tail.size() + 8;
  if (!pack.fits(n_args, 2 * n_args + 2)) return std::nullopt;
  Array y = output_for(out, queue, plan->out_dtype, Shape{1}, plan->device, "ReductionKernel",
                       impl.name());
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k].is_array()) {
      pack.array(inputs[k].array());
    } else {
      std::array<std::byte, 16> bytes;
      pack.value_bytes(bytes.data(), inputs[k].bytes_into(plan->dtypes[k], bytes, impl.what[k]));
    }
  }
  for (std::uint64_t v : plan->tail) pack.value_bytes(reinterpret_cast<const std::byte*>(&v), 8);
  const std::int32_t finish = 1, partial = kPartials, alone = kAlone, last_group = kLastGroup;
  if (plan->groups == 1) {
    pack.array(y);
    pack.value_bytes(reinterpret_cast<const std::byte*>(&alone), 4);
    pack.array(y);
    pack.array(y);  // no counter
    codegen::launch_generated(*plan->p1, queue, plan->device, 1, plan->local, pack.view());
    count_finish(1, false);
    return y;
  }
  codegen::Scratch scratch(queue, plan->device, plan->groups * plan->reduce_size);
  pack.buffer(scratch.buffer());
  if (plan->one_launch && !force_two_launches.load(std::memory_order_relaxed)) {
    const Buffer counter = codegen::group_counter(queue, plan->device);
    pack.value_bytes(reinterpret_cast<const std::byte*>(&last_group), 4);
    pack.array(y);
    pack.buffer(counter);
    with_counter(queue, plan->device, counter, [&] {
      codegen::launch_generated(*plan->p1, queue, plan->device, plan->groups, plan->local,
                                pack.view());
    });
    count_finish(plan->groups, true);
    return y;
  }
  pack.value_bytes(reinterpret_cast<const std::byte*>(&partial), 4);
  pack.buffer(scratch.buffer());
  pack.buffer(scratch.buffer());  // no counter
  codegen::launch_generated(*plan->p1, queue, plan->device, plan->groups, plan->local, pack.view());
  codegen::StackArgs pack2;
  const std::uint64_t count = plan->groups;
  pack2.buffer(scratch.buffer());
  pack2.value_bytes(reinterpret_cast<const std::byte*>(&count), 8);
  pack2.value_bytes(reinterpret_cast<const std::byte*>(&finish), 4);
  pack2.buffer(scratch.buffer());
  pack2.array(y);
  codegen::launch_generated(*plan->p2, queue, plan->device, 1, plan->local, pack2.view());
  count_finish(plan->groups, false);
  return y;
}

// Keeps the plan of a whole-array reduction that went the full way.
void keep_fast_plan(const ReductionKernel::Impl& impl, const Queue& queue, const Resolved& r,
                    std::size_t d, const std::shared_ptr<const codegen::CompiledProgram>& prog,
                    std::size_t groups, bool one_launch, const codegen::CallKey& key) {
  auto fast = std::make_shared<FastPlan>();
  fast->key = key;
  fast->context = detail::impl_of(queue.context()).get();
  fast->program = prog;
  fast->p1 = &prog->kernel(impl.name() + "_p1");
  fast->p2 = &prog->kernel(impl.name() + "_p2");
  fast->device = d;
  fast->groups = groups;
  fast->local = prog->local_size[d];
  fast->reduce_size = r.reduce_size;
  fast->one_launch = one_launch;
  fast->out_dtype = r.out_dtype;
  fast->dtypes = r.dtypes;
  fast->tail = p1_tail(impl, queue, d, r);
  codegen::keep_plan<FastPlan>(impl.fast_mutex, impl.fast_plans, ReductionKernel::Impl::kFastPlans,
                               std::move(fast));
}

// A whole-array reduction in deterministic mode into y: the records of the one piece, combined.
void reduce_deterministic(const ReductionKernel::Impl& impl, const Queue& queue, const Resolved& r,
                          std::size_t d, const Array& y) {
  auto prog = program_for(impl, queue.context(), r, Mode::det);
  const std::size_t L = prog->local_size[d];
  ScratchLayout layout;
  const std::size_t recs_at = layout.add(ReductionKernel::record_capacity(r.n) * r.record_size);
  const std::size_t up_a = layout.add(up_bytes(r, L));
  const std::size_t up_b = layout.add(up_bytes(r, L));
  codegen::Scratch scratch(queue, d, layout.total);
  enqueue_records(impl, queue, d, r, *prog, 0, r.n, scratch.buffer(), recs_at, scratch.buffer(),
                  up_a, up_b);
  enqueue_combine(impl, queue, d, *prog, scratch.buffer(), recs_at,
                  ReductionKernel::record_capacity(r.n), r.n, y);
}

}  // namespace

void set_finish_for_tests(Finish finish) {
  force_two_launches.store(finish == Finish::two_launches);
  count_finishes.store(true);
}

FinishCounts finish_counts() {
  return {finished_one_group.load(), finished_one_launch.load(), finished_two_launches.load(),
          finished_last_groups.load()};
}

bool one_launch_supported(const Queue& queue) {
  return one_launch_options(queue.context()).has_value();
}

std::uintptr_t group_counter_id(const Queue& queue, std::size_t device_idx) {
  return codegen::group_counter(queue, device_idx).adapter()->native();
}

std::string fast_source_for_tests(const ReductionKernel& kernel, const Queue& queue,
                                  std::span<const Operand> inputs, bool one_launch) {
  const auto& impl = *impl_of(kernel);
  const Resolved r = resolve(impl, queue, inputs, std::nullopt, "fast_source_for_tests");
  return fast_source(impl, r, codegen::group_size_for(queue.context()), one_launch);
}

}  // namespace skein::detail::red

namespace skein {

ReductionKernel::ReductionKernel(std::string_view in_params, std::string_view out_param,
                                 std::string map_expr, std::string reduce_expr,
                                 std::string identity, ReductionOptions options) {
  const std::string call = "ReductionKernel";
  detail::codegen::check_kernel_name(options.name, call);
  auto impl = std::make_shared<Impl>();
  impl->params = detail::codegen::parse_params(in_params, false, call, options.name);
  auto outs = detail::codegen::parse_params(out_param, true, call, options.name);
  if (outs.size() != 1 || outs[0].raw) {
    detail::raise_in(SKEIN_HERE, call, "Declare exactly one output, e.g. \"T y\".",
                     "kernel '{}': {} output parameter(s) in \"{}\"{}", options.name, outs.size(),
                     out_param, !outs.empty() && outs[0].raw ? " (a raw output)" : "");
  }
  impl->out = outs[0];
  auto all = impl->params;
  all.push_back(impl->out);
  detail::codegen::check_reserved(all, detail::red::kReserved, call, options.name);
  if (options.reduce_type && options.reduce_struct) {
    detail::raise_in(SKEIN_HERE, call, "Set reduce_type or reduce_struct, not both.",
                     "kernel '{}': two reduce types given", options.name);
  }
  if (options.reduce_struct && options.reduce_struct->fields().empty()) {
    detail::raise_in(SKEIN_HERE, call, "Give the struct at least one field.",
                     "kernel '{}': the reduce struct is empty", options.name);
  }
  for (const auto* e : {&map_expr, &reduce_expr, &identity}) {
    if (e->find_first_not_of(" \t\r\n") == std::string::npos) {
      detail::raise_in(SKEIN_HERE, call, "Give the map, reduce and identity expressions.",
                       "kernel '{}': the {} expression is empty", options.name,
                       e == &map_expr      ? "map"
                       : e == &reduce_expr ? "reduce"
                                           : "identity");
    }
  }
  impl->map_expr = std::move(map_expr);
  impl->reduce_expr = std::move(reduce_expr);
  impl->identity = std::move(identity);
  impl->options = std::move(options);
  for (const auto& p : impl->params) {
    impl->what.push_back(fmt::format("argument '{}' of kernel '{}'", p.name, impl->options.name));
  }
  impl_ = std::move(impl);
}

const std::string& ReductionKernel::name() const { return impl_->name(); }
std::size_t ReductionKernel::programs_built() const { return impl_->built.load(); }

std::size_t ReductionKernel::record_capacity(std::uint64_t global_size) {
  return 2 * static_cast<std::size_t>(detail::red::max_level(global_size)) + 1;
}

Dtype ReductionKernel::out_dtype(std::span<const Operand> inputs) const {
  // The dtypes alone decide it; no queue is needed to bind them.
  std::vector<detail::codegen::ParamDecl> all = impl_->params;
  all.push_back(impl_->out);
  const auto b =
      detail::codegen::bind_types(all, inputs, "ReductionKernel::out_dtype", impl_->name());
  return detail::codegen::param_dtype(impl_->out, b, "ReductionKernel::out_dtype", impl_->name());
}

Dtype ReductionKernel::partial_dtype(std::span<const Operand> inputs) const {
  if (impl_->options.reduce_struct) return Dtype::uint8;
  // The dtypes alone decide it; no queue is needed to bind them.
  std::vector<detail::codegen::ParamDecl> all = impl_->params;
  all.push_back(impl_->out);
  const auto b =
      detail::codegen::bind_types(all, inputs, "ReductionKernel::partial_dtype", impl_->name());
  const Dtype out =
      detail::codegen::param_dtype(impl_->out, b, "ReductionKernel::partial_dtype", impl_->name());
  return detail::codegen::compute_dtype(impl_->options.reduce_type.value_or(out));
}

std::size_t ReductionKernel::partial_size(std::span<const Operand> inputs) const {
  if (impl_->options.reduce_struct) return impl_->options.reduce_struct->itemsize();
  return itemsize(partial_dtype(inputs));
}

std::size_t ReductionKernel::record_size(std::span<const Operand> inputs) const {
  const std::size_t size = partial_size(inputs);
  const std::size_t align =
      impl_->options.reduce_struct ? impl_->options.reduce_struct->alignment() : size;
  const std::size_t ra = std::max<std::size_t>(8, align);
  return detail::round_up(16 + size, ra);
}

Array ReductionKernel::operator()(const Queue& queue, std::span<const Operand> inputs,
                                  const ReductionArgs& args) const {
  using namespace detail::red;  // the reduction's internals (reduction_impl.hpp)
  const auto& impl = *impl_;
  const char* call = "ReductionKernel";
  // Whole-array reductions with an array among the inputs go through the kept plans.
  detail::codegen::CallKey key;
  const bool keyed =
      !args.axis && args.axes.empty() && !args.deterministic &&
      std::any_of(inputs.begin(), inputs.end(), [](const Operand& o) { return o.is_array(); }) &&
      detail::codegen::make_key(inputs, key);
  if (keyed) {
    if (auto y = call_fast(impl, queue, inputs, args.out, key)) return *y;
  }
  const Resolved r = resolve(impl, queue, inputs, args.out, call);
  const std::size_t d = device_of(r, queue);
  if (args.axis || !args.axes.empty()) {
    if (args.deterministic) {
      detail::raise_in(SKEIN_HERE, call,
                       "Per-axis reductions are already deterministic on one device; drop "
                       "deterministic.",
                       "kernel '{}': deterministic mode is for whole-array reductions",
                       impl.name());
    }
    const auto reduced = reduced_axes(impl, args, r.shape.size(), r.shape, call);
    return reduce_along(impl, queue, r, d, reduced, args, call);
  }
  Array y = output_for(args.out, queue, r.out_dtype, Shape{1}, d, call, impl.name());
  if (args.deterministic) {
    reduce_deterministic(impl, queue, r, d, y);
    return y;
  }
  auto prog = program_for(impl, queue.context(), r, Mode::fast);
  const std::size_t groups = p1_groups(impl, r, *prog, d);
  const bool one_launch = one_launch_options(queue.context()).has_value();
  if (groups == 1) {
    enqueue_p1(impl, queue, d, r, *prog, y.data(), y.offset(), 1, &y);
    count_finish(1, false);
  } else if (one_launch && !force_two_launches.load(std::memory_order_relaxed)) {
    detail::codegen::Scratch scratch(queue, d, groups * r.reduce_size);
    const Buffer counter = detail::codegen::group_counter(queue, d);
    with_counter(queue, d, counter, [&] {
      enqueue_p1(impl, queue, d, r, *prog, scratch.buffer(), 0, groups, &y, &counter);
    });
    count_finish(groups, true);
  } else {
    detail::codegen::Scratch scratch(queue, d, groups * r.reduce_size);
    enqueue_p1(impl, queue, d, r, *prog, scratch.buffer(), 0, groups);
    enqueue_p2(impl, queue, d, *prog, scratch.buffer(), 0, groups, true, scratch.buffer(), 0, &y);
    count_finish(groups, false);
  }
  if (keyed) keep_fast_plan(impl, queue, r, d, prog, groups, one_launch, key);
  return y;
}

std::string ReductionKernel::source(const Queue& queue, std::span<const Operand> inputs) const {
  using namespace detail::red;  // the reduction's internals (reduction_impl.hpp)
  const Resolved r = resolve(*impl_, queue, inputs, std::nullopt, "ReductionKernel::source");
  const std::size_t L = detail::codegen::group_size_for(queue.context());
  const bool one_launch = one_launch_options(queue.context()).has_value();
  return fast_source(*impl_, r, L, one_launch) + "\n" + det_source(*impl_, r, L) + "\n" +
         axis_source(*impl_, r, L);
}

void detail::raise_not_one_element(const Array& result) {
  detail::raise_in(SKEIN_HERE, "skein::reduction_value", "Pass a whole-array reduction's result.",
                   "the array has shape {} ({} elements), not one element",
                   to_string(result.shape()), result.size());
}

}  // namespace skein
