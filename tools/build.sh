#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Configures and builds Skein with sensible defaults.
#
#   tools/build.sh [BUILD_DIR] [extra cmake args...]
#   tools/build.sh --preset NAME [extra cmake args...]
#
# With --preset, the configuration is CMakePresets.json's preset NAME (release, debug, asan, gpu),
# built in its directory (build, build-debug, build-asan, build-gpu under the source tree) unless
# BUILD_DIR is set in the environment.
# BUILD_DIR defaults to build/ in the source tree (relative paths are taken from the current
# directory). Defaults: Ninja when it is installed, CMAKE_BUILD_TYPE=Release (set BUILD_TYPE in the
# environment, or pass -DCMAKE_BUILD_TYPE=..., to change it), every SKEIN_WITH_* option AUTO (so the
# CUDA backend is compiled when the toolkit is found, e.g. at /usr/local/cuda), and a parallel
# build with one job per core (JOBS overrides it). Extra arguments go to the configure step and
# win over the defaults.
set -euo pipefail

SOURCE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"

preset=""
if [[ "${1:-}" == --preset ]]; then
  preset="${2:?usage: $0 --preset NAME [extra cmake args...]}"
  shift 2
  case "$preset" in
    release) preset_dir=build ;;
    *) preset_dir="build-$preset" ;;
  esac
  BUILD_DIR="${BUILD_DIR:-$SOURCE_DIR/$preset_dir}"
  configure_args=(--preset "$preset" -S "$SOURCE_DIR" -B "$BUILD_DIR")
else
  BUILD_DIR="${1:-$SOURCE_DIR/build}"
  if (($# > 0)); then shift; fi
  BUILD_TYPE="${BUILD_TYPE:-Release}"
  configure_args=(-S "$SOURCE_DIR" -B "$BUILD_DIR" "-DCMAKE_BUILD_TYPE=$BUILD_TYPE")
fi

# Ninja, unless the build directory was already configured with another generator (CMake refuses
# to switch generators in an existing build directory).
if [[ -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  :
elif [[ -n "${CMAKE_GENERATOR:-}" ]]; then
  :
elif command -v ninja >/dev/null 2>&1; then
  configure_args+=(-G Ninja)
fi

# The CUDA toolkit is optional; with the default SKEIN_WITH_CUDA=AUTO CMake uses it when it finds
# it. Help it find the usual location when nvcc is not on PATH.
if [[ -z "${CUDAToolkit_ROOT:-}" && -x /usr/local/cuda/bin/nvcc ]] && ! command -v nvcc >/dev/null 2>&1; then
  configure_args+=("-DCUDAToolkit_ROOT=/usr/local/cuda")
fi

# ccache, when it is installed and the caller chose no compiler launcher: rebuilding the same
# sources (another clone or build directory, CI after earlier builds on the machine) then takes
# seconds instead of minutes. CCACHE_BASEDIR (default: the source tree) makes the cached results
# independent of where the tree lies.
if command -v ccache >/dev/null 2>&1 && [[ "$*" != *CMAKE_CXX_COMPILER_LAUNCHER* ]] &&
   ! grep -q '^CMAKE_CXX_COMPILER_LAUNCHER:' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
  configure_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$SOURCE_DIR}"
# The larger targets use precompiled headers (SKEIN_PRECOMPILE_HEADERS); ccache caches their
# sources only with these two (its manual, "Precompiled headers").
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros}"
# The depend mode: results keyed on the contents of the files the compiler read (its -MD list),
# never on preprocessed text. In the preprocessor mode a comment-only edit of a header gave the
# old precompiled header back (comments do not reach the preprocessed text), whose #pragma once
# records no longer matched the edited header: GCC then defined everything in it twice
# ("redefinition of 'struct skein::MemoryInfo'", seen after a comment change to driver.hpp).
export CCACHE_DEPEND="${CCACHE_DEPEND:-1}"

# CI (CI=true, as CI services set it) builds with warnings as errors: one new warning fails the run.
# Not the sanitizer build: GCC's flow analysis under -fsanitize gives false positives there
# (-Wmaybe-uninitialized in libstdc++'s <regex> at -O1).
if [[ "${CI:-}" == true && "$preset" != asan ]]; then
  configure_args+=(-DSKEIN_WARNINGS_AS_ERRORS=ON)
fi
# CI compiles in unity batches (SKEIN_UNITY_BUILD in CMakeLists.txt): a whole build in less CPU.
if [[ "${CI:-}" == true ]]; then
  configure_args+=(-DSKEIN_UNITY_BUILD=ON)
fi

echo "build: cmake ${configure_args[*]} $*"
cmake "${configure_args[@]}" "$@"

echo "build: cmake --build $BUILD_DIR --parallel $JOBS"
cmake --build "$BUILD_DIR" --parallel "$JOBS"
