// SPDX-License-Identifier: BSD-3-Clause
// Device placement as pure functions, apart from MPI and the drivers, so that every rule can be
// unit-tested on one process: parsing the SKEIN_* variables, choosing a rank's devices among its
// node's candidates, and finding two ranks that would use one device.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "skein/export.hpp"
#include "skein/runtime.hpp"

namespace skein::detail {

// The node-local facts one rank's choice depends on.
struct PlacementRequest {
  int local_rank = 0;
  int local_size = 1;
  std::string host;
  // The node's candidate devices as this process sees them, in order (descriptions, used in
  // messages). Their count is what the rules work on.
  std::vector<std::string> candidates;
};

// The indices (into request.candidates) this rank uses, in order. Throws LogicError when the
// options cannot be met:
//   default:            N >= L: rank l gets [l*N/L, (l+1)*N/L); N < L: error unless sharing,
//                       then rank l gets l % N;
//   devices_per_rank k: rank l gets [l*k, l*k+k); past N is an error unless sharing, when the
//                       indices wrap around (k itself must not exceed N);
//   device_index i:     the rank's devices start at i (k of them, default 1), i+k <= N;
//   one candidate:      a rank that sees exactly one device (CUDA_VISIBLE_DEVICES or Slurm gave
//                       each rank its own) uses it, whatever the number of ranks.
SKEIN_EXPORT std::vector<std::size_t> choose_devices(const PlacementRequest& request,
                                                     const PlacementOptions& options);

// A device as the duplicate check sees it: the same physical device gets the same key on every
// rank of one host (its PCI bus id where known, else host:api:platform:index).
SKEIN_EXPORT std::string device_key(const std::string& host,
                                    const std::optional<std::string>& pci_bus_id, ApiId api,
                                    std::size_t platform_idx, std::size_t device_idx);

// Ranks of one host that use one device: "device D on host H is used by ranks 0, 2" lines
// (empty when there are none). `placement` is every rank's, in rank order.
SKEIN_EXPORT std::vector<std::string> shared_devices(const std::vector<RankPlacement>& placement);

}  // namespace skein::detail
