// SPDX-License-Identifier: BSD-3-Clause
// The library's version and what this build contains, as compiled into the library (a program's
// <skein/config.h> may be another installation's).
#include "skein/config.h"
#include "skein/skein.h"

extern "C" {

const char* skein_version(void) { return SKEIN_VERSION_STRING; }

void skein_version_numbers(int* major, int* minor, int* patch) {
  if (major != nullptr) *major = SKEIN_VERSION_MAJOR;
  if (minor != nullptr) *minor = SKEIN_VERSION_MINOR;
  if (patch != nullptr) *patch = SKEIN_VERSION_PATCH;
}

int skein_has_mpi(void) { return SKEIN_HAS_MPI; }
int skein_has_hdf5(void) { return SKEIN_HAS_HDF5 && SKEIN_HAS_MPI; }
int skein_has_cuda(void) { return SKEIN_HAS_CUDA; }
int skein_has_opencl(void) { return SKEIN_HAS_OPENCL; }
int skein_has_nccl(void) { return SKEIN_HAS_NCCL; }

}  // extern "C"
