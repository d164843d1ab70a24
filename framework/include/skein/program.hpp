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
#include <ranges>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "skein/array.hpp"
#include "skein/buffer.hpp"
#include "skein/context.hpp"
#include "skein/driver.hpp"
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
  // host_*: host memory (In, Out, InOut) that PreparedKernel's launch puts in a device temporary
  // and passes as a buffer; the backends never see these kinds.
  enum class Kind : std::uint8_t { buffer, scalar, host_in, host_out, host_inout };
  Kind kind = Kind::scalar;
  // buffer: whether it is an Array's, and then the Array's device_idx() (for an
  // Array::single_device_view, the device it is viewed from): launches refuse an Array of another
  // device. A Buffer only needs to be where the launching device can reach it.
  bool array = false;
  std::size_t device = 0;
  std::size_t size = 0;         // scalar, host_*: bytes
  const void* value = nullptr;  // scalar, host_*: the bytes
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
  // The multiple of the work group size the device runs best (pygpu's preflsize): OpenCL's
  // CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, CUDA's warp size.
  std::size_t preferred_local_size_multiple = 1;
};

// What Kernel::get_attribute and set_attribute read and write: the values of CUDA's
// CUfunction_attribute (PyCUDA's function_attribute) that describe one compiled kernel. On OpenCL
// only the first three and local_size_bytes are known (clGetKernelWorkGroupInfo); the others raise
// LogicError there.
enum class KernelAttribute {
  max_threads_per_block,             // largest block (OpenCL: CL_KERNEL_WORK_GROUP_SIZE)
  shared_size_bytes,                 // static local memory (OpenCL: CL_KERNEL_LOCAL_MEM_SIZE)
  const_size_bytes,                  // CUDA: constant memory the kernel uses
  local_size_bytes,                  // per-thread local (spill) memory (CL_KERNEL_PRIVATE_MEM_SIZE)
  num_regs,                          // CUDA: registers per thread
  ptx_version,                       // CUDA: the PTX ISA version, major * 10 + minor
  binary_version,                    // CUDA: the binary's architecture, major * 10 + minor
  cache_mode_ca,                     // CUDA: 1 when compiled with -Xptxas --dlcm=ca
  max_dynamic_shared_size_bytes,     // CUDA, settable: the most dynamic shared memory per block
  preferred_shared_memory_carveout,  // CUDA, settable: percent of L1 as shared memory (-1: none)
};
SKEIN_EXPORT const char* name(KernelAttribute attribute);  // "num_regs"

class Kernel;
class PreparedKernel;

// PyCUDA's argument handlers In, Out and InOut: host memory given to a kernel launch (Kernel,
// PreparedKernel) where the kernel takes a pointer. The launch copies it to a device temporary of
// the same size before the kernel (In, InOut), passes the temporary, and copies the temporary back
// to the host memory after the kernel (Out, InOut; an Out's temporary starts uninitialised, as
// device memory does). A launch with any of them returns when the kernel and the copies back are
// done (the host memory is then read or written; a launch without them does not wait), and takes
// one device only: on a queue of several devices, LogicError before anything runs (use
// PreparedKernel::on_devices with one device, or Arrays). The host memory must stay valid and
// untouched during the call; its size in bytes is what the temporary holds (0 bytes: a 1-byte
// temporary). A temporary that does not fit raises MemoryError; nothing is copied back then.
//   std::vector<float> in(n), out(n);
//   kernel.prepare_items(queue, n)(skein::Out(out), skein::In(in), std::uint32_t(n));
// Arguments of a contiguous range of trivially copyable elements (std::vector, std::array,
// std::span, a C array); Out and InOut need writable elements.
class In {
 public:
  template <std::ranges::contiguous_range R>
    requires std::is_trivially_copyable_v<std::ranges::range_value_t<R>>
  // an In is no range, so copies and moves never come here; the range is only viewed.
  // NOLINTNEXTLINE(bugprone-forwarding-reference-overload,cppcoreguidelines-missing-std-forward)
  explicit In(R&& host)
      : bytes_(std::as_bytes(std::span(std::ranges::data(host), std::ranges::size(host)))) {}
  std::span<const std::byte> bytes() const { return bytes_; }  // the host memory

 private:
  std::span<const std::byte> bytes_;
};
class Out {
 public:
  template <std::ranges::contiguous_range R>
    requires std::is_trivially_copyable_v<std::ranges::range_value_t<R>> &&
             (!std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<R>>>)
  // an Out is no range, so copies and moves never come here; the range is only viewed.
  // NOLINTNEXTLINE(bugprone-forwarding-reference-overload,cppcoreguidelines-missing-std-forward)
  explicit Out(R&& host)
      : bytes_(
            std::as_writable_bytes(std::span(std::ranges::data(host), std::ranges::size(host)))) {}
  std::span<std::byte> bytes() const { return bytes_; }  // the host memory

 private:
  std::span<std::byte> bytes_;
};
class InOut {
 public:
  template <std::ranges::contiguous_range R>
    requires std::is_trivially_copyable_v<std::ranges::range_value_t<R>> &&
             (!std::is_const_v<std::remove_reference_t<std::ranges::range_reference_t<R>>>)
  // an InOut is no range, so copies and moves never come here; the range is only viewed.
  // NOLINTNEXTLINE(bugprone-forwarding-reference-overload,cppcoreguidelines-missing-std-forward)
  explicit InOut(R&& host)
      : bytes_(
            std::as_writable_bytes(std::span(std::ranges::data(host), std::ranges::size(host)))) {}
  std::span<std::byte> bytes() const { return bytes_; }  // the host memory

 private:
  std::span<std::byte> bytes_;
};

// The device time of one launch on each of its devices (PreparedKernel::timed_call, PyCUDA's
// prepared_timed_call and time_kernel=True): events recorded before and after the kernel on its
// queue. seconds() waits for the kernel. A cheap handle.
class SKEIN_EXPORT TimedLaunch {
 public:
  // The seconds the kernel took on the device (LogicError for a device it was not launched on).
  double seconds(std::size_t device_idx) const;
  // The longest over the devices it was launched on.
  double seconds() const;
  const std::vector<std::size_t>& device_idxs() const { return device_idxs_; }

  // Made by PreparedKernel::timed_call.
  TimedLaunch(std::vector<std::size_t> device_idxs, std::vector<Event> starts,
              std::vector<Event> ends)
      : device_idxs_(std::move(device_idxs)), starts_(std::move(starts)), ends_(std::move(ends)) {}

 private:
  std::vector<std::size_t> device_idxs_;
  std::vector<Event> starts_, ends_;  // by position in device_idxs_
};

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
  // from the device's and the kernel's limits when not given (the largest that divides the global
  // size, up to 256). Each global size must be a multiple of the local size in every dimension
  // (LogicError otherwise: use prepare_items or prepare_grid for other sizes).
  PreparedKernel prepare(const Queue& queue, const LaunchSizes& global,
                         const std::optional<LaunchSizes>& local = std::nullopt,
                         LocalMem local_mem = {}) const;
  // Launches over at least `items` work items in each dimension, any number (pygpu's
  // `kernel(args, n=n)`): the launch covers `items` rounded up to whole work groups, the same on
  // CUDA and OpenCL, so the kernel must skip the work items past the count it is passed:
  //   KERNEL void k(GLOBAL_MEM float* out, unsigned n) {
  //     const VSIZE_T i = get_global_id(0); if (i >= n) return; ...
  // In the kernel get_global_size() and get_num_groups() are those of the rounded launch, as
  // PreparedKernel::global_size() says; PreparedKernel::items() gives `items` back. `local` is
  // chosen when not given: in dimension 0 a multiple of the kernel's
  // preferred_local_size_multiple() up to 256 work items (no larger than `items` rounded up to
  // that multiple), in the others the largest power of two that fits what is left. Any local size
  // the kernel and device allow is taken. LogicError for a count of 0 (a launch needs a work item),
  // and as prepare() for local sizes and group counts beyond the device's limits.
  PreparedKernel prepare_items(const Queue& queue, const LaunchSizes& items,
                               const std::optional<LaunchSizes>& local = std::nullopt,
                               LocalMem local_mem = {}) const;
  // PyCUDA's `function(args, grid=grid, block=block)`: `grid` work groups (blocks) of `block`
  // work items each, in every dimension; the global size is grid * block. Errors as prepare().
  PreparedKernel prepare_grid(const Queue& queue, const LaunchSizes& grid, const LaunchSizes& block,
                              LocalMem local_mem = {}) const;
  // The most dynamic local memory a launch of this kernel can have on one device of its program:
  // the device's limit per group (on CUDA with the opt-in) less the kernel's static local memory.
  std::size_t max_local_mem(std::size_t device_idx) const;

  // The largest work group / block this kernel can run on each of the program's devices.
  std::map<std::size_t, std::size_t> max_total_local_sizes() const;
  KernelAttributes attributes(std::size_t device_idx) const;
  // The backend's kernel object on one device (CUfunction or cl_kernel), for interop.
  std::uintptr_t native(std::size_t device_idx) const;

  // pygpu's preflsize: local sizes should be multiples of this on the device (OpenCL:
  // CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE; CUDA: the warp size). LogicError for a device
  // the program was not compiled for.
  std::size_t preferred_local_size_multiple(std::size_t device_idx) const;
  // pygpu's numargs: how many arguments a launch passes (OpenCL: clGetKernelInfo's
  // CL_KERNEL_NUM_ARGS less the parameters Skein fills itself, a view's offset and dynamic local
  // memory; CUDA: cuFuncGetParamInfo, or where the driver lacks it (before CUDA 12.4) the kernel's
  // parameter list in the program's source). LogicError where neither tells (a CUDA program from
  // a binary on an old driver).
  std::size_t num_args() const;

  // PyCUDA's Function.get_attribute: the value on one device of the program (LogicError for
  // another device, and on OpenCL for the attributes OpenCL does not report, naming them).
  std::int64_t get_attribute(std::size_t device_idx, KernelAttribute attribute) const;
  // PyCUDA's Function.set_attribute, on every device of the program (cuFuncSetAttribute). Settable:
  // max_dynamic_shared_size_bytes (0 up to the device's opt-in limit less the static shared
  // memory; prepare() raises it again when a launch asks for more) and
  // preferred_shared_memory_carveout (-1 or 0 to 100). LogicError for the others, for a value the
  // driver refuses (naming it; the attribute keeps its value), and on OpenCL, which has none.
  // Attributes, like the configurations below, belong to the backend's function, which every
  // Kernel of this name from this program shares (and programs of the same source and options in
  // the same context, whose module Skein loads once): set them before launching from several
  // threads, not during.
  void set_attribute(KernelAttribute attribute, std::int64_t value) const;
  // PyCUDA's Function.set_cache_config: this kernel's preferred L1 / shared memory split, on
  // every device of the program (cuFuncSetCacheConfig; it wins over the context's, see
  // skein::set_cache_config). A preference the driver may ignore. OpenCL: LogicError, as for the
  // context's setting: OpenCL has no such control, and code that tunes it for CUDA should know
  // it did nothing (check api().id() == ApiId::cuda first).
  void set_cache_config(CacheConfig config) const;
  // PyCUDA's Function.set_shared_config: the shared memory bank width for this kernel
  // (cuFuncSetSharedMemConfig). Devices since Maxwell (sm_50) have 4-byte banks only and the
  // driver ignores the setting; where the driver no longer exports the call, default_bank_size
  // and four_byte_bank_size return without a call (the banks are 4 bytes) and
  // eight_byte_bank_size raises LogicError. OpenCL: LogicError, as set_cache_config.
  void set_shared_config(SharedConfig config) const;

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
inline constexpr bool is_host_arg =
    std::is_same_v<T, In> || std::is_same_v<T, Out> || std::is_same_v<T, InOut>;

template <class T>
inline constexpr bool is_scalar_arg =
    std::is_trivially_copyable_v<T> && !std::is_pointer_v<T> && !std::is_same_v<T, Buffer> &&
    !std::is_same_v<T, Array> && !is_multi_device<T>::value && !is_host_arg<T>;

inline KernelArg make_kernel_arg(const In& h) {
  return {.kind = KernelArg::Kind::host_in, .size = h.bytes().size(), .value = h.bytes().data()};
}
inline KernelArg make_kernel_arg(const Out& h) {
  return {.kind = KernelArg::Kind::host_out, .size = h.bytes().size(), .value = h.bytes().data()};
}
inline KernelArg make_kernel_arg(const InOut& h) {
  return {.kind = KernelArg::Kind::host_inout, .size = h.bytes().size(), .value = h.bytes().data()};
}

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
  // PyCUDA's prepared_timed_call (and time_kernel=True): launches as operator() does, between
  // two timed events per device; TimedLaunch::seconds() waits for the kernel and gives its device
  // time. For timing many launches together, Queue::record_event() around them.
  template <class... Args>
  TimedLaunch timed_call(const Args&... args) const {
    std::vector<Event> starts, ends;
    for (std::size_t d : device_idxs()) starts.push_back(start_timing(d));
    launch_all<Args...>(device_idxs(), nullptr, args...);
    for (std::size_t d : device_idxs()) ends.push_back(start_timing(d));
    return TimedLaunch(device_idxs(), std::move(starts), std::move(ends));
  }
  // Enqueues on one device with arguments packed already: for generated kernels whose parameter
  // list is only known at run time (elementwise and reduction kernels). Checked as above; In,
  // Out and InOut arguments (their KernelArg kinds) are handled as in operator().
  void launch_packed(std::size_t device_idx, std::span<const detail::KernelArg> args,
                     std::vector<Event>* events = nullptr) const {
    launch(device_idx, args, events);
  }

  const std::vector<std::size_t>& device_idxs() const;
  // The queue it was prepared with.
  const Queue& queue() const;
  // The work items launched on a device: what get_global_size() reports in the kernel. For
  // Kernel::prepare_items, the items asked for rounded up to whole work groups.
  const WorkSize& global_size(std::size_t device_idx) const;
  const WorkSize& local_size(std::size_t device_idx) const;
  // The work items asked for: Kernel::prepare_items' `items`; global_size() for the others.
  const WorkSize& items(std::size_t device_idx) const;

  struct Impl;
  PreparedKernel(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}  // NOLINT

 private:
  friend struct detail::ImplAccess;
  const std::shared_ptr<Impl>& impl() const { return impl_; }
  // Every device's arguments are checked before any device's launch is enqueued, so that a
  // refused call (an Array of device 0 given to every device) launches nothing.
  template <class... Args>
  void launch_all(std::span<const std::size_t> device_idxs, std::vector<Event>* events,
                  const Args&... args) const {
    if constexpr ((detail::is_host_arg<Args> || ...)) {
      if (device_idxs.size() != 1) refuse_host_args(device_idxs.size());
    }
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
  // LogicError: In, Out and InOut take a launch on one device.
  [[noreturn]] void refuse_host_args(std::size_t devices) const;
  // A timed event recorded now on the device's queue.
  Event start_timing(std::size_t device_idx) const;
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
