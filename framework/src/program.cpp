// SPDX-License-Identifier: BSD-3-Clause
#include "skein/program.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "skein/detail/compile_cache.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"
#include "skein/detail/log.hpp"
#include "skein/detail/sha256.hpp"
#include "skein/config.hpp"
#include "skein/ctypes.hpp"
#include "skein/records.hpp"
#include "codegen/launch.hpp"
#include "kernel_impl.hpp"

namespace skein {

// --- sizes -------------------------------------------------------------------------------------

WorkSize::WorkSize(std::initializer_list<std::size_t> sizes)
    : WorkSize(std::span<const std::size_t>(sizes.begin(), sizes.size())) {}

WorkSize::WorkSize(std::span<const std::size_t> sizes) : dims_(0), v_{1, 1, 1} {
  if (sizes.empty() || sizes.size() > 3) {
    detail::raise_in(SKEIN_HERE, "WorkSize", "Give 1, 2 or 3 sizes.", "{} dimension(s) given",
                     sizes.size());
  }
  dims_ = static_cast<unsigned>(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) v_[i] = sizes[i];
}

std::string WorkSize::to_string() const {
  return fmt::format("({})", fmt::join(std::span(v_, dims_), ", "));
}

namespace detail {
void raise_missing_device_value(std::size_t device_idx, std::size_t size) {
  raise_in(SKEIN_HERE, "MultiDevice", "Give a value for every device the call runs on.",
           "no value for device {} (values were given for {} device slot(s))", device_idx, size);
}
}  // namespace detail

// --- program -----------------------------------------------------------------------------------

struct Program::Impl {
  Context context;
  ProgramOptions options;
  std::vector<std::size_t> device_idxs;
  // Indexed by device index in the context.
  std::vector<std::shared_ptr<detail::ProgramAdapter>> programs;
  std::vector<std::string> sources;
  std::vector<char> from_cache;
  std::optional<std::filesystem::path> kept;
  // Per device: the parameters of the kernels the backend rewrote (ContextAdapter::
  // rewrite_source), or null where the source was compiled as written.
  std::vector<std::shared_ptr<const std::map<std::string, std::vector<detail::ParamRole>>>> roles;
};

namespace {

// Everything the compiler sees: prelude, constant arrays, then the user's source from line 1.
std::string full_source(const detail::ContextAdapter& ctx, const std::string& source,
                        const ProgramOptions& options, ApiId api) {
  std::string out;
  if (options.fast_math) out += "#define FAST_MATH\n";
  if (!options.no_prelude) {
    out += ctx.prelude();
    out += "\n";
    // Every registered record dtype's C type (skein/records.hpp), under its cname.
    const auto records = record_dtypes();
    out += record_definitions(records);
  }
  for (const auto& [name, array] : options.constant_arrays) {
    if (api != ApiId::cuda) {
      detail::raise_in(
          SKEIN_HERE, "Program", "Pass the data as a CONSTANT_MEM_ARG kernel argument instead.",
          "constant arrays are a CUDA feature; {} has none (array '{}')", skein::name(api), name);
    }
    if (array.size == 0) {
      detail::raise_in(SKEIN_HERE, "Program", "Give the constant array at least one element.",
                       "constant array '{}' has size 0", name);
    }
    out += fmt::format("__constant__ {} {}[{}];\n", ctype(array.dtype), name, array.size);
  }
  out += fmt::format("#line 1 \"{}\"\n", options.name);
  out += source;
  out += "\n";
  return out;
}

std::filesystem::path make_keep_directory() {
  std::string pattern = (std::filesystem::temp_directory_path() / "skein-keep-XXXXXX").string();
  if (!mkdtemp(pattern.data())) {
    detail::raise_in<RuntimeError>(SKEIN_HERE, "Program", "Check that TMPDIR is writable.",
                                   "cannot create a directory for keep=true from {}", pattern);
  }
  return pattern;
}

}  // namespace

namespace {

// Compiles `full` for device `d` of the program, or takes it from the context's programs or the
// disk cache; sets the device's program, source and from_cache. Throws CompileError.
void load_program(Program::Impl& impl, std::size_t d, std::string full) {
  const auto& opts = impl.options;
  auto& cimpl = *detail::impl_of(impl.context);
  auto& adapter = *cimpl.adapter;
  const ApiId api = impl.context.api().id();
  std::vector<std::string> compile_options = adapter.default_options(d, opts.fast_math);
  compile_options.insert(compile_options.end(), opts.compiler_options.begin(),
                         opts.compiler_options.end());

  std::vector<std::string> key{"skein " SKEIN_VERSION_STRING, std::string(skein::name(api))};
  for (auto& part : adapter.compiler_identity(d)) key.push_back(std::move(part));
  key.push_back(fmt::format("{}", fmt::join(compile_options, "\x1f")));
  key.push_back(full);
  const std::string key_hash = detail::sha256_hex(fmt::format("{}", fmt::join(key, "\x1e")));

  std::shared_ptr<detail::ProgramAdapter> loaded;
  {
    std::lock_guard lock(cimpl.programs_mutex);
    if (auto it = cimpl.programs.find({d, key_hash}); it != cimpl.programs.end()) {
      loaded = it->second;
    }
  }
  if (!loaded || opts.keep) {
    auto& cache = detail::CompileCache::instance();
    if (!loaded && !opts.keep && !cache.enabled()) {
      // Nothing keeps the binary, so none is asked for: the program is used as it was built.
      loaded = adapter.build(d, full, compile_options, opts.name);
    } else {
      auto result = cache.get_or_build(
          key, [&] { return adapter.compile(d, full, compile_options, opts.name).binary; });
      impl.from_cache[d] = result.from_disk;
      if (opts.keep) {
        const auto base = *impl.kept / fmt::format("device{}", d);
        std::ofstream(base.string() + (api == ApiId::cuda ? ".cu" : ".cl")) << full;
        std::ofstream(base.string() + (api == ApiId::cuda ? ".cubin" : ".bin"), std::ios::binary)
            .write(reinterpret_cast<const char*>(result.binary.data()),
                   static_cast<std::streamsize>(result.binary.size()));
      }
      if (!loaded) loaded = adapter.load(d, result.binary, compile_options);
    }
    std::lock_guard lock(cimpl.programs_mutex);
    cimpl.programs.emplace(std::pair{d, key_hash}, loaded);
  } else {
    impl.from_cache[d] = 1;
  }
  impl.programs[d] = std::move(loaded);
  impl.sources[d] = std::move(full);
}

}  // namespace

Program::Program(const Context& context, const std::string& source, ProgramOptions options) {
  auto impl = std::make_shared<Impl>(Impl{context, std::move(options), {}, {}, {}, {}, {}, {}});
  const auto& opts = impl->options;
  auto& adapter = *detail::impl_of(context)->adapter;
  const ApiId api = context.api().id();
  if (opts.device_idxs) {
    impl->device_idxs = *opts.device_idxs;
  } else {
    for (std::size_t i = 0; i < context.num_devices(); ++i) impl->device_idxs.push_back(i);
  }
  if (impl->device_idxs.empty()) {
    detail::raise_in(SKEIN_HERE, "Program", "Compile for at least one device.",
                     "device_idxs is empty");
  }
  const std::size_t n = context.num_devices();
  impl->programs.resize(n);
  impl->sources.resize(n);
  impl->from_cache.resize(n, 0);
  impl->roles.resize(n);
  if (opts.keep) impl->kept = make_keep_directory();
  // What the backend compiles instead of the source (OpenCL: kernels that take array views as
  // their allocation and offset).
  using Roles = std::map<std::string, std::vector<detail::ParamRole>>;
  auto rewritten = adapter.rewrite_source(source, !opts.no_prelude);
  const auto roles =
      rewritten ? std::make_shared<const Roles>(std::move(rewritten->kernels)) : nullptr;

  for (std::size_t d : impl->device_idxs) {
    detail::check_device_idx(context, d, "Program");
    if (impl->programs[d]) {
      detail::raise_in(SKEIN_HERE, "Program", "List each device index once.",
                       "device index {} is given twice", d);
    }
    if (!rewritten) {
      load_program(*impl, d, full_source(adapter, source, opts, api));
      continue;
    }
    try {
      load_program(*impl, d, full_source(adapter, rewritten->source, opts, api));
      impl->roles[d] = roles;
    } catch (const CompileError&) {
      // The source as written decides: its own compile error, or (should the rewrite be what the
      // compiler refused) a program whose views go to the kernels as sub-buffers.
      load_program(*impl, d, full_source(adapter, source, opts, api));
    }
  }
  if (impl->kept) {
    detail::log(LogLevel::warning, LogScope::rank, "kept the sources and binaries of '{}' in {}",
                impl->options.name, impl->kept->string());
  }
  impl_ = std::move(impl);
}

Program Program::from_binary(const Context& context, std::span<const std::byte> binary,
                             ProgramOptions options) {
  constexpr const char* call = "Program::from_binary";
  auto impl = std::make_shared<Impl>(Impl{context, std::move(options), {}, {}, {}, {}, {}, {}});
  const auto& opts = impl->options;
  auto& adapter = *detail::impl_of(context)->adapter;
  const ApiId api = context.api().id();
  if (binary.empty()) {
    detail::raise_in(SKEIN_HERE, call, "Pass the bytes nvcc or the OpenCL driver produced.",
                     "'{}': the binary is empty", opts.name);
  }
  if (opts.device_idxs) {
    impl->device_idxs = *opts.device_idxs;
  } else {
    for (std::size_t i = 0; i < context.num_devices(); ++i) impl->device_idxs.push_back(i);
  }
  const std::size_t n = context.num_devices();
  impl->programs.resize(n);
  impl->sources.resize(n);
  impl->from_cache.resize(n, 0);
  impl->roles.resize(n);
  // PTX is text that the driver wants NUL-terminated; CUBIN and fatbin are taken as they are.
  std::vector<std::byte> bytes(binary.begin(), binary.end());
  const auto starts_with = [&](std::string_view text) {
    return bytes.size() >= text.size() && std::memcmp(bytes.data(), text.data(), text.size()) == 0;
  };
  const bool ptx = api == ApiId::cuda &&
                   !starts_with(
                       "\x7f"
                       "ELF") &&
                   (std::find(bytes.begin(), bytes.end(), std::byte{0}) == bytes.end());
  if (ptx) bytes.push_back(std::byte{0});
  if (opts.jit.optimization_level && *opts.jit.optimization_level > 4) {
    detail::raise_in(SKEIN_HERE, call, "Give a level from 0 (no optimisation) to 4 (the default).",
                     "'{}': JIT optimization_level {} is out of range", opts.name,
                     *opts.jit.optimization_level);
  }
  if (api != ApiId::cuda && (opts.jit.max_registers || opts.jit.optimization_level)) {
    detail::raise_in(SKEIN_HERE, call,
                     "Pass the OpenCL compiler's options in ProgramOptions::compiler_options "
                     "instead (e.g. \"-cl-opt-disable\"), which clBuildProgram takes.",
                     "'{}': {} has no JIT {} option (JitOptions is CUDA's cuModuleLoadDataEx)",
                     opts.name, skein::name(api),
                     opts.jit.max_registers ? "max_registers" : "optimization_level");
  }
  for (std::size_t d : impl->device_idxs) {
    detail::check_device_idx(context, d, call);
    if (impl->programs[d]) {
      detail::raise_in(SKEIN_HERE, call, "List each device index once.",
                       "device index {} is given twice", d);
    }
    detail::JitLog log;
    bool loaded = false;
    try {
      impl->programs[d] = adapter.load_jit(d, bytes, opts.compiler_options, opts.jit, log);
      loaded = true;
    } catch (const MemoryError&) {
      if (opts.message_handler) opts.message_handler(false, log.info, log.error);
      throw;
    } catch (const Error& e) {
      if (opts.message_handler) opts.message_handler(false, log.info, log.error);
      // The backend's call and verdict (its code; what the bytes are not), said once, with the
      // device and what to do.
      const ErrorInfo& backend = e.info();
      std::string what = backend.what.empty() ? "the backend refused it" : backend.what;
      if (!log.error.empty() && what.find(log.error) == std::string::npos) {
        what += fmt::format(" (the JIT's error log: {})", log.error);
      }
      throw LogicError(ErrorInfo{
          .what = fmt::format("'{}' cannot run on this device: {}", opts.name, what),
          .call =
              backend.call.empty() ? std::string(call) : fmt::format("{} ({})", call, backend.call),
          .code_name = backend.code_name,
          .code = backend.code,
          .has_code = backend.has_code,
          .device = context.device(d).description(),
          .hint = "Build the binary for this device: on CUDA a fatbin with its architecture "
                  "(nvcc -gencode arch=compute_XY,code=sm_XY) or PTX the driver can compile; on "
                  "OpenCL a binary of this platform, device and driver. Or build the program "
                  "from source for this device (skein::Program).",
          .location = SKEIN_HERE});
    }
    if (loaded && opts.message_handler) opts.message_handler(true, log.info, log.error);
  }
  return Program(std::move(impl));
}

std::vector<std::byte> compile(const Context& context, std::size_t device_idx,
                               const std::string& source, const ProgramOptions& options,
                               const CompileTarget& target) {
  constexpr const char* call = "skein::compile";
  detail::check_device_idx(context, device_idx, call);
  auto& adapter = *detail::impl_of(context)->adapter;
  const ApiId api = context.api().id();
  const bool ptx = target.format == BinaryFormat::ptx;
  if (api != ApiId::cuda && (ptx || !target.arch.empty())) {
    detail::raise_in(SKEIN_HERE, call,
                     "On OpenCL compile with BinaryFormat::native and no arch: the binary is for "
                     "the device it is built on.",
                     "{} {}: {} has no {}", context.device(device_idx).description(), options.name,
                     skein::name(api), ptx ? "PTX" : "target architectures");
  }
  std::string arch = target.arch;
  if (ptx && arch.empty()) {
    const auto cc = context.device(device_idx).params().compute_capability;
    arch = cc ? fmt::format("compute_{}{}", cc->first, cc->second) : "compute_52";
  }
  if (!arch.empty()) {
    const bool virtual_arch = arch.starts_with("compute_");
    const bool real_arch = arch.starts_with("sm_");
    const std::string digits = arch.substr(arch.find('_') + 1);
    const bool number = !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) {
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z');
    });
    if (!number || (ptx ? !virtual_arch : !real_arch)) {
      detail::raise_in(SKEIN_HERE, call,
                       ptx ? "Name a virtual architecture for PTX, as \"compute_80\"."
                           : "Name a real architecture for a CUBIN, as \"sm_90\".",
                       "'{}': \"{}\" is no {} architecture", options.name, arch,
                       ptx ? "virtual (compute_XY)" : "real (sm_XY)");
    }
  }
  // The source as Program compiles it for a binary: as written (no backend rewrite), with the
  // prelude and declarations.
  const std::string full = full_source(adapter, source, options, api);
  std::vector<std::string> compile_options =
      arch.empty() ? adapter.default_options(device_idx, options.fast_math)
                   : adapter.options_for_arch(device_idx, options.fast_math, arch);
  compile_options.insert(compile_options.end(), options.compiler_options.begin(),
                         options.compiler_options.end());
  detail::CompiledBinary out =
      ptx ? adapter.compile_ptx(device_idx, full, compile_options, options.name)
          : adapter.compile(device_idx, full, compile_options, options.name);
  if (options.message_handler) options.message_handler(true, out.log, "");
  return std::move(out.binary);
}

Program Program::from_file(const Context& context, const std::filesystem::path& path,
                           ProgramOptions options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    detail::raise_in(SKEIN_HERE, "Program::from_file", "Check the path.", "cannot open '{}'",
                     path.string());
  }
  std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (options.name == ProgramOptions{}.name) options.name = path.filename().string();
  return from_binary(context, std::as_bytes(std::span(data)), std::move(options));
}

Program Program::from_template(const Context& context, std::string_view template_source,
                               const RenderGlobals& globals, ProgramOptions options) {
  // Rendered first: `options` is moved into the Program below, and the order in which a call's
  // arguments are evaluated is unspecified.
  const std::string rendered = render(template_source, globals, options.name);
  return Program(context, rendered, std::move(options));
}

const Context& Program::context() const { return impl_->context; }
const std::vector<std::size_t>& Program::device_idxs() const { return impl_->device_idxs; }

const std::string& Program::source(std::size_t device_idx) const {
  if (device_idx >= impl_->programs.size() || !impl_->programs[device_idx]) {
    detail::raise_in(SKEIN_HERE, "Program::source", "Ask for a device the program was built for.",
                     "the program was not compiled for device {}", device_idx);
  }
  return impl_->sources[device_idx];
}

bool Program::from_cache(std::size_t device_idx) const {
  (void)source(device_idx);
  return impl_->from_cache[device_idx] != 0;
}

std::optional<std::filesystem::path> Program::kept_directory() const { return impl_->kept; }

void Program::check_constant_dtype(const std::string& name, Dtype dtype, std::size_t size) const {
  auto it = impl_->options.constant_arrays.find(name);
  if (it == impl_->options.constant_arrays.end()) {
    detail::raise_in(SKEIN_HERE, "Program::set_constant_array",
                     "Declare it in ProgramOptions::constant_arrays.",
                     "the program has no constant array '{}'", name);
  }
  if (it->second.dtype != dtype || it->second.size != size) {
    detail::raise_in(SKEIN_HERE, "Program::set_constant_array",
                     "Pass data of the declared dtype and size.",
                     "constant array '{}' is {} x {}, the data is {} x {}", name, it->second.size,
                     skein::name(it->second.dtype), size, skein::name(dtype));
  }
}

void Program::set_constant_array(const Queue& queue, const std::string& name,
                                 std::span<const std::byte> host) const {
  auto it = impl_->options.constant_arrays.find(name);
  if (it == impl_->options.constant_arrays.end()) check_constant_dtype(name, Dtype::uint8, 0);
  const std::size_t nbytes = it->second.size * itemsize(it->second.dtype);
  if (host.size() != nbytes) {
    detail::raise_in(SKEIN_HERE, "Program::set_constant_array",
                     "Pass exactly the declared number of bytes.",
                     "constant array '{}' has {} bytes, {} were given", name, nbytes, host.size());
  }
  for (std::size_t d : queue.device_idxs()) {
    if (d >= impl_->programs.size() || !impl_->programs[d]) continue;
    impl_->programs[d]->set_constant(queue.device_queue(d), name, host.data(), nullptr, 0, nbytes);
  }
}

void Program::set_constant_array(const Queue& queue, const std::string& name,
                                 const Array& array) const {
  check_constant_dtype(name, array.dtype(), array.size());
  if (!array.is_contiguous()) {
    detail::raise_in(SKEIN_HERE, "Program::set_constant_array", "Use a contiguous array.",
                     "the array is a strided view");
  }
  for (std::size_t d : queue.device_idxs()) {
    if (d >= impl_->programs.size() || !impl_->programs[d]) continue;
    impl_->programs[d]->set_constant(queue.device_queue(d), name, nullptr,
                                     array.data().adapter().get(),
                                     array.data().offset() + array.offset(), array.nbytes());
  }
}

// --- kernels -----------------------------------------------------------------------------------

Kernel Program::kernel(const std::string& name) const {
  auto impl = std::make_shared<Kernel::Impl>(Kernel::Impl{*this, name, {}});
  impl->kernels.resize(impl_->programs.size());
  for (std::size_t d : impl_->device_idxs) {
    const std::vector<detail::ParamRole>* roles = nullptr;
    if (const auto& rewritten = impl_->roles[d]) {
      if (const auto it = rewritten->find(name); it != rewritten->end()) roles = &it->second;
    }
    impl->kernels[d] = impl_->programs[d]->kernel(name, roles);
  }
  return Kernel(std::move(impl));
}

const std::string& Kernel::name() const { return impl_->name; }
const Program& Kernel::program() const { return impl_->program; }

std::map<std::size_t, std::size_t> Kernel::max_total_local_sizes() const {
  std::map<std::size_t, std::size_t> result;
  for (std::size_t d : impl_->program.device_idxs()) {
    result[d] = std::min(impl_->kernels[d]->attributes().max_total_local_size,
                         impl_->program.context().device(d).params().max_total_local_size);
  }
  return result;
}

KernelAttributes Kernel::attributes(std::size_t device_idx) const {
  if (device_idx >= impl_->kernels.size() || !impl_->kernels[device_idx]) {
    detail::raise_in(SKEIN_HERE, "Kernel::attributes", "Ask for one of the program's devices.",
                     "kernel '{}' was not compiled for device {}", impl_->name, device_idx);
  }
  return impl_->kernels[device_idx]->attributes();
}

std::uintptr_t Kernel::native(std::size_t device_idx) const {
  (void)attributes(device_idx);
  return impl_->kernels[device_idx]->native();
}

namespace {

// The local size: the largest that divides the global size in each dimension and fits the
// device's and the kernel's limits, filling dimension 0 first (consecutive ids, coalesced access).
WorkSize choose_local_size(const WorkSize& global, std::size_t max_total,
                           const std::vector<std::size_t>& max_per_dim, std::size_t warp) {
  // Past a few warps' worth, a larger group only costs occupancy flexibility.
  std::size_t budget = std::min<std::size_t>(max_total, std::max<std::size_t>(256, warp));
  std::size_t sizes[3] = {1, 1, 1};
  for (unsigned d = 0; d < global.dims(); ++d) {
    const std::size_t limit = std::min(budget, d < max_per_dim.size() ? max_per_dim[d] : 1);
    std::size_t best = 1;
    for (std::size_t candidate = std::min(limit, global[d]); candidate >= 1; --candidate) {
      if (global[d] % candidate == 0) {
        best = candidate;
        break;
      }
    }
    sizes[d] = best;
    budget /= best;
  }
  return WorkSize(std::span<const std::size_t>(sizes, global.dims()));
}

}  // namespace

std::size_t Kernel::max_local_mem(std::size_t device_idx) const {
  const KernelAttributes attributes = this->attributes(device_idx);  // checks the device
  const auto& params = impl_->program.context().device(device_idx).params();
  const std::size_t limit = std::max(params.local_mem_size, params.local_mem_per_group_optin);
  return limit > attributes.local_mem_size ? limit - attributes.local_mem_size : 0;
}

namespace {

// How Kernel's prepare functions read their sizes.
enum class SizeMode {
  global,  // prepare: global sizes, multiples of the local sizes
  items,   // prepare_items: work items, rounded up to whole groups
  grid,    // prepare_grid: groups (blocks) of `local` work items
};

const char* prepare_call_name(SizeMode mode) {
  switch (mode) {
    case SizeMode::items: return "Kernel::prepare_items";
    case SizeMode::grid: return "Kernel::prepare_grid";
    default: return "Kernel::prepare";
  }
}

// prepare_items' local size when none is given: in dimension 0 a multiple of the preferred
// multiple up to the budget (no larger than the items rounded up to it), in the others the largest
// power of two within what is left and the items.
WorkSize choose_items_local(const WorkSize& items, std::size_t max_total,
                            const std::vector<std::size_t>& max_per_dim, std::size_t warp,
                            std::size_t preferred) {
  std::size_t budget = std::min<std::size_t>(max_total, std::max<std::size_t>(256, warp));
  std::size_t sizes[3] = {1, 1, 1};
  for (unsigned d = 0; d < items.dims(); ++d) {
    const std::size_t limit =
        std::max<std::size_t>(std::min(budget, d < max_per_dim.size() ? max_per_dim[d] : 1), 1);
    std::size_t size = 1;
    if (d == 0) {
      const std::size_t rounded = (items[0] + preferred - 1) / preferred * preferred;
      size = limit >= preferred ? std::min(limit / preferred * preferred, rounded)
                                : std::min(limit, items[0]);
    } else {
      while (size * 2 <= std::min(limit, items[d])) size *= 2;
    }
    sizes[d] = std::max<std::size_t>(size, 1);
    budget /= sizes[d];
  }
  return WorkSize(std::span<const std::size_t>(sizes, items.dims()));
}

struct DeviceSizes {
  WorkSize global;
  WorkSize local;
  WorkSize items;
};

// The sizes of one device's launch, checked against the kernel's and the device's limits.
DeviceSizes launch_sizes_on(SizeMode mode, const std::string& kernel, const std::string& where,
                            const DeviceParameters& params, std::size_t max_total,
                            std::size_t preferred, const WorkSize& given,
                            const std::optional<WorkSize>& local) {
  const char* call = prepare_call_name(mode);
  for (unsigned dim = 0; dim < given.dims() && mode != SizeMode::global; ++dim) {
    if (given[dim] == 0) {
      detail::raise_in(SKEIN_HERE, call, "Skip the launch when there is nothing to do.",
                       "kernel '{}' on {}: {} {} has 0 in dimension {}", kernel, where,
                       mode == SizeMode::grid ? "grid" : "items", given.to_string(), dim);
    }
  }
  WorkSize l = local ? *local
               : mode == SizeMode::items
                   ? choose_items_local(given, max_total, params.max_local_sizes, params.warp_size,
                                        preferred)
                   : choose_local_size(given, max_total, params.max_local_sizes, params.warp_size);
  if (l.dims() != given.dims()) {
    detail::raise_in(SKEIN_HERE, call, "Give both sizes the same dimensions.",
                     "kernel '{}' on {}: size {} and local size {} differ in dimensions", kernel,
                     where, given.to_string(), l.to_string());
  }
  if (l.total() > max_total) {
    detail::raise_in(SKEIN_HERE, call,
                     "Use a smaller local size (see Kernel::max_total_local_sizes()).",
                     "kernel '{}' on {}: local size {} has {} work items; at most {} fit", kernel,
                     where, l.to_string(), l.total(), max_total);
  }
  std::size_t global[3] = {1, 1, 1};
  for (unsigned dim = 0; dim < given.dims(); ++dim) {
    if (l[dim] == 0) {
      detail::raise_in(SKEIN_HERE, call, "Give local sizes of at least 1.",
                       "kernel '{}' on {}: local size {} has 0 in dimension {}", kernel, where,
                       l.to_string(), dim);
    }
    if (mode == SizeMode::global && given[dim] % l[dim] != 0) {
      detail::raise_in(SKEIN_HERE, call,
                       "Launch with Kernel::prepare_items (the launch is rounded up to whole "
                       "groups, and the kernel skips the work items past its count), or round the "
                       "global size up yourself, or use a StaticKernel.",
                       "kernel '{}' on {}: global size {} is not a multiple of local size {}",
                       kernel, where, given.to_string(), l.to_string());
    }
    global[dim] =
        mode == SizeMode::grid ? given[dim] * l[dim] : (given[dim] + l[dim] - 1) / l[dim] * l[dim];
    if (dim < params.max_local_sizes.size() && l[dim] > params.max_local_sizes[dim]) {
      detail::raise_in(SKEIN_HERE, call, "Use a smaller local size.",
                       "kernel '{}' on {}: local size {} exceeds the device's {} in dimension {}",
                       kernel, where, l.to_string(), params.max_local_sizes[dim], dim);
    }
    if (dim < params.max_num_groups.size() && global[dim] / l[dim] > params.max_num_groups[dim]) {
      detail::raise_in(SKEIN_HERE, call,
                       "Use a larger local size, or a StaticKernel, whose virtual grid has no "
                       "such limit.",
                       "kernel '{}' on {}: {} groups in dimension {}; the device allows {}", kernel,
                       where, global[dim] / l[dim], dim, params.max_num_groups[dim]);
    }
  }
  const WorkSize g(std::span<const std::size_t>(global, given.dims()));
  return {g, l, mode == SizeMode::items ? given : g};
}

PreparedKernel prepare_kernel(const Kernel& kernel, const Queue& queue, const LaunchSizes& sizes,
                              const std::optional<LaunchSizes>& local, LocalMem local_mem,
                              SizeMode mode) {
  const auto& k = *detail::impl_of(kernel);
  const auto& program = k.program;
  const char* call = prepare_call_name(mode);
  if (!(queue.context() == program.context())) {
    detail::raise_in(SKEIN_HERE, call, "Use a queue of the program's context.",
                     "the queue belongs to another context than kernel '{}'", k.name);
  }
  auto impl = std::make_shared<PreparedKernel::Impl>(PreparedKernel::Impl{kernel, queue});
  impl->device_idxs = queue.device_idxs();
  impl->per_device.resize(program.context().num_devices());
  impl->context_id = detail::impl_of(program.context()).get();
  impl->context = detail::impl_of(program.context())->adapter.get();
  for (std::size_t d : impl->device_idxs) {
    if (d >= k.kernels.size() || !k.kernels[d]) {
      detail::raise_in(SKEIN_HERE, call,
                       "Compile the program for every device of the queue (device_idxs).",
                       "kernel '{}' was not compiled for device {} of the queue", k.name, d);
    }
    auto& adapter = *k.kernels[d];
    const auto& params = program.context().device(d).params();
    const std::size_t max_total =
        std::min(adapter.attributes().max_total_local_size, params.max_total_local_size);
    const std::string where = program.context().device(d).description();
    const DeviceSizes sz = launch_sizes_on(
        mode, k.name, where, params, max_total, adapter.attributes().preferred_local_size_multiple,
        sizes.for_device(d), local ? std::optional<WorkSize>(local->for_device(d)) : std::nullopt);
    if (local_mem.bytes > 0) {
      const std::size_t most = kernel.max_local_mem(d);
      if (local_mem.bytes > most) {
        detail::raise_in(SKEIN_HERE, call,
                         "Ask for less dynamic local memory (Kernel::max_local_mem()), or use "
                         "smaller tiles.",
                         "kernel '{}' on {}: {} bytes of dynamic local memory asked; beside its {} "
                         "bytes of static local memory the device allows {}",
                         k.name, where, local_mem.bytes, adapter.attributes().local_mem_size, most);
      }
      adapter.allow_local_mem(local_mem.bytes);
    }
    PreparedKernel::Impl::PerDevice pd;
    pd.kernel = &adapter;
    pd.queue = &queue.device_queue(d);
    pd.global = sz.global;
    pd.local = sz.local;
    pd.items = sz.items;
    pd.dims.dims = sz.global.dims();
    pd.dims.local_mem = local_mem.bytes;
    for (unsigned dim = 0; dim < 3; ++dim) {
      pd.dims.global[dim] = sz.global[dim];
      pd.dims.local[dim] = sz.local[dim];
    }
    impl->per_device[d] = pd;
  }
  return PreparedKernel(std::move(impl));
}

}  // namespace

PreparedKernel Kernel::prepare(const Queue& queue, const LaunchSizes& global,
                               const std::optional<LaunchSizes>& local, LocalMem local_mem) const {
  return prepare_kernel(*this, queue, global, local, local_mem, SizeMode::global);
}

PreparedKernel Kernel::prepare_items(const Queue& queue, const LaunchSizes& items,
                                     const std::optional<LaunchSizes>& local,
                                     LocalMem local_mem) const {
  return prepare_kernel(*this, queue, items, local, local_mem, SizeMode::items);
}

PreparedKernel Kernel::prepare_grid(const Queue& queue, const LaunchSizes& grid,
                                    const LaunchSizes& block, LocalMem local_mem) const {
  return prepare_kernel(*this, queue, grid, block, local_mem, SizeMode::grid);
}

const std::vector<std::size_t>& PreparedKernel::device_idxs() const { return impl_->device_idxs; }
const Queue& PreparedKernel::queue() const { return impl_->queue; }

const WorkSize& PreparedKernel::global_size(std::size_t device_idx) const {
  if (device_idx >= impl_->per_device.size() || !impl_->per_device[device_idx]) {
    detail::raise_in(SKEIN_HERE, "PreparedKernel::global_size", "Ask for a device of its queue.",
                     "device {} is not one the kernel was prepared for", device_idx);
  }
  return impl_->per_device[device_idx]->global;
}

const WorkSize& PreparedKernel::local_size(std::size_t device_idx) const {
  (void)global_size(device_idx);
  return impl_->per_device[device_idx]->local;
}

const WorkSize& PreparedKernel::items(std::size_t device_idx) const {
  (void)global_size(device_idx);
  return impl_->per_device[device_idx]->items;
}

namespace {
[[noreturn]] void raise_argument(const std::string& kernel, const Device& device, std::size_t i,
                                 const std::string& what, const char* hint) {
  detail::raise_in(SKEIN_HERE, "PreparedKernel", hint, "kernel '{}' on {}: argument {}: {}", kernel,
                   device.description(), i, what);
}
}  // namespace

namespace {
// The checks of every launch's arguments against the kernel's parameters (PreparedKernel::check
// and the launches of generated kernels).
void check_args(const Kernel& kernel, const Queue& queue, const void* context_id,
                detail::ContextAdapter& context, const detail::KernelAdapter& adapter,
                std::size_t device_idx, std::span<const detail::KernelArg> args) {
  const auto& params = adapter.params();
  if (params && params->size() != args.size()) [[unlikely]] {
    detail::raise_in(SKEIN_HERE, "PreparedKernel", "Pass one argument per kernel parameter.",
                     "kernel '{}' takes {} argument(s), {} were given", kernel.name(),
                     params->size(), args.size());
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& arg = args[i];
    const detail::ParamInfo param = params ? (*params)[i] : detail::ParamInfo{};
    if (arg.kind == detail::KernelArg::Kind::buffer) {
      if (arg.context != context_id) [[unlikely]] {
        raise_argument(kernel.name(), queue.context().device(device_idx), i,
                       "the buffer belongs to another context",
                       "Allocate it in the kernel's context.");
      }
      // An array is used on its own device only (a view from another device says so: it has that
      // device's index). The same array given to a launch on several devices is the usual slip.
      if (arg.array && arg.device != device_idx) [[unlikely]] {
        raise_argument(kernel.name(), queue.context().device(device_idx), i,
                       fmt::format("the array is on device {}, this launch is on device {}",
                                   arg.device, device_idx),
                       "Give each device an array of its own: MultiDevice<Array> (one array per "
                       "device, e.g. DistArray::local_arrays()), or a copy on this device "
                       "(Array::set); Array::single_device_view() reads it from another device "
                       "where the backend allows.");
      }
      if (arg.buffer_device != device_idx && !context.can_access(device_idx, arg.buffer_device))
          [[unlikely]] {
        raise_argument(kernel.name(), queue.context().device(device_idx), i,
                       fmt::format("the buffer is on device {}, which this device cannot access",
                                   arg.buffer_device),
                       "Copy the data to the launching device first.");
      }
      if (param.kind == detail::ParamInfo::Kind::scalar ||
          (param.size != 0 && param.size != sizeof(void*))) [[unlikely]] {
        raise_argument(kernel.name(), queue.context().device(device_idx), i,
                       fmt::format("a buffer was given for a {}-byte scalar parameter", param.size),
                       "Pass a scalar of the parameter's type.");
      }
    } else {
      if (param.kind == detail::ParamInfo::Kind::pointer) [[unlikely]] {
        raise_argument(kernel.name(), queue.context().device(device_idx), i,
                       "a scalar was given for a pointer parameter", "Pass a Buffer or an Array.");
      }
      if (param.size != 0 && param.size != arg.size) [[unlikely]] {
        raise_argument(
            kernel.name(), queue.context().device(device_idx), i,
            fmt::format("a {}-byte scalar was given for a {}-byte parameter", arg.size, param.size),
            "Pass a value of exactly the parameter's type, e.g. std::int32_t{1} or "
            "1.0f.");
      }
    }
  }
}
}  // namespace

void PreparedKernel::check(std::size_t device_idx, std::span<const detail::KernelArg> args) const {
  const auto& impl = *impl_;
  if (device_idx >= impl.per_device.size() || !impl.per_device[device_idx]) [[unlikely]] {
    detail::raise_in(SKEIN_HERE, "PreparedKernel",
                     "Launch on devices of the queue the kernel was prepared with.",
                     "device {} is not one kernel '{}' was prepared for (devices: {})", device_idx,
                     impl.kernel.name(), fmt::join(impl.device_idxs, ", "));
  }
  check_args(impl.kernel, impl.queue, impl.context_id, *impl.context,
             *impl.per_device[device_idx]->kernel, device_idx, args);
}

void PreparedKernel::launch(std::size_t device_idx, std::span<const detail::KernelArg> args,
                            std::vector<Event>* events) const {
  for (const auto& arg : args) {
    if (arg.kind != detail::KernelArg::Kind::buffer && arg.kind != detail::KernelArg::Kind::scalar)
        [[unlikely]] {
      detail::launch_with_host_args(*this, device_idx, args, events);
      return;
    }
  }
  check(device_idx, args);
  const auto& pd = *impl_->per_device[device_idx];
  if (events) {
    std::shared_ptr<detail::EventAdapter> event;
    pd.kernel->launch(*pd.queue, pd.dims, args, &event);
    events->emplace_back(std::move(event));
  } else {
    pd.kernel->launch(*pd.queue, pd.dims, args, nullptr);
  }
}

namespace detail::codegen {

void launch_generated(const Kernel& kernel, const Queue& queue, std::size_t device_idx,
                      std::size_t groups, std::size_t local, std::span<const KernelArg> args) {
  const auto& k = *impl_of(kernel);
  const auto& context = impl_of(queue.context());
  if (context.get() != impl_of(k.program.context()).get()) [[unlikely]] {
    raise_in(SKEIN_HERE, "Kernel::prepare", "Use a queue of the program's context.",
             "the queue belongs to another context than kernel '{}'", k.name);
  }
  const auto& devices = queue.device_idxs();
  if (std::find(devices.begin(), devices.end(), device_idx) == devices.end() ||
      device_idx >= k.kernels.size() || !k.kernels[device_idx]) [[unlikely]] {
    raise_in(SKEIN_HERE, "PreparedKernel",
             "Launch on devices of the queue the kernel was prepared with.",
             "device {} is not one kernel '{}' was prepared for (devices: {})", device_idx, k.name,
             fmt::join(devices, ", "));
  }
  auto& adapter = *k.kernels[device_idx];
  const auto& params = queue.context().device(device_idx).params();
  if (!params.max_num_groups.empty() && groups > params.max_num_groups[0]) [[unlikely]] {
    raise_in(SKEIN_HERE, "PreparedKernel", "This is a bug in Skein: generated grids are clamped.",
             "kernel '{}': {} groups; the device allows {}", k.name, groups,
             params.max_num_groups[0]);
  }
  check_args(kernel, queue, context.get(), *context->adapter, adapter, device_idx, args);
  LaunchDims dims;
  dims.global[0] = groups * local;
  dims.local[0] = local;
  adapter.launch(queue.device_queue(device_idx), dims, args, nullptr);
}

void launch_planned(const Kernel& kernel, const Queue& queue, std::size_t device_idx,
                    std::size_t groups, std::size_t local, std::span<const KernelArg> args) {
  const auto& k = *impl_of(kernel);
  const auto& context = impl_of(queue.context());
  const auto& devices = queue.device_idxs();
  if (context.get() != impl_of(k.program.context()).get() ||
      std::find(devices.begin(), devices.end(), device_idx) == devices.end() ||
      device_idx >= k.kernels.size() || !k.kernels[device_idx]) [[unlikely]] {
    launch_generated(kernel, queue, device_idx, groups, local, args);  // raises, saying why
    return;
  }
  auto& adapter = *k.kernels[device_idx];
  const auto& params = adapter.params();
  bool as_planned = !params || params->size() == args.size();
  for (const auto& arg : args) {
    if (arg.kind == KernelArg::Kind::buffer) {
      as_planned = as_planned && arg.context == context.get() &&
                   (!arg.array || arg.device == device_idx) &&
                   (arg.buffer_device == device_idx ||
                    context->adapter->can_access(device_idx, arg.buffer_device));
    }
  }
  if (!as_planned) [[unlikely]] {
    launch_generated(kernel, queue, device_idx, groups, local, args);  // raises, saying why
    return;
  }
  LaunchDims dims;
  dims.global[0] = groups * local;
  dims.local[0] = local;
  adapter.launch(queue.device_queue(device_idx), dims, args, nullptr);
}

}  // namespace detail::codegen

}  // namespace skein
