// SPDX-License-Identifier: BSD-3-Clause
// Programs and kernels: one kernel source for CUDA and OpenCL, compiled at run time for each
// device (NVRTC or the OpenCL compiler), cached on disk, and launched on several devices at once
// with per-device sizes and arguments.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "skein/array.hpp"
#include "skein/buffer.hpp"
#include "skein/context.hpp"
#include "skein/dtype.hpp"
#include "skein/event.hpp"
#include "skein/export.hpp"
#include "skein/multi_device.hpp"
#include "skein/queue.hpp"
#include "skein/template.hpp"

namespace skein {

namespace detail {
class ProgramAdapter;
struct ImplAccess;
class KernelAdapter;
class BufferAdapter;

// One kernel argument as the backends see it.
struct KernelArg {
  enum class Kind : std::uint8_t { buffer, scalar };
  Kind kind = Kind::scalar;
  // buffer: whether it is an Array's, and then the Array's device_idx() (for an
  // Array::single_device_view, the device it is viewed from): launches refuse an Array of another
  // device. A Buffer only needs to be where the launching device can reach it.
  bool array = false;
  std::size_t device = 0;
  std::size_t size = 0;         // scalar: bytes
  const void* value = nullptr;  // scalar: the bytes
  const BufferAdapter* buffer = nullptr;
  std::size_t offset = 0;         // buffer: bytes from the allocation's start
  std::size_t buffer_device = 0;  // buffer: the device it was allocated on
  const void* context = nullptr;  // buffer: its context (Context::Impl), for the check
};
}  // namespace detail

// A launch size of 1 to 3 dimensions; dimension 0 is get_global_id(0) / get_local_id(0).
class SKEIN_EXPORT WorkSize {
 public:
  WorkSize(std::size_t x) : dims_(1), v_{x, 1, 1} {}  // NOLINT: implicit on purpose
  WorkSize(std::initializer_list<std::size_t> sizes);
  explicit WorkSize(std::span<const std::size_t> sizes);

  unsigned dims() const { return dims_; }
  std::size_t operator[](unsigned dim) const { return v_[dim]; }
  std::size_t total() const { return v_[0] * v_[1] * v_[2]; }
  std::string to_string() const;
  friend bool operator==(const WorkSize& a, const WorkSize& b) {
    return a.dims_ == b.dims_ && a.v_[0] == b.v_[0] && a.v_[1] == b.v_[1] && a.v_[2] == b.v_[2];
  }

 private:
  unsigned dims_;
  std::size_t v_[3];
};

// Sizes of a launch: the same for every device, or one per device.
class LaunchSizes {
 public:
  LaunchSizes(std::size_t x) : common_(WorkSize(x)) {}  // NOLINT
  LaunchSizes(std::initializer_list<std::size_t> sizes) : common_(WorkSize(sizes)) {}
  LaunchSizes(WorkSize size) : common_(size) {}                                // NOLINT
  LaunchSizes(MultiDevice<WorkSize> sizes) : per_device_(std::move(sizes)) {}  // NOLINT
  const WorkSize& for_device(std::size_t device_idx) const {
    return common_ ? *common_ : per_device_[device_idx];
  }

 private:
  std::optional<WorkSize> common_;
  MultiDevice<WorkSize> per_device_;
};

// A global constant array declared in the program (CUDA only): `size` elements of `dtype`.
struct ConstantArray {
  std::size_t size = 0;
  Dtype dtype = Dtype::float32;
};

// Options of the driver's just-in-time compilation when a program is loaded from a binary
// (PyCUDA's jit_option, cuModuleLoadDataEx's CUjit_option). CUDA only, and only for PTX (in a
// CUBIN the machine code is final, so the driver ignores them; a fatbin's PTX, when the driver
// compiles it, takes them). OpenCL raises LogicError for max_registers and optimization_level
// (it has no such setting: pass the compiler's options, e.g. "-cl-opt-disable", in
// ProgramOptions::compiler_options); verbose is accepted there (the build log is always read).
struct JitOptions {
  // CU_JIT_MAX_REGISTERS: the most registers a thread of a kernel may use.
  std::optional<unsigned> max_registers{};
  // CU_JIT_OPTIMIZATION_LEVEL: 0 (none) to 4 (the default, most); LogicError above 4.
  std::optional<unsigned> optimization_level{};
  // CU_JIT_LOG_VERBOSE: the info log says what the JIT made (registers, spills) of each kernel.
  bool verbose = false;
};

// Receives the logs of a compile or load (PyCUDA's message_handler(compile_success_bool,
// info_str, error_str)), once per device, before Skein raises a refusal: whether it succeeded, the
// info log and the error log. Program::from_binary / from_file: the CUDA JIT's info and error logs
// (cuModuleLoadDataEx), OpenCL's build log of the binary (info when it built, error when not);
// compile(): the compiler's log (NVRTC's, clBuildProgram's) as info. Called on the calling
// thread; an exception it throws propagates (the program is not made).
using MessageHandler =
    std::function<void(bool success, const std::string& info_log, const std::string& error_log)>;

struct ProgramOptions {
  // Devices (indices in the context) to compile for; all of the context's by default.
  std::optional<std::vector<std::size_t>> device_idxs{};
  // Leave out Skein's prelude (KERNEL, GLOBAL_MEM, get_global_id on CUDA, complex types, ...).
  bool no_prelude = false;
  // Faster, less accurate math (NVRTC --use_fast_math, OpenCL -cl-fast-relaxed-math); also
  // defines FAST_MATH.
  bool fast_math = false;
  // Passed to the backend compiler as they are.
  std::vector<std::string> compiler_options{};
  // Keep the sources and binaries in a directory (see Program::kept_directory()).
  bool keep = false;
  // CUDA: global __constant__ arrays declared before the source, set with set_constant_array().
  std::map<std::string, ConstantArray> constant_arrays{};
  // The source's name in compiler messages.
  std::string name = "skein_program";
  // Program::from_binary / from_file: the JIT's options (above).
  JitOptions jit{};
  // Program::from_binary / from_file and compile(): what receives the logs (above). Programs
  // compiled from source give their errors as CompileError, with the log.
  MessageHandler message_handler{};
};

// What the backend says about a compiled kernel on one device.
struct KernelAttributes {
  std::size_t max_total_local_size = 0;  // largest block / work group this kernel can run
  std::size_t registers = 0;             // per thread (CUDA; 0 where unknown)
  std::size_t local_mem_size = 0;        // static shared / local memory per block, bytes
  std::size_t private_mem_size = 0;      // local (spill) memory per thread, bytes
  std::size_t constant_mem_size = 0;     // CUDA
};

class Kernel;
class PreparedKernel;

// A cheap handle: copies are the same program.
// Threads: Programs may be constructed from several threads at once (the context's program cache
// is locked, and the disk cache builds each key once and writes entries atomically), and a
// Program's accessors and kernel() may be called from any number of threads at once.
// set_constant_array() writes device memory that every launch from the program reads, and that
// other Programs compiled from the same source and options in the same context share (they share
// the loaded module): never call it while another thread launches from, or sets, the same
// constant.
class SKEIN_EXPORT Program {
 public:
  // Compiles `source` (already rendered) for each device, or loads it from the compile cache.
  // Throws CompileError with the compiler's log, the options and the numbered source.
  Program(const Context& context, const std::string& source, ProgramOptions options = {});
  // Renders `template_source` with `globals` (see skein/template.hpp), then compiles it.
  static Program from_template(const Context& context, std::string_view template_source,
                               const RenderGlobals& globals, ProgramOptions options = {});

  // A program compiled ahead of time (PyCUDA's module_from_buffer), the same bytes for every
  // device of options.device_idxs (all of the context's by default): on CUDA PTX text, a CUBIN or
  // a fatbin (nvcc -ptx, -cubin, -fatbin; kernels declared extern "C" keep their names); on
  // OpenCL a binary of the same platform and device (clGetProgramInfo(CL_PROGRAM_BINARIES)).
  // SPIR-V is not taken. The kernels launch like any other (Kernel, PreparedKernel, MultiDevice).
  // Of the options only device_idxs, compiler_options (OpenCL's clBuildProgram), constant_arrays
  // (CUDA: the module's __constant__ arrays, for set_constant_array), name, jit (CUDA's JIT
  // options; LogicError for max_registers or optimization_level on OpenCL, or a level above 4)
  // and message_handler (the load's logs, also before a refusal) apply. skein::compile makes such
  // bytes from a source. LogicError
  // when a device cannot run the bytes (built for another architecture, platform or driver, or no
  // program binary at all), naming the backend's call that refused them (cuModuleLoadDataEx;
  // clCreateProgramWithBinary or clBuildProgram), its code and the device.
  static Program from_binary(const Context& context, std::span<const std::byte> binary,
                             ProgramOptions options = {});
  // The same from a file (PyCUDA's module_from_file).
  static Program from_file(const Context& context, const std::filesystem::path& path,
                           ProgramOptions options = {});

  const Context& context() const;
  const std::vector<std::size_t>& device_idxs() const;
  // The full source compiled for a device: prelude, declarations, then the given source (empty
  // for a program from a binary). On OpenCL the kernels' `GLOBAL_MEM T* x` parameters appear as
  // the buffer and a byte offset (`_skein_base_x`, `_skein_off_x`) that the kernel's first
  // statement adds, so that array views at any offset work (docs/guide.md, "Views").
  const std::string& source(std::size_t device_idx) const;
  // Whether the device's binary came from the disk cache.
  bool from_cache(std::size_t device_idx) const;
  // Where keep=true left the sources and binaries.
  std::optional<std::filesystem::path> kept_directory() const;

  // grunnur's KernelHub: the kernel of this name (LogicError naming the kernels there are).
  Kernel kernel(const std::string& name) const;

  // CUDA: uploads a constant array declared in ProgramOptions::constant_arrays, from the host or
  // from a device array of the same dtype and size, on every device of the queue.
  void set_constant_array(const Queue& queue, const std::string& name,
                          std::span<const std::byte> host) const;
  void set_constant_array(const Queue& queue, const std::string& name, const Array& array) const;
  template <class T>
  void set_constant_array(const Queue& queue, const std::string& name,
                          std::span<const T> host) const {
    check_constant_dtype(name, dtype_of<T>, host.size());
    set_constant_array(queue, name, std::as_bytes(host));
  }

  struct Impl;

 private:
  friend struct detail::ImplAccess;
  explicit Program(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  const std::shared_ptr<Impl>& impl() const { return impl_; }
  void check_constant_dtype(const std::string& name, Dtype dtype, std::size_t size) const;
  std::shared_ptr<Impl> impl_;
};

// What compile() makes.
enum class BinaryFormat {
  // CUDA: a CUBIN (NVRTC's machine code) for one architecture; OpenCL: the device's program
  // binary (clBuildProgram, then clGetProgramInfo(CL_PROGRAM_BINARIES)).
  native,
  // CUDA only: PTX text, which the driver compiles for the device when it is loaded (JitOptions
  // apply then) and which runs on the architecture it names and every later one.
  ptx,
};

struct CompileTarget {
  BinaryFormat format = BinaryFormat::native;
  // CUDA: the architecture to compile for, "sm_90" (native) or "compute_80" (ptx); empty: the
  // device's own (sm_XY, or compute_XY for ptx). NVRTC refuses one it does not know (CompileError).
  // OpenCL: must stay empty (a binary is always for the device it was built on).
  std::string arch{};
};

// Compiles `source` (already rendered, e.g. by render()) for one device of the context without
// loading it (PyCUDA's compiler.compile()): Skein's prelude and ProgramOptions' constant arrays,
// fast_math and compiler_options are applied as Program applies them, and the bytes are what
// Program::from_binary (or from_file, once written) loads on a device of the same architecture
// (CUDA) or the same platform, device and driver (OpenCL). options.message_handler receives the
// compiler's log; device_idxs, keep and jit are ignored. Kernels keep their parameters as
// written, so on OpenCL an array view goes to them as a sub-buffer (its offset aligned to the
// device's base_address_align), as for every program from a binary.
// Raises CompileError with the compiler's log; LogicError for a device index outside the
// context, for BinaryFormat::ptx or an arch on OpenCL, and for an arch that is not "sm_XY"
// (native) or "compute_XY" (ptx). Threads: may be called from several threads at once.
SKEIN_EXPORT std::vector<std::byte> compile(const Context& context, std::size_t device_idx,
                                            const std::string& source,
                                            const ProgramOptions& options = {},
                                            const CompileTarget& target = {});

// A cheap handle: copies are the same kernel (one backend kernel object per device).
// Threads: prepare(), the attributes and launches may come from several threads at once, on a
// Kernel or its copies. On OpenCL a launch sets its arguments on the kernel's one cl_kernel, so
// launches of one Kernel take a lock and go one at a time on the host (the device work still
// overlaps); for launches that never wait on each other, give each thread a Kernel of its own
// from Program::kernel(), which makes a new cl_kernel per call.
// Dynamic local (CUDA: shared) memory for each work group / block of a launch, in bytes: what
// PyCUDA's `shared=` and CUDA's sharedMemBytes give. The kernel declares it with the prelude's
// macros, which read the same on both backends:
//   KERNEL void k(GLOBAL_MEM float* out, unsigned n LOCAL_MEM_DYNAMIC_PARAM(float, tile)) {
//     LOCAL_MEM_DYNAMIC_DECL(float, tile);  // tile: a float* to local memory, `bytes` long
// (on OpenCL the PARAM macro adds a `__local` kernel parameter that Skein sizes and the launch's
// arguments skip; on CUDA it is empty and the DECL macro points `tile` at an `extern __shared__`
// array, 16-byte aligned). Above 48 KiB a CUDA kernel is opted in for the amount
// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES). More than the device allows beside the
// kernel's static local memory is refused by Kernel::prepare. On OpenCL a size of 0 gives the
// parameter 1 byte (OpenCL refuses 0 for a local argument).
struct LocalMem {
  std::size_t bytes = 0;
};

class SKEIN_EXPORT Kernel {
 public:
  const std::string& name() const;
  const Program& program() const;

  // Fixes the queue, the sizes and the dynamic local memory of each work group. `local` is chosen
  // from the device's and the kernel's limits when not given. Each global size must be a multiple
  // of the local size in every dimension.
  PreparedKernel prepare(const Queue& queue, const LaunchSizes& global,
                         const std::optional<LaunchSizes>& local = std::nullopt,
                         LocalMem local_mem = {}) const;
  // The most dynamic local memory a launch of this kernel can have on one device of its program:
  // the device's limit per group (on CUDA with the opt-in) less the kernel's static local memory.
  std::size_t max_local_mem(std::size_t device_idx) const;

  // The largest work group / block this kernel can run on each of the program's devices.
  std::map<std::size_t, std::size_t> max_total_local_sizes() const;
  KernelAttributes attributes(std::size_t device_idx) const;
  // The backend's kernel object on one device (CUfunction or cl_kernel), for interop.
  std::uintptr_t native(std::size_t device_idx) const;

  // prepare() and launch in one call.
  template <class... Args>
  void operator()(const Queue& queue, const LaunchSizes& global,
                  const std::optional<LaunchSizes>& local, const Args&... args) const;

  struct Impl;
  Kernel(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}  // NOLINT

 private:
  friend struct detail::ImplAccess;
  const std::shared_ptr<Impl>& impl() const { return impl_; }
  std::shared_ptr<Impl> impl_;
};

namespace detail {

template <class T>
inline constexpr bool is_scalar_arg =
    std::is_trivially_copyable_v<T> && !std::is_pointer_v<T> && !std::is_same_v<T, Buffer> &&
    !std::is_same_v<T, Array> && !is_multi_device<T>::value;

inline KernelArg make_kernel_arg(const Buffer& b) {
  return {.kind = KernelArg::Kind::buffer,
          .buffer = b.adapter().get(),
          .offset = b.offset(),
          .buffer_device = b.device_idx(),
          .context = b.context_id()};
}
inline KernelArg make_kernel_arg(const Array& a) {
  return {.kind = KernelArg::Kind::buffer,
          .array = true,
          .device = a.device_idx(),
          .buffer = a.data().adapter().get(),
          .offset = a.data().offset() + a.offset(),
          .buffer_device = a.data().device_idx(),
          .context = a.data().context_id()};
}
template <class T>
  requires is_scalar_arg<T>
KernelArg make_kernel_arg(const T& value) {
  return {.kind = KernelArg::Kind::scalar, .size = sizeof(T), .value = &value};
}

template <class T>
KernelArg kernel_arg_for(const T& arg, std::size_t /*device_idx*/) {
  static_assert(!std::is_pointer_v<T>,
                "Pass device memory as skein::Buffer or skein::Array, not as a pointer");
  return make_kernel_arg(arg);
}
template <class T>
KernelArg kernel_arg_for(const MultiDevice<T>& arg, std::size_t device_idx) {
  return make_kernel_arg(arg[device_idx]);
}

}  // namespace detail

// A kernel with its queue and sizes fixed (Kernel::prepare). A cheap handle.
// Threads: as Kernel: launches may come from several threads at once (on OpenCL one at a time on
// the host per cl_kernel, which the PreparedKernels of one Kernel share). Launches are enqueued on
// the queue it was prepared with, whose rules apply.
class SKEIN_EXPORT PreparedKernel {
 public:
  // Enqueues the kernel on every device of the queue it was prepared with. Arguments: Buffer,
  // Array, scalars (pass explicitly typed values: std::int32_t{3}, 1.5f), or MultiDevice of
  // those for per-device values. Their number and sizes are checked where the backend can tell,
  // and each Array must be on the device it is launched on (LogicError otherwise; a
  // single_device_view() is on the device it views from).
  template <class... Args>
  void operator()(const Args&... args) const {
    launch_all<Args...>(device_idxs(), nullptr, args...);
  }
  // The same on some of the devices (indices in the context).
  template <class... Args>
  void on_devices(std::span<const std::size_t> device_idxs, const Args&... args) const {
    launch_all<Args...>(device_idxs, nullptr, args...);
  }
  // The same as operator(), returning one event per device, recorded after its launch: a marker
  // for waiting and ordering (Event::wait, Queue::wait_for); on CUDA it is not timed, so
  // time_since() refuses it: time kernels with Queue::record_event() around them.
  template <class... Args>
  std::vector<Event> enqueue(const Args&... args) const {
    std::vector<Event> events;
    launch_all<Args...>(device_idxs(), &events, args...);
    return events;
  }
  // Enqueues on one device with arguments packed already: for generated kernels whose parameter
  // list is only known at run time (elementwise and reduction kernels). Checked as above.
  void launch_packed(std::size_t device_idx, std::span<const detail::KernelArg> args,
                     std::vector<Event>* events = nullptr) const {
    launch(device_idx, args, events);
  }

  const std::vector<std::size_t>& device_idxs() const;
  const WorkSize& global_size(std::size_t device_idx) const;
  const WorkSize& local_size(std::size_t device_idx) const;

  struct Impl;
  PreparedKernel(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}  // NOLINT

 private:
  // Every device's arguments are checked before any device's launch is enqueued, so that a
  // refused call (an Array of device 0 given to every device) launches nothing.
  template <class... Args>
  void launch_all(std::span<const std::size_t> device_idxs, std::vector<Event>* events,
                  const Args&... args) const {
    if (device_idxs.size() > 1) {
      for (std::size_t d : device_idxs) {
        const detail::KernelArg packed[sizeof...(Args) + 1] = {detail::kernel_arg_for(args, d)...,
                                                               detail::KernelArg{}};
        check(d, std::span(packed, sizeof...(Args)));
      }
    }
    for (std::size_t d : device_idxs) launch_on<Args...>(d, events, args...);
  }
  template <class... Args>
  void launch_on(std::size_t device_idx, std::vector<Event>* events, const Args&... args) const {
    const detail::KernelArg packed[sizeof...(Args) + 1] = {
        detail::kernel_arg_for(args, device_idx)..., detail::KernelArg{}};
    launch(device_idx, std::span(packed, sizeof...(Args)), events);
  }
  // LogicError when the arguments do not fit the kernel on this device.
  void check(std::size_t device_idx, std::span<const detail::KernelArg> args) const;
  void launch(std::size_t device_idx, std::span<const detail::KernelArg> args,
              std::vector<Event>* events) const;

  std::shared_ptr<Impl> impl_;
};

template <class... Args>
void Kernel::operator()(const Queue& queue, const LaunchSizes& global,
                        const std::optional<LaunchSizes>& local, const Args&... args) const {
  prepare(queue, global, local)(args...);
}

}  // namespace skein
