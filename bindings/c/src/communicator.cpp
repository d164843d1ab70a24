// SPDX-License-Identifier: BSD-3-Clause
// skein_communicator_*: a skein::Communicator over every rank and device of a runtime, with its
// options from C.
#include <string>

#include "errors.hpp"
#include "handles.hpp"

namespace skein::capi {

namespace {

CommunicatorOptions communicator_options(const skein_communicator_options* options) {
  CommunicatorOptions o;
  if (options == nullptr) return o;
  switch (options->backend) {
    case SKEIN_BACKEND_DEFAULT:
      break;
    case SKEIN_BACKEND_NCCL:
      o.backend = CollectiveBackend::nccl;
      break;
    case SKEIN_BACKEND_MPI:
      o.backend = CollectiveBackend::mpi;
      break;
    default:
      invalid("options->backend is " + std::to_string(static_cast<int>(options->backend)) +
                  ", not a skein_backend",
              "Pass SKEIN_BACKEND_DEFAULT (0), SKEIN_BACKEND_NCCL (1) or SKEIN_BACKEND_MPI (2).");
  }
  if (options->timeout_seconds >= 0) o.timeout_seconds = options->timeout_seconds;
  if (options->check_agreement < -1 || options->check_agreement > 1) {
    invalid("options->check_agreement is " + std::to_string(options->check_agreement),
            "Pass -1 (the default), 0 or 1.");
  }
  if (options->check_agreement >= 0) o.check_agreement = options->check_agreement == 1;
  return o;
}

}  // namespace

}  // namespace skein::capi

using namespace skein::capi;

extern "C" {

void skein_communicator_options_init(skein_communicator_options* options) {
  if (options == nullptr) return;
  *options = skein_communicator_options{
      .backend = SKEIN_BACKEND_DEFAULT, .timeout_seconds = -1, .check_agreement = -1};
}

skein_status skein_communicator_create(const skein_runtime* runtime,
                                       const skein_communicator_options* options,
                                       skein_communicator** comm) {
  return guard("skein_communicator_create", [&] {
    require(runtime, "runtime");
    require(comm, "comm");
    const skein::CommunicatorOptions o = communicator_options(options);
    *comm = new skein_communicator{std::make_unique<skein::Communicator>(*runtime->runtime, o)};
  });
}

skein_status skein_communicator_destroy(skein_communicator* comm) {
  return guard("skein_communicator_destroy", [&] { delete comm; });
}

skein_status skein_communicator_size(const skein_communicator* comm, size_t* size) {
  return guard("skein_communicator_size", [&] {
    require(comm, "comm");
    require(size, "size");
    *size = comm->comm->size();
  });
}

skein_status skein_communicator_local_size(const skein_communicator* comm, size_t* local_size) {
  return guard("skein_communicator_local_size", [&] {
    require(comm, "comm");
    require(local_size, "local_size");
    *local_size = comm->comm->local_size();
  });
}

skein_status skein_communicator_member(const skein_communicator* comm, size_t local_device,
                                       int* member) {
  return guard("skein_communicator_member", [&] {
    require(comm, "comm");
    require(member, "member");
    if (local_device >= comm->comm->local_size()) {
      invalid("local_device " + std::to_string(local_device) + " is not one of this rank's " +
                  std::to_string(comm->comm->local_size()) + " members",
              "Pass an index below skein_communicator_local_size().");
    }
    *member = comm->comm->rank_of(local_device);
  });
}

skein_status skein_communicator_backend(const skein_communicator* comm, skein_backend* backend) {
  return guard("skein_communicator_backend", [&] {
    require(comm, "comm");
    require(backend, "backend");
    *backend = comm->comm->backend() == skein::CollectiveBackend::nccl ? SKEIN_BACKEND_NCCL
                                                                        : SKEIN_BACKEND_MPI;
  });
}

}  // extern "C"
