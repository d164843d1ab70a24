// SPDX-License-Identifier: BSD-3-Clause
// Program::from_binary refuses bytes that are no program for the device, on every backend: junk,
// random bytes, and bytes that look like a program (OpenCL: this device's own binary with its
// first bytes changed, and on PoCL with the hash of another device; CUDA: PTX text that is not
// valid PTX, as the driver reads a module without its size and only text ends safely at its NUL).
// Each is a LogicError that names Program::from_binary and the backend's call, the device, says
// the bytes are not a valid program for it and what to do (build it from source for this device),
// and blames no one else; the context works on afterwards (a kernel built from source gives the
// host's result). The intact binary loads, so the refusals are the bytes' doing.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <skein/program.hpp>
#include <skein/skein.hpp>
#include <string>
#include <vector>

#include "backends.hpp"
#include "checks.hpp"

namespace skein::test {
namespace {
namespace program_binary_test {

class ProgramBinaries : public BackendTest {};

const char* kScale = R"(
KERNEL void scale(GLOBAL_MEM float* y, GLOBAL_MEM const float* x, float a, int n)
{
    const int i = get_global_id(0);
    if (i < n) y[i] = a * x[i];
}
)";

// The binary this device's driver made of kScale (kept by ProgramOptions::keep: a CUBIN on CUDA,
// the driver's program binary on OpenCL).
std::vector<std::byte> device_binary(const Context& ctx) {
  const Program built(
      ctx, kScale,
      {.device_idxs = std::vector<std::size_t>{0}, .keep = true, .name = "scale, kept"});
  const auto dir = built.kept_directory().value();
  const auto path = dir / (ctx.api().id() == ApiId::cuda ? "device0.cubin" : "device0.bin");
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::filesystem::remove_all(dir);
  std::vector<std::byte> bytes(chars.size());
  for (std::size_t i = 0; i < chars.size(); ++i) bytes[i] = static_cast<std::byte>(chars[i]);
  return bytes;
}

std::vector<std::byte> text_bytes(const std::string& text) {
  std::vector<std::byte> bytes(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) bytes[i] = static_cast<std::byte>(text[i]);
  return bytes;
}

struct Case {
  std::string what;
  std::vector<std::byte> bytes;
};

// Bytes that are no program for the device: junk, random bytes, and ones that look like a program.
std::vector<Case> bad_binaries(const Context& ctx, const std::vector<std::byte>& good) {
  std::vector<Case> cases{{"junk", std::vector<std::byte>(64, std::byte{0x5a})},
                          {"random bytes", random_bytes(4096, 71)}};
  if (ctx.api().id() == ApiId::cuda) {
    cases.push_back(
        {"PTX that is not valid PTX", text_bytes(".version 7.0\n.target sm_50\n.address_size 64\n\n"
                                                 ".visible .entry scale(\n    .param .u64 y\n)\n{\n"
                                                 "    this is no instruction;\n    ret;\n}\n")});
  } else {
    // The device's own binary with its first bytes changed (a format's magic number, PTX's first
    // line on NVIDIA's OpenCL); in PoCL's format also with only the hash of the device changed (a
    // binary of another device). Garbled further in, or cut short, PoCL's binary is not fed to it:
    // PoCL 3 trusts the lengths its format holds and reads past them (or fails an assertion).
    std::vector<std::byte> magic = good;
    for (std::size_t i = 0; i < std::min<std::size_t>(8, magic.size()); ++i)
      magic[i] ^= std::byte{0x5a};
    cases.push_back({"the device's binary with its first bytes changed", magic});
    if (good.size() > 16 && std::memcmp(good.data(), "poclbin", 7) == 0) {
      std::vector<std::byte> other = good;
      for (std::size_t i = 8; i < 16; ++i) other[i] ^= std::byte{0x5a};
      cases.push_back({"a PoCL binary of another device", other});
    }
  }
  return cases;
}

// y = 3 x by a program built from source, against the host.
void expect_source_kernel_runs(const Context& ctx) {
  Queue queue(ctx, {0});
  const Program program(ctx, kScale, {.device_idxs = std::vector<std::size_t>{0}});
  const std::size_t n = 1000;
  const auto x = random_reals<float>(n, 73);
  auto dx = Array::from_host(queue, x);
  auto dy = Array::zeros(queue, {n}, Dtype::float32);
  program.kernel("scale").prepare(queue, 1024, LaunchSizes{64})(dy, dx, 3.0f,
                                                                static_cast<std::int32_t>(n));
  const auto y = dy.get<float>();
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], 3.0f * x[i]) << i;
}

TEST_P(ProgramBinaries, BytesThatAreNoProgramForTheDeviceAreRefusedClearly) {
  const Context ctx = context();
  const std::string device = ctx.device(0).description();
  const bool cuda = ctx.api().id() == ApiId::cuda;
  const ProgramOptions on_0{.device_idxs = std::vector<std::size_t>{0}, .name = "offline"};
  const std::vector<std::byte> good = device_binary(ctx);
  ASSERT_FALSE(good.empty());
  const Program intact = Program::from_binary(ctx, good, on_0);
  EXPECT_NO_THROW((void)intact.kernel("scale"));

  for (const Case& bad : bad_binaries(ctx, good)) {
    SCOPED_TRACE(bad.what);
    std::string message;
    try {
      (void)Program::from_binary(ctx, bad.bytes, on_0);
      ADD_FAILURE() << "no LogicError";
      continue;
    } catch (const LogicError& e) {
      message = e.what();
    }
    // The call: Skein's and the backend's (OpenCL drivers refuse at the create or at the build).
    EXPECT_TRUE(contains(message, "Program::from_binary")) << message;
    if (cuda) {
      EXPECT_TRUE(contains(message, "cuModuleLoadData")) << message;
    } else {
      EXPECT_TRUE(contains(message, "clCreateProgramWithBinary") ||
                  contains(message, "clBuildProgram"))
          << message;
    }
    // What is wrong, where, and what to do.
    EXPECT_TRUE(contains(message, "'offline' cannot run on this device")) << message;
    EXPECT_TRUE(contains(message, "not a valid")) << message;
    EXPECT_TRUE(contains(message, device)) << message;
    EXPECT_TRUE(contains(message, "from source for this device")) << message;
    // No blame on Skein, no variable's name as the call, one message (not one inside another).
    EXPECT_FALSE(contains(message, "bug in Skein")) << message;
    EXPECT_FALSE(contains(message, "err:")) << message;
    EXPECT_EQ(message.find("skein: "), message.rfind("skein: ")) << message;
  }
  expect_source_kernel_runs(ctx);
}

SKEIN_INSTANTIATE_BACKENDS(ProgramBinaries);

}  // namespace program_binary_test
}  // namespace
}  // namespace skein::test
