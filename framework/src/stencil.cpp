// SPDX-License-Identifier: BSD-3-Clause
// StencilKernel (skein/stencil.hpp): resolving a call, the region's boxes, and the launch. The
// generated source is stencil_source.cpp's.
#include "skein/stencil.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>

#include "arithmetic.hpp"
#include "codegen/launch.hpp"
#include "codegen/params.hpp"
#include "codegen/programs.hpp"
#include "kernel_operands.hpp"
#include "skein/ctypes.hpp"
#include "skein/detail/errors.hpp"
#include "stencil_source.hpp"

namespace skein {

struct StencilKernel::Impl {
  std::vector<detail::codegen::ParamDecl> params;  // inputs, then outputs
  std::size_t n_in = 0;
  std::string operation;
  StencilOptions options;
  std::uint64_t owner = detail::codegen::new_cache_owner();
  mutable std::atomic<std::size_t> built{0};
  std::vector<std::string> what;  // per parameter: "argument 'a' of kernel 'k'"

  ~Impl() { detail::codegen::drop_cache_owner(owner); }
};

namespace {

using detail::stencil::Box;
using detail::stencil::Call;
using detail::stencil::kMaxBoxes;
using detail::stencil::ParamKind;

constexpr std::string_view kReserved[] = {"gidx", "gshape"};
const std::string kCall = "StencilKernel";

// The bytes an array's elements span in its allocation: [first, last) from the buffer's start.
std::pair<std::uint64_t, std::uint64_t> byte_span(const Array& a) {
  const std::uint64_t first = detail::codegen::address_in_allocation(a);
  std::uint64_t last = first + a.itemsize();
  for (std::size_t d = 0; d < a.ndim(); ++d) {
    if (a.shape()[d] == 0) return {first, first};
    last += (a.shape()[d] - 1) * a.strides()[d];
  }
  return {first, last};
}

bool overlaps(const Array& a, const Array& b) {
  if (a.data().adapter().get() != b.data().adapter().get()) return false;
  const auto [a0, a1] = byte_span(a);
  const auto [b0, b1] = byte_span(b);
  return a0 < b1 && b0 < a1 && a0 != a1 && b0 != b1;
}

// Shape `s` of D axes, or zeros when empty; LogicError naming `what` for another length.
Shape per_axis(const Shape& s, std::size_t D, const char* what, const std::string& kname) {
  if (s.empty()) return Shape(D, 0);
  if (s.size() != D) {
    detail::raise_in(SKEIN_HERE, kCall, "Give one value per axis of the domain (or none).",
                     "kernel '{}': the geometry's {} has {} values for a domain of {} axes", kname,
                     what, s.size(), D);
  }
  return s;
}

// Checks the arguments against the parameters and the geometry; everything the source and the
// launch depend on.
Call resolve(const StencilKernel::Impl& impl, const Queue& queue, std::span<const Operand> args,
             const StencilGeometry& geometry) {
  const std::string& kname = impl.options.name;
  const auto& params = impl.params;
  if (args.size() != params.size()) {
    detail::raise_in(SKEIN_HERE, kCall,
                     "Pass every input, then every output (outputs are not allocated).",
                     "kernel '{}' takes {} argument(s) ({} input(s), {} output(s)); {} were given",
                     kname, params.size(), impl.n_in, params.size() - impl.n_in, args.size());
  }
  Call c;
  c.D = geometry.domain.size();
  if (c.D < 1 || c.D > 3) {
    detail::raise_in(SKEIN_HERE, kCall, "Give the domain's global shape of 1, 2 or 3 axes.",
                     "kernel '{}': the geometry's domain has {} axes", kname, c.D);
  }
  const auto device =
      detail::codegen::common_device(queue, args, params, std::nullopt, kCall, kname);
  if (!device) {
    detail::raise_in(SKEIN_HERE, kCall, "Pass the block's fields as Arrays.",
                     "kernel '{}': no argument is an array", kname);
  }
  c.device = *device;
  c.bindings = detail::codegen::bind_types(params, args, kCall, kname);
  const Array* first_field = nullptr;
  for (std::size_t k = 0; k < params.size(); ++k) {
    const auto& p = params[k];
    const Operand& a = args[k];
    c.dtypes.push_back(detail::codegen::param_dtype(p, c.bindings, kCall, kname));
    c.components.push_back(0);
    if (!a.is_array()) {
      if (p.output || p.raw) {
        detail::raise_in(SKEIN_HERE, kCall, "Pass an Array for every output and raw parameter.",
                         "kernel '{}': argument {} ('{}') is a scalar", kname, k, p.name);
      }
      c.kinds.push_back(ParamKind::scalar);
      continue;
    }
    const Array& x = a.array();
    const std::size_t isz = x.itemsize();
    bool aligned = detail::codegen::address_in_allocation(x) % isz == 0;
    for (std::size_t d = 0; d < x.ndim(); ++d) aligned = aligned && x.strides()[d] % isz == 0;
    if (!aligned) {
      detail::raise_in(SKEIN_HERE, kCall,
                       "Use views whose offset and strides are multiples of the itemsize.",
                       "kernel '{}': argument {} ('{}') has elements not aligned to their size",
                       kname, k, p.name);
    }
    if (p.raw) {
      c.kinds.push_back(ParamKind::raw);
      continue;
    }
    c.kinds.push_back(ParamKind::field);
    if (x.ndim() != c.D && x.ndim() != c.D + 1) {
      detail::raise_in(
          SKEIN_HERE, kCall,
          "Pass each field as a view of the block's points (D axes), with a trailing axis of "
          "components if it has them.",
          "kernel '{}': field {} ('{}') has shape {}, for a domain of {} axes", kname, k, p.name,
          to_string(x.shape()), c.D);
    }
    if (x.ndim() == c.D + 1) c.components.back() = x.shape()[c.D];
    const Shape points(x.shape().begin(), x.shape().begin() + static_cast<std::ptrdiff_t>(c.D));
    if (!first_field) {
      first_field = &x;
      c.points = points;
    } else if (points != c.points) {
      detail::raise_in(SKEIN_HERE, kCall, "Pass fields with the same points (the block's shape).",
                       "kernel '{}': field {} ('{}') has points {}, an earlier field {}", kname, k,
                       p.name, to_string(points), to_string(c.points));
    }
  }
  if (!first_field) {
    detail::raise_in(SKEIN_HERE, kCall,
                     "Pass at least one field: an Array for a non-raw parameter.",
                     "kernel '{}': no argument is a field", kname);
  }
  for (std::size_t k = impl.n_in; k < params.size(); ++k) {
    for (std::size_t j = 0; j < impl.n_in; ++j) {
      if (c.kinds[j] == ParamKind::field && overlaps(args[k].array(), args[j].array())) {
        detail::raise_in(
            SKEIN_HERE, kCall,
            "Write the result into another array (a stencil reads neighbours that other "
            "points would already have overwritten).",
            "kernel '{}': output '{}' shares memory with input field '{}'", kname, params[k].name,
            params[j].name);
      }
    }
  }
  c.domain = geometry.domain;
  c.offset = per_axis(geometry.offset, c.D, "offset", kname);
  c.halo = per_axis(geometry.halo, c.D, "halo", kname);
  for (std::size_t a = 0; a < c.D; ++a) {
    if (c.offset[a] + c.points[a] > c.domain[a]) {
      detail::raise_in(
          SKEIN_HERE, kCall, "Give the block's global offset and the domain's global shape.",
          "kernel '{}': along axis {} the block's points [{}, {}) lie outside the domain's {}",
          kname, a, c.offset[a], c.offset[a] + c.points[a], c.domain[a]);
    }
  }
  if (impl.options.reduction) c.group = detail::codegen::group_size_for(queue.context());
  c.signature = detail::stencil::signature(impl.params, c);
  return c;
}

// The boxes of `region` in the block's points (3 slots; leading unused slots of extent 1).
std::vector<Box> region_boxes(const Call& c, StencilRegion region) {
  Box full;
  for (std::size_t a = 0; a < c.D; ++a)
    full.extent[3 - c.D + a] = static_cast<std::int64_t>(c.points[a]);
  if (region == StencilRegion::all) return {full};
  // Peel each axis with a halo: its two slabs of the remaining box are edges; what remains is
  // the interior.
  std::vector<Box> edges;
  Box rest = full;
  for (std::size_t a = 0; a < c.D; ++a) {
    const std::size_t s = 3 - c.D + a;
    const auto h = static_cast<std::int64_t>(c.halo[a]);
    if (h == 0) continue;
    const std::int64_t e = rest.extent[s];
    const std::int64_t lo = std::min(h, e), hi = std::max(e - h, lo);
    Box low = rest, high = rest;
    low.extent[s] = lo;
    high.start[s] = rest.start[s] + hi;
    high.extent[s] = e - hi;
    rest.start[s] += lo;
    rest.extent[s] = hi - lo;
    for (const Box& b : {low, high}) {
      if (b.points() > 0) edges.push_back(b);
    }
  }
  if (region == StencilRegion::interior) return {rest};
  return edges;
}

}  // namespace

StencilKernel::StencilKernel(std::string_view in_params, std::string_view out_params,
                             std::string operation, StencilOptions options) {
  auto impl = std::make_shared<Impl>();
  const std::string taken[] = {options.name, options.name + "_i64"};
  impl->params =
      detail::codegen::declare_kernel(in_params, out_params, operation, options.name, kReserved,
                                      taken, kCall, "out = u(-1) + u(1) - 2 * u", impl->n_in);
  if (options.reduction) {
    const StencilReduction& red = *options.reduction;
    if (red.dtype == Dtype::float16 || red.dtype == Dtype::bfloat16) {
      detail::raise_in(
          SKEIN_HERE, kCall, "Reduce in float32 or float64.",
          "kernel '{}': the reduction's dtype is {}, which is stored as another type than it is "
          "computed in",
          options.name, skein::name(red.dtype));
    }
    for (const auto& [what, text] : {std::pair{"map", &red.map}, std::pair{"reduce", &red.reduce},
                                     std::pair{"identity", &red.identity}}) {
      if (text->find_first_not_of(" \t\n") == std::string::npos) {
        detail::raise_in(SKEIN_HERE, kCall,
                         "Give the reduction's map, reduce and identity expressions.",
                         "kernel '{}': the reduction's {} expression is empty", options.name, what);
      }
    }
  }
  impl->what = detail::codegen::describe_arguments(impl->params, options.name);
  impl->operation = std::move(operation);
  impl->options = std::move(options);
  impl_ = std::move(impl);
}

const std::string& StencilKernel::name() const { return impl_->options.name; }
std::size_t StencilKernel::num_params() const { return impl_->params.size(); }
bool StencilKernel::param_is_raw(std::size_t i) const {
  return i < impl_->params.size() && impl_->params[i].raw;
}
std::size_t StencilKernel::programs_built() const { return impl_->built.load(); }

std::string StencilKernel::source(const Queue& queue, std::span<const Operand> args,
                                  const StencilGeometry& geometry) const {
  const Call c = resolve(*impl_, queue, args, geometry);
  return detail::stencil::generate(impl_->params, impl_->operation, impl_->options, c);
}

namespace {

// Where a reducing launch puts its value: element `index` of `out`.
struct ReduceTarget {
  const Array* out = nullptr;
  std::size_t index = 0;
  bool accumulate = false;
};

void check_target(const StencilKernel::Impl& impl, const Call& c, const ReduceTarget& t) {
  const std::string& kname = impl.options.name;
  if (!impl.options.reduction) {
    detail::raise_in(SKEIN_HERE, kCall, "Declare the reduction in StencilOptions::reduction.",
                     "kernel '{}' has no reduction", kname);
  }
  const Array& out = *t.out;
  const Dtype want = impl.options.reduction->dtype;
  if (out.dtype() != want) {
    detail::raise_in(SKEIN_HERE, kCall, "Give an output array of the reduction's dtype.",
                     "kernel '{}': the output is {}, the reduction's dtype {}", kname,
                     name(out.dtype()), name(want));
  }
  if (out.ndim() != 1 || t.index >= out.size()) {
    detail::raise_in(SKEIN_HERE, kCall, "Give a 1-D output and an index inside it.",
                     "kernel '{}': element {} of an output of shape {}", kname, t.index,
                     to_string(out.shape()));
  }
  if (out.device_idx() != c.device) {
    detail::raise_in(SKEIN_HERE, kCall, "Put the output on the device of the block's fields.",
                     "kernel '{}': the output is on device {}, the fields on device {}", kname,
                     out.device_idx(), c.device);
  }
}

// One launch of the operation over `region` (with a reduction when `target.out` is set).
void enqueue(const StencilKernel::Impl& impl, const Queue& queue, std::span<const Operand> args,
             const StencilGeometry& geometry, StencilRegion region, const ReduceTarget& target) {
  const Call c = resolve(impl, queue, args, geometry);
  if (target.out != nullptr) check_target(impl, c, target);
  const std::vector<Box> boxes = region_boxes(c, region);
  std::uint64_t n = 0;
  for (const Box& b : boxes) n += static_cast<std::uint64_t>(b.points());
  if (n == 0 && target.out == nullptr) return;
  ProgramOptions options;
  options.fast_math = impl.options.fast_math;
  options.name = impl.options.name;
  if (!impl.options.fp_contract && queue.context().api().id() == ApiId::cuda) {
    options.compiler_options.emplace_back("--fmad=false");
  }
  const std::string& base = impl.options.name;
  std::vector<std::string> names{base, base + "_i64"};
  if (impl.options.reduction) {
    for (const char* suffix : {"_r", "_r_i64", "_fin"}) names.push_back(base + suffix);
  }
  const auto program = detail::codegen::cached_program(
      impl.owner, queue.context(), c.signature,
      [&] {
        impl.built += 1;
        return detail::stencil::generate(impl.params, impl.operation, impl.options, c);
      },
      names, options);
  const std::size_t local = program->local_size[c.device];
  const bool reducing = target.out != nullptr;
  const std::size_t item = reducing ? itemsize(impl.options.reduction->dtype) : 0;
  std::optional<detail::codegen::Scratch> partials;
  std::size_t groups = 0;

  detail::codegen::ArgPack pack;
  for (std::size_t k = 0; k < impl.params.size(); ++k) {
    const Operand& a = args[k];
    if (!a.is_array()) {
      pack.bytes(a.bytes_as(c.dtypes[k], impl.what[k]));
      continue;
    }
    const Array& x = a.array();
    pack.array(x);
    if (c.kinds[k] != ParamKind::field) continue;
    // Element strides in the three slots and of the components.
    for (std::size_t s = 0; s < 3; ++s) {
      const std::size_t axis = s + c.D;  // slot s holds axis s - (3 - D)
      std::int64_t stride = 0;
      if (axis >= 3) stride = static_cast<std::int64_t>(x.strides()[axis - 3] / x.itemsize());
      pack.value(stride);
    }
    pack.value(
        static_cast<std::int64_t>(c.components[k] > 0 ? x.strides()[c.D] / x.itemsize() : 0));
  }
  for (std::size_t s = 0; s < 3; ++s) {
    const std::size_t axis = s + c.D;
    pack.value(static_cast<std::int64_t>(axis >= 3 ? c.offset[axis - 3] : 0));
  }
  for (std::size_t s = 0; s < 3; ++s) {
    const std::size_t axis = s + c.D;
    pack.value(static_cast<std::int64_t>(axis >= 3 ? c.domain[axis - 3] : 1));
  }
  pack.value(n);
  std::uint64_t first = 0;
  for (std::size_t b = 0; b < kMaxBoxes; ++b) {
    const Box box = b < boxes.size() ? boxes[b] : Box{};
    for (std::size_t s = 0; s < 3; ++s) pack.value(box.start[s]);
    pack.value(static_cast<std::uint64_t>(box.extent[1]));
    pack.value(static_cast<std::uint64_t>(box.extent[2]));
    pack.value(first);  // the region's index of the box's first point
    first += b < boxes.size() ? static_cast<std::uint64_t>(box.points()) : 0;
  }
  if (n > 0) {
    // 32-bit indices and element offsets when the region's points, and every field's buffer
    // counted from its allocation's start (the block and its halo, where its reads stay), stay
    // below 2^31 elements.
    bool narrow = n < (std::uint64_t{1} << 31);
    for (std::size_t k = 0; k < impl.params.size(); ++k) {
      if (c.kinds[k] != ParamKind::field) continue;
      const Array& x = args[k].array();
      narrow =
          narrow && (x.data().offset() + x.data().size()) / x.itemsize() < (std::uint64_t{1} << 31);
    }
    const std::string kernel = base + (reducing ? "_r" : "") + (narrow ? "" : "_i64");
    const std::size_t resident = program->resident(kernel, c.device);
    groups = std::clamp<std::uint64_t>(detail::ceil_div(n, local), 1, resident);
    if (reducing) {
      partials.emplace(queue, c.device, groups * item);
      pack.buffer(partials->buffer());
    }
    detail::codegen::launch(program->kernel(kernel), queue, c.device, groups, local, pack);
  }
  if (reducing) {
    // One group reduces the partial values (none for an empty region: the identity).
    if (!partials) partials.emplace(queue, c.device, item);
    detail::codegen::ArgPack fin;
    fin.buffer(partials->buffer());
    fin.value(static_cast<std::uint64_t>(groups));
    fin.array(target.out->view(target.index, {1}));
    fin.value(static_cast<int>(target.accumulate ? 1 : 0));
    detail::codegen::launch(program->kernel(base + "_fin"), queue, c.device, 1, local, fin);
  }
}

}  // namespace

void StencilKernel::operator()(const Queue& queue, std::span<const Operand> args,
                               const StencilGeometry& geometry, StencilRegion region) const {
  enqueue(*impl_, queue, args, geometry, region, {});
}

void StencilKernel::reduce(const Queue& queue, std::span<const Operand> args,
                           const StencilGeometry& geometry, const Array& out, std::size_t index,
                           StencilRegion region, bool accumulate) const {
  enqueue(*impl_, queue, args, geometry, region,
          {.out = &out, .index = index, .accumulate = accumulate});
}

std::optional<Dtype> StencilKernel::reduction_dtype() const {
  if (!impl_->options.reduction) return std::nullopt;
  return impl_->options.reduction->dtype;
}

}  // namespace skein
