// SPDX-License-Identifier: BSD-3-Clause
// CUDA programs: NVRTC compiles a source straight to the device's own machine code (cubin), the
// driver loads it as a module in the device's context, and kernels launch with cuLaunchKernel or,
// from their second launch on a stream, through a one-kernel CUDA graph (below).
#include <fmt/format.h>
#include <nvrtc.h>

#include <array>
#include <cstring>
#include <limits>
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

CUfunction_attribute cu_attribute(KernelAttribute attribute) {
  switch (attribute) {
    case KernelAttribute::max_threads_per_block: return CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK;
    case KernelAttribute::shared_size_bytes: return CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES;
    case KernelAttribute::const_size_bytes: return CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES;
    case KernelAttribute::local_size_bytes: return CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES;
    case KernelAttribute::num_regs: return CU_FUNC_ATTRIBUTE_NUM_REGS;
    case KernelAttribute::ptx_version: return CU_FUNC_ATTRIBUTE_PTX_VERSION;
    case KernelAttribute::binary_version: return CU_FUNC_ATTRIBUTE_BINARY_VERSION;
    case KernelAttribute::cache_mode_ca: return CU_FUNC_ATTRIBUTE_CACHE_MODE_CA;
    case KernelAttribute::max_dynamic_shared_size_bytes:
      return CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
    case KernelAttribute::preferred_shared_memory_carveout:
      return CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
  }
  raise_in(SKEIN_HERE, "Kernel::get_attribute", "Pass one of the KernelAttribute values.",
           "unknown kernel attribute {}", static_cast<int>(attribute));
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
    attributes_.preferred_local_size_multiple =
        std::max<std::size_t>(context_->devices()[device_idx_]->params().warp_size, 1);
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
    if (params_ && cu().graphs && context_->graph_launch()) {
      graph_param_offsets_.reserve(params_->size());
      for (const auto& p : *params_) {
        graph_param_offsets_.push_back(graph_param_bytes_);
        graph_param_bytes_ += p.size;
      }
      graphs_usable_ = true;
    }
  }

  ~CudaKernelAdapter() override {
    CudaContextScope scope(context_->context(device_idx_), CudaContextScope::NoThrow{});
    for (auto& g : graphs_) drop(g);
  }

  const KernelAttributes& attributes() const override { return attributes_; }
  const std::optional<std::vector<ParamInfo>>& params() const override { return params_; }
  std::uintptr_t native() const override { return reinterpret_cast<std::uintptr_t>(function_); }

  void allow_local_mem(std::size_t bytes) override {
    // The attribute belongs to the CUfunction, which every PreparedKernel of this kernel (and
    // every Kernel of this name from the same module) shares: it only ever grows here, so a launch
    // prepared with less keeps working. Read from the driver each time, since set_attribute (of
    // this or another Kernel over the same CUfunction) may have lowered it.
    std::lock_guard lock(local_mem_mutex_);
    CudaContextScope scope(context_->context(device_idx_), context_->description(device_idx_));
    int allowed = 0;
    SKEIN_CU_CHECK(cuFuncGetAttribute,
                   (&allowed, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, function_),
                   context_->description(device_idx_));
    if (bytes <= static_cast<std::size_t>(allowed)) return;
    SKEIN_CU_CHECK(
        cuFuncSetAttribute,
        (function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, static_cast<int>(bytes)),
        context_->description(device_idx_));
  }

  std::int64_t get_attribute(KernelAttribute attribute) const override {
    const std::string& where = context_->description(device_idx_);
    CudaContextScope scope(context_->context(device_idx_), where);
    int value = 0;
    SKEIN_CU_CHECK(cuFuncGetAttribute, (&value, cu_attribute(attribute), function_), where);
    return value;
  }

  void set_attribute(KernelAttribute attribute, std::int64_t value) override {
    const std::string& where = context_->description(device_idx_);
    if (attribute != KernelAttribute::max_dynamic_shared_size_bytes &&
        attribute != KernelAttribute::preferred_shared_memory_carveout) {
      throw LogicError(ErrorInfo{
          .what = fmt::format("the attribute {} is read-only", name(attribute)),
          .call = "Kernel::set_attribute",
          .device = where,
          .hint = "Set max_dynamic_shared_size_bytes or preferred_shared_memory_carveout; the "
                  "others are decided by the compiler (see Kernel::get_attribute).",
          .location = SKEIN_HERE});
    }
    std::lock_guard lock(local_mem_mutex_);
    CudaContextScope scope(context_->context(device_idx_), where);
    const CUresult result =
        value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()
            ? CUDA_ERROR_INVALID_VALUE
            : cu().cuFuncSetAttribute(function_, cu_attribute(attribute), static_cast<int>(value));
    if (result == CUDA_SUCCESS) return;
    const ErrorInfo info{
        .what = fmt::format("the driver refused {} = {}: {}", name(attribute), value,
                            cuda_error_description(result)),
        .call = "cuFuncSetAttribute",
        .code_name = cuda_error_name(result),
        .code = static_cast<long long>(result),
        .has_code = true,
        .device = where,
        .hint =
            "max_dynamic_shared_size_bytes: 0 up to the device's opt-in limit less the "
            "kernel's static shared memory (Kernel::max_local_mem); "
            "preferred_shared_memory_carveout: -1 or 0 to 100. The attribute keeps its "
            "value.",
        .location = SKEIN_HERE};
    if (result == CUDA_ERROR_INVALID_VALUE) throw LogicError(info);
    throw RuntimeError(info);
  }

  void set_cache_config(CacheConfig config) override {
    const std::string& where = context_->description(device_idx_);
    const CUfunc_cache value = cu_cache(config);
    CudaContextScope scope(context_->context(device_idx_), where);
    SKEIN_CU_CHECK(cuFuncSetCacheConfig, (function_, value), where);
  }

  void set_shared_config(SharedConfig config) override {
    const std::string& where = context_->description(device_idx_);
    CUsharedconfig value = CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE;
    switch (config) {
      case SharedConfig::default_bank_size: break;
      case SharedConfig::four_byte_bank_size:
        value = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
        break;
      case SharedConfig::eight_byte_bank_size:
        value = CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE;
        break;
      default:
        raise_in(SKEIN_HERE, "Kernel::set_shared_config", "Pass one of the SharedConfig values.",
                 "unknown shared memory configuration {}", static_cast<int>(config));
    }
    if (!cu().cuFuncSetSharedMemConfig) {
      // Banks are 4 bytes wide on every device this driver runs: the two widths it has are
      // already in effect; 8 bytes cannot be had.
      if (config != SharedConfig::eight_byte_bank_size) return;
      throw LogicError(ErrorInfo{
          .what = "8-byte shared memory banks are not available: this driver no longer has "
                  "cuFuncSetSharedMemConfig, and its devices have 4-byte banks only",
          .call = "Kernel::set_shared_config",
          .device = where,
          .hint = "Drop the call: since Maxwell (sm_50) the bank width is fixed at 4 bytes.",
          .location = SKEIN_HERE});
    }
    CudaContextScope scope(context_->context(device_idx_), where);
    SKEIN_CU_CHECK(cuFuncSetSharedMemConfig, (function_, value), where);
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
        pointers[i] = static_cast<CUdeviceptr>(arg.buffer->native()) + arg.offset;
        params[i] = &pointers[i];
      } else {
        params[i] = const_cast<void*>(arg.value);
      }
    }
    const auto stream = reinterpret_cast<CUstream>(queue.native());
    TraceRange range(trace_);  // the kernel's name, registered once
    CudaContextScope scope(context_->context(device_idx_), context_->description(device_idx_));
    if (!graphs_usable_ || !launch_graph(stream, dims, params, args.size())) {
      SKEIN_CU_CHECK(cuLaunchKernel,
                     (function_, static_cast<unsigned>(dims.global[0] / dims.local[0]),
                      static_cast<unsigned>(dims.global[1] / dims.local[1]),
                      static_cast<unsigned>(dims.global[2] / dims.local[2]),
                      static_cast<unsigned>(dims.local[0]), static_cast<unsigned>(dims.local[1]),
                      static_cast<unsigned>(dims.local[2]), static_cast<unsigned>(dims.local_mem),
                      stream, params, nullptr),
                     context_->description(device_idx_));
    }
    // A marker (no timing): cheaper to record, and what a launch's event is for (waiting,
    // ordering); Queue::record_event() times.
    if (event) *event = queue.record_untimed();
  }

 private:
  // Launches through graphs. On the driver measured (580, an H200), cuGraphLaunch of a
  // one-kernel graph costs the host 1.7-2.1 us where cuLaunchKernel of the same kernel costs
  // 3.8-4.4 us, and updating the graph's arguments before it (when they changed) 0.2-0.5 us more
  // (docs/performance.md). So a kernel keeps, per stream, a graph of one node that launches it;
  // the first launch on a stream is a plain one (a kernel launched once pays no instantiation,
  // ~20 us), later ones launch the graph. One graph per stream, because launches of one
  // executable graph are ordered after each other even on different streams; a few streams per
  // kernel, the least recently used giving its graph up.
  //
  // A launch falls back to cuLaunchKernel, which then raises what is wrong, whenever the graph
  // way cannot take it: the stream is being captured (a graph launch would end the capture; a
  // kernel launch is captured as a kernel node, as the capturing code expects), or any graph call
  // fails (that stream's graph is dropped: made again at a later launch when it was an update or
  // a launch that failed, never again on that stream when making it failed). Results are
  // the same either way: the node runs the same function with the same geometry and bytes.
  struct Graph {
    CUstream stream = nullptr;
    std::uint64_t last_use = 0;  // graph_clock_ at the latest launch on this stream
    bool launched = false;       // a plain launch happened on this stream
    bool failed = false;         // making the graph failed: launches on this stream stay plain
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    CUgraphNode node = nullptr;
    LaunchDims dims;                // the geometry the executable graph holds
    std::vector<std::byte> params;  // the parameter bytes it holds, at graph_param_offsets_
  };

  static void drop(Graph& g) noexcept {
    // An executable graph still running is freed by the driver when it completes.
    if (g.exec) cu().cuGraphExecDestroy(g.exec);
    if (g.graph) cu().cuGraphDestroy(g.graph);
    g.exec = nullptr;
    g.graph = nullptr;
    g.node = nullptr;
  }

  CUDA_KERNEL_NODE_PARAMS node_params(const LaunchDims& dims, void** params) const {
    CUDA_KERNEL_NODE_PARAMS p{};
    p.func = function_;
    p.gridDimX = static_cast<unsigned>(dims.global[0] / dims.local[0]);
    p.gridDimY = static_cast<unsigned>(dims.global[1] / dims.local[1]);
    p.gridDimZ = static_cast<unsigned>(dims.global[2] / dims.local[2]);
    p.blockDimX = static_cast<unsigned>(dims.local[0]);
    p.blockDimY = static_cast<unsigned>(dims.local[1]);
    p.blockDimZ = static_cast<unsigned>(dims.local[2]);
    p.sharedMemBytes = static_cast<unsigned>(dims.local_mem);
    p.kernelParams = params;
    return p;
  }

  // Copies these arguments' bytes into those the graph holds; returns whether they were the same.
  bool hold_params(Graph& g, void** params) const {
    bool same = true;
    for (std::size_t i = 0; i < graph_param_offsets_.size(); ++i) {
      std::byte* held = g.params.data() + graph_param_offsets_[i];
      const std::size_t size = (*params_)[i].size;
      if (std::memcmp(held, params[i], size) != 0) {
        std::memcpy(held, params[i], size);
        same = false;
      }
    }
    return same;
  }

  // Launches through the stream's graph; false, having enqueued nothing, where a plain launch
  // must be made instead (see above).
  bool launch_graph(CUstream stream, const LaunchDims& dims, void** params, std::size_t count) {
    // CU_STREAM_PER_THREAD names another stream on every thread: one graph for all of them would
    // order their launches after each other.
    if (count != graph_param_offsets_.size() || stream == CU_STREAM_PER_THREAD) return false;
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    if (cu().cuStreamIsCapturing(stream, &capture) != CUDA_SUCCESS ||
        capture != CU_STREAM_CAPTURE_STATUS_NONE) {
      return false;
    }
    std::lock_guard lock(graphs_mutex_);
    Graph* g = nullptr;
    for (auto& candidate : graphs_) {
      if (candidate.last_use != 0 && candidate.stream == stream) g = &candidate;
    }
    if (!g) {
      g = &*std::min_element(graphs_.begin(), graphs_.end(), [](const Graph& a, const Graph& b) {
        return a.last_use < b.last_use;
      });
      drop(*g);
      *g = Graph{};
      g->stream = stream;
    }
    g->last_use = ++graph_clock_;
    if (!g->exec) {
      if (!g->launched || g->failed) {
        g->launched = true;  // this launch is a plain one
        return false;
      }
      auto p = node_params(dims, params);
      g->params.resize(graph_param_bytes_);
      hold_params(*g, params);
      g->dims = dims;
      if (cu().cuGraphCreate(&g->graph, 0) != CUDA_SUCCESS ||
          cu().cuGraphAddKernelNode(&g->node, g->graph, nullptr, 0, &p) != CUDA_SUCCESS ||
          cu().cuGraphInstantiate(&g->exec, g->graph, 0) != CUDA_SUCCESS) {
        drop(*g);
        g->failed = true;
        return false;
      }
    } else {
      const bool same_geometry = g->dims == dims;
      if (!hold_params(*g, params) || !same_geometry) {
        g->dims = dims;
        auto p = node_params(dims, params);
        if (cu().cuGraphExecKernelNodeSetParams(g->exec, g->node, &p) != CUDA_SUCCESS) {
          drop(*g);
          return false;
        }
      }
    }
    if (cu().cuGraphLaunch(g->exec, stream) != CUDA_SUCCESS) {
      drop(*g);
      return false;
    }
    return true;
  }

  std::shared_ptr<CudaContextAdapter> context_;
  std::size_t device_idx_;
  CUfunction function_;
  TraceName trace_;  // NVTX's handle of the kernel's name (null without a profiler)
  KernelAttributes attributes_;
  std::optional<std::vector<ParamInfo>> params_;
  std::mutex local_mem_mutex_;  // allow_local_mem and set_attribute, one at a time
  // Graph launches: usable when the driver has the graph calls, the parameters' sizes are known
  // and SKEIN_CUDA_GRAPH_LAUNCH allows.
  bool graphs_usable_ = false;
  std::vector<std::size_t> graph_param_offsets_;
  std::size_t graph_param_bytes_ = 0;
  std::mutex graphs_mutex_;      // one launch through the graphs at a time
  std::array<Graph, 4> graphs_;  // by stream; last_use 0: unused
  std::uint64_t graph_clock_ = 0;
};

// Whether the driver refused a module's bytes as such (not a CUBIN, fatbin or PTX it can load on
// this device), rather than failing for a reason of its own.
bool refused_image(CUresult result) {
  switch (result) {
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_INVALID_SOURCE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU: return true;
    default: return false;
  }
}

class CudaProgramAdapter final : public ProgramAdapter {
 public:
  // With `jit` and `log`, loaded by cuModuleLoadDataEx with the JIT's options and logs.
  CudaProgramAdapter(std::shared_ptr<CudaContextAdapter> context, std::size_t device_idx,
                     std::span<const std::byte> binary, const JitOptions* jit = nullptr,
                     JitLog* log = nullptr)
      : context_(std::move(context)), device_idx_(device_idx) {
    CudaContextScope scope(context_->context(device_idx_), where());
    const char* call = jit ? "cuModuleLoadDataEx" : "cuModuleLoadData";
    const CUresult result =
        jit ? load_ex(binary, *jit, *log) : cu().cuModuleLoadData(&module_, binary.data());
    if (refused_image(result)) {
      throw LogicError(ErrorInfo{
          .what = fmt::format("the bytes are not a valid module image for this device ({})",
                              cuda_error_description(result)),
          .call = call,
          .code_name = cuda_error_name(result),
          .code = static_cast<long long>(result),
          .has_code = true,
          .device = where(),
          .hint = "Build it for this device's architecture (nvcc -gencode "
                  "arch=compute_XY,code=sm_XY, or PTX the driver can compile), or build the "
                  "program from source for this device (skein::Program). A module of Skein's "
                  "compile cache refused so is stale: delete the cache directory "
                  "(SKEIN_CACHE_DIR) and it is built again.",
          .location = SKEIN_HERE});
    }
    if (result != CUDA_SUCCESS) throw_cuda_error(result, call, where(), SKEIN_HERE);
  }

  // cuModuleLoadDataEx with the JIT's options, its info and error logs read into `log`.
  CUresult load_ex(std::span<const std::byte> binary, const JitOptions& jit, JitLog& log) {
    constexpr unsigned kLogBytes = 64 * 1024;
    std::vector<char> info(kLogBytes, '\0'), error(kLogBytes, '\0');
    std::vector<CUjit_option> keys{CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                                   CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    // Values go by value in the pointers' bits (the driver's convention for integer options).
    const auto as_value = [](std::uintptr_t v) { return reinterpret_cast<void*>(v); };
    std::vector<void*> values{info.data(), as_value(kLogBytes), error.data(), as_value(kLogBytes)};
    if (jit.max_registers) {
      keys.push_back(CU_JIT_MAX_REGISTERS);
      values.push_back(as_value(*jit.max_registers));
    }
    if (jit.optimization_level) {
      keys.push_back(CU_JIT_OPTIMIZATION_LEVEL);
      values.push_back(as_value(*jit.optimization_level));
    }
    if (jit.verbose) {
      keys.push_back(CU_JIT_LOG_VERBOSE);
      values.push_back(as_value(1));
    }
    const CUresult result = cu().cuModuleLoadDataEx(
        &module_, binary.data(), static_cast<unsigned>(keys.size()), keys.data(), values.data());
    const auto text = [](const std::vector<char>& buffer) {
      std::string s(buffer.data(), strnlen(buffer.data(), buffer.size()));
      while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
      return s;
    };
    log.info = text(info);
    log.error = text(error);
    return result;
  }

  ~CudaProgramAdapter() override {
    CudaContextScope scope(context_->context(device_idx_), CudaContextScope::NoThrow{});
    report_cuda_cleanup_failure(cu().cuModuleUnload(module_), "cuModuleUnload", where());
  }

  // CUDA kernels take a pointer to any byte: its sources are compiled as written, with no roles.
  std::shared_ptr<KernelAdapter> kernel(const std::string& name,
                                        const std::vector<ParamRole>* /*roles*/) override {
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
          .what = fmt::format("constant '{}' has {} bytes, {} were given", name, symbol_size, size),
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

namespace {

// NVRTC's CUBIN (or, with `ptx`, PTX text without its NUL) of a full source. Throws CompileError.
CompiledBinary nvrtc_compile(const std::string& where, const std::string& source,
                             const std::vector<std::string>& options, const std::string& name,
                             bool ptx) {
  nvrtcProgram program = nullptr;
  SKEIN_NVRTC_CHECK(nvrtcCreateProgram,
                    (&program, source.c_str(), name.c_str(), 0, nullptr, nullptr), where);
  std::unique_ptr<nvrtcProgram, void (*)(nvrtcProgram*)> guard(
      &program, [](nvrtcProgram* p) { nvrtcDestroyProgram(p); });
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
  CompiledBinary out;
  if (ptx) {
    SKEIN_NVRTC_CHECK(nvrtcGetPTXSize, (program, &size), where);
    out.binary.resize(size);
    SKEIN_NVRTC_CHECK(nvrtcGetPTX, (program, reinterpret_cast<char*>(out.binary.data())), where);
    while (!out.binary.empty() && out.binary.back() == std::byte{0}) out.binary.pop_back();
  } else {
    SKEIN_NVRTC_CHECK(nvrtcGetCUBINSize, (program, &size), where);
    out.binary.resize(size);
    SKEIN_NVRTC_CHECK(nvrtcGetCUBIN, (program, reinterpret_cast<char*>(out.binary.data())), where);
  }
  out.log = std::move(log);
  return out;
}

}  // namespace

CompiledBinary CudaContextAdapter::compile(std::size_t device_idx, const std::string& source,
                                           const std::vector<std::string>& options,
                                           const std::string& name) {
  return nvrtc_compile(description(device_idx), source, options, name, /*ptx=*/false);
}

std::shared_ptr<ProgramAdapter> CudaContextAdapter::load(std::size_t device_idx,
                                                         std::span<const std::byte> binary,
                                                         const std::vector<std::string>&) {
  return std::make_shared<CudaProgramAdapter>(shared_from_this(), device_idx, binary);
}

std::shared_ptr<ProgramAdapter> CudaContextAdapter::load_jit(std::size_t device_idx,
                                                             std::span<const std::byte> binary,
                                                             const std::vector<std::string>&,
                                                             const JitOptions& jit, JitLog& log) {
  return std::make_shared<CudaProgramAdapter>(shared_from_this(), device_idx, binary, &jit, &log);
}

std::vector<std::string> CudaContextAdapter::options_for_arch(std::size_t, bool fast_math,
                                                              const std::string& arch) const {
  std::vector<std::string> options{"--gpu-architecture=" + arch, "--std=c++17"};
  if (fast_math) options.emplace_back("--use_fast_math");
  return options;
}

CompiledBinary CudaContextAdapter::compile_ptx(std::size_t device_idx, const std::string& source,
                                               const std::vector<std::string>& options,
                                               const std::string& name) {
  return nvrtc_compile(description(device_idx), source, options, name, /*ptx=*/true);
}

}  // namespace skein::detail
