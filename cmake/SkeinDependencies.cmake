# SPDX-License-Identifier: BSD-3-Clause
# Finds every optional dependency and turns the results into SKEIN_HAS_* variables.
find_package(Threads REQUIRED)
find_package(fmt REQUIRED)
# SHA-256 (the compile cache's entries, the checkpoints' checksums): libcrypto.
find_package(OpenSSL REQUIRED COMPONENTS Crypto)

if(NOT SKEIN_WITH_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  # Skein calls the driver API through dlopen (so that a binary runs without a driver),
  # and needs the headers plus NVRTC.
  if(CUDAToolkit_FOUND AND TARGET CUDA::nvrtc)
    set(_skein_cuda_found TRUE)
  else()
    set(_skein_cuda_found FALSE)
  endif()
endif()
skein_resolve_dependency(CUDA _skein_cuda_found)

if(SKEIN_HAS_CUDA AND NOT SKEIN_WITH_NCCL STREQUAL "OFF")
  find_package(NCCL QUIET)
endif()
skein_resolve_dependency(NCCL NCCL_FOUND)

if(NOT SKEIN_WITH_OPENCL STREQUAL "OFF")
  find_package(OpenCL QUIET)
endif()
skein_resolve_dependency(OPENCL OpenCL_FOUND)

if(SKEIN_HAS_OPENCL AND NOT SKEIN_WITH_CLBLAST STREQUAL "OFF")
  find_package(CLBlast CONFIG QUIET)
endif()
skein_resolve_dependency(CLBLAST CLBlast_FOUND)

if(NOT SKEIN_WITH_MPI STREQUAL "OFF")
  find_package(MPI QUIET COMPONENTS C)
endif()
skein_resolve_dependency(MPI MPI_C_FOUND)

if(NOT SKEIN_WITH_HDF5 STREQUAL "OFF")
  set(HDF5_PREFER_PARALLEL TRUE)
  find_package(HDF5 QUIET COMPONENTS C)
endif()
skein_resolve_dependency(HDF5 HDF5_FOUND)
set(SKEIN_HDF5_PARALLEL OFF)
# MPI-IO needs MPI in Skein too (without MPI there are no distributed arrays to write).
if(SKEIN_HAS_HDF5 AND HDF5_IS_PARALLEL AND SKEIN_HAS_MPI)
  set(SKEIN_HDF5_PARALLEL ON)
endif()

# DLPack: one header (dlpack/dlpack.h), needed by <skein/dlpack.hpp> and its users too.
if(NOT SKEIN_WITH_DLPACK STREQUAL "OFF")
  find_path(DLPACK_INCLUDE_DIR dlpack/dlpack.h)
endif()
if(DLPACK_INCLUDE_DIR)
  set(_skein_dlpack_found TRUE)
else()
  set(_skein_dlpack_found FALSE)
endif()
skein_resolve_dependency(DLPACK _skein_dlpack_found)

# Fortran, for the module `use skein` (bindings/fortran) and its tests. enable_language() belongs in
# the top directory, above every target that compiles or links Fortran (the library, the tests,
# the example): this file is included there.
if(NOT SKEIN_WITH_FORTRAN STREQUAL "OFF")
  include(CheckLanguage)
  check_language(Fortran)
  if(CMAKE_Fortran_COMPILER)
    enable_language(Fortran)
    set(_skein_fortran_found TRUE)
  else()
    set(_skein_fortran_found FALSE)
  endif()
endif()
skein_resolve_dependency(FORTRAN _skein_fortran_found)

# Python 3 with NumPy and pybind11, for the package `skein` (bindings/python, cmake/SkeinPython.cmake).
set(_skein_python_found FALSE)
if(NOT SKEIN_WITH_PYTHON STREQUAL "OFF")
  include(SkeinPython)
  skein_find_python(_skein_python_found)
endif()
skein_resolve_dependency(PYTHON _skein_python_found)

foreach(dep CUDA NCCL OPENCL CLBLAST MPI HDF5 DLPACK)
  if(SKEIN_HAS_${dep})
    set(SKEIN_CONFIG_HAS_${dep} 1)
  else()
    set(SKEIN_CONFIG_HAS_${dep} 0)
  endif()
endforeach()
set(SKEIN_CONFIG_HAS_HDF5_PARALLEL 0)
if(SKEIN_HDF5_PARALLEL)
  set(SKEIN_CONFIG_HAS_HDF5_PARALLEL 1)
endif()
