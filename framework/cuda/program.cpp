// CUDA programs: NVRTC compiles a source straight to the device's own machine code (cubin), the
// driver loads it as a module in the device's context, and kernels launch with cuLaunchKernel.
#include <fmt/format.h>
#include <nvrtc.h>

#include <memory>
#include <mutex>

#include "adapters.hpp"
#include "skein/detail/compile_error.hpp"
#include "skein/detail/cuda/prelude.hpp"
#include "skein/detail/trace.hpp"

namespace skein::detail {

namespace {

std::string arch_of(const DeviceAdapter& device) {
  const auto cc = device.params().compute_capability.value_or(std::pair<int, int>{5, 2});
  return fmt::format("sm_{}{}", cc.first, cc.second);
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return fmt::format("nvrtc {}.{}", major, minor);
}

class CudaKernelAdapter final : public KernelAdapter {
 public:
  CudaKernelAdapter(std::shared_ptr<CudaContextAdapter> context, std::size_t device_idx,
                    CUfunction function, const std::string& name)
      : context_(std::move(context)),
        device_idx_(device_idx),
        function_(function),
        trace_(trace_name(name.c_str())) {
    const auto& where = context_->description(device_idx_);
    auto attribute = [&](CUfunction_attribute a) {
      int value = 0;
      SKEIN_CU_CHECK(cuFuncGetAttribute, (&value, a, function_), where);
      return static_cast<std::size_t>(value);
    };
    attributes_.max_total_local_size = attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    attributes_.registers = attribute(CU_FUNC_ATTRIBUTE_NUM_REGS);
    attributes_.local_mem_size = attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
    attributes_.private_mem_size = attribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
    attributes_.constant_mem_size = attribute(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES);
    allowed_local_mem_ = attribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES);
    // Parameter sizes (CUDA 12.4+ drivers): the count is where the driver says INVALID_VALUE.
    if (cu().cuFuncGetParamInfo) {
      std::vector<ParamInfo> params;
      for (std::size_t i = 0;; ++i) {
        std::size_t offset = 0, size = 0;
        if (cu().cuFuncGetParamInfo(function_, i, &offset, &size) != CUDA_SUCCESS) break;
        params.push_back({ParamInfo::Kind::unknown, size});
      }
      params_ = std::move(params);
    }
  }

  const KernelAttributes& attributes() const override { return attributes_; }
  const std::optional<std::vector<ParamInfo>>& params() const override { return params_; }
  std::uintptr_t native() const override { return reinterpret_cast<std::uintptr_t>(function_); }

  void allow_local_mem(std::size_t bytes) override {
    // The attribute belongs to the CUfunction, which every PreparedKernel of this kernel shares:
    // it only ever grows, so a launch prepared with less keeps working.
    std::lock_guard lock(local_mem_mutex_);
    if (bytes <= allowed_local_mem_) return;
    CudaContextScope scope(context_->context(device_idx_), context_->description(device_idx_));
    SKEIN_CU_CHECK(cuFuncSetAttribute,
                   (function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    static_cast<int>(bytes)),
                   context_->description(device_idx_));
    allowed_local_mem_ = bytes;
  }

  void launch(QueueAdapter& queue, const LaunchDims& dims, std::span<const KernelArg> args,
              std::shared_ptr<EventAdapter>* event) override {
    // Kernel parameters are passed by address: scalars point at the caller's values, buffers at
    // device addresses computed here.
    constexpr std::size_t kInline = 32;
    void* inline_params[kInline];
    CUdeviceptr inline_pointers[kInline];
    std::vector<void*> heap_params;
    std::vector<CUdeviceptr> heap_pointers;
    void** params = inline_params;
    CUdeviceptr* pointers = inline_pointers;
    if (args.size() > kInline) {
      heap_params.resize(args.size());
      heap_pointers.resize(args.size());
      params = heap_params.data();
      pointers = heap_pointers.data();
    }
    for (std::size_t i = 0; i < args.size(); ++i) {
      const auto& arg = args[i];
      if (arg.kind == KernelArg::Kind::buffer) {
        pointers[i] = static_cast<CUdeviceptr>(arg.buffer->native() + arg.offset);
        params[i] = &pointers[i];
      } else {
        params[i] = const_cast<void*>(arg.value);
      }
    }
    const auto stream = reinterpret_cast<CUstream>(queue.native());
    TraceRange range(trace_);  // the kernel's name, registered once
    CudaContextScope scope(context_->context(device_idx_), context_->description(device_idx_));
    SKEIN_CU_CHECK(cuLaunchKernel,
                   (function_, static_cast<unsigned>(dims.global[0] / dims.local[0]),
                    static_cast<unsigned>(dims.global[1] / dims.local[1]),
                    static_cast<unsigned>(dims.global[2] / dims.local[2]),
                    static_cast<unsigned>(dims.local[0]), static_cast<unsigned>(dims.local[1]),
                    static_cast<unsigned>(dims.local[2]), static_cast<unsigned>(dims.local_mem),
                    stream, params, nullptr),
                   context_->description(device_idx_));
    // A marker (no timing): cheaper to record, and what a launch's event is for (waiting,
    // ordering); Queue::record_event() times.
    if (event) *event = queue.record_untimed();
  }

 private:
  std::shared_ptr<CudaContextAdapter> context_;
  std::size_t device_idx_;
  CUfunction function_;
  TraceName trace_;  // NVTX's handle of the kernel's name (null without a profiler)
  KernelAttributes attributes_;
  std::optional<std::vector<ParamInfo>> params_;
  std::mutex local_mem_mutex_;
  std::size_t allowed_local_mem_ = 0;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
};

class CudaProgramAdapter final : public ProgramAdapter {
 public:
  CudaProgramAdapter(std::shared_ptr<CudaContextAdapter> context, std::size_t device_idx,
                     std::span<const std::byte> binary)
      : context_(std::move(context)), device_idx_(device_idx) {
    CudaContextScope scope(context_->context(device_idx_), where());
    SKEIN_CU_CHECK(cuModuleLoadData, (&module_, binary.data()), where());
  }

  ~CudaProgramAdapter() override {
    CudaContextScope scope(context_->context(device_idx_), CudaContextScope::NoThrow{});
    report_cuda_cleanup_failure(cu().cuModuleUnload(module_), "cuModuleUnload", where());
  }

  std::shared_ptr<KernelAdapter> kernel(const std::string& name) override {
    CUfunction function = nullptr;
    const CUresult result = cu().cuModuleGetFunction(&function, module_, name.c_str());
    if (result == CUDA_ERROR_NOT_FOUND) {
      throw LogicError(ErrorInfo{
          .what = fmt::format("the program has no kernel '{}'", name),
          .call = "Program::kernel",
          .device = where(),
          .hint = "Check the name; kernels are declared with KERNEL (extern \"C\" __global__), "
                  "so their names are not mangled.",
          .location = SKEIN_HERE});
    }
    SKEIN_CU_CHECK(cuModuleGetFunction, (&function, module_, name.c_str()), where());
    return std::make_shared<CudaKernelAdapter>(context_, device_idx_, function, name);
  }

  void set_constant(QueueAdapter& queue, const std::string& name, const void* host,
                    const BufferAdapter* device, std::size_t offset, std::size_t size) override {
    CUdeviceptr symbol = 0;
    std::size_t symbol_size = 0;
    CudaContextScope scope(context_->context(device_idx_), where());
    SKEIN_CU_CHECK(cuModuleGetGlobal, (&symbol, &symbol_size, module_, name.c_str()), where());
    if (symbol_size != size) {
      throw LogicError(ErrorInfo{
          .what = fmt::format("constant '{}' has {} bytes, {} were given", name, symbol_size,
                              size),
          .call = "Program::set_constant_array",
          .device = where(),
          .location = SKEIN_HERE});
    }
    const auto stream = reinterpret_cast<CUstream>(queue.native());
    if (host) {
      SKEIN_CU_CHECK(cuMemcpyHtoDAsync, (symbol, host, size, stream), where());
      // The caller's host memory may go away when we return.
      SKEIN_CU_CHECK(cuStreamSynchronize, (stream), where());
    } else {
      SKEIN_CU_CHECK(cuMemcpyDtoDAsync,
                     (symbol, static_cast<CUdeviceptr>(device->native() + offset), size, stream),
                     where());
    }
  }

 private:
  const std::string& where() const { return context_->description(device_idx_); }

  std::shared_ptr<CudaContextAdapter> context_;
  std::size_t device_idx_;
  CUmodule module_ = nullptr;
};

}  // namespace

std::string_view CudaContextAdapter::prelude() const { return cuda::prelude; }

std::vector<std::string> CudaContextAdapter::default_options(std::size_t device_idx,
                                                             bool fast_math) const {
  std::vector<std::string> options{"--gpu-architecture=" + arch_of(*devices_[device_idx]),
                                   "--std=c++17"};
  if (fast_math) options.emplace_back("--use_fast_math");
  return options;
}

std::vector<std::string> CudaContextAdapter::compiler_identity(std::size_t device_idx) const {
  return {arch_of(*devices_[device_idx]), nvrtc_version(),
          fmt::format("driver {}", cuda_driver_status().version)};
}

CompiledBinary CudaContextAdapter::compile(std::size_t device_idx, const std::string& source,
                                           const std::vector<std::string>& options,
                                           const std::string& name) {
  const std::string& where = description(device_idx);
  nvrtcProgram program = nullptr;
  SKEIN_NVRTC_CHECK(nvrtcCreateProgram,
                    (&program, source.c_str(), name.c_str(), 0, nullptr, nullptr), where);
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(&program, [](nvrtcProgram* p) {
    nvrtcDestroyProgram(p);
  });
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());
  const nvrtcResult result =
      nvrtcCompileProgram(program, static_cast<int>(argv.size()), argv.data());
  std::size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  std::string log(log_size, '\0');
  if (log_size) nvrtcGetProgramLog(program, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (result == NVRTC_ERROR_COMPILATION || result == NVRTC_ERROR_INVALID_OPTION) {
    raise_compile_error("nvrtcCompileProgram", where, name, log, source, options);
  }
  if (result != NVRTC_SUCCESS) throw_nvrtc_error(result, "nvrtcCompileProgram", where, SKEIN_HERE);
  std::size_t size = 0;
  SKEIN_NVRTC_CHECK(nvrtcGetCUBINSize, (program, &size), where);
  CompiledBinary out;
  out.binary.resize(size);
  SKEIN_NVRTC_CHECK(nvrtcGetCUBIN, (program, reinterpret_cast<char*>(out.binary.data())), where);
  out.log = std::move(log);
  return out;
}

std::shared_ptr<ProgramAdapter> CudaContextAdapter::load(std::size_t device_idx,
                                                         std::span<const std::byte> binary,
                                                         const std::vector<std::string>&) {
  return std::make_shared<CudaProgramAdapter>(shared_from_this(), device_idx, binary);
}

}  // namespace skein::detail
