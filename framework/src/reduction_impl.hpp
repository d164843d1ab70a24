// SPDX-License-Identifier: BSD-3-Clause
// What the files of ReductionKernel (skein/reduction.hpp) share: the kernel's Impl, a call
// resolved against its inputs, and the entry points from one file into another.
//   reduction_kernel.cpp     the kernel: resolving a call, its programs, the whole-array call (and
//                            its kept plans), the test switches of reduction_paths.hpp
//   reduction_launch.cpp     enqueuing the fast and deterministic programs' kernels
//   reduction_pieces.cpp     reductions in pieces: partial values and their finish, deterministic
//                            records and their combine, one reduction over a queue's devices
//   reduction_axes.cpp       reductions along axes: the 2-D kernels and the n-d ones, planned
//                            and generated
//   reduction_source.cpp     what every generated program of a reduction starts with, and the
//                            render of a program's skeleton with the pieces of code its kernels
//                            share (the skeletons: framework/src/kernels/reduction_*.tmpl)
//   reduction_source_fast.cpp, reduction_source_det.cpp   the whole-array programs' sources
//   reduction_builtins.cpp   sum, min, max, dot, nrm2 and their kernels
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "arithmetic.hpp"
#include "codegen/launch.hpp"
#include "codegen/layout.hpp"
#include "codegen/params.hpp"
#include "codegen/programs.hpp"
#include "kernel_operands.hpp"
#include "skein/reduction.hpp"
#include "skein/template.hpp"

namespace skein::detail::red {

// The plan of a whole-array reduction (fast mode) kept from a call that went the full way, for
// later calls with the same key (codegen::CallKey over the inputs).
struct FastPlan {
  codegen::CallKey key;
  const void* context = nullptr;  // the context's Impl; alive while `program` is
  std::weak_ptr<const codegen::CompiledProgram>
      program;                 // weak: the program cache decides its life
  const Kernel* p1 = nullptr;  // in *program
  const Kernel* p2 = nullptr;
  std::size_t device = 0, groups = 0, local = 0, reduce_size = 0;
  bool one_launch = false;  // the program has the one-launch code (used when groups > 1)
  Dtype out_dtype = Dtype::float32;
  std::vector<Dtype> dtypes;        // per input
  std::vector<std::uint64_t> tail;  // p1's values after the inputs (size, layout)
};

}  // namespace skein::detail::red

namespace skein {

struct ReductionKernel::Impl {
  std::vector<detail::codegen::ParamDecl> params;  // the inputs
  detail::codegen::ParamDecl out;
  std::string map_expr, reduce_expr, identity;
  ReductionOptions options;
  std::uint64_t owner = detail::codegen::new_cache_owner();
  mutable std::atomic<std::size_t> built{0};  // programs generated (cache misses)
  std::vector<std::string> what;  // per input, for conversion errors: "argument 'x' of kernel 'k'"
  // The plans of the last few call shapes of whole-array reductions (most recent first).
  static constexpr std::size_t kFastPlans = 8;
  mutable std::mutex fast_mutex;
  mutable std::vector<std::shared_ptr<const detail::red::FastPlan>> fast_plans;

  ~Impl() { detail::codegen::drop_cache_owner(owner); }
  const std::string& name() const { return options.name; }
};

}  // namespace skein

namespace skein::detail::red {

// Resolved::layout_index of an input that is not among the non-raw arrays.
inline constexpr std::size_t npos = static_cast<std::size_t>(-1);

inline unsigned log2_exact(std::uint64_t v) { return static_cast<unsigned>(std::countr_zero(v)); }

// The highest level of the canonical tree over `total` elements: its root.
inline std::uint32_t max_level(std::uint64_t total) {
  return total <= 1 ? 0 : static_cast<std::uint32_t>(std::bit_width(total - 1));
}

// What a call resolves to.
struct Resolved {
  std::vector<Operand> args;   // the inputs
  std::vector<Dtype> dtypes;   // per input
  std::vector<bool> is_array;  // per input
  codegen::Bindings bindings;
  Dtype out_dtype = Dtype::float32;
  bool struct_reduce = false;
  Dtype reduce_dtype = Dtype::float32;  // when not a struct (compute dtype)
  std::size_t reduce_size = 0, reduce_align = 0;
  std::size_t record_size = 0;
  std::optional<std::size_t> device;
  Shape shape;  // the inputs' broadcast shape
  codegen::Layout layout;
  std::vector<std::size_t> layout_index;  // per input
  std::size_t layout_count = 0;
  std::uint64_t n = 0;
  std::size_t W = 1, U = 1;  // contiguous: elements per 16-byte chunk, chunks per thread
  std::string types_sig;     // the dtypes, for every program's signature
};

// --- reduction_kernel.cpp ------------------------------------------------------------------------

// The call's inputs checked and resolved; `out` (when given) binds the output's placeholder too.
// `launch_device`: the device of a per-device launch, where every array must be.
Resolved resolve(const ReductionKernel::Impl& impl, const Queue& queue,
                 std::span<const Operand> inputs, const std::optional<Array>& out, const char* call,
                 std::optional<std::size_t> launch_device = std::nullopt);

// The programs of a reduction: whole-array fast (K_p1, K_p2), deterministic (K_dleaf, K_dmid,
// K_dcombine), and along one axis of a 2-D array (K_rows, K_cols, K_cols2).
enum class Mode { fast, det, axis };
std::shared_ptr<const codegen::CompiledProgram> program_for(const ReductionKernel::Impl& impl,
                                                            const Context& context,
                                                            const Resolved& r, Mode mode);

// Whether the groups of K_p1 can finish in one launch on every device of the context (the fast
// program is built once for them all), and the compiler options that takes.
std::optional<std::vector<std::string>> one_launch_options(const Context& context);

// `out` checked (a contiguous array of `dtype` and `shape`'s size on `device`, of the queue's
// context), or a new array.
Array output_for(const std::optional<Array>& out, const Queue& queue, Dtype dtype, Shape shape,
                 std::size_t device, const char* call, const std::string& kname);

// --- reduction_launch.cpp ------------------------------------------------------------------------

// K_p1's _skein_finish: what its groups do with their values.
enum P1Finish : std::int32_t {
  kPartials = 0,  // each writes its partial value (K_p2 goes on)
  kAlone = 1,     // the only group writes the result
  kLastGroup = 2  // each writes its partial value; the last to finish reduces them to the result
};

// The inputs as kernel arguments: arrays, and scalars converted to their parameter's dtype.
void pack_inputs(codegen::ArgPack& pack, const ReductionKernel::Impl& impl, const Resolved& r);
// The strided path's layout values: the shape, then every input's strides.
void pack_strides(codegen::ArgPack& pack, const Resolved& r);
// The device of the array inputs; with scalars only, the queue's first device.
std::size_t device_of(const Resolved& r, const Queue& queue);

// Byte layout of the scratch memory of one call: regions at 256-byte boundaries.
struct ScratchLayout {
  std::size_t total = 0;
  std::size_t add(std::size_t bytes) {
    const std::size_t at = total;
    total += round_up(std::max<std::size_t>(bytes, 1), 256);
    return at;
  }
};

// The values p1 takes after its inputs: the size, then the vector loop's start and chunk count
// (contiguous) or the shape and strides.
std::vector<std::uint64_t> p1_tail(const ReductionKernel::Impl& impl, const Queue& queue,
                                   std::size_t d, const Resolved& r);
// The fast first pass on one device into `part` (groups partial values); returns the group count.
// With `finish`, the result goes post-mapped into that array too: from the one group, or (with
// `counter`, a program with the one-launch code) from the last of several.
std::size_t enqueue_p1(const ReductionKernel::Impl& impl, const Queue& queue, std::size_t d,
                       const Resolved& r, const codegen::CompiledProgram& prog, const Buffer& part,
                       std::size_t part_offset, std::size_t groups, const Array* finish = nullptr,
                       const Buffer* counter = nullptr);
// How many groups K_p1 runs on device d.
std::size_t p1_groups(const ReductionKernel::Impl& impl, const Resolved& r,
                      const codegen::CompiledProgram& prog, std::size_t d);
// One group of K_p2 reduces `count` partial values at (in, in_offset): into the output `y`
// (post-mapped) with `finish`, else as a partial value into (part, part_offset).
void enqueue_p2(const ReductionKernel::Impl& impl, const Queue& queue, std::size_t d,
                const codegen::CompiledProgram& prog, const Buffer& in, std::size_t in_offset,
                std::uint64_t count, bool finish, const Buffer& part, std::size_t part_offset,
                const Array* y);
// Deterministic records of one piece (at `offset` of `total` elements): passes over tiles, into
// `recs` (cleared first), handing values up through the scratch regions up_a and up_b.
void enqueue_records(const ReductionKernel::Impl& impl, const Queue& queue, std::size_t d,
                     const Resolved& r, const codegen::CompiledProgram& prog, std::uint64_t offset,
                     std::uint64_t total, const Buffer& recs, std::size_t recs_offset,
                     const Buffer& scratch, std::size_t up_a, std::size_t up_b);
// Scratch bytes for the up-arrays of a piece of r.n elements.
std::size_t up_bytes(const Resolved& r, std::size_t L);
// K_dcombine: `count` records at (recs, recs_offset) of a reduction over `total` elements into y.
void enqueue_combine(const ReductionKernel::Impl& impl, const Queue& queue, std::size_t d,
                     const codegen::CompiledProgram& prog, const Buffer& recs,
                     std::size_t recs_offset, std::uint64_t count, std::uint64_t total,
                     const Array& y);

// --- reduction_axes.cpp --------------------------------------------------------------------------

// The reduced axes of a per-axis call (flags per dimension), checked.
std::vector<bool> reduced_axes(const ReductionKernel::Impl& impl, const ReductionArgs& args,
                               std::size_t ndim, const Shape& shape, const char* call);
// A reduction along the `reduced` axes of r.shape on device d: the 2-D kernels for one axis of a
// 2-D shape, the n-d ones otherwise.
Array reduce_along(const ReductionKernel::Impl& impl, const Queue& queue, const Resolved& r,
                   std::size_t d, const std::vector<bool>& reduced, const ReductionArgs& args,
                   const char* call);
// The source of the 2-D program (K_rows, K_cols, K_cols2) for groups of L items.
std::string axis_source(const ReductionKernel::Impl& impl, const Resolved& r, std::size_t L);

// --- reduction_source.cpp ------------------------------------------------------------------------

// What every program of a reduction starts with: types, the preamble, and the map, reduce,
// identity and post-map functions.
std::string common_source(const ReductionKernel::Impl& impl, const Resolved& r, bool deterministic);
// The globals every program's skeleton takes for its inputs and layout (reduction_defs.tmpl says
// which): per input its name, role, types, pointer line and load conversion; the indents; the
// inputs' parameters joined for a signature.
RenderGlobals input_globals(const ReductionKernel::Impl& impl, const Resolved& r);
// The skeleton `name` (reduction_fast.tmpl, ...) rendered with the shared defs of
// reduction_defs.tmpl appended (the engine has no include).
std::string render_reduction(std::string_view name, const RenderGlobals& globals);
// Per input, the uint4 words of its view of W elements in a contiguous program (the `nvec` of
// the whole-array skeletons): W times the item size over 16 for a non-raw array, else 0.
std::vector<std::int64_t> vector_words(const ReductionKernel::Impl& impl, const Resolved& r,
                                       std::size_t W);
// Layout parameters of the general (strided) path: the shape, then every layout's strides.
std::vector<std::string> strided_params(const Resolved& r);

// --- reduction_source_fast.cpp, reduction_source_det.cpp ---------------------------------------

// The fast whole-array program, K_p1 (elements -> one partial value per group) and K_p2 (partial
// values -> one), for groups of L items. `one_launch`: K_p1 has the code of kLastGroup (which
// compiles on CUDA and on OpenCL C 2.0 / 3.0 with device-scope fences; program_for passes the
// -cl-std).
std::string fast_source(const ReductionKernel::Impl& impl, const Resolved& r, std::size_t L,
                        bool one_launch);

// The deterministic program's tiles: a leaf pass of L threads with U sub-tiles of W elements,
// later passes of L threads with Um values each.
struct DetGeometry {
  std::size_t L = 1, W = 1, U = 1;  // leaf pass
  std::size_t Um = 1;               // later passes (one value per thread)
  std::uint64_t S0() const { return std::uint64_t{L} * W * U; }
  std::uint64_t Sm() const { return std::uint64_t{L} * Um; }
};
DetGeometry det_geometry(const Resolved& r, std::size_t L);
// The deterministic program: K_dleaf (elements), K_dmid (values of a previous pass), K_dcombine.
std::string det_source(const ReductionKernel::Impl& impl, const Resolved& r, std::size_t L);

}  // namespace skein::detail::red
