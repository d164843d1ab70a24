// SPDX-License-Identifier: BSD-3-Clause
// skein::compile (PyCUDA's compiler.compile): a rendered source compiled to bytes without loading,
// which Program::from_binary loads and runs against the host (CUDA: a CUBIN for the device's
// architecture and PTX; OpenCL: the device's program binary), with Skein's prelude and the
// options Program applies (fast_math, compiler_options, constant arrays on CUDA); the message
// handler receiving the compiler's and the loader's logs; the JIT options on CUDA (max_registers
// bounds the registers the driver gives a kernel; a bad level is refused) and their refusal on
// OpenCL; junk bytes refused with a LogicError that names the call and blames the input, the
// context working on afterwards; and bad targets refused.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <skein/program.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "backends.hpp"
#include "checks.hpp"

namespace skein::test {
namespace {
namespace compiler_test {

class Compiler : public BackendTest {
 protected:
  bool cuda() const { return GetParam().api == ApiId::cuda; }
};

// y = a x + SHIFT (SHIFT from the compiler's options: they reach the compiler).
const char* kAxpb = R"(
KERNEL void axpb(GLOBAL_MEM float* y, GLOBAL_MEM const float* x, float a, int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + SHIFT;
}
)";

// A kernel that keeps many values live at once, so that without a limit the compiler gives it
// more registers than the JIT option allows below.
const char* kManyRegisters = R"(
KERNEL void many(GLOBAL_MEM float* y, GLOBAL_MEM const float* x, int n)
{
    const int i = get_global_id(0);
    if (i >= n) return;
    float v[32];
#pragma unroll
    for (int k = 0; k < 32; ++k) v[k] = x[(i + k * 7) % n] * (k + 1);
    float s = 0.0f;
#pragma unroll
    for (int r = 0; r < 8; ++r) {
#pragma unroll
        for (int k = 0; k < 32; ++k) s += v[k] * v[(k + r) % 32];
    }
    y[i] = s;
}
)";

// Runs axpb from `program` on n elements and checks y = 2 x + shift against the host.
void expect_axpb(const Program& program, std::size_t n, float shift) {
  const Context& ctx = program.context();
  Queue queue(ctx, {0});
  const auto x = random_reals<float>(n, 91);
  auto dx = Array::from_host(queue, x);
  auto dy = Array::zeros(queue, {n}, Dtype::float32);
  const std::size_t local = 64;
  const std::size_t global = (n + local - 1) / local * local;
  program.kernel("axpb").prepare(queue, global, LaunchSizes{local})(dy, dx, 2.0f,
                                                                    static_cast<std::int32_t>(n));
  const auto y = dy.get<float>();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], 2.0f * x[i] + shift) << i;
}

std::vector<std::string> define_shift(const Context& ctx, const char* value) {
  return {std::string(ctx.api().id() == ApiId::cuda ? "--define-macro=SHIFT=" : "-D SHIFT=") +
          value};
}

TEST_P(Compiler, CompiledBytesLoadWithFromBinaryAndRunAgainstTheHost) {
  const Context ctx = context();
  ProgramOptions options{.device_idxs = std::vector<std::size_t>{0},
                         .compiler_options = define_shift(ctx, "0.5f"),
                         .name = "axpb"};
  std::vector<std::string> infos;
  options.message_handler = [&](bool ok, const std::string& info, const std::string& error) {
    EXPECT_TRUE(ok);
    EXPECT_TRUE(error.empty()) << error;
    infos.push_back(info);
  };
  const std::vector<std::byte> binary = compile(ctx, 0, kAxpb, options);
  ASSERT_FALSE(binary.empty());
  EXPECT_EQ(infos.size(), 1u);  // the compiler's log (empty or warnings)
  if (cuda()) {
    ASSERT_GE(binary.size(), 4u);  // a CUBIN: an ELF file
    EXPECT_EQ(static_cast<char>(binary[1]), 'E');
    EXPECT_EQ(static_cast<char>(binary[2]), 'L');
    EXPECT_EQ(static_cast<char>(binary[3]), 'F');
  }
  const Program program = Program::from_binary(ctx, binary, options);
  EXPECT_EQ(infos.size(), 2u);  // and the loader's
  for (std::size_t n : {1u, 63u, 65u, 1000003u}) {
    SCOPED_TRACE(n);
    expect_axpb(program, n, 0.5f);
  }
  // Every device of the context compiles its own (the bytes of device 0 may not fit another).
  for (std::size_t d = 1; d < ctx.num_devices(); ++d) {
    const auto bytes = compile(ctx, d, kAxpb, options);
    ProgramOptions on_d = options;
    on_d.device_idxs = std::vector<std::size_t>{d};
    on_d.message_handler = {};
    EXPECT_NO_THROW((void)Program::from_binary(ctx, bytes, on_d).kernel("axpb"));
  }
}

TEST_P(Compiler, PtxAndArchitecturesOnCudaAreRefusedOnOpenCL) {
  const Context ctx = context();
  const ProgramOptions options{.device_idxs = std::vector<std::size_t>{0},
                               .compiler_options = define_shift(ctx, "-1.0f"),
                               .name = "axpb"};
  if (!cuda()) {
    expect_logic_error([&] { (void)compile(ctx, 0, kAxpb, options, {BinaryFormat::ptx}); },
                       {"skein::compile", "OpenCL has no PTX", "BinaryFormat::native"});
    expect_logic_error(
        [&] {
          (void)compile(ctx, 0, kAxpb, options, {BinaryFormat::native, "sm_80"});
        },
        {"skein::compile", "OpenCL has no target architectures", "arch"});
    return;
  }
  // PTX of the device's virtual architecture: text the driver compiles when loading.
  const auto ptx = compile(ctx, 0, kAxpb, options, {BinaryFormat::ptx});
  const std::string text(reinterpret_cast<const char*>(ptx.data()), ptx.size());
  EXPECT_TRUE(contains(text, ".entry axpb")) << text.substr(0, 400);
  EXPECT_TRUE(contains(text, ".target sm_")) << text.substr(0, 400);
  expect_axpb(Program::from_binary(ctx, ptx, options), 1000, -1.0f);
  // PTX of an older architecture (Ampere's: CUDA 13 compiles for Turing and later) runs on later
  // ones; a CUBIN of the device's named explicitly.
  const auto old_ptx = compile(ctx, 0, kAxpb, options, {BinaryFormat::ptx, "compute_80"});
  EXPECT_TRUE(contains(std::string(reinterpret_cast<const char*>(old_ptx.data()), old_ptx.size()),
                       ".target sm_80"));
  expect_axpb(Program::from_binary(ctx, old_ptx, options), 1000, -1.0f);
  const auto cc = ctx.device(0).params().compute_capability.value();
  const std::string arch = "sm_" + std::to_string(cc.first) + std::to_string(cc.second);
  expect_axpb(Program::from_binary(
                  ctx, compile(ctx, 0, kAxpb, options, {BinaryFormat::native, arch}), options),
              1000, -1.0f);
  // A CUBIN of another architecture than the device's is refused by the loader.
  const std::string other = cc.first >= 9 ? "sm_80" : "sm_90";
  const auto foreign = compile(ctx, 0, kAxpb, options, {BinaryFormat::native, other});
  expect_logic_error([&] { (void)Program::from_binary(ctx, foreign, options); },
                     {"Program::from_binary", "cuModuleLoadDataEx", "cannot run on this device"});
  // Bad targets.
  expect_logic_error(
      [&] {
        (void)compile(ctx, 0, kAxpb, options, {BinaryFormat::ptx, "sm_80"});
      },
      {"skein::compile", "sm_80", "virtual (compute_XY)"});
  expect_logic_error(
      [&] {
        (void)compile(ctx, 0, kAxpb, options, {BinaryFormat::native, "compute_80"});
      },
      {"skein::compile", "compute_80", "real (sm_XY)"});
  expect_logic_error(
      [&] {
        (void)compile(ctx, 0, kAxpb, options, {BinaryFormat::native, "sm_"});
      },
      {"skein::compile", "is no real"});
}

TEST_P(Compiler, JitOptionsBoundRegistersOnCudaAndAreRefusedOnOpenCL) {
  const Context ctx = context();
  ProgramOptions options{.device_idxs = std::vector<std::size_t>{0}, .name = "many"};
  if (!cuda()) {
    const auto binary = compile(ctx, 0, kManyRegisters, options);
    options.jit.max_registers = 32;
    expect_logic_error(
        [&] { (void)Program::from_binary(ctx, binary, options); },
        {"Program::from_binary", "OpenCL has no JIT max_registers option", "compiler_options"});
    options.jit = {.optimization_level = 0};
    expect_logic_error([&] { (void)Program::from_binary(ctx, binary, options); },
                       {"OpenCL has no JIT optimization_level option", "-cl-opt-disable"});
    // verbose is accepted; the build log reaches the handler; the program runs.
    options.jit = {.verbose = true};
    bool called = false;
    options.message_handler = [&](bool ok, const std::string&, const std::string&) {
      called = true;
      EXPECT_TRUE(ok);
    };
    EXPECT_NO_THROW((void)Program::from_binary(ctx, binary, options).kernel("many"));
    EXPECT_TRUE(called);
    return;
  }
  // A kernel named after this process and moment makes the module one the driver has not seen:
  // the CUDA driver keeps JIT results across processes (its compute cache), and a module it has
  // compiled before loads without a JIT, so without an info log (seen on a second run of the suite
  // on one machine).
  const std::string source =
      std::string(kManyRegisters) +
      fmt::format("\nKERNEL void unique_{}_{}(GLOBAL_MEM float* y) {{ y[0] = 0.0f; }}\n",
                  static_cast<long>(getpid()),
                  std::chrono::steady_clock::now().time_since_epoch().count());
  const auto ptx = compile(ctx, 0, source, options, {BinaryFormat::ptx});
  const std::size_t free_registers =
      Program::from_binary(ctx, ptx, options).kernel("many").attributes(0).registers;
  ASSERT_GT(free_registers, 24u) << "the kernel needs too few registers to test the bound";
  options.jit.max_registers = 24;
  options.jit.verbose = true;
  std::string info_log;
  options.message_handler = [&](bool ok, const std::string& info, const std::string& error) {
    EXPECT_TRUE(ok) << error;
    info_log = info;
  };
  const Program bounded = Program::from_binary(ctx, ptx, options);
  EXPECT_LE(bounded.kernel("many").attributes(0).registers, 24u);
  EXPECT_FALSE(info_log.empty()) << "verbose JIT gave no info log";
  // The bounded kernel still computes what the host does.
  Queue queue(ctx, {0});
  const std::size_t n = 4099;
  const auto x = random_reals<float>(n, 5);
  auto dx = Array::from_host(queue, x);
  auto dy = Array::zeros(queue, {n}, Dtype::float32);
  bounded.kernel("many").prepare(queue, 4160, LaunchSizes{64})(dy, dx,
                                                               static_cast<std::int32_t>(n));
  const auto y = dy.get<float>();
  for (std::size_t i = 0; i < n; ++i) {
    float v[32];
    for (int k = 0; k < 32; ++k) v[k] = x[(i + static_cast<std::size_t>(k) * 7) % n] * (k + 1);
    float s = 0.0f;
    for (int r = 0; r < 8; ++r)
      for (int k = 0; k < 32; ++k) s += v[k] * v[(k + r) % 32];
    ASSERT_NEAR(y[i], s, 1e-4f * std::abs(s) + 1e-4f) << i;
  }
  // The levels 0 to 4 load; above 4 is refused before the driver sees it.
  for (unsigned level : {0u, 4u}) {
    options.jit = {.optimization_level = level};
    EXPECT_NO_THROW((void)Program::from_binary(ctx, ptx, options).kernel("many")) << level;
  }
  options.jit = {.optimization_level = 5};
  expect_logic_error([&] { (void)Program::from_binary(ctx, ptx, options); },
                     {"Program::from_binary", "optimization_level 5 is out of range", "0"});
}

TEST_P(Compiler, JunkIsRefusedNamingTheCallAndTheInputAndTheHandlerHearsIt) {
  const Context ctx = context();
  ProgramOptions options{.device_idxs = std::vector<std::size_t>{0},
                         .compiler_options = define_shift(ctx, "2.0f"),
                         .name = "junk"};
  int failures = 0;
  options.message_handler = [&](bool ok, const std::string&, const std::string&) {
    if (!ok) ++failures;
  };
  const std::vector<std::byte> junk(256, std::byte{0x3c});
  std::string message;
  try {
    (void)Program::from_binary(ctx, junk, options);
    ADD_FAILURE() << "junk loaded";
  } catch (const LogicError& e) {
    message = e.what();
  }
  EXPECT_TRUE(contains(message, "Program::from_binary")) << message;
  EXPECT_TRUE(contains(message, cuda() ? "cuModuleLoadDataEx" : "clCreateProgramWithBinary") ||
              contains(message, "clBuildProgram"))
      << message;
  EXPECT_TRUE(contains(message, "cannot run on this device")) << message;
  EXPECT_TRUE(contains(message, "Build the binary for this device")) << message;
  EXPECT_FALSE(contains(message, "bug in Skein")) << message;
  EXPECT_EQ(failures, 1);
  // What the user does next works: compile for this device and load that.
  options.message_handler = {};
  expect_axpb(Program::from_binary(ctx, compile(ctx, 0, kAxpb, options), options), 100, 2.0f);
}

TEST_P(Compiler, BadSourceAndBadDeviceAreRefused) {
  const Context ctx = context();
  const ProgramOptions options{.name = "broken"};
  expect_error<CompileError>(
      [&] {
        (void)compile(ctx, 0, "KERNEL void k(GLOBAL_MEM float* y) { y[0] = nope; }", options);
      },
      {"broken", "nope"});
  expect_logic_error([&] { (void)compile(ctx, ctx.num_devices(), kAxpb, options); },
                     {"skein::compile", "out of range"});
  // Constant arrays are CUDA's, as for Program.
  ProgramOptions constants = options;
  constants.constant_arrays = {{"table", ConstantArray{4, Dtype::float32}}};
  if (!cuda()) {
    expect_logic_error(
        [&] {
          (void)compile(ctx, 0, "KERNEL void k(GLOBAL_MEM float* y) { y[0] = 1.0f; }", constants);
        },
        {"constant arrays are a CUDA feature"});
  }
}

SKEIN_INSTANTIATE_BACKENDS(Compiler);

}  // namespace compiler_test
}  // namespace
}  // namespace skein::test
