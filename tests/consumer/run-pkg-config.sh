#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs a built Skein into a scratch prefix, then builds one source file with nothing on the
# compiler's line but what `pkg-config --cflags --libs skein` says (and FLAGS), and runs it.
#
#   tests/consumer/run-pkg-config.sh BUILD_DIR WORK_DIR BUILD_TYPE COMPILER SOURCE [FLAGS...]
#
# BUILD_DIR: a configured and built Skein build tree. WORK_DIR receives the install prefix and the
# program; it is emptied first. BUILD_TYPE is the configuration to install (may be empty).
# COMPILER compiles SOURCE (a C compiler for a C program, a C++ one for C++), with FLAGS before the
# source (e.g. -std=c++20 for C++: pkg-config's flags are the same for C and C++). The program
# finds Skein's libraries through LD_LIBRARY_PATH (the .pc file adds no run path, as is usual);
# it must exit 0.
set -euo pipefail

if (($# < 5)); then
  echo "usage: $0 BUILD_DIR WORK_DIR BUILD_TYPE COMPILER SOURCE [FLAGS...]" >&2
  exit 2
fi
BUILD_DIR="$(cd "$1" && pwd)"
WORK_DIR="$2"
BUILD_TYPE="$3"
COMPILER="$4"
SOURCE="$5"
shift 5
# Libraries (-l...) among FLAGS go after pkg-config's flags, as the linker needs them; the rest
# before the source.
FLAGS=() LIBS=()
for f in "$@"; do
  if [[ "$f" == -l* ]]; then LIBS+=("$f"); else FLAGS+=("$f"); fi
done

rm -rf "$WORK_DIR"
mkdir -p "$WORK_DIR"
PREFIX="$WORK_DIR/prefix"
step() { echo "pkg-config consumer: $*"; }

install_args=(--install "$BUILD_DIR" --prefix "$PREFIX")
[[ -n "$BUILD_TYPE" ]] && install_args+=(--config "$BUILD_TYPE")
cmake "${install_args[@]}" >"$WORK_DIR/install.log" || { cat "$WORK_DIR/install.log"; exit 1; }

pc="$(find "$PREFIX" -path '*/pkgconfig/skein.pc' | head -n 1)"
[[ -n "$pc" ]] || { echo "pkg-config consumer: FAIL: no skein.pc under $PREFIX" >&2; exit 1; }
step "installed $pc"
PKG_CONFIG_PATH="$(dirname "$pc")${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_PATH
libdir="$(pkg-config --variable=libdir skein)"
# The paths are relative to the .pc file: they must lead into this prefix.
[[ "$(cd "$libdir" && pwd -P)" == "$(cd "$PREFIX" && pwd -P)"/* ]] || {
  echo "pkg-config consumer: FAIL: libdir $libdir is not under $PREFIX" >&2; exit 1; }
step "skein $(pkg-config --modversion skein): $(pkg-config --cflags --libs skein)"

step "$COMPILER ${FLAGS[*]} $SOURCE \$(pkg-config --cflags --libs skein) ${LIBS[*]}"
# Word splitting of pkg-config's output is intended: it is a list of flags.
# shellcheck disable=SC2046
"$COMPILER" "${FLAGS[@]}" "$SOURCE" $(pkg-config --cflags --libs skein) "${LIBS[@]}" -o "$WORK_DIR/program"

export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
step "running $WORK_DIR/program (in $WORK_DIR: its files go there)"
cd "$WORK_DIR"
"$WORK_DIR/program"
step "passed"
