// SPDX-License-Identifier: BSD-3-Clause
// StaticKernel: a kernel with fixed sizes on a virtual grid (grunnur's StaticKernel). The global
// size need not be a multiple of the local size, and may exceed the number of groups the hardware
// allows in a dimension: the virtual groups are laid out over whatever grid the device takes, and
// work items outside the virtual size are skipped.
//
// The template gets these names (grunnur's vsize functions), to use instead of get_global_id etc.:
//   ${static_local_id}(dim)      ${static_local_size}(dim)    ${static_group_id}(dim)
//   ${static_num_groups}(dim)    ${static_global_id}(dim)     ${static_global_size}(dim)
//   ${static_global_flat_id}()   ${static_global_flat_size}()
//   ${static_begin}              a statement that must open the kernel body: it returns from the
//                                work items outside the virtual grid
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "skein/export.hpp"
#include "skein/program.hpp"

namespace skein {

struct StaticKernelOptions {
  ProgramOptions program{};
  // Pretend a device allows at most this many groups per dimension (to test the virtual grid on
  // devices with large limits); the device's own limits apply when smaller.
  std::optional<std::size_t> max_num_groups{};
};

// A kernel compiled and prepared for one queue and size. Copies share the prepared kernel.
// Threads: launches may come from several threads at once (on OpenCL one at a time on the host,
// since a StaticKernel and its copies share one cl_kernel; each construction gets its own).
// Launches are enqueued on queue(), whose rules apply; set_constant_array() as Program's.
class SKEIN_EXPORT StaticKernel {
 public:
  StaticKernel(const Queue& queue, std::string_view template_source, const std::string& name,
               const WorkSize& global_size,
               const std::optional<WorkSize>& local_size = std::nullopt,
               const RenderGlobals& globals = {}, StaticKernelOptions options = {});

  template <class... Args>
  void operator()(const Args&... args) const {
    prepared_(args...);
  }
  template <class... Args>
  std::vector<Event> enqueue(const Args&... args) const {
    return prepared_.enqueue(args...);
  }

  const Queue& queue() const { return queue_; }
  const Program& program() const { return program_; }
  const std::string& source(std::size_t device_idx) const { return program_.source(device_idx); }
  // The virtual local size used (chosen when not given).
  const WorkSize& local_size() const { return local_; }
  // The grid actually launched on a device.
  const WorkSize& real_global_size(std::size_t device_idx) const {
    return prepared_.global_size(device_idx);
  }
  void set_constant_array(const std::string& name, std::span<const std::byte> host) const {
    program_.set_constant_array(queue_, name, host);
  }
  void set_constant_array(const std::string& name, const Array& array) const {
    program_.set_constant_array(queue_, name, array);
  }

 private:
  StaticKernel(const Queue& queue, Program program, const std::string& name, WorkSize local,
               const WorkSize& global, std::optional<std::size_t> max_num_groups);

  Queue queue_;
  WorkSize local_;
  Program program_;
  PreparedKernel prepared_;
};

}  // namespace skein
