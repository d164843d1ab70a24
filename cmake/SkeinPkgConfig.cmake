# SPDX-License-Identifier: BSD-3-Clause
# skein_install_pkg_config(): configures cmake/skein.pc.in into <build>/skein.pc and installs it to
# <prefix>/<libdir>/pkgconfig, for builds that are not CMake (Makefiles, Meson, autotools):
#
#   cc $(pkg-config --cflags skein) main.c $(pkg-config --libs skein)
#
# Called at the end of the top-level CMakeLists.txt, once every library target exists. The paths
# are relative to ${pcfiledir}, so the installed prefix can be moved. What it says mirrors the
# CMake package:
#   Cflags    the include directory; the Fortran module directory when the Fortran module is built;
#             the compile definitions Skein's targets make public (MPI without its C++ bindings,
#             OpenCL 1.2's API)
#   Libs      Skein's libraries, the C API's and the Fortran module's first (each needs the ones
#             after it)
#   Requires  MPI and OpenCL, whose headers Skein's public headers include and which Skein::comm
#             and Skein::framework link PUBLIC
#   Requires.private / Libs.private
#             HDF5 (private to libskein_io), and for a static Skein the private dependencies its
#             libraries need at the program's link (fmt, libcrypto, CLBlast, NVRTC, libdl)
# A dependency is named by its own .pc file when pkg-config finds one (SKEIN_PKG_CONFIG_<DEP>:
# the module names tried, first found wins; Debian: mpi-c or ompi-c, OpenCL, hdf5-openmpi); where
# none is found its flags are written out from what CMake found instead.

# _skein_pc_module(OUT CANDIDATES...): the first of CANDIDATES pkg-config knows, or "" when none
# (or when pkg-config is not installed).
function(_skein_pc_module out)
  set(found "")
  if(PKG_CONFIG_EXECUTABLE)
    foreach(name IN LISTS ARGN)
      execute_process(COMMAND "${PKG_CONFIG_EXECUTABLE}" --exists "${name}" RESULT_VARIABLE rc)
      if(rc EQUAL 0)
        set(found "${name}")
        break()
      endif()
    endforeach()
  endif()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# _skein_pc_libs(OUT LIBRARIES...): linker flags for a list of library files or names.
function(_skein_pc_libs out)
  set(flags "")
  foreach(lib IN LISTS ARGN)
    if(lib MATCHES "^-")
      list(APPEND flags "${lib}")
    elseif(IS_ABSOLUTE "${lib}")
      get_filename_component(dir "${lib}" DIRECTORY)
      get_filename_component(name "${lib}" NAME_WE)
      string(REGEX REPLACE "^lib" "" name "${name}")
      list(APPEND flags "-L${dir}" "-l${name}")
    elseif(lib)
      list(APPEND flags "-l${lib}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES flags)
  string(JOIN " " joined ${flags})
  set(${out} "${joined}" PARENT_SCOPE)
endfunction()

function(skein_install_pkg_config)
  find_package(PkgConfig QUIET)
  set(SKEIN_PKG_CONFIG_MPI "mpi-c;ompi-c;mpich" CACHE STRING
      "pkg-config modules tried for MPI's C library in skein.pc's Requires (first found wins)")
  set(SKEIN_PKG_CONFIG_OPENCL "OpenCL" CACHE STRING
      "pkg-config modules tried for OpenCL in skein.pc's Requires (first found wins)")
  set(SKEIN_PKG_CONFIG_HDF5 "hdf5-openmpi;hdf5-mpich;hdf5" CACHE STRING
      "pkg-config modules tried for HDF5 in skein.pc's Requires.private (first found wins)")

  set(requires "")
  set(requires_private "")
  set(cflags "-I\${includedir}")
  set(libs_extra "")
  set(libs_private "")
  if(SKEIN_HAS_FORTRAN OR TARGET skein_fortran)
    string(APPEND cflags " -I\${includedir}/skein/fortran")
  endif()

  if(SKEIN_HAS_MPI)
    string(APPEND cflags " -DOMPI_SKIP_MPICXX=1 -DMPICH_SKIP_MPICXX=1")
    _skein_pc_module(mpi ${SKEIN_PKG_CONFIG_MPI})
    if(mpi)
      list(APPEND requires "${mpi}")
    else()
      foreach(dir IN LISTS MPI_C_INCLUDE_DIRS)
        string(APPEND cflags " -I${dir}")
      endforeach()
      _skein_pc_libs(mpi_libs ${MPI_C_LIBRARIES})
      string(APPEND libs_extra " ${mpi_libs}")
    endif()
  endif()
  if(SKEIN_HAS_OPENCL)
    string(APPEND cflags " -DCL_TARGET_OPENCL_VERSION=120")
    _skein_pc_module(opencl ${SKEIN_PKG_CONFIG_OPENCL})
    if(opencl)
      list(APPEND requires "${opencl}")
    else()
      foreach(dir IN LISTS OpenCL_INCLUDE_DIRS)
        string(APPEND cflags " -I${dir}")
      endforeach()
      _skein_pc_libs(opencl_libs ${OpenCL_LIBRARIES})
      string(APPEND libs_extra " ${opencl_libs}")
    endif()
  endif()
  if(SKEIN_HAS_HDF5 AND SKEIN_HAS_MPI)
    _skein_pc_module(hdf5 ${SKEIN_PKG_CONFIG_HDF5})
    if(hdf5)
      list(APPEND requires_private "${hdf5}")
    else()
      _skein_pc_libs(hdf5_libs ${HDF5_C_LIBRARIES})
      string(APPEND libs_private " ${hdf5_libs}")
    endif()
  endif()

  # A static Skein: what its libraries link privately, the program links.
  if(NOT BUILD_SHARED_LIBS)
    foreach(dep fmt crypto)
      _skein_pc_module(module lib${dep} ${dep})
      if(module)
        list(APPEND requires_private "${module}")
      else()
        string(APPEND libs_private " -l${dep}")
      endif()
    endforeach()
    if(SKEIN_HAS_CLBLAST)
      string(APPEND libs_private " -lclblast")
    endif()
    if(SKEIN_HAS_CUDA)
      _skein_pc_libs(nvrtc "${CUDA_nvrtc_LIBRARY}")
      string(APPEND libs_private " ${nvrtc}")
    endif()
    string(APPEND libs_private " -ldl -pthread")
  endif()

  # Skein's libraries, the ones over the others first (a static link resolves left to right).
  set(libs "-L\${libdir}")
  foreach(target skein_fortran skein_c skein_io skein_dist skein_comm skein_framework)
    if(TARGET ${target})
      get_target_property(name ${target} OUTPUT_NAME)
      if(NOT name)
        set(name ${target})
      endif()
      string(APPEND libs " -l${name}")
    endif()
  endforeach()
  string(APPEND libs "${libs_extra}")

  string(JOIN ", " SKEIN_PC_REQUIRES ${requires})
  string(JOIN ", " SKEIN_PC_REQUIRES_PRIVATE ${requires_private})
  string(STRIP "${cflags}" SKEIN_PC_CFLAGS)
  string(STRIP "${libs}" SKEIN_PC_LIBS)
  string(STRIP "${libs_private}" SKEIN_PC_LIBS_PRIVATE)
  # includedir and libdir relative to the .pc file's directory, <prefix>/<libdir>/pkgconfig.
  # An absolute CMAKE_INSTALL_LIBDIR or CMAKE_INSTALL_INCLUDEDIR is written as it is.
  set(pcdir "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
  if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
    set(SKEIN_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  else()
    string(REGEX REPLACE "[^/]+" ".." up "${pcdir}")
    set(SKEIN_PC_PREFIX "\${pcfiledir}/${up}")
  endif()
  set(SKEIN_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
  set(SKEIN_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
  foreach(kind LIBDIR INCLUDEDIR)
    if(NOT IS_ABSOLUTE "${SKEIN_PC_${kind}}")
      set(SKEIN_PC_${kind} "\${prefix}/${SKEIN_PC_${kind}}")
    endif()
  endforeach()
  configure_file("${PROJECT_SOURCE_DIR}/cmake/skein.pc.in" "${PROJECT_BINARY_DIR}/skein.pc" @ONLY)
  install(FILES "${PROJECT_BINARY_DIR}/skein.pc" DESTINATION "${pcdir}")
endfunction()
