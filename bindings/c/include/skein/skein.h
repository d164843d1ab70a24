/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Skein's C API (C11; callable from C++ and, through the Fortran module `skein`, from Fortran).
 * Link Skein::c in CMake, or `pkg-config --cflags --libs skein`.
 *
 * Every object is an opaque handle made by a *_create function and released by its *_destroy
 * function (which accepts NULL). Every function that can fail returns a skein_status: SKEIN_SUCCESS
 * (0) or the kind of error. The message of the last error on the calling thread, with everything
 * Skein's C++ exception says (what was wrong, the call, rank, device, and what to do), is
 * skein_last_error_message(); it stays until the next failing call on that thread. No C++
 * exception crosses this interface: an unexpected one is reported as SKEIN_ERROR_INTERNAL.
 *
 * Shapes and orders. Functions that take per-axis values (shapes, process grids, halos,
 * boundaries, offsets) read and write them in the caller's order: SKEIN_ORDER_C (the last axis
 * varies fastest in memory, as C arrays) or SKEIN_ORDER_FORTRAN (the first axis fastest, as
 * Fortran arrays: a Fortran field u(nx, ny) has shape {nx, ny}). The memory is the same either
 * way; only the numbering of the axes differs.
 *
 * Devices. A runtime holds this rank's devices (CUDA or OpenCL, chosen at run time); a device is
 * named by its index among them, 0 .. skein_runtime_device_count() - 1. A "native" pointer is the
 * backend's handle of device memory: a CUdeviceptr (cast to void*) on CUDA, a cl_mem on OpenCL.
 *
 * Asynchrony. Kernels, copies and collectives are enqueued on a queue and return; the host-side
 * copies (skein_array_to_host, skein_grid_gather, ...), the reductions that return a double, the
 * HDF5 and checkpoint calls and skein_queue_synchronize wait.
 *
 * Threads: as the C++ objects behind the handles (docs/guide.md): a communicator and the grids
 * over it are used from one thread at a time.
 */
#ifndef SKEIN_SKEIN_H
#define SKEIN_SKEIN_H

#include <stddef.h>
#include <stdint.h>

#include "skein/config.h"

#if defined(__GNUC__) || defined(__clang__)
#define SKEIN_C_EXPORT __attribute__((visibility("default")))
#else
#define SKEIN_C_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The enumerations' type. In C an enumeration is an integer type, and a C caller may pass any
 * value (one out of range is refused with SKEIN_ERROR_INVALID_ARGUMENT); in C++ the value of an
 * enumeration without a fixed underlying type must lie within its enumerators' range, so the
 * library (C++) sees them as enumerations over int, where every int value is valid: the same size
 * and the same passing as the C type. */
#ifdef __cplusplus
#define SKEIN_ENUM_BASE : int
#else
#define SKEIN_ENUM_BASE
#endif

/* ---- errors ---------------------------------------------------------------------------------- */

typedef enum skein_status SKEIN_ENUM_BASE {
  SKEIN_SUCCESS = 0,
  /* The caller did something wrong: a bad size, dtype, device, root, layout, option, a NULL
   * handle (C++ skein::LogicError). Fix the calling code. */
  SKEIN_ERROR_INVALID_ARGUMENT = 1,
  /* The backend failed at run time (skein::RuntimeError). */
  SKEIN_ERROR_RUNTIME = 2,
  /* The requested API (CUDA, OpenCL) is not usable here (skein::ApiUnavailableError). */
  SKEIN_ERROR_API_UNAVAILABLE = 3,
  /* A device allocation failed or would not fit (skein::MemoryError). */
  SKEIN_ERROR_OUT_OF_MEMORY = 4,
  /* A kernel launch failed (skein::LaunchError). */
  SKEIN_ERROR_LAUNCH = 5,
  /* Kernel source did not compile; the message has the compiler's log (skein::CompileError). */
  SKEIN_ERROR_COMPILE = 6,
  /* A collective or another blocking step did not finish in time, on every surviving rank
   * (skein::TimeoutError). */
  SKEIN_ERROR_TIMEOUT = 7,
  /* A checkpoint is missing, incomplete or damaged (skein::CheckpointError). */
  SKEIN_ERROR_CHECKPOINT = 8,
  /* This build of Skein lacks what the call needs (MPI, HDF5). */
  SKEIN_ERROR_UNSUPPORTED = 9,
  /* Anything else (a C++ exception that is not Skein's, e.g. std::bad_alloc). */
  SKEIN_ERROR_INTERNAL = 99
} skein_status;

/* The message of the last failing call on this thread ("" when none failed): what was wrong, the C
 * function and the C++ call, rank, device, and what to do. Valid until the next failing call on
 * this thread. */
SKEIN_C_EXPORT const char* skein_last_error_message(void);
/* The status of the last failing call on this thread (SKEIN_SUCCESS when none failed). */
SKEIN_C_EXPORT skein_status skein_last_error_status(void);
/* Forgets the last error of this thread. */
SKEIN_C_EXPORT void skein_clear_error(void);
/* The name of a status, e.g. "SKEIN_ERROR_TIMEOUT" ("unknown status" for other values). */
SKEIN_C_EXPORT const char* skein_status_name(skein_status status);

/* ---- version -----------------------------------------------------------------------------------
 */

/* The library's version at run time, e.g. "0.1.0" (SKEIN_VERSION_STRING is the headers'). */
SKEIN_C_EXPORT const char* skein_version(void);
SKEIN_C_EXPORT void skein_version_numbers(int* major, int* minor, int* patch);
/* What this build contains: SKEIN_HAS_* of skein/config.h at the library's build, as 0/1. */
SKEIN_C_EXPORT int skein_has_mpi(void);
SKEIN_C_EXPORT int skein_has_hdf5(void);
SKEIN_C_EXPORT int skein_has_cuda(void);
SKEIN_C_EXPORT int skein_has_opencl(void);
SKEIN_C_EXPORT int skein_has_nccl(void);

/* ---- enumerations ------------------------------------------------------------------------------
 */

/* Element types, as NumPy's (and skein::Dtype's order). float16 and bfloat16 are stored as 16-bit
 * patterns (uint16_t on the host); complex64 and complex128 as pairs of float and double. */
typedef enum skein_dtype SKEIN_ENUM_BASE {
  SKEIN_INT8 = 0,
  SKEIN_INT16 = 1,
  SKEIN_INT32 = 2,
  SKEIN_INT64 = 3,
  SKEIN_UINT8 = 4,
  SKEIN_UINT16 = 5,
  SKEIN_UINT32 = 6,
  SKEIN_UINT64 = 7,
  SKEIN_FLOAT16 = 8,
  SKEIN_BFLOAT16 = 9,
  SKEIN_FLOAT32 = 10,
  SKEIN_FLOAT64 = 11,
  SKEIN_COMPLEX64 = 12,
  SKEIN_COMPLEX128 = 13
} skein_dtype;
/* Bytes per element (0 for a value that is not a skein_dtype). */
SKEIN_C_EXPORT size_t skein_dtype_size(skein_dtype dtype);
/* NumPy's name, e.g. "float64" ("unknown dtype" for other values). */
SKEIN_C_EXPORT const char* skein_dtype_name(skein_dtype dtype);

typedef enum skein_order SKEIN_ENUM_BASE { SKEIN_ORDER_C = 0, SKEIN_ORDER_FORTRAN = 1 } skein_order;

typedef enum skein_api SKEIN_ENUM_BASE {
  SKEIN_API_DEFAULT = 0, /* SKEIN_API's value, else CUDA when available, else OpenCL */
  SKEIN_API_CUDA = 1,
  SKEIN_API_OPENCL = 2
} skein_api;

typedef enum skein_reduce_op SKEIN_ENUM_BASE {
  SKEIN_SUM = 0,
  SKEIN_PROD = 1,
  SKEIN_MIN = 2,
  SKEIN_MAX = 3,
  SKEIN_AVG = 4
} skein_reduce_op;

typedef enum skein_backend SKEIN_ENUM_BASE {
  SKEIN_BACKEND_DEFAULT = 0, /* SKEIN_BACKEND's value, else NCCL when every rank has CUDA devices */
  SKEIN_BACKEND_NCCL = 1,
  SKEIN_BACKEND_MPI = 2
} skein_backend;

typedef enum skein_boundary_kind SKEIN_ENUM_BASE {
  SKEIN_BOUNDARY_OPEN = 0,     /* the halo beyond the domain is left as it is */
  SKEIN_BOUNDARY_PERIODIC = 1, /* the domain wraps around */
  SKEIN_BOUNDARY_REFLECT = 2,  /* the halo mirrors the points next to the boundary */
  SKEIN_BOUNDARY_CONSTANT = 3  /* the halo holds a value (Dirichlet) */
} skein_boundary_kind;

typedef enum skein_stencil_shape SKEIN_ENUM_BASE {
  SKEIN_STENCIL_STAR = 0, /* halos of the faces */
  SKEIN_STENCIL_BOX = 1   /* and of the edges and corners */
} skein_stencil_shape;

typedef enum skein_region SKEIN_ENUM_BASE {
  SKEIN_REGION_ALL = 0,
  SKEIN_REGION_INTERIOR = 1, /* the points at least a halo width from every side of the block */
  SKEIN_REGION_EDGES = 2     /* the others */
} skein_region;

/* ---- handles -----------------------------------------------------------------------------------
 */

typedef struct skein_runtime skein_runtime;
typedef struct skein_queue skein_queue;
typedef struct skein_array skein_array;
typedef struct skein_communicator skein_communicator;
typedef struct skein_grid skein_grid;
typedef struct skein_kernel skein_kernel;
typedef struct skein_hdf5_file skein_hdf5_file;
typedef struct skein_checkpoint skein_checkpoint;

/* ---- runtime -----------------------------------------------------------------------------------
 */

/* How a rank chooses its devices (skein::PlacementOptions). A field left at its default (what
 * skein_runtime_options_init sets) is taken from the environment (SKEIN_API, SKEIN_DEVICES,
 * SKEIN_DEVICES_PER_RANK, SKEIN_DEVICE, SKEIN_SHARE_DEVICES: docs/guide.md). */
typedef struct skein_runtime_options {
  skein_api api;            /* SKEIN_API_DEFAULT */
  size_t devices_per_rank;  /* 0: from the environment, else the node's devices shared out */
  int64_t device_index;     /* -1: from the environment; else this rank's first device's index */
  int share_devices;        /* -1: from the environment; 0 or 1 */
  const char* device_masks; /* NULL: from the environment; else comma-separated regexes */
} skein_runtime_options;

SKEIN_C_EXPORT void skein_runtime_options_init(skein_runtime_options* options);

/* Initialises MPI unless it is already initialised (MPI_Init_thread; argc and argv may be NULL),
 * then works on MPI_COMM_WORLD. Collective. options may be NULL (the defaults). The runtime
 * finalises MPI when destroyed if it initialised it. */
SKEIN_C_EXPORT skein_status skein_runtime_create(int* argc, char*** argv,
                                                 const skein_runtime_options* options,
                                                 skein_runtime** runtime);
/* Adopts the application's MPI (already initialised; Skein will not finalise it) and works on the
 * communicator given as a Fortran handle (MPI_Comm_c2f(comm), or a Fortran code's integer
 * communicator). Collective over that communicator. From C, with <mpi.h> included first,
 * skein_runtime_adopt(MPI_Comm, ...) below does the conversion. */
SKEIN_C_EXPORT skein_status skein_runtime_adopt_fortran(int fortran_comm,
                                                        const skein_runtime_options* options,
                                                        skein_runtime** runtime);
/* A single-rank runtime without MPI. */
SKEIN_C_EXPORT skein_status skein_runtime_create_serial(const skein_runtime_options* options,
                                                        skein_runtime** runtime);
/* Collective when the runtime uses MPI (and finalises MPI if it initialised it). Every object made
 * over the runtime must be destroyed first. */
SKEIN_C_EXPORT skein_status skein_runtime_destroy(skein_runtime* runtime);

SKEIN_C_EXPORT skein_status skein_runtime_rank(const skein_runtime* runtime, int* rank);
SKEIN_C_EXPORT skein_status skein_runtime_size(const skein_runtime* runtime, int* size);
SKEIN_C_EXPORT skein_status skein_runtime_local_rank(const skein_runtime* runtime, int* local_rank);
/* Skein's own duplicate of the runtime's communicator, as a Fortran handle (MPI_Comm_f2c gives
 * the MPI_Comm). */
SKEIN_C_EXPORT skein_status skein_runtime_fortran_comm(const skein_runtime* runtime,
                                                       int* fortran_comm);
SKEIN_C_EXPORT skein_status skein_runtime_api(const skein_runtime* runtime, skein_api* api);
SKEIN_C_EXPORT skein_status skein_runtime_device_count(const skein_runtime* runtime, size_t* count);
/* The device's description, e.g. "CUDA device 0 (NVIDIA H200)", into name[0 .. size - 1] (cut
 * to fit, always NUL-terminated when size > 0). */
SKEIN_C_EXPORT skein_status skein_runtime_device_name(const skein_runtime* runtime, size_t device,
                                                      char* name, size_t size);

/* ---- queues ------------------------------------------------------------------------------------
 */

/* A queue on every device of the runtime. */
SKEIN_C_EXPORT skein_status skein_queue_create(const skein_runtime* runtime, skein_queue** queue);
/* A queue over the application's own streams, one per device of the runtime in device order:
 * CUstream on CUDA, cl_command_queue on OpenCL. Skein's work on it is ordered with the
 * application's; the streams stay the application's, alive while the queue is. */
SKEIN_C_EXPORT skein_status skein_queue_from_native(const skein_runtime* runtime,
                                                    void* const* streams, size_t count,
                                                    skein_queue** queue);
SKEIN_C_EXPORT skein_status skein_queue_destroy(skein_queue* queue);
/* Waits for everything enqueued on the queue. */
SKEIN_C_EXPORT skein_status skein_queue_synchronize(const skein_queue* queue);

/* ---- arrays (one device) -----------------------------------------------------------------------
 */

/* A new array of `ndim` axes (0 .. 8) on device `device` of the queue's runtime, uninitialised. */
SKEIN_C_EXPORT skein_status skein_array_create(const skein_queue* queue, size_t device,
                                               skein_dtype dtype, size_t ndim, const size_t* shape,
                                               skein_order order, skein_array** array);
/* An array over the application's device memory: `nbytes` bytes at `native` (CUdeviceptr cast to
 * void*, or cl_mem) on device `device`, which the application keeps alive while the array (and
 * anything Skein enqueued on it) exists; Skein never frees it. INVALID_ARGUMENT when the backend
 * says the memory is not on that device or is smaller than the shape needs. */
SKEIN_C_EXPORT skein_status skein_array_from_native(const skein_queue* queue, size_t device,
                                                    void* native, size_t nbytes, skein_dtype dtype,
                                                    size_t ndim, const size_t* shape,
                                                    skein_order order, skein_array** array);
SKEIN_C_EXPORT skein_status skein_array_destroy(skein_array* array);

SKEIN_C_EXPORT skein_status skein_array_dtype(const skein_array* array, skein_dtype* dtype);
/* Elements (the product of the shape). */
SKEIN_C_EXPORT skein_status skein_array_size(const skein_array* array, size_t* size);
SKEIN_C_EXPORT skein_status skein_array_ndim(const skein_array* array, size_t* ndim);
/* The shape in `order` (ndim values). */
SKEIN_C_EXPORT skein_status skein_array_shape(const skein_array* array, skein_order order,
                                              size_t* shape);
SKEIN_C_EXPORT skein_status skein_array_device(const skein_array* array, size_t* device);
/* The memory of element 0 (CUdeviceptr or cl_mem, as void*) and its byte offset in that
 * allocation (always 0 on CUDA, where the pointer includes it). For the application's own
 * kernels; keep the array while they use it. */
SKEIN_C_EXPORT skein_status skein_array_native(const skein_array* array, void** native,
                                               size_t* offset);
/* Blocking copies between the array (all of its elements, in its order) and host memory of
 * exactly the array's bytes. */
SKEIN_C_EXPORT skein_status skein_array_to_host(const skein_array* array, void* host,
                                                size_t nbytes);
SKEIN_C_EXPORT skein_status skein_array_from_host(const skein_array* array, const void* host,
                                                  size_t nbytes);
/* Every element set to `value` (converted to the dtype). Enqueued. */
SKEIN_C_EXPORT skein_status skein_array_fill(const skein_array* array, double value);

/* ---- communicators and collectives -------------------------------------------------------------
 */

/* skein::CommunicatorOptions: each field at its default takes its variable's value
 * (SKEIN_BACKEND, SKEIN_COLLECTIVE_TIMEOUT, SKEIN_CHECK_COLLECTIVES), else Skein's default. */
typedef struct skein_communicator_options {
  skein_backend backend;  /* SKEIN_BACKEND_DEFAULT */
  double timeout_seconds; /* < 0: the default (300 s); 0: no limit */
  int check_agreement;    /* -1: the default (on); 0 or 1 */
} skein_communicator_options;

SKEIN_C_EXPORT void skein_communicator_options_init(skein_communicator_options* options);

/* Over every rank of the runtime and every device of each. Collective. options may be NULL. */
SKEIN_C_EXPORT skein_status skein_communicator_create(const skein_runtime* runtime,
                                                      const skein_communicator_options* options,
                                                      skein_communicator** comm);
SKEIN_C_EXPORT skein_status skein_communicator_destroy(skein_communicator* comm);
/* Members: (rank, device) pairs over all ranks; this rank's are local_size of them. */
SKEIN_C_EXPORT skein_status skein_communicator_size(const skein_communicator* comm, size_t* size);
SKEIN_C_EXPORT skein_status skein_communicator_local_size(const skein_communicator* comm,
                                                          size_t* local_size);
/* The member (communicator rank) of this rank's local device `local_device`. */
SKEIN_C_EXPORT skein_status skein_communicator_member(const skein_communicator* comm,
                                                      size_t local_device, int* member);
SKEIN_C_EXPORT skein_status skein_communicator_backend(const skein_communicator* comm,
                                                       skein_backend* backend);

/* The collectives take one array per local device (`count` = local_size arrays, in local device
 * order) and are enqueued on the queue. In place when send and recv are the same arrays. As
 * skein::Communicator's (docs/guide.md): counts and dtypes must agree across members, and every
 * rank must make the same calls in the same order; a mismatch raises INVALID_ARGUMENT on every
 * rank, a rank that does not come TIMEOUT on the others. `root` is a member. */
SKEIN_C_EXPORT skein_status skein_all_reduce(skein_communicator* comm, const skein_queue* queue,
                                             skein_array* const* send, skein_array* const* recv,
                                             size_t count, skein_reduce_op op);
SKEIN_C_EXPORT skein_status skein_all_gather(skein_communicator* comm, const skein_queue* queue,
                                             skein_array* const* send, skein_array* const* recv,
                                             size_t count);
SKEIN_C_EXPORT skein_status skein_broadcast(skein_communicator* comm, const skein_queue* queue,
                                            skein_array* const* data, size_t count, int root);
SKEIN_C_EXPORT skein_status skein_reduce(skein_communicator* comm, const skein_queue* queue,
                                         skein_array* const* send, skein_array* const* recv,
                                         size_t count, skein_reduce_op op, int root);
SKEIN_C_EXPORT skein_status skein_reduce_scatter(skein_communicator* comm, const skein_queue* queue,
                                                 skein_array* const* send, skein_array* const* recv,
                                                 size_t count, skein_reduce_op op);
SKEIN_C_EXPORT skein_status skein_all_to_all(skein_communicator* comm, const skein_queue* queue,
                                             skein_array* const* send, skein_array* const* recv,
                                             size_t count);
SKEIN_C_EXPORT skein_status skein_send(skein_communicator* comm, const skein_queue* queue,
                                       size_t local_device, const skein_array* data, int peer);
SKEIN_C_EXPORT skein_status skein_recv(skein_communicator* comm, const skein_queue* queue,
                                       size_t local_device, const skein_array* data, int peer);
SKEIN_C_EXPORT skein_status skein_barrier(skein_communicator* comm, const skein_queue* queue);
/* The operations between skein_group_start and skein_group_end are launched together (NCCL's
 * groups; the MPI backend runs them in order at skein_group_end): a send and a recv between two
 * devices of one rank, or a ring, which would wait on each other one by one. Both on the calling
 * thread; the collectives' events inside a group complete at its end. */
SKEIN_C_EXPORT skein_status skein_group_start(skein_communicator* comm);
SKEIN_C_EXPORT skein_status skein_group_end(skein_communicator* comm);

/* The same on the application's device memory: one native pointer (CUdeviceptr as void*, or
 * cl_mem) per local device, `elements` elements of `dtype` each (for all_gather, recv holds
 * size * elements; for reduce_scatter, send holds size * elements). */
SKEIN_C_EXPORT skein_status skein_all_reduce_native(skein_communicator* comm,
                                                    const skein_queue* queue, void* const* send,
                                                    void* const* recv, size_t count,
                                                    size_t elements, skein_dtype dtype,
                                                    skein_reduce_op op);
SKEIN_C_EXPORT skein_status skein_all_gather_native(skein_communicator* comm,
                                                    const skein_queue* queue, void* const* send,
                                                    void* const* recv, size_t count,
                                                    size_t elements, skein_dtype dtype);
SKEIN_C_EXPORT skein_status skein_broadcast_native(skein_communicator* comm,
                                                   const skein_queue* queue, void* const* data,
                                                   size_t count, size_t elements, skein_dtype dtype,
                                                   int root);
SKEIN_C_EXPORT skein_status skein_reduce_native(skein_communicator* comm, const skein_queue* queue,
                                                void* const* send, void* const* recv, size_t count,
                                                size_t elements, skein_dtype dtype,
                                                skein_reduce_op op, int root);
SKEIN_C_EXPORT skein_status skein_reduce_scatter_native(skein_communicator* comm,
                                                        const skein_queue* queue, void* const* send,
                                                        void* const* recv, size_t count,
                                                        size_t elements, skein_dtype dtype,
                                                        skein_reduce_op op);

/* ---- grids: distributed arrays over process grids ----------------------------------------------
 */

typedef struct skein_boundary {
  skein_boundary_kind kind;
  double value; /* for SKEIN_BOUNDARY_CONSTANT */
} skein_boundary;

/* skein::GridOptions, with its per-axis arrays in `order`. NULL arrays take the defaults. */
typedef struct skein_grid_options {
  skein_order order;           /* of every per-axis array here and of the host data */
  size_t components;           /* values per point (default 1): the fastest index in C order
                                  (u[y][x][c]), the first in Fortran order (u(c, x, y)) */
  const size_t* process_grid;  /* members along each axis; NULL or 0 entries: chosen */
  const size_t* halo;          /* width per axis; NULL: 0 */
  skein_stencil_shape stencil; /* SKEIN_STENCIL_STAR */
  const skein_boundary* lower; /* per axis, the side of index 0; NULL: open */
  const skein_boundary* upper; /* per axis, the other side; NULL: open */
} skein_grid_options;

SKEIN_C_EXPORT void skein_grid_options_init(skein_grid_options* options);

/* A distributed array of `ndim` (1 .. 3) axes of global `shape` (points, without components) over
 * the communicator's members laid out as a process grid, each member a block with its halo.
 * Collective. queue may be NULL (a queue of the communicator's devices). options may be NULL. */
SKEIN_C_EXPORT skein_status skein_grid_create(skein_communicator* comm, const skein_queue* queue,
                                              size_t ndim, const size_t* shape, skein_dtype dtype,
                                              const skein_grid_options* options, skein_grid** grid);
SKEIN_C_EXPORT skein_status skein_grid_destroy(skein_grid* grid);

SKEIN_C_EXPORT skein_status skein_grid_dtype(const skein_grid* grid, skein_dtype* dtype);
SKEIN_C_EXPORT skein_status skein_grid_ndim(const skein_grid* grid, size_t* ndim);
/* The process grid (members along each axis), in `order`. */
SKEIN_C_EXPORT skein_status skein_grid_process_grid(const skein_grid* grid, skein_order order,
                                                    size_t* process_grid);
/* This rank's blocks (one per local device). */
SKEIN_C_EXPORT skein_status skein_grid_local_count(const skein_grid* grid, size_t* count);
/* Local block `local`: the global index of its first point and its points per axis, in `order`
 * (ndim values each; either may be NULL). */
SKEIN_C_EXPORT skein_status skein_grid_local_block(const skein_grid* grid, size_t local,
                                                   skein_order order, size_t* offset,
                                                   size_t* extent);
/* Local block `local` as an array (a view: the grid's memory, alive as long as the grid): its
 * points (with_halo 0: a strided view) or its points and halo (with_halo 1, contiguous), plus an
 * axis of components when the grid has more than one (last in C order, first in Fortran order:
 * skein_array_shape gives the shape in either). Destroy the view when done. */
SKEIN_C_EXPORT skein_status skein_grid_local_array(const skein_grid* grid, size_t local,
                                                   int with_halo, skein_array** array);
/* Blocking copies of local block `local`'s points (without halo) from and to host memory, packed
 * in the grid's order: extent[0] * ... * components elements, exactly `nbytes` bytes. */
SKEIN_C_EXPORT skein_status skein_grid_local_to_host(const skein_grid* grid, size_t local,
                                                     void* host, size_t nbytes);
SKEIN_C_EXPORT skein_status skein_grid_local_from_host(const skein_grid* grid, size_t local,
                                                       const void* host, size_t nbytes);
/* Collective: the whole global array (in the grid's order, components included) from the root
 * rank's host memory into the blocks, or gathered from them to the root rank. `host` and `nbytes`
 * are read only on the root (rank of the runtime). */
SKEIN_C_EXPORT skein_status skein_grid_scatter(const skein_grid* grid, const void* host,
                                               size_t nbytes, int root_rank);
SKEIN_C_EXPORT skein_status skein_grid_gather(const skein_grid* grid, void* host, size_t nbytes,
                                              int root_rank);
/* Collective: every block's halo from its neighbours, and the boundaries' halos. */
SKEIN_C_EXPORT skein_status skein_grid_exchange_halos(const skein_grid* grid);
/* The same for several grids of one communicator at once (one message per neighbour). */
SKEIN_C_EXPORT skein_status skein_grid_exchange_halos_many(const skein_grid* const* grids,
                                                           size_t count);

/* Elementwise operations over the points (not the halos); enqueued. */
SKEIN_C_EXPORT skein_status skein_grid_fill(const skein_grid* out, double value);
SKEIN_C_EXPORT skein_status skein_grid_copy(const skein_grid* src, const skein_grid* dst);
/* out = a x + y */
SKEIN_C_EXPORT skein_status skein_grid_axpy(double a, const skein_grid* x, const skein_grid* y,
                                            const skein_grid* out);
/* out = a x */
SKEIN_C_EXPORT skein_status skein_grid_scale(double a, const skein_grid* x, const skein_grid* out);

/* Collective reductions over every point of the grid, the same value on every rank. */
SKEIN_C_EXPORT skein_status skein_grid_sum(const skein_grid* x, double* result);
SKEIN_C_EXPORT skein_status skein_grid_min(const skein_grid* x, double* result);
SKEIN_C_EXPORT skein_status skein_grid_max(const skein_grid* x, double* result);
SKEIN_C_EXPORT skein_status skein_grid_dot(const skein_grid* x, const skein_grid* y,
                                           double* result);
SKEIN_C_EXPORT skein_status skein_grid_nrm2(const skein_grid* x, double* result);

/* ---- kernels: one source for CUDA and OpenCL, compiled at run time and cached --------------- */

/* An argument of a kernel run over grids: a grid (its blocks, member by member) or a scalar. */
typedef enum skein_operand_kind SKEIN_ENUM_BASE {
  SKEIN_OPERAND_GRID = 0,
  SKEIN_OPERAND_FLOAT64 = 1, /* real_value as double */
  SKEIN_OPERAND_FLOAT32 = 2, /* real_value as float */
  SKEIN_OPERAND_INT64 = 3,   /* int_value */
  SKEIN_OPERAND_INT32 = 4    /* int_value as int32_t */
} skein_operand_kind;

typedef struct skein_operand {
  skein_operand_kind kind;
  const skein_grid* grid;
  double real_value;
  int64_t int_value;
} skein_operand;

/* An elementwise kernel (skein::ElementwiseKernel): `params` as "T x, T y, double a" (T: the
 * arguments' dtype), `operation` on element i, e.g. "y[i] = a * x[i] + y[i]". */
SKEIN_C_EXPORT skein_status skein_kernel_create_elementwise(const char* params,
                                                            const char* operation, const char* name,
                                                            skein_kernel** kernel);
/* A stencil kernel (skein::StencilKernel): inputs, outputs, and the operation on one point, which
 * reads neighbours as u(dy, dx) in C order (the axes' offsets, slowest first) and sees the point's
 * global index as gidx[a] and the domain's extent as gshape[a] (C order), e.g.
 *   skein_kernel_create_stencil("T u, T r", "T v",
 *                               "v = u + r * (u(-1, 0) + u(1, 0) + u(0, -1) + u(0, 1) - 4 * u)",
 *                               "heat_step", &step);
 * With `map` not NULL it also reduces, over the points, `map` (a double expression of the
 * operation's names, e.g. "fabs(v - u)") by `reduce` (of a and b, e.g. "a + b" or
 * "fmax(a, b)") from `identity` (e.g. "0"): skein_grid_stencil_reduce. */
SKEIN_C_EXPORT skein_status skein_kernel_create_stencil(const char* in_params,
                                                        const char* out_params,
                                                        const char* operation, const char* map,
                                                        const char* reduce, const char* identity,
                                                        const char* name, skein_kernel** kernel);
SKEIN_C_EXPORT skein_status skein_kernel_destroy(skein_kernel* kernel);

/* Runs an elementwise kernel over the points of every local block of the grids among args. */
SKEIN_C_EXPORT skein_status skein_grid_elementwise(const skein_kernel* kernel,
                                                   const skein_operand* args, size_t count);
/* Runs a stencil kernel over `region` of every local block; the input grids' halos must be
 * current (skein_grid_exchange_halos). Enqueued. */
SKEIN_C_EXPORT skein_status skein_grid_stencil(const skein_kernel* kernel,
                                               const skein_operand* args, size_t count,
                                               skein_region region);
/* The same with the kernel's reduction: each local block's value into element 0 of partials[l]
 * (an array of one float64 element on local device l, partials_count = the grid's local count),
 * enqueued; combine them across ranks with skein_all_reduce. */
SKEIN_C_EXPORT skein_status skein_grid_stencil_reduce(const skein_kernel* kernel,
                                                      const skein_operand* args, size_t count,
                                                      skein_region region,
                                                      skein_array* const* partials,
                                                      size_t partials_count);

/* ---- HDF5 files (parallel HDF5 where Skein has it, else through rank 0) -----------------------
 */

/* Collective: creates (truncates) or opens the file over the communicator's ranks. */
SKEIN_C_EXPORT skein_status skein_hdf5_create(skein_communicator* comm, const char* path,
                                              skein_hdf5_file** file);
SKEIN_C_EXPORT skein_status skein_hdf5_open(skein_communicator* comm, const char* path,
                                            int read_write, skein_hdf5_file** file);
/* Collective: closes the file (everything written is on disk when it returns). */
SKEIN_C_EXPORT skein_status skein_hdf5_close(skein_hdf5_file* file);
/* Collective: the grid as one dataset of its global shape (C order, components last; a Fortran
 * reader sees the axes reversed, as HDF5 does), its halos not written. */
SKEIN_C_EXPORT skein_status skein_hdf5_write_grid(skein_hdf5_file* file, const char* name,
                                                  const skein_grid* grid);
/* Collective: a dataset of the grid's global shape and dtype into the grid (any process grid). */
SKEIN_C_EXPORT skein_status skein_hdf5_read_grid(skein_hdf5_file* file, const char* name,
                                                 const skein_grid* grid);
/* Collective: a double attribute of the object (a dataset's name, or "/"). */
SKEIN_C_EXPORT skein_status skein_hdf5_set_attribute(skein_hdf5_file* file, const char* object,
                                                     const char* name, double value);
SKEIN_C_EXPORT skein_status skein_hdf5_get_attribute(skein_hdf5_file* file, const char* object,
                                                     const char* name, double* value);

/* ---- checkpoints -------------------------------------------------------------------------------
 */

/* Collective: checkpoints in `directory`, the newest `keep` kept (0: all). */
SKEIN_C_EXPORT skein_status skein_checkpoint_create(skein_communicator* comm, const char* directory,
                                                    size_t keep, skein_checkpoint** checkpoints);
SKEIN_C_EXPORT skein_status skein_checkpoint_destroy(skein_checkpoint* checkpoints);
/* Collective: a checkpoint of step `step` at time `time` holding grids[i] under names[i]. */
SKEIN_C_EXPORT skein_status skein_checkpoint_write(skein_checkpoint* checkpoints, int64_t step,
                                                   double time, const char* const* names,
                                                   const skein_grid* const* grids, size_t count);
/* Collective: restores the newest complete checkpoint into the grids (restored = 1, and its
 * step and time), or finds none (restored = 0). A damaged newest checkpoint: CHECKPOINT. The
 * grids' halos are not restored: exchange them after. */
SKEIN_C_EXPORT skein_status skein_checkpoint_restore_latest(skein_checkpoint* checkpoints,
                                                            const char* const* names,
                                                            const skein_grid* const* grids,
                                                            size_t count, int* restored,
                                                            int64_t* step, double* time);

#ifdef __cplusplus
} /* extern "C" */
#endif

/* The MPI_Comm forms, when <mpi.h> was included before this header. */
#if defined(MPI_VERSION) && !defined(SKEIN_NO_MPI_COMM_HELPERS)
static inline skein_status skein_runtime_adopt(MPI_Comm comm, const skein_runtime_options* options,
                                               skein_runtime** runtime) {
  return skein_runtime_adopt_fortran((int)MPI_Comm_c2f(comm), options, runtime);
}
static inline skein_status skein_runtime_comm(const skein_runtime* runtime, MPI_Comm* comm) {
  int fortran_comm = 0;
  const skein_status status = skein_runtime_fortran_comm(runtime, &fortran_comm);
  if (status == SKEIN_SUCCESS) *comm = MPI_Comm_f2c((MPI_Fint)fortran_comm);
  return status;
}
#endif

#endif /* SKEIN_SKEIN_H */
