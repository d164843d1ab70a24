// SPDX-License-Identifier: BSD-3-Clause
#include "skein/static_kernel.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "skein/detail/errors.hpp"

namespace skein {

namespace {

std::size_t div_up(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// The virtual local size when none is given: fill dimension 0 first, up to 256 work items and the
// devices' limits. No divisibility is needed: the virtual grid rounds up and skips the rest.
WorkSize choose_local(const Queue& queue, const WorkSize& global) {
  std::size_t budget = 256;
  std::vector<std::size_t> per_dim(3, budget);
  for (std::size_t d : queue.device_idxs()) {
    const auto& p = queue.context().device(d).params();
    budget = std::min(budget, p.max_total_local_size);
    for (std::size_t i = 0; i < 3 && i < p.max_local_sizes.size(); ++i) {
      per_dim[i] = std::min(per_dim[i], p.max_local_sizes[i]);
    }
  }
  std::size_t sizes[3] = {1, 1, 1};
  for (unsigned d = 0; d < global.dims(); ++d) {
    sizes[d] = std::max<std::size_t>(1, std::min({budget, per_dim[d], global[d]}));
    budget /= sizes[d];
  }
  return WorkSize(std::span<const std::size_t>(sizes, global.dims()));
}

// The vsize modules for fixed virtual sizes. Everything is unrolled over dimensions with
// compile-time constants, so the index arithmetic folds into a few integer operations.
RenderGlobals vsize_globals(const WorkSize& global, const WorkSize& local) {
  const unsigned dims = global.dims();
  std::size_t g[3] = {1, 1, 1}, l[3] = {1, 1, 1}, n[3] = {1, 1, 1};
  for (unsigned d = 0; d < dims; ++d) {
    g[d] = global[d];
    l[d] = local[d];
    n[d] = div_up(g[d], l[d]);
  }
  auto by_dim = [](const std::string& a, const std::string& b, const std::string& c) {
    return fmt::format("(dim == 0 ? ({}) : dim == 1 ? ({}) : ({}))", a, b, c);
  };
  const std::string base_text = fmt::format(
      R"(
WITHIN_KERNEL INLINE VSIZE_T ${{prefix}}flat_group()
{{
    return (VSIZE_T)get_group_id(0) + (VSIZE_T)get_num_groups(0) *
        ((VSIZE_T)get_group_id(1) + (VSIZE_T)get_num_groups(1) * (VSIZE_T)get_group_id(2));
}}
WITHIN_KERNEL INLINE VSIZE_T ${{prefix}}group_id(unsigned int dim)
{{
    const VSIZE_T flat = ${{prefix}}flat_group();
    return {};
}}
WITHIN_KERNEL INLINE VSIZE_T ${{prefix}}local_id(unsigned int dim)
{{
    return {};
}}
WITHIN_KERNEL INLINE VSIZE_T ${{prefix}}global_id(unsigned int dim)
{{
    return ${{prefix}}group_id(dim) * {} + ${{prefix}}local_id(dim);
}}
WITHIN_KERNEL INLINE int ${{prefix}}skip()
{{
    if (${{prefix}}flat_group() >= (VSIZE_T){}) return 1;
    return ${{prefix}}global_id(0) >= (VSIZE_T){} || ${{prefix}}global_id(1) >= (VSIZE_T){} ||
        ${{prefix}}global_id(2) >= (VSIZE_T){};
}}
)",
      by_dim(fmt::format("flat % {}", n[0]), fmt::format("(flat / {}) % {}", n[0], n[1]),
             fmt::format("flat / {}", n[0] * n[1])),
      by_dim(dims > 0 ? "get_local_id(0)" : "0", dims > 1 ? "get_local_id(1)" : "0",
             dims > 2 ? "get_local_id(2)" : "0"),
      by_dim(std::to_string(l[0]), std::to_string(l[1]), std::to_string(l[2])), n[0] * n[1] * n[2],
      g[0], g[1], g[2]);
  Module base(base_text, {}, "vsize");

  auto function = [&](const std::string& name, const std::string& signature,
                      const std::string& body) {
    return Module(
        fmt::format("WITHIN_KERNEL INLINE VSIZE_T ${{prefix}}({})\n{{\n    return {};\n}}\n",
                    signature, body),
        {{"base", base}}, "static_" + name);
  };
  const std::string dim_list = "unsigned int dim";
  RenderGlobals globals;
  globals.emplace("static_local_id", function("local_id", dim_list, "${base}local_id(dim)"));
  globals.emplace("static_local_size", function("local_size", dim_list,
                                                by_dim(std::to_string(l[0]), std::to_string(l[1]),
                                                       std::to_string(l[2]))));
  globals.emplace("static_group_id", function("group_id", dim_list, "${base}group_id(dim)"));
  globals.emplace("static_num_groups", function("num_groups", dim_list,
                                                by_dim(std::to_string(n[0]), std::to_string(n[1]),
                                                       std::to_string(n[2]))));
  globals.emplace("static_global_id", function("global_id", dim_list, "${base}global_id(dim)"));
  globals.emplace("static_global_size", function("global_size", dim_list,
                                                 by_dim(std::to_string(g[0]), std::to_string(g[1]),
                                                        std::to_string(g[2]))));
  globals.emplace(
      "static_global_flat_id",
      function("global_flat_id", "",
               fmt::format("${{base}}global_id(0) + (VSIZE_T){} * (${{base}}global_id(1) + "
                           "(VSIZE_T){} * ${{base}}global_id(2))",
                           g[0], g[1])));
  globals.emplace("static_global_flat_size",
                  function("global_flat_size", "", fmt::format("(VSIZE_T){}", g[0] * g[1] * g[2])));
  globals.emplace("static_begin", Snippet::from_string("if (${base}skip()) return;",
                                                       {{"base", base}}, "static_begin"));
  return globals;
}

ProgramOptions for_queue(const Queue& queue, ProgramOptions options) {
  if (!options.device_idxs) options.device_idxs = queue.device_idxs();
  return options;
}

}  // namespace

StaticKernel::StaticKernel(const Queue& queue, std::string_view template_source,
                           const std::string& name, const WorkSize& global_size,
                           const std::optional<WorkSize>& local_size, const RenderGlobals& globals,
                           StaticKernelOptions options)
    : StaticKernel(
          queue,
          [&] {
            const WorkSize local = local_size ? *local_size : choose_local(queue, global_size);
            if (local.dims() != global_size.dims()) {
              detail::raise_in(SKEIN_HERE, "StaticKernel", "Give both sizes the same dimensions.",
                               "global size {} and local size {} differ in dimensions",
                               global_size.to_string(), local.to_string());
            }
            RenderGlobals all = vsize_globals(global_size, local);
            for (const auto& [key, value] : globals) {
              if (!all.emplace(key, value).second) {
                detail::raise_in<RenderError>(
                    SKEIN_HERE, "StaticKernel", "Rename the global.",
                    "the global '{}' is reserved for the virtual-size functions", key);
              }
            }
            return Program::from_template(queue.context(), template_source, all,
                                          for_queue(queue, options.program));
          }(),
          name, local_size ? *local_size : choose_local(queue, global_size), global_size,
          options.max_num_groups) {}

StaticKernel::StaticKernel(const Queue& queue, Program program, const std::string& name,
                           WorkSize local, const WorkSize& global,
                           std::optional<std::size_t> max_num_groups)
    : queue_(queue), local_(local), program_(std::move(program)), prepared_([&] {
        std::size_t total_groups = 1;
        for (unsigned d = 0; d < global.dims(); ++d) total_groups *= div_up(global[d], local[d]);
        std::vector<std::pair<std::size_t, WorkSize>> globals, locals;
        for (std::size_t d : queue.device_idxs()) {
          const auto& p = queue.context().device(d).params();
          std::size_t limits[3];
          for (unsigned i = 0; i < 3; ++i) {
            limits[i] = i < p.max_num_groups.size() ? p.max_num_groups[i] : 1;
            if (max_num_groups) limits[i] = std::min(limits[i], *max_num_groups);
          }
          // Lay the virtual groups out in as few real dimensions as the limits allow.
          std::size_t grid[3] = {std::min(total_groups, limits[0]), 1, 1};
          grid[1] = div_up(total_groups, grid[0]);
          if (grid[1] > limits[1]) {
            grid[1] = limits[1];
            grid[2] = div_up(total_groups, grid[0] * grid[1]);
          }
          if (grid[2] > limits[2]) {
            detail::raise_in(SKEIN_HERE, "StaticKernel", "Use a larger local size.",
                             "{} groups do not fit the grid of {}", total_groups,
                             queue.context().device(d).description());
          }
          const std::size_t real_local[3] = {local[0], local.dims() > 1 ? local[1] : 1,
                                             local.dims() > 2 ? local[2] : 1};
          const std::size_t real_global[3] = {grid[0] * real_local[0], grid[1] * real_local[1],
                                              grid[2] * real_local[2]};
          globals.emplace_back(d, WorkSize(std::span<const std::size_t>(real_global, 3)));
          locals.emplace_back(d, WorkSize(std::span<const std::size_t>(real_local, 3)));
        }
        return program_.kernel(name).prepare(queue, MultiDevice<WorkSize>(std::move(globals)),
                                             LaunchSizes(MultiDevice<WorkSize>(std::move(locals))));
      }()) {}

}  // namespace skein
