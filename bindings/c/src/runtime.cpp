// SPDX-License-Identifier: BSD-3-Clause
// skein_runtime_*: a skein::Runtime (MPI started or adopted, or a single rank without MPI) with
// its placement options from C.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "errors.hpp"
#include "handles.hpp"
#include "skein/runtime.hpp"

namespace skein::capi {

namespace {

std::vector<std::string> split_commas(const char* text) {
  std::vector<std::string> parts;
  std::string part;
  for (const char* c = text;; ++c) {
    if (*c == ',' || *c == '\0') {
      if (!part.empty()) parts.push_back(part);
      part.clear();
      if (*c == '\0') break;
    } else {
      part += *c;
    }
  }
  return parts;
}

// The C options as PlacementOptions: each field at its default stays empty (the environment's).
PlacementOptions placement(const skein_runtime_options* options) {
  PlacementOptions p;
  if (options == nullptr) return p;
  switch (options->api) {
    case SKEIN_API_DEFAULT:
      break;
    case SKEIN_API_CUDA:
      p.api = ApiId::cuda;
      break;
    case SKEIN_API_OPENCL:
      p.api = ApiId::opencl;
      break;
    default:
      invalid("options->api is " + std::to_string(static_cast<int>(options->api)) +
                  ", not a skein_api",
              "Pass SKEIN_API_DEFAULT (0), SKEIN_API_CUDA (1) or SKEIN_API_OPENCL (2).");
  }
  if (options->devices_per_rank > 0) p.devices_per_rank = options->devices_per_rank;
  if (options->device_index < -1) {
    invalid("options->device_index is " + std::to_string(options->device_index),
            "Pass -1 (from the environment) or the index of this rank's first device (>= 0).");
  }
  if (options->device_index >= 0) p.device_index = static_cast<std::size_t>(options->device_index);
  if (options->share_devices < -1 || options->share_devices > 1) {
    invalid("options->share_devices is " + std::to_string(options->share_devices),
            "Pass -1 (from the environment), 0 or 1.");
  }
  if (options->share_devices >= 0) p.share_devices = options->share_devices == 1;
  if (options->device_masks != nullptr) p.device_masks = split_commas(options->device_masks);
  return p;
}

void make(std::unique_ptr<Runtime> made, skein_runtime** runtime) {
  *runtime = new skein_runtime{std::move(made)};
}

}  // namespace

}  // namespace skein::capi

using namespace skein::capi;

extern "C" {

void skein_runtime_options_init(skein_runtime_options* options) {
  if (options == nullptr) return;
  *options = skein_runtime_options{.api = SKEIN_API_DEFAULT,
                                   .devices_per_rank = 0,
                                   .device_index = -1,
                                   .share_devices = -1,
                                   .device_masks = nullptr};
}

skein_status skein_runtime_create(int* argc, char*** argv, const skein_runtime_options* options,
                                  skein_runtime** runtime) {
  const char* function = "skein_runtime_create";
  return guard(function, [&] {
    require(runtime, "runtime");
    const skein::PlacementOptions p = placement(options);
#if SKEIN_HAS_MPI
    make(std::make_unique<skein::Runtime>(argc, argv, p), runtime);
#else
    (void)argc;
    (void)argv;
    (void)p;
    unsupported(function, "MPI (skein_runtime_create_serial runs without it)");
#endif
  });
}

skein_status skein_runtime_adopt_fortran(int fortran_comm, const skein_runtime_options* options,
                                         skein_runtime** runtime) {
  const char* function = "skein_runtime_adopt_fortran";
  return guard(function, [&] {
    require(runtime, "runtime");
    const skein::PlacementOptions p = placement(options);
#if SKEIN_HAS_MPI
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
      invalid("MPI is not initialised",
              "Call MPI_Init (or MPI_Init_thread) before adopting a communicator, or let "
              "skein_runtime_create start MPI.");
    }
    const MPI_Comm comm = MPI_Comm_f2c(static_cast<MPI_Fint>(fortran_comm));
    if (comm == MPI_COMM_NULL) {
      invalid("fortran_comm " + std::to_string(fortran_comm) + " is MPI_COMM_NULL",
              "Pass MPI_Comm_c2f of a valid communicator (or a Fortran code's integer one).");
    }
    make(std::make_unique<skein::Runtime>(comm, p), runtime);
#else
    (void)fortran_comm;
    (void)p;
    unsupported(function, "MPI (skein_runtime_create_serial runs without it)");
#endif
  });
}

skein_status skein_runtime_create_serial(const skein_runtime_options* options,
                                         skein_runtime** runtime) {
  return guard("skein_runtime_create_serial", [&] {
    require(runtime, "runtime");
    make(std::make_unique<skein::Runtime>(placement(options)), runtime);
  });
}

skein_status skein_runtime_destroy(skein_runtime* runtime) {
  return guard("skein_runtime_destroy", [&] { delete runtime; });
}

skein_status skein_runtime_rank(const skein_runtime* runtime, int* rank) {
  return guard("skein_runtime_rank", [&] {
    require(runtime, "runtime");
    require(rank, "rank");
    *rank = runtime->runtime->rank();
  });
}

skein_status skein_runtime_size(const skein_runtime* runtime, int* size) {
  return guard("skein_runtime_size", [&] {
    require(runtime, "runtime");
    require(size, "size");
    *size = runtime->runtime->size();
  });
}

skein_status skein_runtime_local_rank(const skein_runtime* runtime, int* local_rank) {
  return guard("skein_runtime_local_rank", [&] {
    require(runtime, "runtime");
    require(local_rank, "local_rank");
    *local_rank = runtime->runtime->local_rank();
  });
}

skein_status skein_runtime_fortran_comm(const skein_runtime* runtime, int* fortran_comm) {
  const char* function = "skein_runtime_fortran_comm";
  return guard(function, [&] {
    require(runtime, "runtime");
    require(fortran_comm, "fortran_comm");
#if SKEIN_HAS_MPI
    *fortran_comm = static_cast<int>(MPI_Comm_c2f(runtime->runtime->comm()));
#else
    unsupported(function, "MPI");
#endif
  });
}

skein_status skein_runtime_api(const skein_runtime* runtime, skein_api* api) {
  return guard("skein_runtime_api", [&] {
    require(runtime, "runtime");
    require(api, "api");
    *api = runtime->runtime->context().api().id() == skein::ApiId::cuda ? SKEIN_API_CUDA
                                                                         : SKEIN_API_OPENCL;
  });
}

skein_status skein_runtime_device_count(const skein_runtime* runtime, size_t* count) {
  return guard("skein_runtime_device_count", [&] {
    require(runtime, "runtime");
    require(count, "count");
    *count = runtime->runtime->context().num_devices();
  });
}

skein_status skein_runtime_device_name(const skein_runtime* runtime, size_t device, char* name,
                                       size_t size) {
  return guard("skein_runtime_device_name", [&] {
    require(runtime, "runtime");
    if (size > 0) require(name, "name");
    const auto& devices = runtime->runtime->context().devices();
    if (device >= devices.size()) {
      invalid("device " + std::to_string(device) + " is not one of this rank's " +
                  std::to_string(devices.size()) + " devices",
              "Pass an index below skein_runtime_device_count().");
    }
    if (size == 0) return;
    const std::string text = devices[device].description();
    const std::size_t n = std::min(text.size(), size - 1);
    std::memcpy(name, text.data(), n);
    name[n] = '\0';
  });
}

}  // extern "C"
