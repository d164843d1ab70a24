#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs a built Skein into a scratch prefix, then configures, builds and runs the outside
# project in project/ against it with find_package(Skein CONFIG REQUIRED).
#
#   tests/consumer/run.sh BUILD_DIR [WORK_DIR] [GENERATOR] [BUILD_TYPE] [CXX_COMPILER] [PROJECT]
#
# BUILD_DIR: a configured and built Skein build tree. WORK_DIR (default: a temporary directory,
# removed afterwards) receives the install prefix and the consumer's build tree; it is emptied
# first. GENERATOR, BUILD_TYPE and CXX_COMPILER default to CMake's defaults. PROJECT (default
# project) is the folder here to build: framework-project links Skein::framework alone, and then
# neither its program nor libskein_framework may need an MPI library; strict-project builds with
# -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Werror, and its program gets a scratch directory under WORK_DIR for its files.
set -euo pipefail

if (($# < 1)); then
  echo "usage: $0 BUILD_DIR [WORK_DIR] [GENERATOR] [BUILD_TYPE] [CXX_COMPILER]" >&2
  exit 2
fi

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD_DIR="$(cd "$1" && pwd)"
WORK_DIR="${2:-}"
GENERATOR="${3:-}"
BUILD_TYPE="${4:-}"
CXX_COMPILER="${5:-}"
PROJECT="${6:-project}"

if [[ -z "$WORK_DIR" ]]; then
  WORK_DIR="$(mktemp -d "${TMPDIR:-/tmp}/skein-consumer.XXXXXX")"
  trap 'rm -rf "$WORK_DIR"' EXIT
else
  rm -rf "$WORK_DIR"
  mkdir -p "$WORK_DIR"
fi
PREFIX="$WORK_DIR/prefix"
CONSUMER_BUILD="$WORK_DIR/build"

step() { echo "consumer: $*"; }

install_args=(--install "$BUILD_DIR" --prefix "$PREFIX")
[[ -n "$BUILD_TYPE" ]] && install_args+=(--config "$BUILD_TYPE")
step "cmake ${install_args[*]}"
cmake "${install_args[@]}" >"$WORK_DIR/install.log" || { cat "$WORK_DIR/install.log"; exit 1; }
step "installed $(grep -c . "$WORK_DIR/install.log") file(s) under $PREFIX"
# The Slurm scripts and the examples are installed for users to copy (share/skein).
for f in slurm/one-node.sbatch slurm/multi-node.sbatch examples/quickstart.cpp; do
  [[ -f "$PREFIX/share/skein/$f" ]] || { echo "consumer: FAIL: no share/skein/$f in $PREFIX" >&2; exit 1; }
done
[[ -x "$PREFIX/share/skein/slurm/one-node.sbatch" ]] ||
  { echo "consumer: FAIL: share/skein/slurm/one-node.sbatch is not executable" >&2; exit 1; }
# The Python package from the same install, where the build has one (SKEIN_PYTHON: its interpreter,
# set by tests/consumer/CMakeLists.txt): import skein from another directory with PYTHONPATH alone.
if [[ -n "${SKEIN_PYTHON:-}" ]]; then
  bash "$HERE/../python/test_install.sh" "$PREFIX" "$SKEIN_PYTHON"
fi

configure_args=(-S "$HERE/$PROJECT" -B "$CONSUMER_BUILD" "-DCMAKE_PREFIX_PATH=$PREFIX")
[[ -n "$GENERATOR" ]] && configure_args+=(-G "$GENERATOR")
[[ -n "$BUILD_TYPE" ]] && configure_args+=("-DCMAKE_BUILD_TYPE=$BUILD_TYPE")
[[ -n "$CXX_COMPILER" ]] && configure_args+=("-DCMAKE_CXX_COMPILER=$CXX_COMPILER")
step "cmake ${configure_args[*]}"
cmake "${configure_args[@]}"

build_args=(--build "$CONSUMER_BUILD")
[[ -n "$BUILD_TYPE" ]] && build_args+=(--config "$BUILD_TYPE")
step "cmake ${build_args[*]}"
cmake "${build_args[@]}"

name=skein-consumer
args=()
case "$PROJECT" in
  framework-project) name=skein-framework-consumer ;;
  strict-project) name=skein-strict-consumer; args=("$WORK_DIR/scratch") ;;
esac
exe="$CONSUMER_BUILD/$name"
[[ -x "$exe" ]] || exe="$CONSUMER_BUILD/${BUILD_TYPE:-Release}/$name"
if [[ "$PROJECT" == framework-project ]]; then
  for f in "$exe" "$PREFIX"/lib*/libskein_framework.so*; do
    [[ -f "$f" && ! -L "$f" ]] || continue
    if readelf -d "$f" | grep -i 'NEEDED.*mpi'; then
      echo "consumer: FAIL: $f needs an MPI library" >&2
      exit 1
    fi
    step "$(basename "$f") needs no MPI library"
  done
fi
step "running $exe ${args[*]}"
"$exe" "${args[@]}"
step "passed"
