// SPDX-License-Identifier: BSD-3-Clause
// The members' values combined through peer access (peer_combine.hpp).
#include "peer_combine.hpp"

#include <fmt/format.h>

#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "skein/ctypes.hpp"
#include "skein/driver.hpp"
#include "skein/elementwise.hpp"
#include "skein/event.hpp"

namespace skein::dist::values {

namespace {

bool real_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::float32:
    case Dtype::float64:
    case Dtype::int8:
    case Dtype::int16:
    case Dtype::int32:
    case Dtype::int64:
    case Dtype::uint8:
    case Dtype::uint16:
    case Dtype::uint32:
    case Dtype::uint64: return true;
    default: return false;
  }
}

// out = v0 op v1 op ... op v{n-1}, element by element, left to right (the same order on every
// device). Made once per dtype, operation and count, and kept for the program's life (never
// destroyed, as the built-in kernels: no kernel outlives its contexts' teardown at exit).
ElementwiseKernel combine_kernel(Dtype dtype, ReduceOp op, std::size_t n) {
  static std::mutex mutex;
  static auto* kernels = new std::map<std::tuple<Dtype, ReduceOp, std::size_t>, ElementwiseKernel>;
  const std::lock_guard lock(mutex);
  const auto key = std::make_tuple(dtype, op, n);
  if (auto it = kernels->find(key); it != kernels->end()) return it->second;
  const std::string t(ctype(dtype));
  std::string params, body = fmt::format("{} acc = v0[i];", t);
  for (std::size_t k = 0; k < n; ++k) params += fmt::format("{}raw {} v{}", k ? ", " : "", t, k);
  for (std::size_t k = 1; k < n; ++k) {
    const std::string v = fmt::format("v{}[i]", k);
    switch (op) {
      case ReduceOp::sum: body += fmt::format(" acc = acc + {};", v); break;
      case ReduceOp::prod: body += fmt::format(" acc = acc * {};", v); break;
      case ReduceOp::min: body += fmt::format(" acc = {0} < acc ? {0} : acc;", v); break;
      default: body += fmt::format(" acc = {0} > acc ? {0} : acc;", v); break;
    }
  }
  body += " out = acc;";
  ElementwiseKernel k(params, fmt::format("{} out", t), body,
                      {.name = "skein_peer_combine", .fp_contract = false});
  kernels->emplace(key, k);
  return k;
}

}  // namespace

bool peers_can_combine(const Communicator& comm, const Queue& queue,
                       std::span<const std::size_t> devices, Dtype dtype, ReduceOp across) {
  if (comm.size() < 2 || comm.size() != comm.local_size() || devices.size() != comm.size())
    return false;
  if (across == ReduceOp::avg || !real_type(dtype)) return false;
  for (std::size_t a : devices) {
    for (std::size_t b : devices) {
      if (a == b) continue;
      if (!peer_access_enabled(queue.context(), a, b)) return false;
    }
  }
  return true;
}

void combine_on_peers(const Queue& queue, std::span<const std::size_t> devices,
                      std::span<const Array> partials, std::span<const Array> outs,
                      ReduceOp across) {
  const std::size_t n = devices.size();
  std::vector<Array> values(partials.begin(), partials.end());
  if (partials.data() == outs.data()) {
    // The results overwrite the values: combine copies of them.
    for (std::size_t i = 0; i < n; ++i) {
      values[i] = Array::empty(queue, partials[i].shape(), partials[i].dtype(), devices[i]);
      values[i].set(partials[i]);
    }
  }
  // Each device waits for every other device's values, then combines them all.
  std::vector<Event> ready;
  for (std::size_t d : devices) ready.push_back(queue.record_marker(d));
  for (std::size_t d = 0; d < n; ++d) {
    for (std::size_t e = 0; e < n; ++e) {
      if (e != d) queue.wait_for(ready[e], devices[d]);
    }
  }
  const ElementwiseKernel kernel = combine_kernel(partials[0].dtype(), across, n);
  std::vector<Operand> args;
  for (std::size_t d = 0; d < n; ++d) {
    args.clear();
    for (std::size_t e = 0; e < n; ++e)
      args.emplace_back(e == d ? values[e] : values[e].single_device_view(devices[d]));
    args.emplace_back(outs[d]);
    kernel(queue, std::span<const Operand>(args));
  }
  // The values' memory may go back to its pool once every device has read it: later work on its
  // device waits for the readers.
  std::vector<Event> read;
  for (std::size_t d : devices) read.push_back(queue.record_marker(d));
  for (std::size_t e = 0; e < n; ++e) {
    for (std::size_t d = 0; d < n; ++d) {
      if (d != e) queue.wait_for(read[d], devices[e]);
    }
  }
}

}  // namespace skein::dist::values
