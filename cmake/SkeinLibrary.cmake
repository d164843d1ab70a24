# SPDX-License-Identifier: BSD-3-Clause
# skein_add_library(NAME SOURCES...): one of Skein's libraries, made the same way for every layer.
#
#   target skein_NAME, alias Skein::NAME (exported as Skein::NAME), file libskein_NAME.so.X.Y
#   public headers: include/skein/ of the calling directory, installed to <prefix>/include/skein
#   hidden visibility (-fvisibility=hidden -fvisibility-inlines-hidden): outside the library only
#   what is marked SKEIN_EXPORT (<skein/export.hpp>) is visible
#   a shared library is linked with --no-undefined (not under the sanitizers, whose runtime is
#   linked into the executable only): every symbol it uses comes from a dependency it names, so
#   its link line is its complete list of dependencies
#
# The caller adds the library's own dependencies (target_link_libraries) and private include
# directories (src/, internal/).
function(skein_add_library name)
  set(target skein_${name})
  add_library(${target} ${ARGN})
  add_library(Skein::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES
    EXPORT_NAME ${name}
    OUTPUT_NAME skein_${name}
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(${target} PUBLIC cxx_std_20)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "SHARED_LIBRARY" AND NOT SKEIN_SANITIZE)
    target_link_options(${target} PRIVATE "LINKER:--no-undefined")
  endif()
  install(TARGETS ${target} EXPORT SkeinTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(DIRECTORY include/skein DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.hpp")
endfunction()

# skein_precompile_headers(TARGET HEADERS...): the headers most of TARGET's sources include, parsed
# once per target into a precompiled header (CMake's target_precompile_headers) instead of once
# per source file. Parsing them was 40-55 % of each file's compile time (gcc -ftime-report on
# framework/src/reduction.cpp, since split into reduction_*.cpp, and
# tests/framework/reduction_test.cpp); the CI machine has two cores.
# Only for targets with many sources; SKEIN_PRECOMPILE_HEADERS=OFF turns it off (then every
# source must include what it uses: the tsan preset builds that way).
option(SKEIN_PRECOMPILE_HEADERS "Precompile the headers shared by the larger targets' sources" ON)
function(skein_precompile_headers target)
  if(SKEIN_PRECOMPILE_HEADERS)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()
