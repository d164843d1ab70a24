/* SPDX-License-Identifier: BSD-3-Clause */
/* <skein/skein.h> from C11 without <mpi.h> (capi_c11_mpi.c includes it after <mpi.h>): a serial
 * runtime on one device, an array filled and read back, and an error's status and message. */
#include <skein/skein.h>
#include <stdio.h>
#include <string.h>

int c11_mpi_helpers_present(void);

static int check(int ok, const char* what) {
  if (!ok) fprintf(stderr, "capi_c11: %s failed (%s)\n", what, skein_last_error_message());
  return ok ? 0 : 1;
}

int main(void) {
  int failures = 0;
  skein_runtime* runtime = NULL;
  skein_queue* queue = NULL;
  skein_array* array = NULL;
  skein_runtime_options options;
  size_t shape[2] = {3, 4};
  double host[12];
  size_t i;

  failures += check(strcmp(skein_version(), SKEIN_VERSION_STRING) == 0, "skein_version");
  failures += check(skein_dtype_size(SKEIN_COMPLEX128) == 16, "skein_dtype_size");
  failures += check(c11_mpi_helpers_present() == SKEIN_HAS_MPI, "the MPI_Comm helpers");

  skein_runtime_options_init(&options);
  options.api = SKEIN_API_OPENCL;
  failures += check(skein_runtime_create_serial(&options, &runtime) == SKEIN_SUCCESS,
                    "skein_runtime_create_serial");
  failures += check(skein_queue_create(runtime, &queue) == SKEIN_SUCCESS, "skein_queue_create");
  failures += check(skein_array_create(queue, 0, SKEIN_FLOAT64, 2, shape, SKEIN_ORDER_FORTRAN,
                                       &array) == SKEIN_SUCCESS,
                    "skein_array_create");
  failures += check(skein_array_fill(array, 2.5) == SKEIN_SUCCESS, "skein_array_fill");
  failures +=
      check(skein_array_to_host(array, host, sizeof host) == SKEIN_SUCCESS, "skein_array_to_host");
  for (i = 0; i < 12; ++i) failures += check(host[i] == 2.5, "the filled values");

  /* A wrong size: INVALID_ARGUMENT naming the function. */
  failures += check(skein_array_to_host(array, host, 8) == SKEIN_ERROR_INVALID_ARGUMENT,
                    "the wrong size's status");
  failures += check(strstr(skein_last_error_message(), "skein_array_to_host") != NULL,
                    "the wrong size's message");

  skein_array_destroy(array);
  skein_queue_destroy(queue);
  skein_runtime_destroy(runtime);
  if (failures == 0) printf("capi_c11: ok\n");
  return failures == 0 ? 0 : 1;
}
