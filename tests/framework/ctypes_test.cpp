// SPDX-License-Identifier: BSD-3-Clause
// C types, struct layouts, the function modules, and the two preludes: the rendered modules and
// struct definitions compile with NVRTC and with every OpenCL device's compiler (PoCL here), and
// the device layout of structs equals StructType's (checked at compile time on the device).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <skein/config.hpp>
#include <skein/ctypes.hpp>
#include <skein/error.hpp>
#include <skein/functions.hpp>
#include <skein/template.hpp>
#include <string>
#include <vector>

#include "skein/detail/cuda/prelude.hpp"
#include "skein/detail/opencl/prelude.hpp"

#if SKEIN_HAS_CUDA
#include <nvrtc.h>
#endif
#if SKEIN_HAS_OPENCL
#include <CL/cl.h>
#endif

namespace skein {
namespace {
namespace ctypes_test {

TEST(CtypeNames, EveryDtype) {
  EXPECT_EQ(ctype(Dtype::int8), "int8_t");
  EXPECT_EQ(ctype(Dtype::uint64), "uint64_t");
  EXPECT_EQ(ctype(Dtype::float32), "float");
  EXPECT_EQ(ctype(Dtype::float64), "double");
  EXPECT_EQ(ctype(Dtype::float16), "skein_float16");
  EXPECT_EQ(ctype(Dtype::bfloat16), "skein_bfloat16");
  EXPECT_EQ(ctype(Dtype::complex64), "skein_complex64");
  EXPECT_EQ(ctype(Dtype::complex128), "skein_complex128");
  for (Dtype d : all_dtypes) EXPECT_EQ(alignment_of(d), itemsize(d)) << name(d);
}

TEST(CtypeStruct, MixedScalars) {
  const StructType s{{"a", Dtype::int8}, {"b", Dtype::float64}, {"c", Dtype::int16}};
  EXPECT_EQ(s.offsets(), (std::vector<std::size_t>{0, 8, 16}));
  EXPECT_EQ(s.itemsize(), 24u);
  EXPECT_EQ(s.alignment(), 8u);
  EXPECT_EQ(ctype_struct(s, "abc"),
            "typedef struct ALIGN(8) {\n"
            "  int8_t a;\n"
            "  double b;\n"
            "  int16_t c;\n"
            "} abc;\n");
}

TEST(CtypeStruct, ArraysComplexAndNesting) {
  const StructType a{{"a", Dtype::int16}, {"z", Dtype::complex64}, {"c", Dtype::int8, 3}};
  EXPECT_EQ(a.offsets(), (std::vector<std::size_t>{0, 8, 16}));
  EXPECT_EQ(a.itemsize(), 24u);

  const StructType b{{"a", Dtype::float32}, {"z", Dtype::complex128}};
  EXPECT_EQ(b.offsets(), (std::vector<std::size_t>{0, 16}));
  EXPECT_EQ(b.itemsize(), 32u);
  EXPECT_EQ(b.alignment(), 16u);

  const StructType inner{{"x", Dtype::int8}, {"y", Dtype::float32}};
  EXPECT_EQ(inner.itemsize(), 8u);
  EXPECT_EQ(inner.alignment(), 4u);
  StructType outer;
  outer.add("a", Dtype::int8).add("s", inner, 2).add("d", Dtype::float64);
  EXPECT_EQ(outer.offsets(), (std::vector<std::size_t>{0, 4, 24}));
  EXPECT_EQ(outer.itemsize(), 32u);
  EXPECT_EQ(outer.alignment(), 8u);
  EXPECT_EQ(ctype_struct(outer, "outer"),
            "typedef struct ALIGN(8) {\n"
            "  int8_t a;\n"
            "  struct ALIGN(4) {\n"
            "    int8_t x;\n"
            "    float y;\n"
            "  } s[2];\n"
            "  double d;\n"
            "} outer;\n");
}

TEST(CtypeStruct, Align) {
  const StructType inner{{"x", Dtype::int8}, {"y", Dtype::float32}};
  const StructType padded = align(inner, 16);
  EXPECT_EQ(padded.offsets(), inner.offsets());
  EXPECT_EQ(padded.itemsize(), 16u);
  EXPECT_EQ(padded.alignment(), 16u);
  EXPECT_EQ(align(inner, 2).itemsize(), 8u);  // never below the natural alignment
  const StructType outer{{"a", Dtype::int8}, {"p", padded, 3}, {"b", Dtype::int8}};
  EXPECT_EQ(outer.offsets(), (std::vector<std::size_t>{0, 16, 64}));
  EXPECT_EQ(outer.itemsize(), 80u);
  EXPECT_THROW(align(inner, 12), LogicError);
  EXPECT_THROW(align(inner, 0), LogicError);
}

TEST(CtypeStruct, Errors) {
  EXPECT_THROW((StructType{{"a", Dtype::int8}, {"a", Dtype::int8}}), LogicError);
  EXPECT_THROW((StructType{{"not valid", Dtype::int8}}), LogicError);
  EXPECT_THROW(StructType().add("1x", Dtype::int8), LogicError);
  EXPECT_THROW(ctype_struct(StructType{}, "empty"), LogicError);
  EXPECT_THROW(ctype_struct(StructType{{"a", Dtype::int8}}, "bad name"), LogicError);
  EXPECT_EQ(StructType{}.itemsize(), 0u);
}

TEST(CtypeStruct, ModulesAreSharedByEqualTypes) {
  const StructType s{{"a", Dtype::int8}, {"b", Dtype::float64}};
  const StructType t{{"a", Dtype::int8}, {"b", Dtype::float64}};
  const StructType u{{"a", Dtype::int8}, {"b", Dtype::float32}};
  EXPECT_TRUE(s == t);
  EXPECT_FALSE(s == u);
  EXPECT_TRUE(ctype_module(s, "pair") == ctype_module(t, "pair"));
  EXPECT_FALSE(ctype_module(s, "pair") == ctype_module(u, "pair"));
  EXPECT_EQ(
      render("${T} v;", {{"T", ctype_module(s, "pair")}}),
      "typedef struct ALIGN(8) {\n  int8_t a;\n  double b;\n} _mod_pair_0_;\n_mod_pair_0_ v;");
}

TEST(CtypeFunctions, ResultType) {
  EXPECT_EQ(result_type({Dtype::int8, Dtype::uint8}), Dtype::int16);
  EXPECT_EQ(result_type({Dtype::int32, Dtype::uint32}), Dtype::int64);
  EXPECT_EQ(result_type({Dtype::int16, Dtype::uint8}), Dtype::int16);
  EXPECT_EQ(result_type({Dtype::int64, Dtype::uint64}), Dtype::float64);
  EXPECT_EQ(result_type({Dtype::uint16, Dtype::uint64}), Dtype::uint64);
  EXPECT_EQ(result_type({Dtype::int16, Dtype::float32}), Dtype::float32);
  EXPECT_EQ(result_type({Dtype::int32, Dtype::float32}), Dtype::float64);
  EXPECT_EQ(result_type({Dtype::complex64, Dtype::float64}), Dtype::complex128);
  EXPECT_EQ(result_type({Dtype::complex64, Dtype::int32}), Dtype::complex128);
  EXPECT_EQ(result_type({Dtype::complex64, Dtype::uint8, Dtype::float32}), Dtype::complex64);
  EXPECT_THROW(result_type({Dtype::float16, Dtype::float32}), LogicError);
}

TEST(CtypeFunctions, RenderedCode) {
  // complex * real scales both parts: no multiplication by a zero imaginary part.
  const std::string m = render("${m}", {{"m", functions::mul({Dtype::complex64, Dtype::float32})}});
  EXPECT_NE(
      m.find("WITHIN_KERNEL INLINE skein_complex64 _mod_mul_0_(skein_complex64 a0, float a1)"),
      std::string::npos)
      << m;
  EXPECT_NE(m.find("c.re * t1, c.im * t1"), std::string::npos) << m;
  const std::string d = render("${d}", {{"d", functions::div(Dtype::int32, Dtype::float64)}});
  EXPECT_NE(d.find("double _mod_div_0_(int32_t a0, double a1)"), std::string::npos) << d;
  const std::string n = render("${n}", {{"n", functions::norm(Dtype::complex128)}});
  EXPECT_NE(n.find("double _mod_norm_0_(skein_complex128 a0)"), std::string::npos) << n;
  const std::string c = render("${c}", {{"c", functions::cast(Dtype::float16, Dtype::complex64)}});
  EXPECT_NE(c.find("skein_make_complex64((float)skein_float16_to_float(a0), (float)0)"),
            std::string::npos)
      << c;
}

TEST(CtypeFunctions, InvalidCombinations) {
  EXPECT_THROW(functions::cast(Dtype::complex64, Dtype::float32), LogicError);
  EXPECT_THROW(functions::add({Dtype::complex64, Dtype::float32}, Dtype::float32), LogicError);
  EXPECT_THROW(functions::add({}), LogicError);
  EXPECT_THROW(functions::mul({Dtype::float16, Dtype::float32}), LogicError);
  EXPECT_THROW(functions::exp(Dtype::int32), LogicError);
  EXPECT_THROW(functions::pow(Dtype::complex64, Dtype::complex64), LogicError);
  EXPECT_THROW(functions::pow(Dtype::int32, Dtype::float32), LogicError);
  EXPECT_THROW(functions::polar(Dtype::complex64), LogicError);
  EXPECT_THROW(functions::polar_unit(Dtype::int32), LogicError);
  EXPECT_THROW(functions::div(Dtype::complex64, Dtype::float32, Dtype::float32), LogicError);
  try {
    functions::cast(Dtype::complex128, Dtype::float64);
  } catch (const LogicError& e) {
    EXPECT_NE(std::string(e.what()).find("functions::cast"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("imaginary"), std::string::npos) << e.what();
  }
}

// ---- Device compile checks ----

struct Case {
  Module module;
  Dtype out;
  std::vector<Dtype> in;
};

bool is_fp64(Dtype d) { return d == Dtype::float64 || d == Dtype::complex128; }

std::vector<Case> all_cases() {
  using D = Dtype;
  namespace f = functions;
  std::vector<Case> cases;
  for (D t : {D::float32, D::float64, D::complex64, D::complex128}) {
    const D r = t == D::complex64 ? D::float32 : t == D::complex128 ? D::float64 : t;
    cases.push_back({f::add({t, t}), t, {t, t}});
    cases.push_back({f::add({D::float32, t, D::int16}), t, {D::float32, t, D::int16}});
    cases.push_back({f::mul({t, t}), t, {t, t}});
    cases.push_back({f::mul({D::float32, t, t}), t, {D::float32, t, t}});
    cases.push_back({f::mul({t, D::int8}, D::complex128), D::complex128, {t, D::int8}});
    cases.push_back({f::div(t, t), t, {t, t}});
    cases.push_back({f::div(t, D::float32), t, {t, D::float32}});
    cases.push_back({f::div(D::float32, t), t, {D::float32, t}});
    cases.push_back({f::conj(t), t, {t}});
    cases.push_back({f::exp(t), t, {t}});
    cases.push_back({f::pow(t), t, {t, r}});
    cases.push_back({f::pow(t, D::int32), t, {t, D::int32}});
    cases.push_back({f::pow(t, D::uint16), t, {t, D::uint16}});
    cases.push_back({f::norm(t), r, {t}});
    for (D to :
         {D::float32, D::float64, D::complex64, D::complex128, D::float16, D::bfloat16, D::int32}) {
      if (!is_complex(t) || is_complex(to)) cases.push_back({f::cast(t, to), to, {t}});
    }
  }
  for (D r : {D::float32, D::float64}) {
    cases.push_back({f::polar(r), r == D::float32 ? D::complex64 : D::complex128, {r, r}});
    cases.push_back({f::polar_unit(r), r == D::float32 ? D::complex64 : D::complex128, {r}});
  }
  cases.push_back({f::add({D::int32, D::int8}), D::int32, {D::int32, D::int8}});
  cases.push_back({f::mul({D::int64, D::uint32}), D::int64, {D::int64, D::uint32}});
  cases.push_back({f::div(D::int32, D::int32), D::int32, {D::int32, D::int32}});
  cases.push_back({f::pow(D::int32), D::int32, {D::int32, D::int32}});
  cases.push_back({f::pow(D::uint16, D::int8), D::uint16, {D::uint16, D::int8}});
  cases.push_back({f::pow(D::int64, D::uint64), D::int64, {D::int64, D::uint64}});
  cases.push_back({f::norm(D::int16), D::int16, {D::int16}});
  cases.push_back({f::conj(D::uint8), D::uint8, {D::uint8}});
  cases.push_back({f::cast(D::int32, D::float16), D::float16, {D::int32}});
  cases.push_back({f::cast(D::float16, D::complex64), D::complex64, {D::float16}});
  cases.push_back({f::cast(D::bfloat16, D::float64), D::float64, {D::bfloat16}});
  cases.push_back({f::cast(D::uint8, D::complex128), D::complex128, {D::uint8}});
  cases.push_back({f::cast(D::float16, D::bfloat16), D::bfloat16, {D::float16}});
  return cases;
}

std::vector<StructType> layout_structs(bool fp64) {
  std::vector<StructType> structs{
      StructType{{"a", Dtype::int8}, {"b", Dtype::float32}, {"c", Dtype::int16}},
      StructType{{"a", Dtype::int16}, {"z", Dtype::complex64}, {"c", Dtype::int8, 3}},
      align(StructType{{"x", Dtype::int8}, {"y", Dtype::float32}}, 16),
  };
  StructType nested;
  nested.add("a", Dtype::int8)
      .add("p", structs[2], 3)
      .add("h", Dtype::float16)
      .add("q", structs[0], 2);
  structs.push_back(nested);
  if (fp64) {
    structs.push_back(StructType{{"a", Dtype::int8}, {"b", Dtype::float64}, {"c", Dtype::int16}});
    structs.push_back(StructType{{"a", Dtype::float32}, {"z", Dtype::complex128}, {"n", nested}});
  }
  return structs;
}

// A kernel calling every function module, using the prelude's toolbox, and asserting the device
// layout of structs at compile time (a negative array size fails the build).
std::string check_source(bool fp64) {
  RenderGlobals globals;
  std::string body;
  int k = 0;
  for (const Case& c : all_cases()) {
    bool needs64 = is_fp64(c.out);
    for (Dtype d : c.in) needs64 = needs64 || is_fp64(d);
    if (needs64 && !fp64) continue;
    const std::string key = fmt::format("f{}", k++);
    globals.emplace(key, c.module);
    std::string args;
    for (std::size_t i = 0; i < c.in.size(); ++i) {
      args += fmt::format("{}p_{}[i + {}]", i ? ", " : "", name(c.in[i]), i);
    }
    body += fmt::format("  p_{}[i] = ${{{}}}({});\n", name(c.out), key, args);
  }

  const auto structs = layout_structs(fp64);
  // Field offsets are constant expressions in OpenCL C (clang's __builtin_offsetof) but not in
  // NVRTC, whose layout goes into a device array instead; the test reads it back from the PTX.
  std::string checks;
  for (std::size_t s = 0; s < structs.size(); ++s) {
    const std::string key = fmt::format("S{}", s);
    globals.emplace(key, ctype_module(structs[s], "s"));
    checks += fmt::format("typedef char check_{}_size[sizeof(${{{}}}) == {} ? 1 : -1];\n", s, key,
                          structs[s].itemsize());
    checks += fmt::format("typedef char check_{}_align[__alignof__(${{{}}}) == {} ? 1 : -1];\n", s,
                          key, structs[s].alignment());
    const auto offsets = structs[s].offsets();
    checks += fmt::format(
        "#ifdef CUDA\n__device__ ${{{0}}} skein_probe_{1};\n"
        "__device__ unsigned long long skein_layout_{1}[] = {{0",
        key, s);
    for (const auto& field : structs[s].fields()) {
      checks += fmt::format(
          ", (unsigned long long)((char*)&skein_probe_{0}.{1} - (char*)&skein_probe_{0})", s,
          field.name);
    }
    checks += "};\n#else\n";
    for (std::size_t f = 0; f < offsets.size(); ++f) {
      checks +=
          fmt::format("typedef char check_{}_{}[__builtin_offsetof(${{{}}}, {}) == {} ? 1 : -1];\n",
                      s, f, key, structs[s].fields()[f].name, offsets[f]);
    }
    checks += "#endif\n";
  }
  for (Dtype d : all_dtypes) {
    if (is_fp64(d) && !fp64) continue;
    checks += fmt::format(
        "typedef char check_{0}_size[sizeof({1}) == {2} ? 1 : -1];\n"
        "typedef char check_{0}_align[__alignof__({1}) == {2} ? 1 : -1];\n",
        name(d), ctype(d), itemsize(d));
  }

  std::string params;
  for (Dtype d : all_dtypes) {
    if (is_fp64(d) && !fp64) continue;
    params += fmt::format(",\n    GLOBAL_MEM {} *p_{}", ctype(d), name(d));
  }
  // Built by concatenation: strings bound in the globals are inserted as is, not rendered.
  const std::string kernel = checks +
                             "\nKERNEL void skein_check(GLOBAL_MEM ${S0} *structs, "
                             "GLOBAL_MEM float *out_h" +
                             params + ")\n{\n" + R"(
  LOCAL_MEM float scratch[64];
  const SIZE_T i = get_local_id(0) + get_group_id(1) * get_local_size(2) + get_num_groups(0);
  const VSIZE_T big = (VSIZE_T)get_global_id(0) * (VSIZE_T)get_global_size(1);
  scratch[get_local_id(0) % 64] = (float)big;
  LOCAL_BARRIER;
  structs[i].b = scratch[0];
  out_h[i] = skein_float16_to_float(skein_float16_from_float(out_h[i]))
      + skein_bfloat16_to_float(skein_bfloat16_from_float(out_h[i]));
)" + body + "}\n";
  return render(kernel, globals, "check");
}

std::string numbered(const std::string& source) {
  std::string out;
  int line = 1;
  std::size_t start = 0;
  while (start < source.size()) {
    std::size_t end = source.find('\n', start);
    if (end == std::string::npos) end = source.size();
    out += fmt::format("{:4} {}\n", line++, source.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

#if SKEIN_HAS_CUDA
// The values of a global `unsigned long long name[]` from its PTX initializer, which NVRTC writes
// either as 64-bit values or as little-endian bytes with the trailing zeros left out.
std::vector<std::size_t> ptx_u64_array(const std::string& ptx, const std::string& name) {
  const std::size_t at = ptx.find(" " + name + "[");
  if (at == std::string::npos) {
    ADD_FAILURE() << name << " not in the PTX";
    return {};
  }
  const std::size_t line_start = ptx.rfind('\n', at) + 1;
  const bool bytes = ptx.substr(line_start, at - line_start).find(".b8") != std::string::npos;
  const std::size_t count = std::stoul(ptx.substr(at + name.size() + 2));
  const std::size_t open = ptx.find('{', at);
  const std::size_t close = ptx.find('}', open);
  std::vector<std::uint64_t> values;
  std::size_t pos = open + 1;
  while (pos < close) {
    std::size_t used = 0;
    values.push_back(std::stoull(ptx.substr(pos, close - pos), &used, 0));
    pos += used;
    pos = ptx.find_first_not_of(", \t\n", pos);
  }
  std::vector<std::size_t> out(bytes ? count / 8 : count, 0);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (bytes) {
      out[i / 8] |= static_cast<std::size_t>(values[i]) << (8 * (i % 8));
    } else {
      out[i] = static_cast<std::size_t>(values[i]);
    }
  }
  return out;
}

TEST(CtypePrelude, CudaCompilesWithNvrtc) {
  const std::string source = std::string(detail::cuda::prelude) + check_source(true);
  nvrtcProgram program;
  ASSERT_EQ(nvrtcCreateProgram(&program, source.c_str(), "check.cu", 0, nullptr, nullptr),
            NVRTC_SUCCESS);
  const nvrtcResult result = nvrtcCompileProgram(program, 0, nullptr);
  std::size_t size = 0;
  nvrtcGetProgramLogSize(program, &size);
  std::string log(size, '\0');
  nvrtcGetProgramLog(program, log.data());
  if (result != NVRTC_SUCCESS) nvrtcDestroyProgram(&program);
  ASSERT_EQ(result, NVRTC_SUCCESS) << log << "\n" << numbered(source);

  nvrtcGetPTXSize(program, &size);
  std::string ptx(size, '\0');
  nvrtcGetPTX(program, ptx.data());
  nvrtcDestroyProgram(&program);
  const auto structs = layout_structs(true);
  for (std::size_t s = 0; s < structs.size(); ++s) {
    const auto layout = ptx_u64_array(ptx, fmt::format("skein_layout_{}", s));
    auto expected = structs[s].offsets();
    expected.insert(expected.begin(), 0);
    EXPECT_EQ(layout, expected) << "struct " << s << ":\n" << ctype_struct(structs[s], "s");
  }
}
#endif

#if SKEIN_HAS_OPENCL
TEST(CtypePrelude, OpenclCompilesOnEveryPlatform) {
  cl_uint num_platforms = 0;
  if (clGetPlatformIDs(0, nullptr, &num_platforms) != CL_SUCCESS || num_platforms == 0) {
    GTEST_SKIP() << "no OpenCL platform";
  }
  std::vector<cl_platform_id> platforms(num_platforms);
  clGetPlatformIDs(num_platforms, platforms.data(), nullptr);
  int built = 0;
  for (cl_platform_id platform : platforms) {
    cl_uint num_devices = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &num_devices) != CL_SUCCESS ||
        num_devices == 0) {
      continue;
    }
    cl_device_id device;
    clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, nullptr);
    std::size_t ext_size = 0;
    clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, 0, nullptr, &ext_size);
    std::string extensions(ext_size, '\0');
    clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, ext_size, extensions.data(), nullptr);
    const bool fp64 = extensions.find("cl_khr_fp64") != std::string::npos;

    cl_int err = CL_SUCCESS;
    cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    ASSERT_EQ(err, CL_SUCCESS);
    const std::string source = std::string(detail::opencl::prelude) + check_source(fp64);
    const char* text = source.c_str();
    cl_program program = clCreateProgramWithSource(context, 1, &text, nullptr, &err);
    ASSERT_EQ(err, CL_SUCCESS);
    // Without optimisation too: C99 `inline` semantics must not leave undefined functions.
    for (const char* options : {"", "-cl-opt-disable"}) {
      err = clBuildProgram(program, 1, &device, options, nullptr, nullptr);
      std::size_t log_size = 0;
      clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &log_size);
      std::string log(log_size, '\0');
      clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, log_size, log.data(), nullptr);
      EXPECT_EQ(err, CL_SUCCESS) << "options '" << options << "'\n"
                                 << log << "\n"
                                 << numbered(source);
      if (err == CL_SUCCESS) {
        cl_kernel kernel = clCreateKernel(program, "skein_check", &err);
        EXPECT_EQ(err, CL_SUCCESS);
        if (err == CL_SUCCESS) clReleaseKernel(kernel);
      }
    }
    clReleaseProgram(program);
    clReleaseContext(context);
    ++built;
  }
  if (built == 0) GTEST_SKIP() << "no OpenCL device";
}
#endif

}  // namespace ctypes_test
}  // namespace
}  // namespace skein
