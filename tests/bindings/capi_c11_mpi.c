/* SPDX-License-Identifier: BSD-3-Clause */
/* <skein/skein.h> from C11 after <mpi.h>: its MPI_Comm helpers (skein_runtime_adopt,
 * skein_runtime_comm) are defined and compile as C. */
#ifdef SKEIN_TEST_HAS_MPI
#include <mpi.h>
#endif
#include <skein/skein.h>

int c11_mpi_helpers_present(void);

int c11_mpi_helpers_present(void) {
#if defined(MPI_VERSION)
  skein_status (*adopt)(MPI_Comm, const skein_runtime_options*, skein_runtime**) =
      skein_runtime_adopt;
  skein_status (*comm)(const skein_runtime*, MPI_Comm*) = skein_runtime_comm;
  return adopt != NULL && comm != NULL;
#else
  return 0;
#endif
}
