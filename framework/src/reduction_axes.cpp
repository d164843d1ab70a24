// SPDX-License-Identifier: BSD-3-Clause
// Reductions along axes (ReductionArgs::axis / axes). One axis of a 2-D shape: K_rows (axis 1, a
// group per row), K_cols and K_cols2 (axis 0: partial values per chunk of rows and column, then a
// thread per column). Any other set of axes of any shape: K_axg (a group per output) and K_axt (a
// thread per output, its elements in order) over the broadcast shape split into kept and reduced
// dimensions. Both run in an order fixed by the shape, so they are deterministic on one device.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "codegen/types.hpp"
#include "reduction_impl.hpp"
#include "skein/ctypes.hpp"
#include "skein/detail/errors.hpp"
#include "skein/template.hpp"

namespace skein::detail::red {

// --- 2-D program: K_rows (axis 1), K_cols + K_cols2 (axis 0) -------------------------------------

// The skeleton reduction_axis.tmpl says how the kernels go; this computes its values.
std::string axis_source(const ReductionKernel::Impl& impl, const Resolved& r, std::size_t L) {
  RenderGlobals g = input_globals(impl, r);
  g.insert({{"L", static_cast<std::int64_t>(L)},
            {"layouts", static_cast<std::int64_t>(r.layout_count)},
            {"p_y", codegen::array_param("_y")},
            {"p_part", codegen::array_param("_part")}});
  const std::string src =
      common_source(impl, r, false) + render_reduction("reduction_axis.tmpl", g);
  // Then the user's globals, over the whole text, as for every generated kernel.
  return render(src, impl.options.globals, impl.name());
}

namespace {

// One axis (0 or 1) of a 2-D shape.
Array reduce_axis_2d(const ReductionKernel::Impl& impl, const Queue& queue, const Resolved& r,
                     std::size_t d, std::size_t axis, const ReductionArgs& args, const char* call) {
  const std::uint64_t R = r.shape[0], C = r.shape[1];
  Array y =
      output_for(args.out, queue, r.out_dtype, Shape{axis == 0 ? C : R}, d, call, impl.name());
  if (y.size() == 0) return y;
  auto prog = program_for(impl, queue.context(), r, Mode::axis);
  const std::size_t L = prog->local_size[d];
  codegen::ArgPack pack;
  pack_inputs(pack, impl, r);
  pack.value(R);
  pack.value(C);
  // Byte strides of each non-raw input over the (R, C) shape (0 where broadcast).
  for (std::size_t k = 0; k < impl.params.size(); ++k) {
    if (r.layout_index[k] == npos) continue;
    const Array& a = r.args[k].array();
    const std::size_t lead = 2 - a.ndim();
    for (std::size_t dim = 0; dim < 2; ++dim) {
      std::uint64_t s = 0;
      if (dim >= lead && a.shape()[dim - lead] != 1) s = a.strides()[dim - lead];
      pack.value(s);
    }
  }
  if (axis == 1) {
    pack.array(y);
    const std::size_t groups =
        std::clamp<std::uint64_t>(R, 1, prog->resident(impl.name() + "_rows", d));
    codegen::launch(prog->kernel(impl.name() + "_rows"), queue, d, groups, L, pack);
    return y;
  }
  const std::uint64_t ncb = ceil_div(C, L);
  const std::uint64_t resident = prog->resident(impl.name() + "_cols", d);
  std::uint64_t chunks =
      std::clamp<std::uint64_t>(resident / ncb, 1, std::max<std::uint64_t>(R / 16, 1));
  const std::uint64_t rpc = std::max<std::uint64_t>(ceil_div(R, chunks), 1);
  chunks = std::max<std::uint64_t>(ceil_div(R, rpc), 1);
  pack.value(rpc);
  pack.value(ncb);
  codegen::Scratch scratch(queue, d, chunks * C * r.reduce_size);
  pack.buffer(scratch.buffer());
  codegen::launch(prog->kernel(impl.name() + "_cols"), queue, d, ncb * chunks, L, pack);
  codegen::ArgPack pack2;
  pack2.buffer(scratch.buffer());
  pack2.value(C);
  pack2.value(chunks);
  pack2.array(y);
  codegen::launch(prog->kernel(impl.name() + "_cols2"), queue, d, ncb, L, pack2);
  return y;
}

// --- n-d program: K_axg (a group per output), K_axt (a thread per output) ---------------------

// The broadcast shape split into kept dimensions (the output's, in order) and reduced ones, each
// list with merged dimensions where every input allows it; output element o and reduced element
// j (both flat, C order) give each input's byte offset, and the flat index `i` in the broadcast
// shape is one more "input" with element strides.
struct AxesPlan {
  std::vector<std::uint64_t> kept, red;  // dimension sizes after merging
  // Per layout input, then one more for the flat index: strides over kept / reduced dimensions.
  std::vector<std::vector<std::uint64_t>> kept_strides, red_strides;
  Shape out_shape;
  std::uint64_t M = 1, N = 1;  // outputs, reduced elements per output
};

// Drops dimensions of size 1 and merges neighbours (a, b) where stride[a] == stride[b] * size[b]
// for every input.
void merge_dims(std::vector<std::uint64_t>& sizes,
                std::vector<std::vector<std::uint64_t>>& strides) {
  std::vector<std::uint64_t> ns;
  std::vector<std::vector<std::uint64_t>> nst(strides.size());
  for (std::size_t t = 0; t < sizes.size(); ++t) {
    if (sizes[t] == 1) continue;
    bool merge = !ns.empty();
    for (std::size_t j = 0; merge && j < strides.size(); ++j) {
      merge = nst[j].back() == strides[j][t] * sizes[t];
    }
    if (merge) {
      ns.back() *= sizes[t];
      for (std::size_t j = 0; j < strides.size(); ++j) nst[j].back() = strides[j][t];
    } else {
      ns.push_back(sizes[t]);
      for (std::size_t j = 0; j < strides.size(); ++j) nst[j].push_back(strides[j][t]);
    }
  }
  sizes = std::move(ns);
  strides = std::move(nst);
}

AxesPlan plan_axes(const ReductionKernel::Impl& impl, const Resolved& r,
                   const std::vector<bool>& reduced) {
  const std::size_t D = r.shape.size();
  const std::size_t layouts = r.layout_count + 1;
  std::vector<std::vector<std::uint64_t>> full(layouts, std::vector<std::uint64_t>(D, 0));
  for (std::size_t k = 0; k < impl.params.size(); ++k) {
    if (r.layout_index[k] == npos) continue;
    const Array& a = r.args[k].array();
    const std::size_t lead = D - a.ndim();
    for (std::size_t dim = lead; dim < D; ++dim) {
      if (a.shape()[dim - lead] != 1) full[r.layout_index[k]][dim] = a.strides()[dim - lead];
    }
  }
  std::uint64_t e = 1;
  for (std::size_t dim = D; dim-- > 0;) {
    full[layouts - 1][dim] = e;
    e *= r.shape[dim];
  }
  AxesPlan p;
  p.kept_strides.resize(layouts);
  p.red_strides.resize(layouts);
  for (std::size_t dim = 0; dim < D; ++dim) {
    auto& sizes = reduced[dim] ? p.red : p.kept;
    auto& strides = reduced[dim] ? p.red_strides : p.kept_strides;
    sizes.push_back(r.shape[dim]);
    for (std::size_t j = 0; j < layouts; ++j) strides[j].push_back(full[j][dim]);
    if (reduced[dim]) {
      p.N *= r.shape[dim];
    } else {
      p.M *= r.shape[dim];
      p.out_shape.push_back(r.shape[dim]);
    }
  }
  if (p.out_shape.empty()) p.out_shape = {1};
  merge_dims(p.kept, p.kept_strides);
  merge_dims(p.red, p.red_strides);
  return p;
}

// The skeleton reduction_axes.tmpl says how the kernels go; this computes its values, for `nk`
// kept and `nr` reduced dimensions (after merging).
std::string axes_source(const ReductionKernel::Impl& impl, const Resolved& r, std::size_t L,
                        std::size_t nk, std::size_t nr) {
  RenderGlobals g = input_globals(impl, r);
  // The inputs' layouts, then the output's (its offset is the element index the map sees).
  g.insert({{"L", static_cast<std::int64_t>(L)},
            {"nk", static_cast<std::int64_t>(nk)},
            {"nr", static_cast<std::int64_t>(nr)},
            {"layouts", static_cast<std::int64_t>(r.layout_count + 1)},
            {"p_y", codegen::array_param("_y")}});
  const std::string src =
      common_source(impl, r, false) + render_reduction("reduction_axes.tmpl", g);
  // Then the user's globals, over the whole text, as for every generated kernel.
  return render(src, impl.options.globals, impl.name());
}

Array reduce_n_axes(const ReductionKernel::Impl& impl, const Queue& queue, const Resolved& r,
                    std::size_t d, const std::vector<bool>& reduced, const ReductionArgs& args,
                    const char* call) {
  AxesPlan p = plan_axes(impl, r, reduced);
  // Fewer programs: dimension counts rounded up to 2 or 4 with leading dimensions of size 1, which
  // the kernels skip (a branch the same for every thread).
  auto pad = [](std::vector<std::uint64_t>& sizes,
                std::vector<std::vector<std::uint64_t>>& strides) {
    const std::size_t n = sizes.size() <= 2 ? 2 : sizes.size() <= 4 ? 4 : sizes.size();
    const std::size_t extra = n - sizes.size();
    sizes.insert(sizes.begin(), extra, 1);
    for (auto& st : strides) st.insert(st.begin(), extra, 0);
  };
  pad(p.kept, p.kept_strides);
  pad(p.red, p.red_strides);
  Array y = output_for(args.out, queue, r.out_dtype, p.out_shape, d, call, impl.name());
  if (p.M == 0) return y;
  const std::size_t nk = p.kept.size(), nr = p.red.size();
  const std::size_t L = codegen::group_size_for(queue.context());
  ProgramOptions options;
  options.name = impl.name();
  const std::string sig = fmt::format("red1|axes|k{}|r{}|L{}{}", nk, nr, L, r.types_sig);
  auto prog = codegen::cached_program(
      impl.owner, queue.context(), sig,
      [&] {
        impl.built += 1;
        return axes_source(impl, r, L, nk, nr);
      },
      {impl.name() + "_axg", impl.name() + "_axt"}, options);
  codegen::ArgPack pack;
  pack_inputs(pack, impl, r);
  pack.value(p.M);
  pack.value(p.N);
  for (auto v : p.kept) pack.value(v);
  for (auto v : p.red) pack.value(v);
  for (std::size_t j = 0; j < p.kept_strides.size(); ++j) {
    for (auto v : p.kept_strides[j]) pack.value(v);
    for (auto v : p.red_strides[j]) pack.value(v);
  }
  pack.array(y);
  const std::size_t Ld = prog->local_size[d];
  const std::uint64_t resident = prog->resident(impl.name() + "_axg", d);
  // Short reductions, or enough outputs to fill the device with threads: a thread per output.
  if (p.N < Ld || p.M >= resident * Ld) {
    const std::uint64_t groups =
        std::clamp<std::uint64_t>(ceil_div(p.M, Ld), 1, prog->resident(impl.name() + "_axt", d));
    codegen::launch(prog->kernel(impl.name() + "_axt"), queue, d, groups, Ld, pack);
  } else {
    const std::uint64_t groups = std::clamp<std::uint64_t>(p.M, 1, resident);
    codegen::launch(prog->kernel(impl.name() + "_axg"), queue, d, groups, Ld, pack);
  }
  return y;
}

}  // namespace

// The reduced axes of a per-axis call (sorted flags per dimension), checked.
std::vector<bool> reduced_axes(const ReductionKernel::Impl& impl, const ReductionArgs& args,
                               std::size_t ndim, const Shape& shape, const char* call) {
  if (args.axis && !args.axes.empty()) {
    detail::raise_in(SKEIN_HERE, call, "Give either axis or axes.",
                     "kernel '{}': both axis ({}) and axes ({}) were given", impl.name(),
                     *args.axis, fmt::join(args.axes, ", "));
  }
  std::vector<bool> reduced(ndim, false);
  const std::vector<std::size_t> axes =
      args.axis ? std::vector<std::size_t>{*args.axis} : args.axes;
  for (std::size_t a : axes) {
    if (a >= ndim) {
      detail::raise_in(SKEIN_HERE, call, "Give axes below the number of dimensions.",
                       "kernel '{}': axis {} of inputs of shape {} ({} dimension(s))", impl.name(),
                       a, to_string(shape), ndim);
    }
    if (reduced[a]) {
      detail::raise_in(SKEIN_HERE, call, "Name each axis once.",
                       "kernel '{}': axis {} appears twice in axes ({})", impl.name(), a,
                       fmt::join(axes, ", "));
    }
    reduced[a] = true;
  }
  return reduced;
}

Array reduce_along(const ReductionKernel::Impl& impl, const Queue& queue, const Resolved& r,
                   std::size_t d, const std::vector<bool>& reduced, const ReductionArgs& args,
                   const char* call) {
  if (r.shape.size() != 2 || reduced[0] == reduced[1])
    return reduce_n_axes(impl, queue, r, d, reduced, args, call);
  return reduce_axis_2d(impl, queue, r, d, reduced[0] ? 0 : 1, args, call);
}

}  // namespace skein::detail::red
