// SPDX-License-Identifier: BSD-3-Clause
// OpenCL programs: built from source for one device, cached as the driver's program binary, and
// rebuilt from that binary when loaded; with the compile cache off, used as built. Kernels get
// their arguments with clSetKernelArg; an array view goes to a rewritten kernel as its allocation
// and offset (skein/detail/opencl/kernel_offsets.hpp), else as a sub-buffer.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "adapters.hpp"
#include "check.hpp"
#include "skein/detail/compile_error.hpp"
#include "skein/detail/opencl/kernel_offsets.hpp"
#include "skein/detail/opencl/prelude.hpp"
#include "skein/detail/trace.hpp"

namespace skein::detail {

namespace opencl {

namespace {

std::string joined(const std::vector<std::string>& options) {
  return fmt::format("{}", fmt::join(options, " "));
}

std::string build_log(cl_program program, cl_device_id device) {
  std::size_t size = 0;
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
  std::string log(size, '\0');
  if (size) clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

// Sizes of the scalar types a kernel parameter may be declared with (as clGetKernelArgInfo
// reports them); 0 for a type not listed here (then only the driver checks the size).
std::size_t scalar_size(std::string type) {
  static const std::map<std::string, std::size_t> sizes{
      {"char", 1},  {"uchar", 1},  {"unsigned char", 1},  {"bool", 1},
      {"short", 2}, {"ushort", 2}, {"unsigned short", 2}, {"half", 2},
      {"int", 4},   {"uint", 4},   {"unsigned int", 4},   {"float", 4},
      {"long", 8},  {"ulong", 8},  {"unsigned long", 8},  {"double", 8}};
  while (!type.empty() && (type.back() == ' ' || type.back() == '\0')) type.pop_back();
  if (auto it = sizes.find(type); it != sizes.end()) return it->second;
  // Vector types: float4, int2, ... (3-vectors take the space of 4).
  for (const auto& [base, size] : sizes) {
    if (type.rfind(base, 0) == 0 && type.size() > base.size()) {
      const std::string count = type.substr(base.size());
      if (count == "2" || count == "3" || count == "4" || count == "8" || count == "16") {
        const std::size_t n = count == "3" ? 4 : std::stoul(count);
        return size * n;
      }
    }
  }
  return 0;
}

// What the driver says of the kernel's parameters (Skein builds with -cl-kernel-arg-info, but a
// program made from a binary need not have the information): their address qualifiers, or
// std::nullopt, and their names where the driver gives those too.
struct ArgInfo {
  std::vector<cl_kernel_arg_address_qualifier> qualifiers;
  std::vector<char> local;
  std::vector<std::string> names;  // empty without them
};

std::string arg_string(cl_kernel kernel, cl_uint i, cl_kernel_arg_info what, bool& ok) {
  std::size_t size = 0;
  ok = ok && clGetKernelArgInfo(kernel, i, what, 0, nullptr, &size) == CL_SUCCESS;
  std::string text(ok ? size : 0, '\0');
  ok = ok && clGetKernelArgInfo(kernel, i, what, size, text.data(), nullptr) == CL_SUCCESS;
  while (!text.empty() && text.back() == '\0') text.pop_back();
  return text;
}

std::optional<ArgInfo> arg_info(cl_kernel kernel, cl_uint nargs) {
  ArgInfo info;
  bool named = true;
  for (cl_uint i = 0; i < nargs; ++i) {
    cl_kernel_arg_address_qualifier qualifier = 0;
    if (clGetKernelArgInfo(kernel, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof(qualifier),
                           &qualifier, nullptr) != CL_SUCCESS) {
      return std::nullopt;
    }
    info.qualifiers.push_back(qualifier);
    info.local.push_back(qualifier == CL_KERNEL_ARG_ADDRESS_LOCAL);
    info.names.push_back(arg_string(kernel, i, CL_KERNEL_ARG_NAME, named));
  }
  if (!named) info.names.clear();
  return info;
}

class OclKernel final : public KernelAdapter {
 public:
  OclKernel(std::shared_ptr<OclContext> context, std::size_t device_idx, cl_kernel kernel,
            const std::string& name, const std::vector<ParamRole>* roles)
      : trace_(trace_name(name.c_str())),
        context_(std::move(context)),
        device_(context_->describe_device(device_idx)),
        name_(name),
        align_(context_->devices()[device_idx]->params().base_address_align),
        kernel_(kernel) {
    const cl_device_id dev = context_->device_id(device_idx);
    std::size_t wg = 0;
    cl_ulong local = 0, priv = 0;
    SKEIN_CL_CHECK(
        clGetKernelWorkGroupInfo(kernel_, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof(wg), &wg, nullptr),
        device_);
    SKEIN_CL_CHECK(clGetKernelWorkGroupInfo(kernel_, dev, CL_KERNEL_LOCAL_MEM_SIZE, sizeof(local),
                                            &local, nullptr),
                   device_);
    clGetKernelWorkGroupInfo(kernel_, dev, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof(priv), &priv,
                             nullptr);
    std::size_t multiple = 1;
    SKEIN_CL_CHECK(
        clGetKernelWorkGroupInfo(kernel_, dev, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                                 sizeof(multiple), &multiple, nullptr),
        device_);
    attributes_.max_total_local_size = wg;
    attributes_.local_mem_size = local;
    attributes_.private_mem_size = priv;
    attributes_.preferred_local_size_multiple = std::max<std::size_t>(multiple, 1);
    try {
      set_params(roles);
    } catch (...) {
      clReleaseKernel(kernel_);
      throw;
    }
  }

  ~OclKernel() override { clReleaseKernel(kernel_); }

  const KernelAttributes& attributes() const override { return attributes_; }
  const std::optional<std::vector<ParamInfo>>& params() const override { return params_; }
  std::uintptr_t native() const override { return reinterpret_cast<std::uintptr_t>(kernel_); }

  std::int64_t get_attribute(KernelAttribute attribute) const override {
    switch (attribute) {
      case KernelAttribute::max_threads_per_block:
        return static_cast<std::int64_t>(attributes_.max_total_local_size);
      case KernelAttribute::shared_size_bytes:
        return static_cast<std::int64_t>(attributes_.local_mem_size);
      case KernelAttribute::local_size_bytes:
        return static_cast<std::int64_t>(attributes_.private_mem_size);
      default:
        throw LogicError(ErrorInfo{
            .what = fmt::format("OpenCL does not report the kernel attribute {}", name(attribute)),
            .call = "Kernel::get_attribute",
            .device = device_,
            .hint = "On OpenCL ask for max_threads_per_block, shared_size_bytes or "
                    "local_size_bytes (clGetKernelWorkGroupInfo); the others are CUDA's.",
            .location = SKEIN_HERE});
    }
  }

  void set_attribute(KernelAttribute attribute, std::int64_t) override {
    refuse("Kernel::set_attribute", fmt::format("setting the kernel attribute {}", name(attribute)),
           "OpenCL kernels have no settable attributes (CUDA's cuFuncSetAttribute); dynamic "
           "local memory is sized per launch (LocalMem).");
  }
  void set_cache_config(CacheConfig) override {
    refuse("Kernel::set_cache_config", "a kernel's cache configuration",
           "The L1 / shared memory split is CUDA's (cuFuncSetCacheConfig); OpenCL has no "
           "counterpart. Check api().id() == ApiId::cuda before calling.");
  }
  void set_shared_config(SharedConfig) override {
    refuse("Kernel::set_shared_config", "a kernel's shared memory bank width",
           "The bank width is CUDA's (cuFuncSetSharedMemConfig); OpenCL has no counterpart. "
           "Check api().id() == ApiId::cuda before calling.");
  }

  void launch(QueueAdapter& queue, const LaunchDims& dims, std::span<const KernelArg> args,
              std::shared_ptr<EventAdapter>* event) override {
    // clSetKernelArg is not thread-safe for one kernel object, and the arguments must stay set
    // until the enqueue has taken them: one launch at a time per cl_kernel (copies of a Kernel,
    // its PreparedKernels and the shared built-in kernels all launch through this object).
    std::lock_guard lock(launch_mutex_);
    for (const cl_uint index : slots_.locals) {
      SKEIN_CL_CHECK(
          clSetKernelArg(kernel_, index, std::max<std::size_t>(dims.local_mem, 1), nullptr),
          device_);
    }
    for (std::size_t i = 0; i < args.size(); ++i) {
      const auto& arg = args[i];
      const ArgSlot slot =
          i < slots_.args.size() ? slots_.args[i] : ArgSlot{static_cast<std::uint32_t>(i), false};
      // A view parameter takes the whole allocation and the offset of the argument's start in it.
      cl_ulong offset = 0;
      if (arg.kind == KernelArg::Kind::buffer) {
        const auto& buffer = *static_cast<const OclBuffer*>(arg.buffer);
        const cl_mem mem =
            slot.view ? buffer.mem() : buffer.at(arg.offset, align_, device_, name_, i);
        if (slot.view) offset = arg.offset;
        SKEIN_CL_CHECK(clSetKernelArg(kernel_, slot.index, sizeof(cl_mem), &mem), device_);
      } else {
        SKEIN_CL_CHECK(clSetKernelArg(kernel_, slot.index, arg.size, arg.value), device_);
      }
      if (slot.view) {
        SKEIN_CL_CHECK(clSetKernelArg(kernel_, slot.index + 1, sizeof(offset), &offset), device_);
      }
    }
    cl_event done = nullptr;
    TraceRange range(trace_);  // the kernel's name, registered once
    SKEIN_CL_CHECK(
        clEnqueueNDRangeKernel(static_cast<OclQueue&>(queue).get(), kernel_, dims.dims, nullptr,
                               dims.global, dims.local, 0, nullptr, event ? &done : nullptr),
        device_);
    if (event) *event = std::make_shared<OclEvent>(done, device_);
  }

 private:
  // Which parameter each launch argument fills, and what the launch checks of it. The driver's
  // parameter names tell best (they mark the views); without them, the roles of the source's
  // rewrite (kernel_offsets.cpp); else each argument fills the next parameter that is not
  // `__local`, where the driver says which those are, or the next parameter.
  void set_params(const std::vector<ParamRole>* roles) {
    cl_uint nargs = 0;
    SKEIN_CL_CHECK(clGetKernelInfo(kernel_, CL_KERNEL_NUM_ARGS, sizeof(nargs), &nargs, nullptr),
                   device_);
    const auto info = arg_info(kernel_, nargs);
    if (info && (!info->names.empty() || !roles)) {
      std::vector<std::string> names = info->names;
      names.resize(nargs);
      slots_ = slots_from_arg_info(names, info->local);
    } else if (roles) {
      slots_ = slots_from_roles(*roles);
      if (slots_.parameters != nargs) {
        throw LogicError(ErrorInfo{
            .what = fmt::format("kernel '{}' has {} parameters, but its source reads as {}", name_,
                                nargs, slots_.parameters),
            .call = "Program::kernel",
            .device = device_,
            .hint = "A macro defined outside the source (a compiler option, an #include) changes "
                    "the kernel's parameter list: write the list out in the source.",
            .location = SKEIN_HERE});
      }
    } else {
      for (cl_uint i = 0; i < nargs; ++i) slots_.args.push_back({i, false});
      slots_.parameters = nargs;
    }
    std::vector<ParamInfo> params;
    for (const ArgSlot& slot : slots_.args) {
      if (info) {
        params.push_back(param_info(slot, *info));
      } else if (slot.view) {
        params.push_back({ParamInfo::Kind::pointer, sizeof(void*)});
      } else {
        params.emplace_back();  // unknown: only the count is checked
      }
    }
    params_ = std::move(params);
  }

  [[noreturn]] void refuse(const char* call, const std::string& what, const char* hint) const {
    throw LogicError(ErrorInfo{.what = what + " is not supported on OpenCL",
                               .call = call,
                               .device = device_,
                               .hint = hint,
                               .location = SKEIN_HERE});
  }

  ParamInfo param_info(const ArgSlot& slot, const ArgInfo& info) const {
    const auto qualifier = info.qualifiers[slot.index];
    if (slot.view || qualifier == CL_KERNEL_ARG_ADDRESS_GLOBAL ||
        qualifier == CL_KERNEL_ARG_ADDRESS_CONSTANT) {
      return {ParamInfo::Kind::pointer, sizeof(void*)};
    }
    if (qualifier == CL_KERNEL_ARG_ADDRESS_PRIVATE) {
      bool ok = true;
      const std::string type = arg_string(kernel_, slot.index, CL_KERNEL_ARG_TYPE_NAME, ok);
      return {ParamInfo::Kind::scalar, ok ? scalar_size(type) : 0};
    }
    return {};
  }

  TraceName trace_;  // NVTX's handle of the kernel's name (null without a profiler)
  std::shared_ptr<OclContext> context_;
  std::string device_;
  std::string name_;
  std::mutex launch_mutex_;
  std::size_t align_;
  cl_kernel kernel_;
  KernelAttributes attributes_;
  std::optional<std::vector<ParamInfo>> params_;
  KernelSlots slots_;  // the parameters of the launch arguments, and the `__local` ones
};

class OclProgram final : public ProgramAdapter {
 public:
  OclProgram(std::shared_ptr<OclContext> context, std::size_t device_idx, cl_program program)
      : context_(std::move(context)), device_idx_(device_idx), program_(program) {}
  ~OclProgram() override { clReleaseProgram(program_); }

  std::shared_ptr<KernelAdapter> kernel(const std::string& name,
                                        const std::vector<ParamRole>* roles) override {
    cl_int err = CL_SUCCESS;
    cl_kernel kernel = clCreateKernel(program_, name.c_str(), &err);
    if (err == CL_INVALID_KERNEL_NAME) {
      std::size_t size = 0;
      clGetProgramInfo(program_, CL_PROGRAM_KERNEL_NAMES, 0, nullptr, &size);
      std::string names(size, '\0');
      clGetProgramInfo(program_, CL_PROGRAM_KERNEL_NAMES, size, names.data(), nullptr);
      while (!names.empty() && names.back() == '\0') names.pop_back();
      throw LogicError(ErrorInfo{.what = fmt::format("the program has no kernel '{}'", name),
                                 .call = "Program::kernel",
                                 .device = context_->describe_device(device_idx_),
                                 .hint = fmt::format("Its kernels are: {}.", names),
                                 .location = SKEIN_HERE});
    }
    SKEIN_CL_CHECK_RESULT(err, "clCreateKernel", context_->describe_device(device_idx_));
    return std::make_shared<OclKernel>(context_, device_idx_, kernel, name, roles);
  }

  void set_constant(QueueAdapter&, const std::string& name, const void*, const BufferAdapter*,
                    std::size_t, std::size_t) override {
    throw LogicError(
        ErrorInfo{.what = fmt::format("constant arrays are a CUDA feature (array '{}')", name),
                  .call = "Program::set_constant_array",
                  .device = context_->describe_device(device_idx_),
                  .hint = "Pass the data as a CONSTANT_MEM_ARG kernel argument instead.",
                  .location = SKEIN_HERE});
  }

 private:
  std::shared_ptr<OclContext> context_;
  std::size_t device_idx_;
  cl_program program_;
};

}  // namespace

std::string_view OclContext::prelude() const { return opencl::prelude; }

std::optional<RewrittenSource> OclContext::rewrite_source(std::string_view source,
                                                          bool prelude) const {
  return rewrite_view_offsets(source, prelude);
}

std::vector<std::string> OclContext::default_options(std::size_t, bool fast_math) const {
  // Argument info lets launches check argument kinds and sizes before the driver does.
  std::vector<std::string> options{"-cl-kernel-arg-info"};
  if (fast_math) options.emplace_back("-cl-fast-relaxed-math");
  return options;
}

std::vector<std::string> OclContext::compiler_identity(std::size_t device_idx) const {
  const cl_device_id dev = device_id(device_idx);
  const auto& params = devices_[device_idx]->params();
  return {"opencl",
          params.name,
          params.vendor,
          params.driver_version,
          device_string(dev, CL_DEVICE_VERSION),
          device_string(dev, CL_DEVICE_OPENCL_C_VERSION)};
}

namespace {

using ProgramHandle =
    std::unique_ptr<std::remove_pointer_t<cl_program>, decltype(&clReleaseProgram)>;

// `source` built for one device of the context, and the build log. Throws CompileError.
ProgramHandle build_from_source(cl_context context, cl_device_id dev, const std::string& where,
                                const std::string& source, const std::vector<std::string>& options,
                                const std::string& name, std::string& log) {
  const char* text = source.c_str();
  const std::size_t length = source.size();
  cl_int err = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(context, 1, &text, &length, &err);
  SKEIN_CL_CHECK_RESULT(err, "clCreateProgramWithSource", where);
  ProgramHandle guard(program, &clReleaseProgram);
  const std::string opts = joined(options);
  err = clBuildProgram(program, 1, &dev, opts.c_str(), nullptr, nullptr);
  log = build_log(program, dev);
  const auto arg_info = std::find(options.begin(), options.end(), "-cl-kernel-arg-info");
  if (err == CL_BUILD_PROGRAM_FAILURE && arg_info != options.end() &&
      log.find("ptxas") != std::string::npos) {
    // NVIDIA's OpenCL (driver 580.159.04 on an H200) cannot assemble a kernel without
    // parameters when asked for argument info ("ptxas ... Parsing error near '}'"), while it
    // builds the same source without: build it so, and its kernels go without argument info, as
    // a program loaded from a binary does (the driver still checks the launches).
    std::vector<std::string> without(options.begin(), arg_info);
    without.insert(without.end(), std::next(arg_info), options.end());
    return build_from_source(context, dev, where, source, without, name, log);
  }
  if (err == CL_BUILD_PROGRAM_FAILURE || err == CL_INVALID_BUILD_OPTIONS ||
      err == CL_COMPILE_PROGRAM_FAILURE) {
    raise_compile_error("clBuildProgram", where, name, log, source, options);
  }
  SKEIN_CL_CHECK_RESULT(err, "clBuildProgram", where);
  return guard;
}

}  // namespace

CompiledBinary OclContext::compile(std::size_t device_idx, const std::string& source,
                                   const std::vector<std::string>& options,
                                   const std::string& name) {
  const std::string where = describe_device(device_idx);
  const cl_device_id dev = device_id(device_idx);
  std::string log;
  const ProgramHandle program = build_from_source(context_, dev, where, source, options, name, log);

  // One binary per device of the program (all of the context's); only ours was built.
  cl_uint ndev = 0;
  SKEIN_CL_CHECK(
      clGetProgramInfo(program.get(), CL_PROGRAM_NUM_DEVICES, sizeof(ndev), &ndev, nullptr), where);
  std::vector<cl_device_id> devices(ndev);
  SKEIN_CL_CHECK(clGetProgramInfo(program.get(), CL_PROGRAM_DEVICES, ndev * sizeof(cl_device_id),
                                  devices.data(), nullptr),
                 where);
  std::vector<std::size_t> sizes(ndev);
  SKEIN_CL_CHECK(clGetProgramInfo(program.get(), CL_PROGRAM_BINARY_SIZES,
                                  ndev * sizeof(std::size_t), sizes.data(), nullptr),
                 where);
  std::vector<std::vector<unsigned char>> binaries(ndev);
  std::vector<unsigned char*> pointers(ndev);
  for (cl_uint i = 0; i < ndev; ++i) {
    binaries[i].resize(sizes[i]);
    pointers[i] = binaries[i].data();
  }
  SKEIN_CL_CHECK(clGetProgramInfo(program.get(), CL_PROGRAM_BINARIES, ndev * sizeof(unsigned char*),
                                  pointers.data(), nullptr),
                 where);
  // The spec puts our binary at our device's place in CL_PROGRAM_DEVICES. PoCL (3.1) puts the
  // binaries at the places of the devices in clBuildProgram's list instead: built for device 1 of
  // four, the binary is in slot 0 and slot 1 is empty. Only one device was built for, so only one
  // binary exists: when our slot is empty, the one non-empty slot is ours (load() checks it).
  std::optional<cl_uint> ours, only;
  std::size_t nonempty = 0;
  for (cl_uint i = 0; i < ndev; ++i) {
    if (devices[i] == dev && !binaries[i].empty()) ours = i;
    if (!binaries[i].empty()) {
      only = i;
      ++nonempty;
    }
  }
  if (!ours && nonempty == 1) ours = only;
  if (!ours) {
    throw RuntimeError(ErrorInfo{
        .what = fmt::format("the driver returned no program binary for the device ({} of the "
                            "program's {} device(s) have one)",
                            nonempty, ndev),
        .call = "clGetProgramInfo(CL_PROGRAM_BINARIES)",
        .device = where,
        .hint = "Only the compile cache (and ProgramOptions::keep) need the binary: with "
                "SKEIN_DISABLE_CACHE=1 kernels are built from source and used without one.",
        .location = SKEIN_HERE});
  }
  CompiledBinary out;
  out.binary.resize(binaries[*ours].size());
  std::memcpy(out.binary.data(), binaries[*ours].data(), binaries[*ours].size());
  out.log = std::move(log);
  return out;
}

std::shared_ptr<ProgramAdapter> OclContext::build(std::size_t device_idx, const std::string& source,
                                                  const std::vector<std::string>& options,
                                                  const std::string& name) {
  // The program the compiler built is used as it is: no binary is asked for.
  std::string log;
  ProgramHandle program = build_from_source(
      context_, device_id(device_idx), describe_device(device_idx), source, options, name, log);
  return std::make_shared<OclProgram>(shared_from_this(), device_idx, program.release());
}

namespace {

// Bytes the driver refuses as a program for the device: clCreateProgramWithBinary's per-device
// status (CL_INVALID_BINARY), or a build of the binary that fails. The caller's bytes do not fit
// this device (another platform, device or driver version, or not a binary at all).
[[noreturn]] void raise_invalid_binary(const char* call, cl_int code, const std::string& where,
                                       const std::string& log) {
  throw LogicError(ErrorInfo{
      .what = fmt::format("the bytes are not a valid program binary for this device{}",
                          log.empty() ? "" : fmt::format(" (the driver's build log: {})", log)),
      .call = call,
      .code_name = error_name(code),
      .code = code,
      .has_code = true,
      .device = where,
      .hint = "A program binary runs only on the platform, device and driver version that built "
              "it: build the program from source for this device (skein::Program), or pass the "
              "bytes that clGetProgramInfo(CL_PROGRAM_BINARIES) gave for this device. A binary of "
              "Skein's compile cache refused so is stale: delete the cache directory "
              "(SKEIN_CACHE_DIR) and it is built again.",
      .location = SKEIN_HERE});
}

}  // namespace

std::shared_ptr<ProgramAdapter> OclContext::load(std::size_t device_idx,
                                                 std::span<const std::byte> binary,
                                                 const std::vector<std::string>& options) {
  JitLog log;
  return load_jit(device_idx, binary, options, JitOptions{}, log);
}

CompiledBinary OclContext::compile_ptx(std::size_t device_idx, const std::string&,
                                       const std::vector<std::string>&, const std::string& name) {
  throw LogicError(ErrorInfo{.what = fmt::format("'{}': OpenCL has no PTX", name),
                             .call = "skein::compile",
                             .device = describe_device(device_idx),
                             .hint = "Compile with BinaryFormat::native.",
                             .location = SKEIN_HERE});
}

std::vector<std::string> OclContext::options_for_arch(std::size_t device_idx, bool,
                                                      const std::string& arch) const {
  throw LogicError(ErrorInfo{
      .what = fmt::format("OpenCL has no target architectures (\"{}\" was asked)", arch),
      .call = "skein::compile",
      .device = describe_device(device_idx),
      .hint = "Leave CompileTarget::arch empty: the binary is for the device it is built on.",
      .location = SKEIN_HERE});
}

std::shared_ptr<ProgramAdapter> OclContext::load_jit(std::size_t device_idx,
                                                     std::span<const std::byte> binary,
                                                     const std::vector<std::string>& options,
                                                     const JitOptions&, JitLog& log) {
  const std::string where = describe_device(device_idx);
  const cl_device_id dev = device_id(device_idx);
  const auto* data = reinterpret_cast<const unsigned char*>(binary.data());
  const std::size_t size = binary.size();
  cl_int status = CL_SUCCESS, err = CL_SUCCESS;
  cl_program program = clCreateProgramWithBinary(context_, 1, &dev, &size, &data, &status, &err);
  // The binary's own verdict is the per-device status; err is CL_INVALID_BINARY with it.
  if (status == CL_INVALID_BINARY || err == CL_INVALID_BINARY) {
    if (program) clReleaseProgram(program);
    raise_invalid_binary("clCreateProgramWithBinary", CL_INVALID_BINARY, where, "");
  }
  SKEIN_CL_CHECK_RESULT(err, "clCreateProgramWithBinary", where);
  ProgramHandle guard(program, &clReleaseProgram);
  SKEIN_CL_CHECK_RESULT(status, "clCreateProgramWithBinary (the binary's status)", where);
  const std::string opts = joined(options);
  err = clBuildProgram(program, 1, &dev, opts.c_str(), nullptr, nullptr);
  (err == CL_SUCCESS ? log.info : log.error) = build_log(program, dev);
  if (err == CL_BUILD_PROGRAM_FAILURE || err == CL_INVALID_BINARY) {
    raise_invalid_binary("clBuildProgram (of a program binary)", err, where, log.error);
  }
  if (err != CL_SUCCESS) {
    raise_error(err, "clBuildProgram (of a program binary)", where + ": " + log.error, SKEIN_HERE);
  }
  return std::make_shared<OclProgram>(shared_from_this(), device_idx, guard.release());
}

}  // namespace opencl

}  // namespace skein::detail
