// SPDX-License-Identifier: BSD-3-Clause
// Program kernels given array views that start anywhere in their allocation (issue 36): the
// interiors of arrays with halo rows at any row width, views at odd element offsets, two pointer
// parameters beside local memory, on every backend. On OpenCL they go through the rewrite of the
// kernels' global pointer parameters into an allocation and an offset
// (skein/detail/opencl/kernel_offsets.hpp); on CUDA a pointer into the allocation. Every element
// is checked against a host computation, the halo rows and the elements outside the views too
// (they must keep their values). Then the rewrite itself (OpenCL): what it changes, what it leaves
// as written (whose unaligned views still raise a LogicError saying why), the fallback to the
// source as written, and that the parameter slots it implies match the compiled kernels' own.
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <skein/program.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "backends.hpp"
#include "checks.hpp"

#if SKEIN_HAS_OPENCL
#include <CL/cl.h>

#include "skein/detail/opencl/kernel_offsets.hpp"
#endif

namespace skein::test {
namespace {
namespace view_offsets_test {

class ViewOffsets : public BackendTest {};

// Integers in [-1000, 1000]: a * x + y with a = 3 is exact in float32 and float64 (fused or not).
template <class T>
std::vector<T> integers(std::size_t n, std::uint32_t seed) {
  auto v = random_reals<double>(n, seed);
  std::vector<T> out(n);
  for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<T>(static_cast<int>(v[i]));
  return out;
}

std::size_t round_up(std::size_t n, std::size_t m) { return (n + m - 1) / m * m; }

constexpr const char* kAxpyRows = R"(
KERNEL void axpy_rows(GLOBAL_MEM ${T}* y, GLOBAL_MEM const ${T}* x, ${T} a, unsigned int n)
{
    const unsigned int i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}
)";

// y's interior = 3 * x's interior + y's interior, for arrays of `rows` interior rows of `width`
// elements framed by `halo` rows above and below; then every element of both arrays.
template <class T>
void check_interiors(const Context& ctx, const Queue& queue, std::size_t width, std::size_t halo) {
  const std::string what = fmt::format("{} x {} (halo {})", name(dtype_of<T>), width, halo);
  SCOPED_TRACE(what);
  const std::size_t rows = 5, all = (rows + 2 * halo) * width;
  const auto program =
      Program::from_template(ctx, kAxpyRows, {{"T", std::string(ctype(dtype_of<T>))}});
  const auto x0 = integers<T>(all, static_cast<std::uint32_t>(width));
  const auto y0 = integers<T>(all, static_cast<std::uint32_t>(width + 7));
  const Array x = Array::from_host(queue, x0, {rows + 2 * halo, width});
  const Array y = Array::from_host(queue, y0, {rows + 2 * halo, width});
  const Array xi = x.slice(halo, halo + rows), yi = y.slice(halo, halo + rows);
  ASSERT_EQ(yi.offset(), halo * width * sizeof(T));
  const std::size_t n = rows * width;
  program.kernel("axpy_rows")
      .prepare(queue, round_up(n, 32), 32)(yi, xi, T(3), static_cast<std::uint32_t>(n));
  const auto got = y.get<T>();
  const auto x_after = x.get<T>();
  ASSERT_EQ(got.size(), all);
  for (std::size_t k = 0; k < all; ++k) {
    const std::size_t row = k / width;
    const bool interior = row >= halo && row < halo + rows;
    const T want = interior ? static_cast<T>(T(3) * x0[k] + y0[k]) : y0[k];
    ASSERT_EQ(got[k], want) << "element " << k << " (row " << row << ")";
    ASSERT_EQ(x_after[k], x0[k]) << "x element " << k;
  }
}

TEST_P(ViewOffsets, InteriorsOfArraysWithHalosAtAnyRowWidth) {
  auto ctx = context();
  Queue queue(ctx);
  for (std::size_t width : {1u, 11u, 16u, 37u, 250u}) {
    check_interiors<float>(ctx, queue, width, 1);
    if (ctx.devices().front().params().supports_float64) {
      check_interiors<double>(ctx, queue, width, 1);
      check_interiors<double>(ctx, queue, width, 2);
    }
  }
}

TEST_P(ViewOffsets, ViewsAtOddElementOffsets) {
  auto ctx = context();
  Queue queue(ctx);
  const std::size_t total = 300;
  const auto x0 = integers<float>(total, 11);
  const auto y0 = integers<float>(total, 12);
  const auto program = Program::from_template(ctx, kAxpyRows, {{"T", std::string("float")}});
  const auto kernel = program.kernel("axpy_rows");
  // (x's first element, y's first element, elements): odd offsets, one element, the last one.
  const std::size_t cases[][3] = {{1, 3, 100}, {7, 5, 13}, {0, 299, 1}, {299, 0, 1}, {33, 65, 200}};
  for (const auto& [xo, yo, n] : cases) {
    SCOPED_TRACE(fmt::format("x from {}, y from {}, {} elements", xo, yo, n));
    const auto x = Array::from_host(queue, x0);
    const auto y = Array::from_host(queue, y0);
    kernel.prepare(queue, round_up(n, 16), 16)(y.view(yo, {n}), x.view(xo, {n}), 3.0f,
                                               static_cast<std::uint32_t>(n));
    const auto got = y.get<float>();
    for (std::size_t k = 0; k < total; ++k) {
      const float want = k >= yo && k < yo + n ? 3.0f * x0[k - yo + xo] + y0[k] : y0[k];
      ASSERT_EQ(got[k], want) << "element " << k;
    }
  }
}

// Two views and dynamic local memory: each group reverses its part of `in` into `out`.
TEST_P(ViewOffsets, TwoViewsBesideLocalMemory) {
  auto ctx = context();
  Queue queue(ctx);
  Program program(ctx, R"(
KERNEL void reverse_groups(GLOBAL_MEM float* out, GLOBAL_MEM const float* in,
                           unsigned int n LOCAL_MEM_DYNAMIC_PARAM(float, tile))
{
    LOCAL_MEM_DYNAMIC_DECL(float, tile);
    const unsigned int l = get_local_id(0), size = get_local_size(0);
    const unsigned int first = get_group_id(0) * size;
    tile[l] = first + l < n ? in[first + l] : 0.0f;
    LOCAL_BARRIER;
    if (first + size - 1 - l < n) out[first + size - 1 - l] = tile[l];
}
)");
  const std::size_t group = 16, n = 3 * group, total = n + 40;
  const auto in0 = integers<float>(total, 21);
  const auto out0 = integers<float>(total, 22);
  const auto in = Array::from_host(queue, in0);
  const auto out = Array::from_host(queue, out0);
  const std::size_t io = 5, oo = 3;  // 20 and 12 bytes into their allocations
  program.kernel("reverse_groups")
      .prepare(queue, n, LaunchSizes{group}, LocalMem{group * sizeof(float)})(
          out.view(oo, {n}), in.view(io, {n}), static_cast<std::uint32_t>(n));
  const auto got = out.get<float>();
  for (std::size_t k = 0; k < total; ++k) {
    float want = out0[k];
    if (k >= oo && k < oo + n) {
      const std::size_t j = k - oo, first = j / group * group;
      want = in0[io + first + (group - 1 - (j - first))];
    }
    ASSERT_EQ(got[k], want) << "element " << k;
  }
  EXPECT_EQ(in.get<float>(), in0);
}

SKEIN_INSTANTIATE_BACKENDS(ViewOffsets);

#if SKEIN_HAS_OPENCL

// --- the OpenCL rewrite ------------------------------------------------------------------------

using detail::ParamRole;
using detail::opencl::ArgSlot;
using detail::opencl::KernelSlots;
using detail::opencl::rewrite_view_offsets;
using detail::opencl::slots_from_arg_info;
using detail::opencl::slots_from_roles;

std::ptrdiff_t lines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

std::size_t occurrences(const std::string& s, const std::string& part) {
  std::size_t count = 0;
  for (std::size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++count;
  return count;
}

TEST(ViewOffsetRewrite, APointerTakesTheAllocationAndTheOffsetOnTheSameLines) {
  const std::string source =
      "KERNEL void k(GLOBAL_MEM const float* RESTRICT x,\n"
      "              GLOBAL_MEM float *y, int n)\n"
      "{\n"
      "    y[0] = x[n];\n"
      "}\n";
  const auto out = rewrite_view_offsets(source, true);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->source,
            "KERNEL void k(GLOBAL_MEM const float* RESTRICT _skein_base_x, ulong _skein_off_x,\n"
            "              GLOBAL_MEM float *_skein_base_y, ulong _skein_off_y, int n)\n"
            "{ GLOBAL_MEM const float * RESTRICT x = (GLOBAL_MEM const float *)((__global char*)"
            "_skein_base_x + _skein_off_x); GLOBAL_MEM float * y = (GLOBAL_MEM float *)((__global "
            "char*)_skein_base_y + _skein_off_y);\n"
            "    y[0] = x[n];\n"
            "}\n");
  ASSERT_EQ(out->kernels.size(), 1u);
  EXPECT_EQ(out->kernels.at("k"),
            (std::vector{ParamRole::view, ParamRole::view, ParamRole::value}));
}

TEST(ViewOffsetRewrite, SpellingsCommentsAndSeveralKernels) {
  const std::string source = R"(// KERNEL void not_this(GLOBAL_MEM float* a) {}
/* __kernel void nor_this(__global float* a) {} */
#define HELPER_NOTE "kernel void in_a_string(global float* a) {}"
WITHIN_KERNEL INLINE float helper(GLOBAL_MEM const float* p) { return p[0]; }
__kernel __attribute__((reqd_work_group_size(16, 1, 1))) void first(
    __global float* restrict a, /* the input */ global const int* b, // comment, with a comma
    __local float* scratch, const uint n) { a[0] = b[0]; }
kernel void second(void) {}
KERNEL void third(GLOBAL_MEM double* volatile c, uint n LOCAL_MEM_DYNAMIC_PARAM(float, t)) {}
)";
  const auto out = rewrite_view_offsets(source, true);
  ASSERT_TRUE(out);
  EXPECT_EQ(lines(out->source), lines(source));
  EXPECT_EQ(out->kernels.size(), 2u);
  EXPECT_EQ(out->kernels.at("first"),
            (std::vector{ParamRole::view, ParamRole::view, ParamRole::local, ParamRole::value}));
  EXPECT_EQ(out->kernels.at("third"),
            (std::vector{ParamRole::view, ParamRole::value, ParamRole::local}));
  for (const char* kept :
       {"not_this(GLOBAL_MEM float* a)", "nor_this(__global float* a)",
        "in_a_string(global float* a)", "helper(GLOBAL_MEM const float* p)", "second(void)"}) {
    EXPECT_TRUE(contains(out->source, kept)) << kept;
  }
  EXPECT_TRUE(contains(out->source, "global const int* _skein_base_b, ulong _skein_off_b"));
  EXPECT_TRUE(contains(out->source, "__local float* scratch"));
}

TEST(ViewOffsetRewrite, WhatCannotBeReadStaysAsWritten) {
  const auto untouched = [](const std::string& source, bool prelude = true) {
    const auto out = rewrite_view_offsets(source, prelude);
    EXPECT_FALSE(out) << source << "\n->\n" << (out ? out->source : "");
  };
  // A macro of the source that might stand for several parameters, or hide an address space.
  untouched("#define PARAMS GLOBAL_MEM float* a, int n\nKERNEL void k(PARAMS) {}\n");
  untouched("#define TWO float a, float\nKERNEL void k(GLOBAL_MEM float* x, TWO b) {}\n");
  untouched("#define PTR(T) GLOBAL_MEM T*\nKERNEL void k(PTR(float) x) {}\n");
  untouched("#define LMEM __local\nKERNEL void k(GLOBAL_MEM float* x, LMEM float* t) {}\n");
  untouched("#define NAME k2\nKERNEL void NAME(GLOBAL_MEM float* x) {}\n");
  // A preprocessor line inside the parameter list.
  untouched("KERNEL void k(GLOBAL_MEM float* x\n#ifdef WIDE\n, int n\n#endif\n) {}\n");
  // Definitions that differ (the one compiled is not known).
  untouched(
      "#if A\nKERNEL void k(GLOBAL_MEM float* x) {}\n#else\n"
      "KERNEL void k(GLOBAL_MEM float* x, int n) {}\n#endif\n");
  untouched("KERNEL void k(GLOBAL_MEM float*);\nKERNEL void k(GLOBAL_MEM float* x) {}\n");
  // What is no view: constant, typedef'd and Skein's own pointers; no prelude, no KERNEL.
  untouched("KERNEL void k(CONSTANT_MEM_ARG float* c, __constant int* d) {}\n");
  untouched("typedef __global float* gptr;\nKERNEL void k(gptr p) {}\n");
  untouched("KERNEL void k(GLOBAL_MEM char* _skein_b_x, const uint64_t _skein_o_x) {}\n");
  untouched("KERNEL void k(GLOBAL_MEM float* x) {}\n", false);
  untouched("#define GLOBAL_MEM __constant\nKERNEL void k(GLOBAL_MEM float* x) {}\n");
  untouched("KERNEL void k(GLOBAL_MEM float* x, int n", true);  // never closed
}

TEST(ViewOffsetRewrite, IdenticalDefinitionsAndPrototypesAreRewrittenAlike) {
  const std::string source =
      "#if A\nKERNEL void k(GLOBAL_MEM float* x) { x[0] = 1; }\n#else\n"
      "KERNEL void k(GLOBAL_MEM float* x) { x[0] = 2; }\n#endif\n"
      "__kernel void p(__global int* q);\n"
      "__kernel void p(__global int* q) {}\n";
  const auto out = rewrite_view_offsets(source, true);
  ASSERT_TRUE(out);
  EXPECT_EQ(out->kernels.size(), 2u);
  EXPECT_EQ(occurrences(out->source, "ulong _skein_off_"), 4u);
  EXPECT_EQ(occurrences(out->source, " = (GLOBAL_MEM float *)"), 2u);  // the definitions' bodies
  EXPECT_EQ(occurrences(out->source, " = (__global int *)"), 1u);
}

TEST(ViewOffsetRewrite, SlotsFromRolesAndFromParameterNames) {
  const std::vector roles{ParamRole::view, ParamRole::local, ParamRole::value, ParamRole::view};
  const KernelSlots want{{{0, true}, {3, false}, {4, true}}, {2}, 6};
  EXPECT_EQ(slots_from_roles(roles), want);
  const std::vector<std::string> names{"_skein_base_a", "_skein_off_a", "t", "n",
                                       "_skein_base_b", "_skein_off_b"};
  const std::vector<char> local{0, 0, 1, 0, 0, 0};
  EXPECT_EQ(slots_from_arg_info(names, local), want);
  // A base without its offset right after it is a plain parameter.
  const std::vector<std::string> odd{"_skein_base_a", "_skein_off_b", "n"};
  EXPECT_EQ(slots_from_arg_info(odd, std::vector<char>{0, 0, 0}),
            (KernelSlots{{{0, false}, {1, false}, {2, false}}, {}, 3}));
}

class OpenClViewOffsets : public BackendTest {
 protected:
  void SetUp() override {
    if (GetParam().api != ApiId::opencl) GTEST_SKIP() << "the rewrite is OpenCL's";
  }
};

constexpr const char* kMixed = R"(
#define SCALE 2.0f
#define PAIR GLOBAL_MEM float* a, GLOBAL_MEM const float* b
/* Explicit local memory between two views, in OpenCL's own spellings. */
__kernel void mid_local(__global float* out, __local float* tile,
                        global const float* restrict in, const uint n)
{
    const uint l = get_local_id(0), i = get_global_id(0);
    tile[l] = i < n ? in[i] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (i < n) out[i] = SCALE * tile[l];
}
KERNEL void pair(PAIR, unsigned int n)  // a macro for two parameters: left as written
{
    const unsigned int i = get_global_id(0);
    if (i < n) a[i] = b[i];
}
)";

// The slots the rewrite's roles imply are the compiled kernel's own (its parameter names).
void expect_slots_match(const Program& program, const std::string& source, const std::string& k) {
  const auto rewritten = rewrite_view_offsets(source, true);
  ASSERT_TRUE(rewritten && rewritten->kernels.contains(k)) << k;
  const Kernel held = program.kernel(k);  // owns the cl_kernel
  const auto kernel = reinterpret_cast<cl_kernel>(held.native(0));
  cl_uint nargs = 0;
  ASSERT_EQ(clGetKernelInfo(kernel, CL_KERNEL_NUM_ARGS, sizeof(nargs), &nargs, nullptr),
            CL_SUCCESS);
  std::vector<std::string> names;
  std::vector<char> local;
  for (cl_uint i = 0; i < nargs; ++i) {
    char name[256] = {};
    cl_kernel_arg_address_qualifier q = 0;
    ASSERT_EQ(clGetKernelArgInfo(kernel, i, CL_KERNEL_ARG_NAME, sizeof(name), name, nullptr),
              CL_SUCCESS);
    ASSERT_EQ(
        clGetKernelArgInfo(kernel, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof(q), &q, nullptr),
        CL_SUCCESS);
    names.emplace_back(name);
    local.push_back(q == CL_KERNEL_ARG_ADDRESS_LOCAL);
  }
  EXPECT_EQ(slots_from_roles(rewritten->kernels.at(k)), slots_from_arg_info(names, local)) << k;
}

TEST_P(OpenClViewOffsets, LocalParametersBetweenViewsAndKernelsLeftAsWritten) {
  auto ctx = context();
  Queue queue(ctx);
  Program program(ctx, kMixed);
  EXPECT_TRUE(contains(program.source(0), "__global float* _skein_base_out, ulong _skein_off_out"));
  EXPECT_TRUE(contains(program.source(0), "KERNEL void pair(PAIR, unsigned int n)"));
  expect_slots_match(program, kMixed, "mid_local");

  const std::size_t group = 8, n = 37, total = 64;
  const auto in0 = integers<float>(total, 31);
  const auto out0 = integers<float>(total, 32);
  const auto in = Array::from_host(queue, in0);
  const auto out = Array::from_host(queue, out0);
  program.kernel("mid_local")
      .prepare(queue, round_up(n, group), LaunchSizes{group}, LocalMem{group * sizeof(float)})(
          out.view(9, {n}), in.view(1, {n}), static_cast<std::uint32_t>(n));
  auto got = out.get<float>();
  for (std::size_t k = 0; k < total; ++k) {
    ASSERT_EQ(got[k], k >= 9 && k < 9 + n ? 2.0f * in0[k - 8] : out0[k]) << "element " << k;
  }

  // The kernel left as written takes views at the device's alignment (sub-buffers), and says why
  // it refuses others.
  const auto pair = program.kernel("pair").prepare(queue, 16, 16);
  const std::size_t align = ctx.devices().front().params().base_address_align / sizeof(float);
  const auto a = Array::zeros(queue, {align + 16}, Dtype::float32);
  pair(a.view(align, {16}), in.view(0, {16}), std::uint32_t{16});
  got = a.get<float>();
  for (std::size_t k = 0; k < align + 16; ++k) {
    ASSERT_EQ(got[k], k < align ? 0.0f : in0[k - align]) << "element " << k;
  }
  expect_error<LogicError>([&] { pair(a.view(1, {16}), in, std::uint32_t{16}); },
                           {"kernel 'pair', argument 0", "4 bytes into its allocation",
                            "takes no offset", "GLOBAL_MEM T* name"});
}

// A macro from the compiler options adds a parameter that the source does not show: the compiled
// kernel's parameter names decide.
TEST_P(OpenClViewOffsets, TheCompiledParameterListWinsOverTheSource) {
  auto ctx = context();
  Queue queue(ctx);
  const std::string source = R"(
KERNEL void extra(GLOBAL_MEM float* y, unsigned int n EXTRA)
{
    const unsigned int i = get_global_id(0);
    if (i < n) y[i] = (float)(m + i);
}
)";
  Program program(ctx, source, {.compiler_options = {"-DEXTRA=,uint/**/m"}});
  ASSERT_TRUE(contains(program.source(0), "_skein_base_y"));
  const auto y = Array::zeros(queue, {40}, Dtype::float32);
  program.kernel("extra").prepare(queue, 32, 32)(y.view(3, {30}), std::uint32_t{30},
                                                 std::uint32_t{100});
  const auto got = y.get<float>();
  for (std::size_t k = 0; k < 40; ++k) {
    ASSERT_EQ(got[k], k >= 3 && k < 33 ? static_cast<float>(100 + k - 3) : 0.0f) << k;
  }
}

// A rewrite the compiler refuses (a kernel calling another, which now takes more parameters):
// the source is compiled as written.
TEST_P(OpenClViewOffsets, ARewriteTheCompilerRefusesFallsBackToTheSourceAsWritten) {
  auto ctx = context();
  Queue queue(ctx);
  const std::string source = R"(
KERNEL void inner(GLOBAL_MEM float* y, unsigned int n)
{
    const unsigned int i = get_global_id(0);
    if (i < n) y[i] = 7.0f;
}
KERNEL void outer(GLOBAL_MEM float* y, unsigned int n) { inner(y, n); }
)";
  ASSERT_TRUE(rewrite_view_offsets(source, true));
  Program program(ctx, source);
  EXPECT_FALSE(contains(program.source(0), "_skein_base_"));
  const auto y = Array::zeros(queue, {16}, Dtype::float32);
  program.kernel("outer").prepare(queue, 16, 16)(y, std::uint32_t{16});
  EXPECT_EQ(y.get<float>(), std::vector<float>(16, 7.0f));
  // A source with an error of its own reports that error, numbered as written.
  expect_error<CompileError>(
      [&] { Program(ctx, "KERNEL void k(GLOBAL_MEM float* y)\n{\n    y[0] = nothing_here;\n}\n"); },
      {"nothing_here", "    3 |     y[0] = nothing_here;"});
}

SKEIN_INSTANTIATE_BACKENDS(OpenClViewOffsets);

#endif  // SKEIN_HAS_OPENCL

}  // namespace view_offsets_test
}  // namespace
}  // namespace skein::test
