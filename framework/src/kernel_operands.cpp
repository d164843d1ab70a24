// SPDX-License-Identifier: BSD-3-Clause
#include "kernel_operands.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "codegen/launch.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"

namespace skein::detail::codegen {

Bindings bind_types(const std::vector<ParamDecl>& params, std::span<const Operand> args,
                    const std::string& call, const std::string& kernel) {
  Bindings b;
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t k = 0; k < args.size() && k < params.size(); ++k) {
      const auto& p = params[k];
      const auto& a = args[k];
      if (a.is_array() != (pass == 0)) continue;
      if (p.dtype) {
        if (a.is_array() && a.dtype() != *p.dtype) {
          raise_in(SKEIN_HERE, call,
                   "Pass an array of the declared dtype (convert with skein::astype), or declare "
                   "the parameter with a placeholder type.",
                   "kernel '{}': argument {} ('{}') is a {} array; the parameter is declared {}",
                   kernel, k, p.name, name(a.dtype()), name(*p.dtype));
        }
        continue;
      }
      auto it = b.find(p.type);
      if (it == b.end()) {
        b.emplace(p.type, a.dtype());
      } else if (a.is_array() && it->second != a.dtype()) {
        raise_in(SKEIN_HERE, call,
                 "Pass arrays of one dtype for parameters of one placeholder type, or use "
                 "different placeholders.",
                 "kernel '{}': argument {} ('{}') is a {} array, but placeholder {} is already "
                 "bound to {} by an earlier argument",
                 kernel, k, p.name, name(a.dtype()), p.type, name(it->second));
      }
    }
  }
  return b;
}

std::optional<std::size_t> common_device(const Queue& queue, std::span<const Operand> args,
                                         const std::vector<ParamDecl>& params,
                                         std::optional<std::size_t> launch_device,
                                         const std::string& call, const std::string& kernel) {
  auto named = [&](std::size_t k) {
    return k < params.size() ? fmt::format("argument {} ('{}')", k, params[k].name)
                             : fmt::format("argument {}", k);
  };
  std::optional<std::size_t> device;
  std::size_t first = 0;
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (!args[k].is_array()) continue;
    const Array& a = args[k].array();
    if (a.data().context_id() != detail::impl_of(queue.context()).get()) {
      raise_in(SKEIN_HERE, call, "Use arrays and a queue of one context.",
               "kernel '{}': {} belongs to another context than the queue", kernel, named(k));
    }
    if (launch_device && a.device_idx() != *launch_device) {
      raise_in(SKEIN_HERE, call,
               "Give each device the arrays that live on it (one array per device, e.g. "
               "DistArray::local_arrays()), or copy the data there (Array::set).",
               "kernel '{}': {} is on device {}, but it was given for the launch on device {}",
               kernel, named(k), a.device_idx(), *launch_device);
    }
    if (!queue.has_device(a.device_idx())) {
      raise_in(SKEIN_HERE, call, "Use a queue that contains the arrays' device.",
               "kernel '{}': {} is on device {}, which is not in the queue (devices {})", kernel,
               named(k), a.device_idx(), fmt::join(queue.device_idxs(), ", "));
    }
    if (device && *device != a.device_idx()) {
      raise_in(SKEIN_HERE, call,
               "Put every array of one launch on one device (Array::single_device_view, or "
               "copy), or launch per device with per_device().",
               "kernel '{}': {} is on device {}, {} on device {}", kernel, named(first), *device,
               named(k), a.device_idx());
    }
    if (!device) {
      device = a.device_idx();
      first = k;
    }
  }
  return device;
}

Shape broadcast_shapes(std::span<const Operand> args, const std::vector<bool>& take,
                       const std::vector<ParamDecl>& params, const std::string& call,
                       const std::string& kernel) {
  Shape result;
  std::size_t from = 0;
  bool any = false;
  for (std::size_t k = 0; k < args.size(); ++k) {
    if (!take[k] || !args[k].is_array()) continue;
    const Shape& s = args[k].array().shape();
    if (!any) {
      result = s;
      from = k;
      any = true;
      continue;
    }
    Shape merged(std::max(result.size(), s.size()), 1);
    for (std::size_t i = 0; i < merged.size(); ++i) {
      const std::size_t r = i < result.size() ? result[result.size() - 1 - i] : 1;
      const std::size_t t = i < s.size() ? s[s.size() - 1 - i] : 1;
      if (r != t && r != 1 && t != 1) {
        raise_in(SKEIN_HERE, call,
                 "Give arrays of one shape, or shapes that broadcast (NumPy's rules: aligned on "
                 "the right, each dimension equal or 1).",
                 "kernel '{}': argument {} ('{}') has shape {}, which does not broadcast with "
                 "shape {} (from argument {}, '{}')",
                 kernel, k, k < params.size() ? params[k].name : "?", to_string(s),
                 to_string(result), from, params[from].name);
      }
      merged[merged.size() - 1 - i] = r == 1 ? t : r;
    }
    result = std::move(merged);
  }
  return result;
}

std::optional<std::uint64_t> common_vector_start(std::span<const Array* const> arrays) {
  for (std::uint64_t h = 0; h < 16; ++h) {
    bool ok = true;
    for (const Array* a : arrays) {
      if ((address_in_allocation(*a) + h * a->itemsize()) % 16 != 0) {
        ok = false;
        break;
      }
    }
    if (ok) return h;
  }
  return std::nullopt;
}

// ArgPack's member for arrays, here beside the other helpers that know Array (codegen/ does not).
void ArgPack::array(const Array& a) { add_buffer(a.data(), a.offset(), true, a.device_idx()); }

}  // namespace skein::detail::codegen
