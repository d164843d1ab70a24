// SPDX-License-Identifier: BSD-3-Clause
// What elementwise and reduction kernels share: parameter lists, dtype binding, C code for loads
// and stores, broadcasting and layout classes, the in-memory cache of compiled programs, scratch
// memory per queue, and packing run-time argument lists for generated kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <array>
#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "skein/array.hpp"
#include "skein/elementwise.hpp"
#include "skein/program.hpp"

namespace skein::detail {

// --- types -------------------------------------------------------------------------------------

// A dtype from a parameter's type name: NumPy's names and the C names of ctypes.hpp (float is
// float32, double float64, int int32, ...). std::nullopt for anything else (a placeholder).
std::optional<Dtype> dtype_from_type_name(std::string_view name);
// The type an element is computed in: float for float16 / bfloat16, else the dtype's ctype.
std::string compute_ctype(Dtype dtype);
Dtype compute_dtype(Dtype dtype);
// C expressions: a stored element (storage type) as its compute type, and back.
std::string load_value(Dtype dtype, const std::string& stored);
std::string store_value(Dtype dtype, const std::string& computed);
// A compute value of `from` converted to the compute type of `to` (real -> complex sets a zero
// imaginary part; complex -> real is the caller's to refuse).
std::string convert_value(Dtype from, Dtype to, const std::string& value);
// The kernel-side C type of a scalar parameter: uint16_t for float16/bfloat16 (bits), else ctype.
std::string scalar_param_ctype(Dtype dtype);

bool is_identifier(std::string_view s);

// --- parameters --------------------------------------------------------------------------------

struct ParamDecl {
  std::string name;
  std::string type;             // as written
  std::optional<Dtype> dtype;   // set for a concrete type, empty for a placeholder
  bool raw = false;
  bool output = false;
};

// Parses "T x, raw float32 y, ..." (see elementwise.hpp). `call` names the constructor in errors.
std::vector<ParamDecl> parse_params(std::string_view text, bool output, const std::string& call,
                                    const std::string& kernel);
void check_reserved(const std::vector<ParamDecl>& params, std::span<const std::string_view> reserved,
                    const std::string& call, const std::string& kernel);

// Refuses a generated kernel's name that is not a C identifier, starts with `_skein`, or is the
// name of an OpenCL C built-in function (distance, abs_diff, dot, sin, ...: PoCL builds an entry
// point of that name under another name, which the launch then does not find).
void check_kernel_name(const std::string& kernel, const std::string& call);

// What the constructor of a generated kernel (ElementwiseKernel, StencilKernel) checks of its
// declaration: a usable kernel name, the inputs then at least one output, no reserved or taken
// name among them (`taken`: the kernel's own entry points), a non-empty operation (`example` in
// the hint). Returns the parameters, inputs first; `n_in` gets the number of inputs.
std::vector<ParamDecl> declare_kernel(std::string_view in_params, std::string_view out_params,
                                      const std::string& operation, const std::string& kernel,
                                      std::span<const std::string_view> reserved,
                                      std::span<const std::string> taken, const std::string& call,
                                      std::string_view example, std::size_t& n_in);
// "argument 'x' of kernel 'k'" for each parameter (for conversion errors).
std::vector<std::string> describe_arguments(const std::vector<ParamDecl>& params, const std::string& kernel);

// Placeholder name -> dtype, as bound by one call.
using Bindings = std::map<std::string, Dtype, std::less<>>;

// Binds the placeholders from the arguments of the params (arrays first, then scalars) and checks
// the arrays' dtypes against concrete types. `args` may be shorter than `params` (outputs not
// given). LogicError naming the parameter otherwise.
Bindings bind_types(const std::vector<ParamDecl>& params, std::span<const Operand> args,
                    const std::string& call, const std::string& kernel);
// The dtype of a parameter under the bindings; LogicError when a placeholder is unbound.
Dtype param_dtype(const ParamDecl& p, const Bindings& b, const std::string& call,
                  const std::string& kernel);
// "typedef float T;\n" for each binding.
std::string placeholder_typedefs(const Bindings& b);

// --- arrays ------------------------------------------------------------------------------------

// The device the arrays among `args` run on, after checking that they share the queue's context
// and one device of the queue, and with `launch_device` (a per-device launch) that it is that
// device. `params` name the arguments in errors. std::nullopt when there is no array.
std::optional<std::size_t> common_device(const Queue& queue, std::span<const Operand> args,
                                         const std::vector<ParamDecl>& params,
                                         std::optional<std::size_t> launch_device,
                                         const std::string& call, const std::string& kernel);

// NumPy broadcasting of the shapes of the arrays flagged in `take`.
Shape broadcast_shapes(std::span<const Operand> args, const std::vector<bool>& take,
                       const std::vector<ParamDecl>& params, const std::string& call,
                       const std::string& kernel);

// The layout of a set of arrays of one (broadcast) shape: dimensions of extent 1 dropped and
// neighbours merged where every array allows it. Byte strides per array, C order.
struct Layout {
  std::vector<std::uint64_t> shape;                 // collapsed, at least 1 dimension
  std::vector<std::vector<std::uint64_t>> strides;  // [array][dim], bytes
  std::uint64_t size = 0;
  bool contiguous = false;  // one dimension, every stride the array's itemsize
};
// What make_layout needs of an array (outputs to be allocated have no Array yet).
struct ArrayShape {
  Shape shape;
  Strides strides;
  std::size_t itemsize = 1;
};
inline ArrayShape shape_of(const Array& a) { return {a.shape(), a.strides(), a.itemsize()}; }
// `arrays` viewed with `shape` (each broadcast to it: missing / extent-1 dimensions get stride 0).
Layout make_layout(const Shape& shape, std::span<const ArrayShape> arrays);

// Bytes from the start of the allocation to the array's element 0 (for alignment).
inline std::uint64_t address_in_allocation(const Array& a) { return a.data().offset() + a.offset(); }

// The first element index h < 16 at which every array (by allocation address and itemsize) is
// 16-byte aligned, if any.
std::optional<std::uint64_t> common_vector_start(std::span<const Array* const> arrays);

// --- compiled programs, kept per (owner, context, signature) -------------------------------------

struct CompiledProgram {
  Program program;
  std::map<std::string, Kernel, std::less<>> kernels;
  // Per device of the context: the work-group size the sources were written for, and how many
  // such groups of each kernel are resident on the whole device at once.
  std::vector<std::size_t> local_size;
  std::map<std::string, std::vector<std::size_t>, std::less<>> resident_groups;

  const Kernel& kernel(std::string_view name) const;
  std::size_t resident(std::string_view kernel, std::size_t device_idx) const;
};

// A unique id for an object that owns cache entries.
std::uint64_t new_cache_owner();
// The entries of an owner are dropped when it goes.
void drop_cache_owner(std::uint64_t owner);
// The program for (owner, context, signature); `build` renders the source (only on a miss).
// Entries whose context nobody else holds any more are dropped on the way (the cache keeps
// contexts alive only while they are used elsewhere).
std::shared_ptr<const CompiledProgram> cached_program(
    std::uint64_t owner, const Context& context, const std::string& signature,
    const std::function<std::string()>& build, const std::vector<std::string>& kernel_names,
    const ProgramOptions& options);

// The work-group size generated kernels are written for on the context's devices: a power of
// two, at most 256 and at most what every device allows.
std::size_t group_size_for(const Context& context);

// --- scratch memory ----------------------------------------------------------------------------

// Device memory for the intermediate results of one call, from the queue's temporaries_pool():
// given back when the Scratch goes, and reused by later calls on that queue (its work is in order,
// so a later call never overtakes an earlier one's use). Allocating and freeing per call would
// synchronise: cuMemFree waits for the device.
class Scratch {
 public:
  // At least `bytes` (and at least 256) bytes on `device_idx`.
  Scratch(const Queue& queue, std::size_t device_idx, std::size_t bytes);

  const Buffer& buffer() const { return buffer_; }

 private:
  Buffer buffer_;
};

// --- groups of one launch that hand values to each other ---------------------------------------

// A 4-byte word of device memory on `device_idx` that belongs to `queue` (and its copies), for
// kernels whose groups count themselves in it: the last group to count resets it, so that it is
// zero whenever no such kernel of the queue runs on the device. Only the queue's work touches it,
// and that work runs in order (Skein's queues are in order; it refuses out-of-order OpenCL
// queues), so two calls never use it at once; calls on two queues, which may overlap, use two
// words. Made on first use and zeroed on the queue, ahead of its kernels.
//
// After a failure: the word stays non-zero only if a kernel stops after some of its groups
// counted and before the last one reset it, that is, fails while running. On CUDA that is a
// sticky error (illegal address, trap, timeout): the context runs nothing more, so no later call
// reads the word (a new context comes with new queues and words). A launch that is refused runs no
// group and leaves the word as it was. When a launch call raises (which may report an earlier
// kernel's failure), the caller drops the word (drop_group_counter) and the next call starts from
// a fresh zero. What an OpenCL command that fails while running leaves behind is up to the
// implementation; a word left counted would make later one-launch reductions on that queue and
// device finish early with a wrong result or write none, so a queue should not be used again
// after such an error (as for any other work on it).
Buffer group_counter(const Queue& queue, std::size_t device_idx);
// Forgets the queue's word on the device if it is still `counter` (a launch that used it failed):
// the next call makes a fresh zeroed one.
void drop_group_counter(const Queue& queue, std::size_t device_idx, const Buffer& counter);

// The -cl-std option value ("CL2.0", "CL3.0") under which OpenCL C code on the device has
// release and acquire fences of device scope (atomic_work_item_fence with memory_scope_device)
// and relaxed atomics of device scope: OpenCL C 2.0, or OpenCL C 3.0 with the features
// __opencl_c_atomic_order_acq_rel and __opencl_c_atomic_scope_device. std::nullopt for a device
// without them (OpenCL C 1.2 has only fences of work-group scope) and for CUDA devices.
std::optional<std::string> opencl_device_fence_std(const DeviceParameters& params);

// --- launching ---------------------------------------------------------------------------------

// A run-time list of kernel arguments.
class ArgPack {
 public:
  // An array as two parameters: its whole allocation (GLOBAL_MEM char*) and the byte offset of
  // element 0 (uint64_t). The whole allocation avoids OpenCL's sub-buffer alignment rules.
  void array(const Array& a);
  void buffer(const Buffer& b, std::uint64_t byte_offset = 0);
  void bytes(std::span<const std::byte> value);
  template <class T>
  void value(const T& v) {
    bytes(std::as_bytes(std::span<const T>(&v, 1)));
  }
  // The arguments, pointing into this pack (valid until it is changed or destroyed; copies and
  // moves of a pack point into their own storage).
  std::span<const KernelArg> args() const;

 private:
  // `array`, `device`: see KernelArg.
  void add_buffer(const Buffer& b, std::uint64_t byte_offset, bool array, std::size_t device);

  mutable std::vector<KernelArg> args_;
  std::vector<std::size_t> value_at_;  // per argument: offset of a scalar's bytes in bytes_
  std::vector<std::byte> bytes_;
};

namespace ew {

// What a call's plan depends on besides the buffers and the scalars' values: per argument its
// kind and dtype, and for an array its device, shape, strides and address modulo 16 (the vector
// loop's alignment). Calls with equal keys on one context get equal plans.
struct CallKey {
  static constexpr std::size_t kMax = 64;
  // Only words[0, size) are ever read: left uninitialised, so that making a key per call does not
  // clear 512 bytes.
  std::array<std::uint64_t, kMax> words;
  std::size_t size = 0;

  bool push(std::uint64_t w) {
    if (size == kMax) return false;
    words[size++] = w;
    return true;
  }
  bool operator==(const CallKey& o) const {
    return size == o.size && std::equal(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(size),
                                        o.words.begin());
  }
};

// The key of a call giving every argument (inputs and outputs); false when it does not fit.
inline bool make_key(std::span<const Operand> args, CallKey& key) {
  if (!key.push(args.size())) return false;
  for (const auto& a : args) {
    if (a.is_array()) {
      const Array& x = a.array();
      const std::uint64_t head = 1 | (static_cast<std::uint64_t>(x.dtype()) << 8) |
                                 (static_cast<std::uint64_t>(x.ndim()) << 16) |
                                 (static_cast<std::uint64_t>(x.device_idx()) << 24) |
                                 ((address_in_allocation(x) % 16) << 40);
      if (!key.push(head)) return false;
      for (std::size_t d = 0; d < x.ndim(); ++d) {
        if (!key.push(x.shape()[d]) || !key.push(x.strides()[d])) return false;
      }
    } else {
      if (!key.push(2 | (static_cast<std::uint64_t>(a.dtype()) << 8) |
                    (static_cast<std::uint64_t>(a.weak()) << 16))) {
        return false;
      }
    }
  }
  return true;
}

// The plans a kernel object keeps for its last few call shapes, most recent first, under its
// mutex (the FastPlans of elementwise.cpp and reduction.cpp: each has `key`, `context` and a weak
// `program`).

// The plan of `context` and `key`, if one is kept.
template <class Plan>
std::shared_ptr<const Plan> find_plan(std::mutex& mutex,
                                      const std::vector<std::shared_ptr<const Plan>>& plans,
                                      const void* context, const CallKey& key) {
  std::lock_guard lock(mutex);
  for (const auto& p : plans) {
    if (p->context == context && p->key == key) return p;
  }
  return nullptr;
}

// Puts `plan` first: drops the plan of the same context and key and those whose program is gone,
// and the oldest when `max` are kept.
template <class Plan>
void keep_plan(std::mutex& mutex, std::vector<std::shared_ptr<const Plan>>& plans, std::size_t max,
               std::shared_ptr<const Plan> plan) {
  std::lock_guard lock(mutex);
  std::erase_if(plans, [&](const auto& p) {
    return (p->context == plan->context && p->key == plan->key) || p->program.expired();
  });
  if (plans.size() == max) plans.pop_back();
  plans.insert(plans.begin(), std::move(plan));
}

// Kernel arguments packed on the stack.
struct StackArgs {
  static constexpr std::size_t kArgs = 48, kWords = 96;
  // Uninitialised storage (KernelArg is an aggregate, so an implicit-lifetime type: assigning
  // args()[i] creates it): an array of 48 default-initialised KernelArgs was 3.4 KB cleared on
  // every call.
  alignas(KernelArg) std::byte arg_storage[kArgs * sizeof(KernelArg)];
  std::array<std::uint64_t, kWords> words;  // scalars, 8- or 16-byte slots
  std::size_t n = 0, w = 0;

  KernelArg* args() { return reinterpret_cast<KernelArg*>(arg_storage); }
  // The n arguments packed so far.
  std::span<const KernelArg> view() {
    return {reinterpret_cast<const KernelArg*>(arg_storage), n};
  }

  bool fits(std::size_t more_args, std::size_t more_words) const {
    return n + more_args <= kArgs && w + more_words <= kWords;
  }
  void value_bytes(const std::byte* p, std::size_t size) {
    const std::size_t slots = (size + 7) / 8;
    if (slots == 2 && w % 2 != 0) ++w;  // 16-byte values 16-byte aligned
    std::memcpy(&words[w], p, size);
    args()[n++] = KernelArg{.kind = KernelArg::Kind::scalar, .size = size, .value = &words[w]};
    w += slots;
  }
  void buffer(const Buffer& b) {
    args()[n++] = KernelArg{.kind = KernelArg::Kind::buffer,
                          .array = false,
                          .device = b.device_idx(),
                          .buffer = b.adapter().get(),
                          .offset = 0,
                          .buffer_device = b.device_idx(),
                          .context = b.context_id()};
    const std::uint64_t offset = b.offset();
    value_bytes(reinterpret_cast<const std::byte*>(&offset), 8);
  }
  void array(const Array& a) {
    const Buffer& b = a.data();
    args()[n++] = KernelArg{.kind = KernelArg::Kind::buffer,
                          .array = true,
                          .device = a.device_idx(),
                          .buffer = b.adapter().get(),
                          .offset = 0,
                          .buffer_device = b.device_idx(),
                          .context = b.context_id()};
    const std::uint64_t offset = b.offset() + a.offset();
    value_bytes(reinterpret_cast<const std::byte*>(&offset), 8);
  }
};

}  // namespace ew

// The key of a built-in kernel (elementwise.cpp, reduction.cpp): the operation (tag) and its
// dtypes and enums, packed a byte each (plus one) above the tag's byte, so that no string is made
// per call.
template <class... E>
std::uint64_t builtin_key(std::uint64_t tag, E... parts) {
  std::uint64_t key = tag;
  unsigned shift = 8;
  ((key |= (static_cast<std::uint64_t>(parts) + 1) << shift, shift += 8), ...);
  return key;
}

// An elementwise kernel's call with every output given (inputs, then outputs), through the plans
// kept from earlier calls of the same argument kinds, dtypes, devices and layouts (elementwise.cpp).
void elementwise_enqueue(const ElementwiseKernel& kernel, const Queue& queue,
                         std::span<const Operand> args);

// Enqueues `kernel` on device `device_idx` of `queue` with `groups` groups of `local` items.
void launch(const Kernel& kernel, const Queue& queue, std::size_t device_idx, std::size_t groups,
            std::size_t local, const ArgPack& args);
// The same with arguments packed by the caller: the checks of PreparedKernel's launch, without
// making a PreparedKernel (program.cpp).
void launch_generated(const Kernel& kernel, const Queue& queue, std::size_t device_idx,
                      std::size_t groups, std::size_t local, std::span<const KernelArg> args);
// The same for a call through a kept plan, whose arguments have the number, kinds and scalar
// sizes they had when the plan was made (and launched through launch_generated): checks what can
// differ between calls of one plan (the queue's context and devices, each buffer's context and
// device) and leaves the rest; anything amiss goes through launch_generated, which says what.
void launch_planned(const Kernel& kernel, const Queue& queue, std::size_t device_idx,
                    std::size_t groups, std::size_t local, std::span<const KernelArg> args);

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b);
std::uint64_t floor_pow2(std::uint64_t v);

// Kernel parameter declarations and setup for arrays, by the names the generated code uses.
std::string array_param(const std::string& name);  // "GLOBAL_MEM char* _skein_b_NAME, const uint64_t _skein_o_NAME"
// "GLOBAL_MEM [const] T* _skein_p_NAME = (GLOBAL_MEM [const] T*)(_skein_b_NAME + _skein_o_NAME);"
std::string array_pointer(const std::string& name, const std::string& storage_type, bool is_const);

}  // namespace skein::detail
