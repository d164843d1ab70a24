// SPDX-License-Identifier: BSD-3-Clause
// BLAS front end: checks the arrays, turns Skein's row-major arrays into column-major BLAS
// operands (see the comment in <skein/blas.hpp>), handles sizes of zero itself (BLAS libraries
// differ there: CLBlast rejects them) and dispatches to the context's BlasAdapter.
#include "skein/blas.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <climits>
#include <initializer_list>
#include <mutex>

#include "blas_adapter.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"
#include "skein/config.hpp"

namespace skein::blas {

namespace {

using detail::BlasMatrix;
using detail::BlasMemory;
using detail::BlasOp;
using detail::BlasVector;
using detail::GemmArgs;

// An argument and its name in messages.
struct Arg {
  const char* name;
  const Array& array;
};

std::string strides_text(const Array& a) {
  return fmt::format("({})", fmt::join(a.strides(), ", "));
}

void check_ndim(const char* call, const Arg& arg, std::size_t ndim, const char* hint) {
  if (arg.array.ndim() != ndim) {
    detail::raise_in(SKEIN_HERE, call, hint, "{} has shape {} ({}-D); {}-D is needed", arg.name,
                     to_string(arg.array.shape()), arg.array.ndim(), ndim);
  }
}

// float32 or float64, the same for every argument.
Dtype check_dtypes(const char* call, std::initializer_list<Arg> args) {
  for (const Arg& arg : args) {
    const Dtype d = arg.array.dtype();
    if (d != Dtype::float32 && d != Dtype::float64) {
      detail::raise_in(SKEIN_HERE, call,
                       "Convert the data to float32 or float64 first (e.g. with a kernel using "
                       "functions::cast).",
                       "{} has dtype {}; BLAS takes float32 and float64", arg.name, name(d));
    }
  }
  const Dtype dtype = args.begin()->array.dtype();
  for (const Arg& arg : args) {
    if (arg.array.dtype() != dtype) {
      std::vector<std::string> all;
      for (const Arg& a : args) {
        all.push_back(fmt::format("{} is {}", a.name, name(a.array.dtype())));
      }
      detail::raise_in(SKEIN_HERE, call, "Use one dtype for all operands.",
                       "the operands' dtypes differ: {}", fmt::join(all, ", "));
    }
  }
  return dtype;
}

// The one device all arguments are on, which must be in the queue.
std::size_t check_devices(const char* call, const Queue& queue, std::initializer_list<Arg> args) {
  const void* context = detail::impl_of(queue.context()).get();
  for (const Arg& arg : args) {
    if (arg.array.data().context_id() != context) {
      detail::raise_in(SKEIN_HERE, call, "Use arrays and a queue of one context.",
                       "{} belongs to another context than the queue", arg.name);
    }
  }
  const std::size_t device = args.begin()->array.device_idx();
  for (const Arg& arg : args) {
    if (arg.array.device_idx() != device) {
      std::vector<std::string> all;
      for (const Arg& a : args) {
        all.push_back(fmt::format("{} on {}", a.name, a.array.device_idx()));
      }
      detail::raise_in(SKEIN_HERE, call,
                       "Copy the operands to one device (Array::set), or use a view from another "
                       "device where it can reach the memory (Array::single_device_view).",
                       "the operands are on different devices: {}", fmt::join(all, ", "));
    }
  }
  if (!queue.has_device(device)) {
    detail::raise_in(SKEIN_HERE, call, "Pass a queue that includes the operands' device.",
                     "the operands are on device {}, which is not in the queue (its devices: {})",
                     device, fmt::join(queue.device_idxs(), ", "));
  }
  return device;
}

void check_fits(const char* call, const char* name, const char* what, std::size_t value) {
  if (value > static_cast<std::size_t>(INT_MAX)) {
    detail::raise_in(SKEIN_HERE, call, "Split the operation into smaller ones.",
                     "{}'s {} is {}, more than the 2^31 - 1 that BLAS's interface takes", name,
                     what, value);
  }
}

BlasMemory memory_of(const char* call, const Arg& arg) {
  const Array& a = arg.array;
  const std::size_t offset = a.data().offset() + a.offset();
  if (offset % a.itemsize() != 0) {
    detail::raise_in(SKEIN_HERE, call, "Start views on an element boundary.",
                     "{} starts at byte {} of its allocation, which is not a multiple of its "
                     "itemsize {}",
                     arg.name, offset, a.itemsize());
  }
  return {a.data().adapter().get(), offset};
}

struct Vec {
  BlasVector v;
  std::size_t n = 0;
};

// A 1-D array with a positive stride; with `any_shape`, also a contiguous array of any shape.
Vec vector_of(const char* call, const Arg& arg, bool any_shape) {
  const Array& a = arg.array;
  Vec out;
  if (a.ndim() != 1) {
    if (!any_shape || !a.is_contiguous()) {
      detail::raise_in(SKEIN_HERE, call,
                       any_shape ? "Pass a 1-D array, or a contiguous array of any shape."
                                 : "Pass a 1-D array (Array::reshape, or a view of one row).",
                       "{} has shape {} and strides {}: {}", arg.name, to_string(a.shape()),
                       strides_text(a),
                       any_shape ? "it is neither 1-D nor contiguous" : "a vector must be 1-D");
    }
    out.n = a.size();
  } else {
    out.n = a.shape()[0];
    if (out.n > 1) {
      const std::size_t stride = a.strides()[0];
      if (stride == 0 || stride % a.itemsize() != 0) {
        detail::raise_in(SKEIN_HERE, call, "Copy it into a contiguous array first.",
                         "{} has a stride of {} bytes; BLAS needs a positive multiple of its "
                         "itemsize {}",
                         arg.name, stride, a.itemsize());
      }
      out.v.inc = static_cast<std::int64_t>(stride / a.itemsize());
    }
  }
  check_fits(call, arg.name, "length", out.n);
  check_fits(call, arg.name, "increment", static_cast<std::size_t>(out.v.inc));
  out.v.memory = memory_of(call, arg);
  return out;
}

struct Mat {
  BlasMatrix m;
  std::size_t rows = 0, cols = 0;  // the array's shape (its last two axes)
  bool col_major = false;          // columns contiguous (a transposed view)
};

// The matrix made of axes `axis` and `axis + 1`: rows contiguous (row-major, ld = the row stride)
// or columns contiguous (column-major, ld = the column stride). An axis of length 1 has no
// meaningful stride, so it never disqualifies a layout.
Mat matrix_of(const char* call, const Arg& arg, std::size_t axis) {
  const Array& a = arg.array;
  const std::size_t item = a.itemsize();
  const std::size_t r = a.shape()[axis], c = a.shape()[axis + 1];
  const std::size_t s0 = a.strides()[axis], s1 = a.strides()[axis + 1];
  Mat out;
  out.rows = r;
  out.cols = c;
  out.m.memory = memory_of(call, arg);
  if (r == 0 || c == 0) {
    out.m.ld = static_cast<std::int64_t>(std::max<std::size_t>(c, 1));  // nothing is accessed
  } else if ((c == 1 || s1 == item) && (r == 1 || (s0 % item == 0 && s0 / item >= c))) {
    out.m.ld = static_cast<std::int64_t>(r == 1 ? c : s0 / item);
  } else if ((r == 1 || s0 == item) && (c == 1 || (s1 % item == 0 && s1 / item >= r))) {
    out.col_major = true;
    out.m.ld = static_cast<std::int64_t>(c == 1 ? r : s1 / item);
  } else {
    detail::raise_in(
        SKEIN_HERE, call,
        "Copy it into a contiguous array first, or pass a view whose rows or columns are "
        "contiguous.",
        "{} has shape {} and strides {} (bytes, itemsize {}): BLAS needs the rows or the columns "
        "of a matrix contiguous, and the other stride at least a row (a column) long",
        arg.name, to_string(a.shape()), strides_text(a), item);
  }
  check_fits(call, arg.name, "number of rows", r);
  check_fits(call, arg.name, "number of columns", c);
  check_fits(call, arg.name, "leading dimension", static_cast<std::size_t>(out.m.ld));
  return out;
}

// A 3-D array (batch, rows, cols). An output's matrices must not overlap one another; inputs may
// share one (batch stride 0).
Mat batched_matrix_of(const char* call, const Arg& arg, bool output) {
  const Array& a = arg.array;
  Mat out = matrix_of(call, arg, 1);
  // A single matrix gets the stride of a contiguous batch: CLBlast rejects 0 there.
  const std::size_t outer = std::max<std::size_t>(out.col_major ? out.cols : out.rows, 1);
  out.m.batch_stride = out.m.ld * static_cast<std::int64_t>(outer);
  if (a.shape()[0] > 1) {
    const std::size_t item = a.itemsize();
    const std::size_t stride = a.strides()[0];
    if (stride % item != 0) {
      detail::raise_in(SKEIN_HERE, call, "Copy it into a contiguous array first.",
                       "{} has a batch stride of {} bytes, not a multiple of its itemsize {}",
                       arg.name, stride, item);
    }
    out.m.batch_stride = static_cast<std::int64_t>(stride / item);
    if (output && out.rows > 0 && out.cols > 0) {
      const std::size_t outer = out.col_major ? out.cols : out.rows;
      const std::size_t inner = out.col_major ? out.rows : out.cols;
      const std::size_t extent = (outer - 1) * static_cast<std::size_t>(out.m.ld) + inner;
      if (stride / item < extent) {
        detail::raise_in(SKEIN_HERE, call, "Write the results into a contiguous array.",
                         "{}'s matrices overlap: its batch stride of {} bytes is less than one "
                         "matrix ({} bytes)",
                         arg.name, stride, extent * item);
      }
    }
  }
  return out;
}

// The bytes an array spans in its allocation.
struct Span {
  const void* buffer;
  std::size_t begin, end;
};
Span span_of(const Array& a) {
  const std::size_t begin = a.data().offset() + a.offset();
  if (a.size() == 0) return {a.data().adapter().get(), begin, begin};
  std::size_t last = 0;
  for (std::size_t d = 0; d < a.ndim(); ++d) last += (a.shape()[d] - 1) * a.strides()[d];
  return {a.data().adapter().get(), begin, begin + last + a.itemsize()};
}

bool same_view(const Array& a, const Array& b) {
  const Span sa = span_of(a), sb = span_of(b);
  return sa.buffer == sb.buffer && sa.begin == sb.begin && a.shape() == b.shape() &&
         a.strides() == b.strides();
}

// BLAS reads inputs while it writes the output; shared memory gives undefined results.
void check_no_overlap(const char* call, const Arg& output, std::initializer_list<Arg> inputs) {
  const Span out = span_of(output.array);
  for (const Arg& in : inputs) {
    const Span s = span_of(in.array);
    if (out.buffer == s.buffer && out.begin < s.end && s.begin < out.end) {
      detail::raise_in(SKEIN_HERE, call, "Write the result into a separate array.",
                       "{} shares memory with {} (bytes [{}, {}) and [{}, {}) of one allocation)",
                       output.name, in.name, out.begin, out.end, s.begin, s.end);
    }
  }
}

void check_result(const char* call, const Array& result) {
  if (result.size() != 1) {
    detail::raise_in(
        SKEIN_HERE, call, "Pass a one-element array, e.g. Array::empty(queue, {1}, dtype).",
        "result has shape {}; it must hold exactly one element", to_string(result.shape()));
  }
}

// The context's BLAS, made on first use.
detail::BlasAdapter& adapter_of(const Queue& queue) {
  Context::Impl& impl = *detail::impl_of(queue.context());
  std::lock_guard lock(impl.blas_mutex);
  if (!impl.blas) {
    switch (queue.context().api().id()) {
      case ApiId::cuda:
#if SKEIN_HAS_CUDA
        impl.blas = detail::make_cuda_blas(impl.adapter);
#endif
        break;
      case ApiId::opencl:
#if SKEIN_HAS_OPENCL
        impl.blas = detail::make_opencl_blas(impl.adapter);
#endif
        break;
    }
    if (!impl.blas) {  // a context of an API that is not compiled in cannot exist
      detail::raise<RuntimeError>(
          ErrorInfo{.what = "no BLAS for this context's API", .location = SKEIN_HERE});
    }
  }
  return *impl.blas;
}

// y = beta * y where BLAS would be handed nothing to multiply (an empty op(A) row). beta == 0
// clears y outright, so that NaNs there go too, as BLAS's "y is not read" promises: a contiguous y
// with a fill, a strided one by copying zeros over it (a rare case, worth no more than a
// temporary array).
void scale_vector(detail::BlasAdapter& blas, const Queue& queue, std::size_t device, Dtype dtype,
                  std::size_t n, const BlasVector& y, double beta) {
  if (beta == 1 || n == 0) return;
  detail::QueueAdapter& q = queue.device_queue(device);
  if (beta != 0) {
    blas.scal(q, dtype, n, beta, y);
  } else if (y.inc == 1) {
    q.fill_zero(*y.memory.buffer, y.memory.offset, n * itemsize(dtype));
  } else {
    const Array zeros =
        Array::zeros(queue, {n}, dtype, device, temporaries_pool(queue).allocator());
    blas.copy(q, dtype, n, {memory_of("skein::blas", {"zeros", zeros}), 1}, y);
  }
}

// C = beta * C for `batch` column-major matrices (gemm with k == 0: the product is empty).
void scale_matrices(detail::BlasAdapter& blas, const Queue& queue, std::size_t device, Dtype dtype,
                    std::size_t rows, std::size_t cols, const BlasMatrix& c, std::size_t batch,
                    double beta) {
  const std::size_t item = itemsize(dtype);
  const auto ld = static_cast<std::size_t>(c.ld);
  const bool each_contiguous = ld == rows || cols == 1;
  if (each_contiguous && (batch == 1 || static_cast<std::size_t>(c.batch_stride) == rows * cols)) {
    scale_vector(blas, queue, device, dtype, rows * cols * batch, {c.memory, 1}, beta);
    return;
  }
  for (std::size_t b = 0; b < batch; ++b) {
    BlasMemory base = c.memory;
    base.offset += b * static_cast<std::size_t>(c.batch_stride) * item;
    if (each_contiguous) {
      scale_vector(blas, queue, device, dtype, rows * cols, {base, 1}, beta);
      continue;
    }
    for (std::size_t j = 0; j < cols; ++j) {
      BlasMemory column = base;
      column.offset += j * ld * item;
      scale_vector(blas, queue, device, dtype, rows, {column, 1}, beta);
    }
  }
}

BlasOp op(bool transpose) { return transpose ? BlasOp::t : BlasOp::n; }

// The column-major call for C = alpha * op(A) @ op(B) + beta * C, op(A) m x k, op(B) k x n.
// BLAS reads a row-major matrix as its transpose. With C row-major, BLAS computes
// C.T = op(B).T @ op(A).T: the operands and m, n swap; a row-major operand, which BLAS already
// sees transposed, keeps its flag, and a column-major one flips it. With C column-major the
// operands stay, and a row-major operand flips its flag.
GemmArgs plan_gemm(const Mat& a, bool trans_a, const Mat& b, bool trans_b, const Mat& c,
                   std::size_t m, std::size_t n, std::size_t k) {
  GemmArgs g;
  g.k = k;
  g.c = c.m;
  if (!c.col_major) {
    g.m = n;
    g.n = m;
    g.a = b.m;
    g.b = a.m;
    g.trans_a = op(trans_b != b.col_major);
    g.trans_b = op(trans_a != a.col_major);
  } else {
    g.m = m;
    g.n = n;
    g.a = a.m;
    g.b = b.m;
    g.trans_a = op(trans_a == a.col_major);
    g.trans_b = op(trans_b == b.col_major);
  }
  return g;
}

struct GemmShape {
  std::size_t m, n, k;
};

// op(A) @ op(B) of the last two axes: (m, k) @ (k, n).
GemmShape gemm_shape(const char* call, const Array& a, const Array& b, const GemmOptions& options,
                     std::size_t axis) {
  const std::size_t ar = a.shape()[axis], ac = a.shape()[axis + 1];
  const std::size_t br = b.shape()[axis], bc = b.shape()[axis + 1];
  const GemmShape s{options.trans_a ? ac : ar, options.trans_b ? br : bc,
                    options.trans_a ? ar : ac};
  const std::size_t kb = options.trans_b ? bc : br;
  if (s.k != kb) {
    detail::raise_in(SKEIN_HERE, call, "Check the shapes and the trans_a / trans_b options.",
                     "op(a) is {} x {} and op(b) is {} x {} (a has shape {}, b {}, trans_a={}, "
                     "trans_b={}): the inner dimensions {} and {} differ",
                     s.m, s.k, kb, s.n, to_string(a.shape()), to_string(b.shape()), options.trans_a,
                     options.trans_b, s.k, kb);
  }
  return s;
}

constexpr const char* kGemmNdimHint = "gemm takes 2-D arrays; gemm_batched takes 3-D ones.";
constexpr const char* kBatchedNdimHint =
    "gemm_batched takes 3-D arrays (batch, rows, cols); gemm takes 2-D ones.";

// dot and nrm2: the value on the host (result == nullptr) or into `result`.
template <class Run>
double scalar_result(Dtype dtype, const Array* result, const BlasMemory& device, Run&& run) {
  detail::BlasResult out;
  if (result != nullptr) {
    out.device = device;
    run(out);
    return 0;
  }
  if (dtype == Dtype::float32) {
    float value = 0;
    out.host = &value;
    run(out);
    return value;
  }
  double value = 0;
  out.host = &value;
  run(out);
  return value;
}

double dot_impl(const Queue& queue, const Array& x, const Array& y, const Array* result) {
  constexpr const char* call = "skein::blas::dot";
  const Array& r = result ? *result : x;
  const Dtype dtype = result ? check_dtypes(call, {{"x", x}, {"y", y}, {"result", r}})
                             : check_dtypes(call, {{"x", x}, {"y", y}});
  const std::size_t device = result
                                 ? check_devices(call, queue, {{"x", x}, {"y", y}, {"result", r}})
                                 : check_devices(call, queue, {{"x", x}, {"y", y}});
  const Vec vx = vector_of(call, {"x", x}, false);
  const Vec vy = vector_of(call, {"y", y}, false);
  if (vx.n != vy.n) {
    detail::raise_in(SKEIN_HERE, call, "Pass vectors of equal length.",
                     "x has shape {} and y {}: their lengths differ", to_string(x.shape()),
                     to_string(y.shape()));
  }
  BlasMemory out;
  if (result) {
    check_result(call, r);
    out = memory_of(call, {"result", r});
    check_no_overlap(call, {"result", r}, {{"x", x}, {"y", y}});
  }
  detail::BlasAdapter& blas = adapter_of(queue);
  detail::QueueAdapter& q = queue.device_queue(device);
  if (vx.n == 0) {
    if (result) q.fill_zero(*out.buffer, out.offset, itemsize(dtype));
    return 0;
  }
  return scalar_result(dtype, result, out, [&](const detail::BlasResult& res) {
    blas.dot(q, dtype, vx.n, vx.v, vy.v, res);
  });
}

double nrm2_impl(const Queue& queue, const Array& x, const Array* result) {
  constexpr const char* call = "skein::blas::nrm2";
  const Array& r = result ? *result : x;
  const Dtype dtype =
      result ? check_dtypes(call, {{"x", x}, {"result", r}}) : check_dtypes(call, {{"x", x}});
  const std::size_t device = result ? check_devices(call, queue, {{"x", x}, {"result", r}})
                                    : check_devices(call, queue, {{"x", x}});
  const Vec vx = vector_of(call, {"x", x}, false);
  BlasMemory out;
  if (result) {
    check_result(call, r);
    out = memory_of(call, {"result", r});
    check_no_overlap(call, {"result", r}, {{"x", x}});
  }
  detail::BlasAdapter& blas = adapter_of(queue);
  detail::QueueAdapter& q = queue.device_queue(device);
  if (vx.n == 0) {
    if (result) q.fill_zero(*out.buffer, out.offset, itemsize(dtype));
    return 0;
  }
  return scalar_result(dtype, result, out, [&](const detail::BlasResult& res) {
    blas.nrm2(q, dtype, vx.n, vx.v, res);
  });
}

}  // namespace

Status status(ApiId api) {
  for (const ApiStatus& s : Api::status()) {
    if (s.id == api && !s.available) {
      return {false, fmt::format("{} is not available: {}", name(api), s.reason)};
    }
  }
  std::string reason;
  switch (api) {
    case ApiId::cuda:
#if SKEIN_HAS_CUDA
      reason = detail::cuda_blas_unavailable_reason();
#else
      reason = "Skein was built without CUDA";
#endif
      break;
    case ApiId::opencl:
#if SKEIN_HAS_OPENCL
      reason = detail::opencl_blas_unavailable_reason();
#else
      reason = "Skein was built without OpenCL";
#endif
      break;
  }
  return {reason.empty(), reason};
}

double dot(const Queue& queue, const Array& x, const Array& y) {
  return dot_impl(queue, x, y, nullptr);
}

void dot(const Queue& queue, const Array& x, const Array& y, const Array& result) {
  dot_impl(queue, x, y, &result);
}

double nrm2(const Queue& queue, const Array& x) { return nrm2_impl(queue, x, nullptr); }

void nrm2(const Queue& queue, const Array& x, const Array& result) { nrm2_impl(queue, x, &result); }

void axpy(const Queue& queue, double alpha, const Array& x, const Array& y) {
  constexpr const char* call = "skein::blas::axpy";
  const Dtype dtype = check_dtypes(call, {{"x", x}, {"y", y}});
  const std::size_t device = check_devices(call, queue, {{"x", x}, {"y", y}});
  if (x.shape() != y.shape()) {
    detail::raise_in(SKEIN_HERE, call, "Pass arrays of equal shape.", "x has shape {} and y {}",
                     to_string(x.shape()), to_string(y.shape()));
  }
  const Vec vx = vector_of(call, {"x", x}, true);
  const Vec vy = vector_of(call, {"y", y}, true);
  // y = alpha * y + y reads and writes each element in one place; a partial overlap does not.
  if (!same_view(x, y)) check_no_overlap(call, {"y", y}, {{"x", x}});
  detail::BlasAdapter& blas = adapter_of(queue);
  if (vx.n == 0) return;
  blas.axpy(queue.device_queue(device), dtype, vx.n, alpha, vx.v, vy.v);
}

void scal(const Queue& queue, double alpha, const Array& x) {
  constexpr const char* call = "skein::blas::scal";
  const Dtype dtype = check_dtypes(call, {{"x", x}});
  const std::size_t device = check_devices(call, queue, {{"x", x}});
  const Vec vx = vector_of(call, {"x", x}, true);
  detail::BlasAdapter& blas = adapter_of(queue);
  if (vx.n == 0) return;
  blas.scal(queue.device_queue(device), dtype, vx.n, alpha, vx.v);
}

void gemv(const Queue& queue, double alpha, const Array& a, const Array& x, double beta,
          const Array& y, const GemvOptions& options) {
  constexpr const char* call = "skein::blas::gemv";
  check_ndim(call, {"a", a}, 2, "gemv multiplies a matrix (2-D) by a vector (1-D).");
  const Dtype dtype = check_dtypes(call, {{"a", a}, {"x", x}, {"y", y}});
  const std::size_t device = check_devices(call, queue, {{"a", a}, {"x", x}, {"y", y}});
  const Mat ma = matrix_of(call, {"a", a}, 0);
  const Vec vx = vector_of(call, {"x", x}, false);
  const Vec vy = vector_of(call, {"y", y}, false);
  const std::size_t rows = options.trans_a ? ma.cols : ma.rows;
  const std::size_t cols = options.trans_a ? ma.rows : ma.cols;
  if (vx.n != cols || vy.n != rows) {
    detail::raise_in(SKEIN_HERE, call, "Check the shapes and the trans_a option.",
                     "op(a) is {} x {} (a has shape {}, trans_a={}), so x needs {} elements and y "
                     "{}; x has shape {} and y {}",
                     rows, cols, to_string(a.shape()), options.trans_a, cols, rows,
                     to_string(x.shape()), to_string(y.shape()));
  }
  check_no_overlap(call, {"y", y}, {{"a", a}, {"x", x}});
  detail::BlasAdapter& blas = adapter_of(queue);
  detail::QueueAdapter& q = queue.device_queue(device);
  if (rows == 0) return;
  if (cols == 0) {
    scale_vector(blas, queue, device, dtype, rows, vy.v, beta);
    return;
  }
  // BLAS sees a row-major A as A.T (cols x rows): the transpose flag flips.
  const bool row_major = !ma.col_major;
  blas.gemv(q, dtype, op(options.trans_a != row_major), row_major ? ma.cols : ma.rows,
            row_major ? ma.rows : ma.cols, alpha, ma.m, vx.v, beta, vy.v);
}

Array gemv(const Queue& queue, double alpha, const Array& a, const Array& x,
           const GemvOptions& options) {
  constexpr const char* call = "skein::blas::gemv";
  check_ndim(call, {"a", a}, 2, "gemv multiplies a matrix (2-D) by a vector (1-D).");
  check_dtypes(call, {{"a", a}, {"x", x}});
  const std::size_t device = check_devices(call, queue, {{"a", a}, {"x", x}});
  Array y = Array::empty(queue, {a.shape()[options.trans_a ? 1 : 0]}, a.dtype(), device);
  blas::gemv(queue, alpha, a, x, 0.0, y, options);
  return y;
}

void ger(const Queue& queue, double alpha, const Array& x, const Array& y, const Array& a) {
  constexpr const char* call = "skein::blas::ger";
  check_ndim(call, {"a", a}, 2,
             "ger updates a matrix (2-D) with the outer product of two vectors.");
  const Dtype dtype = check_dtypes(call, {{"x", x}, {"y", y}, {"a", a}});
  const std::size_t device = check_devices(call, queue, {{"x", x}, {"y", y}, {"a", a}});
  const Vec vx = vector_of(call, {"x", x}, false);
  const Vec vy = vector_of(call, {"y", y}, false);
  const Mat ma = matrix_of(call, {"a", a}, 0);
  if (ma.rows != vx.n || ma.cols != vy.n) {
    detail::raise_in(SKEIN_HERE, call, "Pass a of shape (len(x), len(y)).",
                     "a has shape {} but outer(x, y) is {} x {} (x has shape {}, y {})",
                     to_string(a.shape()), vx.n, vy.n, to_string(x.shape()), to_string(y.shape()));
  }
  check_no_overlap(call, {"a", a}, {{"x", x}, {"y", y}});
  detail::BlasAdapter& blas = adapter_of(queue);
  if (ma.rows == 0 || ma.cols == 0) return;
  detail::QueueAdapter& q = queue.device_queue(device);
  // BLAS sees a row-major A as A.T, and A.T += alpha * y x.T.
  if (ma.col_major) {
    blas.ger(q, dtype, ma.rows, ma.cols, alpha, vx.v, vy.v, ma.m);
  } else {
    blas.ger(q, dtype, ma.cols, ma.rows, alpha, vy.v, vx.v, ma.m);
  }
}

Array ger(const Queue& queue, double alpha, const Array& x, const Array& y) {
  constexpr const char* call = "skein::blas::ger";
  check_dtypes(call, {{"x", x}, {"y", y}});
  const std::size_t device = check_devices(call, queue, {{"x", x}, {"y", y}});
  check_ndim(call, {"x", x}, 1, "x and y are vectors.");
  check_ndim(call, {"y", y}, 1, "x and y are vectors.");
  Array a = Array::zeros(queue, {x.shape()[0], y.shape()[0]}, x.dtype(), device);
  blas::ger(queue, alpha, x, y, a);
  return a;
}

void gemm(const Queue& queue, double alpha, const Array& a, const Array& b, double beta,
          const Array& c, const GemmOptions& options) {
  constexpr const char* call = "skein::blas::gemm";
  for (const Arg& arg : {Arg{"a", a}, Arg{"b", b}, Arg{"c", c}}) {
    check_ndim(call, arg, 2, kGemmNdimHint);
  }
  const Dtype dtype = check_dtypes(call, {{"a", a}, {"b", b}, {"c", c}});
  const std::size_t device = check_devices(call, queue, {{"a", a}, {"b", b}, {"c", c}});
  const GemmShape s = gemm_shape(call, a, b, options, 0);
  if (c.shape() != Shape{s.m, s.n}) {
    detail::raise_in(SKEIN_HERE, call, "Pass c of the product's shape.",
                     "c has shape {} but op(a) @ op(b) is {} x {}", to_string(c.shape()), s.m, s.n);
  }
  const Mat ma = matrix_of(call, {"a", a}, 0);
  const Mat mb = matrix_of(call, {"b", b}, 0);
  const Mat mc = matrix_of(call, {"c", c}, 0);
  check_no_overlap(call, {"c", c}, {{"a", a}, {"b", b}});
  detail::BlasAdapter& blas = adapter_of(queue);
  if (s.m == 0 || s.n == 0) return;
  detail::QueueAdapter& q = queue.device_queue(device);
  GemmArgs g = plan_gemm(ma, options.trans_a, mb, options.trans_b, mc, s.m, s.n, s.k);
  if (s.k == 0) {
    scale_matrices(blas, queue, device, dtype, g.m, g.n, g.c, 1, beta);
    return;
  }
  g.alpha = alpha;
  g.beta = beta;
  g.allow_tf32 = options.allow_tf32;
  blas.gemm(q, dtype, g);
}

Array gemm(const Queue& queue, double alpha, const Array& a, const Array& b,
           const GemmOptions& options) {
  constexpr const char* call = "skein::blas::gemm";
  check_ndim(call, {"a", a}, 2, kGemmNdimHint);
  check_ndim(call, {"b", b}, 2, kGemmNdimHint);
  check_dtypes(call, {{"a", a}, {"b", b}});
  const std::size_t device = check_devices(call, queue, {{"a", a}, {"b", b}});
  const GemmShape s = gemm_shape(call, a, b, options, 0);
  Array c = Array::empty(queue, {s.m, s.n}, a.dtype(), device);
  blas::gemm(queue, alpha, a, b, 0.0, c, options);
  return c;
}

void gemm_batched(const Queue& queue, double alpha, const Array& a, const Array& b, double beta,
                  const Array& c, const GemmOptions& options) {
  constexpr const char* call = "skein::blas::gemm_batched";
  for (const Arg& arg : {Arg{"a", a}, Arg{"b", b}, Arg{"c", c}}) {
    check_ndim(call, arg, 3, kBatchedNdimHint);
  }
  const Dtype dtype = check_dtypes(call, {{"a", a}, {"b", b}, {"c", c}});
  const std::size_t device = check_devices(call, queue, {{"a", a}, {"b", b}, {"c", c}});
  const std::size_t batch = a.shape()[0];
  if (b.shape()[0] != batch || c.shape()[0] != batch) {
    detail::raise_in(SKEIN_HERE, call, "Pass the same number of matrices in a, b and c.",
                     "the batch sizes differ: a has shape {}, b {}, c {}", to_string(a.shape()),
                     to_string(b.shape()), to_string(c.shape()));
  }
  const GemmShape s = gemm_shape(call, a, b, options, 1);
  if (c.shape() != Shape{batch, s.m, s.n}) {
    detail::raise_in(SKEIN_HERE, call, "Pass c of the product's shape.",
                     "c has shape {} but op(a) @ op(b) is {} matrices of {} x {}",
                     to_string(c.shape()), batch, s.m, s.n);
  }
  check_fits(call, "a", "batch size", batch);
  const Mat ma = batched_matrix_of(call, {"a", a}, false);
  const Mat mb = batched_matrix_of(call, {"b", b}, false);
  const Mat mc = batched_matrix_of(call, {"c", c}, true);
  check_no_overlap(call, {"c", c}, {{"a", a}, {"b", b}});
  detail::BlasAdapter& blas = adapter_of(queue);
  if (batch == 0 || s.m == 0 || s.n == 0) return;
  detail::QueueAdapter& q = queue.device_queue(device);
  GemmArgs g = plan_gemm(ma, options.trans_a, mb, options.trans_b, mc, s.m, s.n, s.k);
  if (s.k == 0) {
    scale_matrices(blas, queue, device, dtype, g.m, g.n, g.c, batch, beta);
    return;
  }
  g.alpha = alpha;
  g.beta = beta;
  g.batch = batch;
  g.allow_tf32 = options.allow_tf32;
  blas.gemm_strided_batched(q, dtype, g);
}

Array gemm_batched(const Queue& queue, double alpha, const Array& a, const Array& b,
                   const GemmOptions& options) {
  constexpr const char* call = "skein::blas::gemm_batched";
  check_ndim(call, {"a", a}, 3, kBatchedNdimHint);
  check_ndim(call, {"b", b}, 3, kBatchedNdimHint);
  check_dtypes(call, {{"a", a}, {"b", b}});
  const std::size_t device = check_devices(call, queue, {{"a", a}, {"b", b}});
  const GemmShape s = gemm_shape(call, a, b, options, 1);
  Array c = Array::empty(queue, {a.shape()[0], s.m, s.n}, a.dtype(), device);
  blas::gemm_batched(queue, alpha, a, b, 0.0, c, options);
  return c;
}

}  // namespace skein::blas
