// SPDX-License-Identifier: BSD-3-Clause
// ElementwiseKernel (skein/elementwise.hpp): a call resolved against its arguments (checks,
// dtypes, device, broadcast shape, outputs, layout class), its plan (the compiled program, the
// grid and the packed arguments), the launch, and the plans kept for repeated calls. The
// generated source is elementwise_source.cpp's, the built-in operations elementwise_builtins.cpp's.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>

#include "arithmetic.hpp"
#include "codegen/launch.hpp"
#include "codegen/types.hpp"
#include "elementwise_impl.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/impl_access.hpp"

namespace skein::detail::elementwise {

namespace {

constexpr std::string_view kReserved[] = {"i", "n"};
const std::string kCall = "ElementwiseKernel";

std::string describe_params(const std::vector<codegen::ParamDecl>& params, std::size_t from,
                            std::size_t to) {
  std::vector<std::string> parts;
  for (std::size_t k = from; k < to; ++k) {
    parts.push_back(
        fmt::format("{}{} {}", params[k].raw ? "raw " : "", params[k].type, params[k].name));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

void check_array_alignment(const Array& a, const std::string& call, const std::string& kernel,
                           const std::string& param) {
  const std::size_t isz = a.itemsize();
  bool ok = codegen::address_in_allocation(a) % isz == 0;
  for (std::size_t d = 0; ok && d < a.ndim(); ++d)
    ok = a.shape()[d] <= 1 || a.strides()[d] % isz == 0;
  if (!ok) {
    raise_in(SKEIN_HERE, call, "Use views whose offset and strides are multiples of the itemsize.",
             "kernel '{}': argument '{}' ({} array, byte offset {}, strides {}) has "
             "elements that are not aligned to their size",
             kernel, param, name(a.dtype()), codegen::address_in_allocation(a),
             to_string(a.strides()));
  }
}

// The number of arguments, and what each parameter takes: arrays for outputs and raw
// parameters, aligned elements, contiguous raw arrays.
void check_arguments(const ElementwiseKernel::Impl& impl, std::span<const Operand> args) {
  const std::string& kname = impl.options.name;
  const auto& params = impl.params;
  if (args.size() != impl.n_in && args.size() != params.size()) {
    raise_in(SKEIN_HERE, kCall,
             "Pass the inputs, then either every output or none (they are then "
             "allocated).",
             "kernel '{}' takes {} input(s) ({}) and {} output(s) ({}); {} argument(s) "
             "were given",
             kname, impl.n_in, describe_params(params, 0, impl.n_in), impl.n_out(),
             describe_params(params, impl.n_in, params.size()), args.size());
  }
  for (std::size_t k = 0; k < args.size(); ++k) {
    const auto& p = params[k];
    if (args[k].is_scalar() && (p.output || p.raw)) {
      raise_in(SKEIN_HERE, kCall, "Pass an Array for it.",
               "kernel '{}': argument {} ('{}') is the scalar {}, but {} parameter takes "
               "an array",
               kname, k, p.name, args[k].to_string(), p.output ? "an output" : "a raw");
    }
    if (args[k].is_array()) {
      const Array& a = args[k].array();
      check_array_alignment(a, kCall, kname, p.name);
      if (p.raw && !a.is_contiguous()) {
        raise_in(SKEIN_HERE, kCall, "Pass a contiguous array (copy the view first).",
                 "kernel '{}': raw argument {} ('{}') is a strided view", kname, k, p.name);
      }
    }
  }
}

// The shape of the call: inputs and given outputs broadcast together; outputs must have it.
Shape call_shape(const ElementwiseKernel::Impl& impl, std::span<const Operand> args) {
  const std::string& kname = impl.options.name;
  const auto& params = impl.params;
  std::vector<bool> take(args.size());
  for (std::size_t k = 0; k < args.size(); ++k) take[k] = !params[k].raw && args[k].is_array();
  bool any = std::find(take.begin(), take.end(), true) != take.end();
  if (!any) {
    raise_in(SKEIN_HERE, kCall,
             "Pass a non-raw array (the outputs, for example): its shape sets the number "
             "of elements.",
             "kernel '{}': no non-raw array among the arguments, so the number of "
             "elements is unknown",
             kname);
  }
  Shape shape = codegen::broadcast_shapes(args, take, params, kCall, kname);
  for (std::size_t k = impl.n_in; k < args.size(); ++k) {
    if (params[k].raw) continue;
    if (args[k].array().shape() != shape) {
      raise_in(SKEIN_HERE, kCall, "Give outputs the shape the inputs broadcast to.",
               "kernel '{}': output '{}' has shape {}; the inputs broadcast to {}", kname,
               params[k].name, to_string(args[k].array().shape()), to_string(shape));
    }
  }
  return shape;
}

// r.args and r.outputs: the arguments, and the outputs not given allocated when `allocate` is set
// (source() needs no memory: the layout of a new contiguous array is known).
void take_outputs(const ElementwiseKernel::Impl& impl, const Queue& queue,
                  std::span<const Operand> args, const Shape& shape, bool allocate, Resolved& r) {
  const auto& params = impl.params;
  r.args.assign(args.begin(), args.end());
  if (args.size() == impl.n_in) {
    for (std::size_t k = impl.n_in; k < params.size(); ++k) {
      if (params[k].raw) {
        raise_in(SKEIN_HERE, kCall, "Pass the outputs.",
                 "kernel '{}': raw output '{}' cannot be allocated (its size is unknown)",
                 impl.options.name, params[k].name);
      }
      if (allocate) r.args.emplace_back(Array::empty(queue, shape, r.dtypes[k], r.device));
    }
  }
  if (allocate || args.size() == params.size()) {
    for (std::size_t k = impl.n_in; k < params.size(); ++k) r.outputs.push_back(r.args[k].array());
  }
}

// The layout class of the non-raw arrays (outputs not allocated are contiguous), the vector
// loop's W and U, and the program's signature.
void lay_out(const ElementwiseKernel::Impl& impl, std::size_t n_args, const Shape& shape,
             Resolved& r) {
  const auto& params = impl.params;
  r.n = shape_size(shape);
  r.layout_index.assign(params.size(), npos);
  std::vector<codegen::ArrayShape> shapes;
  std::size_t W = 1, sum_isz = 0;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const bool is_array = k >= n_args || r.args[k].is_array();
    r.is_array.push_back(is_array);
    if (params[k].raw || !is_array) continue;
    r.layout_index[k] = shapes.size();
    const std::size_t isz = itemsize(r.dtypes[k]);
    if (k < r.args.size()) {
      shapes.push_back(codegen::shape_of(r.args[k].array()));
    } else {
      shapes.push_back({shape, contiguous_strides(shape, isz), isz});
    }
    W = std::max(W, codegen::vector_width(isz));
    sum_isz += isz;
  }
  r.layout_count = shapes.size();
  r.layout = codegen::make_layout(shape, shapes);

  r.W = W;
  r.U = std::clamp<std::size_t>(
      floor_pow2(std::max<std::size_t>(1, 256 / std::max<std::size_t>(1, r.W * sum_isz))), 1, 4);

  std::string sig = r.layout.contiguous ? "ew1|c" : fmt::format("ew1|s{}", r.layout.shape.size());
  for (std::size_t k = 0; k < params.size(); ++k) {
    sig += fmt::format("|{}{}", params[k].raw ? 'R' : r.is_array[k] ? 'A' : 'S', name(r.dtypes[k]));
  }
  r.signature = std::move(sig);
}

Resolved resolve(const ElementwiseKernel::Impl& impl, const Queue& queue,
                 std::span<const Operand> args, std::optional<std::size_t> expect_device,
                 bool allocate) {
  const std::string& kname = impl.options.name;
  const auto& params = impl.params;
  check_arguments(impl, args);
  Resolved r;
  r.bindings = codegen::bind_types(params, args, kCall, kname);
  for (const auto& p : params)
    r.dtypes.push_back(codegen::param_dtype(p, r.bindings, kCall, kname));
  const auto device = codegen::common_device(queue, args, params, expect_device, kCall, kname);
  if (!device && !expect_device) {
    raise_in(SKEIN_HERE, kCall, "Pass at least one array (the outputs, for example).",
             "kernel '{}': no argument is an array, so there is no device to run on", kname);
  }
  r.device = device ? *device : *expect_device;
  const Shape shape = call_shape(impl, args);
  take_outputs(impl, queue, args, shape, allocate, r);
  lay_out(impl, args.size(), shape, r);
  return r;
}

struct Plan {
  Resolved resolved;
  std::shared_ptr<const codegen::CompiledProgram> program;
  codegen::ArgPack args;
  std::size_t groups = 0;
  std::size_t local = 0;
  std::vector<std::uint64_t> tail;  // the values packed after the parameters
};

Plan make_plan(const ElementwiseKernel::Impl& impl, const Queue& queue,
               std::span<const Operand> args, std::optional<std::size_t> expect_device) {
  Plan plan;
  plan.resolved = resolve(impl, queue, args, expect_device, true);
  const Resolved& r = plan.resolved;
  if (r.n == 0) return plan;
  ProgramOptions options;
  options.fast_math = impl.options.fast_math;
  options.name = impl.options.name;
  if (!impl.options.fp_contract && queue.context().api().id() == ApiId::cuda) {
    options.compiler_options.emplace_back("--fmad=false");
  }
  plan.program = codegen::cached_program(
      impl.owner, queue.context(), r.signature,
      [&] {
        impl.built += 1;
        return generate(impl, r);
      },
      {impl.options.name}, options);
  const std::size_t d = r.device;
  plan.local = plan.program->local_size[d];
  // Grid-stride: any count of groups covers the range; per_chunk runs as many as it has chunks
  // (at most CUDA's 2^31 - 1 groups along x).
  std::uint64_t resident = impl.options.groups == LaunchGroups::per_chunk
                               ? (std::uint64_t{1} << 31) - 1
                               : plan.program->resident(impl.options.name, d);
  if (impl.options.spare_compute_units > 0) {
    // The groups of that many units fewer (the groups fit evenly per unit: resident is units x
    // groups per unit), never all units.
    const std::size_t units =
        std::max<std::size_t>(1, queue.context().device(d).params().compute_units);
    const std::uint64_t per_unit = std::max<std::uint64_t>(1, resident / units);
    const std::uint64_t spare = std::min(impl.options.spare_compute_units, units - 1);
    resident = std::max(per_unit, resident - std::min(resident, spare * per_unit));
  }

  const auto& params = impl.params;
  for (std::size_t k = 0; k < params.size(); ++k) {
    if (r.args[k].is_array()) {
      plan.args.array(r.args[k].array());
    } else {
      plan.args.bytes(r.args[k].bytes_as(r.dtypes[k], impl.what[k]));
    }
  }
  auto tail = [&](std::uint64_t v) {
    plan.args.value(v);
    plan.tail.push_back(v);
  };
  tail(r.n);
  std::uint64_t work = r.n;
  if (r.layout.contiguous) {
    std::uint64_t head = r.n, nchunks = 0;
    const bool aligned_buffers = queue.context().device(d).params().base_address_align >= 16 ||
                                 queue.context().api().id() == ApiId::cuda;
    std::vector<const Array*> vector_arrays;
    for (std::size_t k = 0; k < params.size(); ++k) {
      if (r.layout_index[k] != npos) vector_arrays.push_back(&r.args[k].array());
    }
    if (aligned_buffers && !vector_arrays.empty()) {
      if (auto h = codegen::common_vector_start(vector_arrays); h && *h < r.n) {
        head = *h;
        nchunks = (r.n - head) / r.W;
      }
    }
    if (nchunks == 0) head = r.n;
    tail(head);
    tail(nchunks);
    work = std::max<std::uint64_t>(ceil_div(nchunks, r.U), r.n - nchunks * r.W);
  } else {
    for (auto s : r.layout.shape) tail(s);
    for (const auto& strides : r.layout.strides) {
      for (auto s : strides) tail(s);
    }
  }
  plan.groups = std::clamp<std::uint64_t>(ceil_div(work, plan.local), 1, resident);
  return plan;
}

void execute(const ElementwiseKernel::Impl& impl, const Queue& queue, const Plan& plan) {
  if (!plan.program) return;
  codegen::launch(plan.program->kernel(impl.options.name), queue, plan.resolved.device, plan.groups,
                  plan.local, plan.args);
}

// The plan this thread called last, and the kernel object it belongs to (compared by its
// ownership, not its address: a kernel made later at the same address is another owner, and the
// weak reference keeps the control block, so no other owner can have it). Spares the kernel's
// mutex and search for a thread that calls one kernel with one argument layout over and over.
struct LastPlan {
  std::weak_ptr<ElementwiseKernel::Impl> owner;
  std::shared_ptr<const FastPlan> plan;
};

// A call through a kept plan: true when one matched and the kernel was enqueued.
bool call_fast(const std::shared_ptr<ElementwiseKernel::Impl>& owner, const Queue& queue,
               std::span<const Operand> args, const codegen::CallKey& key) {
  const ElementwiseKernel::Impl& impl = *owner;
  thread_local LastPlan last;
  const void* context = impl_of(queue.context()).get();
  const bool same_owner = !last.owner.owner_before(owner) && !owner.owner_before(last.owner);
  if (!same_owner || !last.plan || last.plan->context != context || !(last.plan->key == key)) {
    auto found = codegen::find_plan(impl.fast_mutex, impl.fast_plans, context, key);
    if (!found) return false;
    last.owner = owner;
    last.plan = std::move(found);
  }
  const FastPlan* plan = last.plan.get();
  const auto program = plan->program.lock();  // the program (and so the context) still alive
  if (!program) {
    last = LastPlan{};  // gone with its context: the call goes the full way and keeps a new plan
    return false;
  }
  codegen::StackArgs pack;
  // Two arguments per array (buffer, offset); words: one per array, up to three per scalar (a
  // 16-byte value and its alignment), one per tail value.
  if (!pack.fits(2 * args.size() + plan->tail.size(), 3 * args.size() + plan->tail.size())) {
    return false;
  }
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (args[k].is_array()) {
      pack.array(args[k].array());
    } else {
      std::array<std::byte, 16> bytes;
      pack.value_bytes(bytes.data(), args[k].bytes_into(plan->dtypes[k], bytes, impl.what[k]));
    }
  }
  for (std::uint64_t v : plan->tail) pack.value_bytes(reinterpret_cast<const std::byte*>(&v), 8);
  codegen::launch_planned(*plan->kernel, queue, plan->device, plan->groups, plan->local,
                          pack.view());
  return true;
}

// Keeps the plan of a call that went the full way, for the next calls with its key.
void keep_fast_plan(const ElementwiseKernel::Impl& impl, const Queue& queue, const Plan& plan,
                    const codegen::CallKey& key) {
  if (!plan.program) return;
  auto fast = std::make_shared<FastPlan>();
  fast->key = key;
  fast->context = impl_of(queue.context()).get();
  fast->program = plan.program;
  fast->kernel = &plan.program->kernel(impl.options.name);
  fast->device = plan.resolved.device;
  fast->groups = plan.groups;
  fast->local = plan.local;
  fast->dtypes = plan.resolved.dtypes;
  fast->tail = plan.tail;
  codegen::keep_plan<FastPlan>(impl.fast_mutex, impl.fast_plans,
                               ElementwiseKernel::Impl::kFastPlans, std::move(fast));
}

}  // namespace

}  // namespace skein::detail::elementwise

namespace skein {

namespace detail {

void elementwise_enqueue(const ElementwiseKernel& kernel, const Queue& queue,
                         std::span<const Operand> args) {
  const auto& owner = impl_of(kernel);
  const auto& impl = *owner;
  codegen::CallKey key;
  const bool keyed = args.size() == impl.params.size() && codegen::make_key(args, key);
  if (keyed && elementwise::call_fast(owner, queue, args, key)) return;
  elementwise::Plan plan = elementwise::make_plan(impl, queue, args, std::nullopt);
  elementwise::execute(impl, queue, plan);
  if (keyed) elementwise::keep_fast_plan(impl, queue, plan, key);
}

}  // namespace detail

ElementwiseKernel::ElementwiseKernel(std::string_view in_params, std::string_view out_params,
                                     std::string operation, ElementwiseOptions options) {
  auto impl = std::make_shared<Impl>();
  const std::string taken[] = {options.name, options.name + "_op"};
  impl->params = detail::codegen::declare_kernel(in_params, out_params, operation, options.name,
                                                 detail::elementwise::kReserved, taken,
                                                 "ElementwiseKernel", "z = a * x + y", impl->n_in);
  impl->what = detail::codegen::describe_arguments(impl->params, options.name);
  if (options.groups != LaunchGroups::resident && options.spare_compute_units > 0) {
    detail::raise_in(SKEIN_HERE, "ElementwiseKernel",
                     "Leave spare_compute_units at 0 with LaunchGroups::per_chunk, or launch "
                     "LaunchGroups::resident groups.",
                     "kernel '{}': spare_compute_units = {} leaves units free of resident groups; "
                     "a per_chunk launch runs a group per chunk of the range on every unit",
                     options.name, options.spare_compute_units);
  }
  impl->operation = std::move(operation);
  impl->options = std::move(options);
  impl_ = std::move(impl);
}

const std::string& ElementwiseKernel::name() const { return impl_->options.name; }
std::size_t ElementwiseKernel::programs_built() const { return impl_->built.load(); }

std::vector<Array> ElementwiseKernel::operator()(const Queue& queue,
                                                 std::span<const Operand> args) const {
  if (args.size() == impl_->params.size()) {
    // Every output given: the outputs are the last arguments.
    detail::elementwise_enqueue(*this, queue, args);
    std::vector<Array> outputs;
    outputs.reserve(impl_->n_out());
    for (std::size_t k = impl_->n_in; k < args.size(); ++k) outputs.push_back(args[k].array());
    return outputs;
  }
  detail::elementwise::Plan plan =
      detail::elementwise::make_plan(*impl_, queue, args, std::nullopt);
  detail::elementwise::execute(*impl_, queue, plan);
  return plan.resolved.outputs;
}

MultiDevice<std::vector<Array>> ElementwiseKernel::per_device(
    const Queue& queue, const MultiDevice<std::vector<Operand>>& args) const {
  std::vector<detail::elementwise::Plan> plans;
  for (std::size_t d : queue.device_idxs()) {
    const auto& list = args[d];
    plans.push_back(detail::elementwise::make_plan(*impl_, queue, list, d));
  }
  MultiDevice<std::vector<Array>> result;
  for (const auto& plan : plans) detail::elementwise::execute(*impl_, queue, plan);
  for (auto& plan : plans) result.set(plan.resolved.device, plan.resolved.outputs);
  return result;
}

std::string ElementwiseKernel::source(const Queue& queue, std::span<const Operand> args) const {
  const detail::elementwise::Resolved r =
      detail::elementwise::resolve(*impl_, queue, args, std::nullopt, false);
  return detail::elementwise::generate(*impl_, r);
}

}  // namespace skein
