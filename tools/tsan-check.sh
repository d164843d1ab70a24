#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The threaded tests under ThreadSanitizer: builds CMakePresets.json's tsan preset (the framework
# and its test program only) and runs, on every backend the machine has, the tests in which
# several threads share one Skein object (a compile cache, a memory pool, a virtual-memory
# manager, a kernel and the built-in kernels).
#
#   tools/tsan-check.sh [LOG]          (LOG: where the test output goes; default: stdout)
#
# BUILD_DIR (default build-tsan under the source tree) and JOBS (default: all cores) can be set.
# On a GPU machine the CUDA backend and NVIDIA's OpenCL run too (each test is parameterised per
# backend). PoCL runs as its "basic" device, which executes kernels on the calling thread: its "pthread"
# device's worker pool is not instrumented, and TSan would report PoCL's own synchronisation.
# Exits non-zero when the build fails, a test fails, or TSan reports a race (halt_on_error).
set -uo pipefail

SOURCE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$SOURCE_DIR/build-tsan}"
JOBS="${JOBS:-$(nproc 2>/dev/null || echo 2)}"
LOG="${1:-/dev/stdout}"

FILTER="CompileCache.ThreadsShareOneBuildPerKey:*/MemoryPool.ThreadsShareOnePool/*"
FILTER+=":*/VirtualAlloc.ThreadsShareOneManager/*:*/Elementwise.ThreadsShareOneKernel/*"

configure=(--preset tsan -S "$SOURCE_DIR" -B "$BUILD_DIR")
[[ -f "$BUILD_DIR/CMakeCache.txt" ]] || ! command -v ninja >/dev/null 2>&1 || configure+=(-G Ninja)
# The CUDA backend where the toolkit is (as tools/build.sh finds it).
if [[ -x /usr/local/cuda/bin/nvcc ]] && ! command -v nvcc >/dev/null 2>&1; then
  configure+=(-DCUDAToolkit_ROOT=/usr/local/cuda)
fi
cmake "${configure[@]}" >>"$LOG" 2>&1 || {
  echo "tsan-check: configure failed (see $LOG)" >&2
  exit 1
}
cmake --build "$BUILD_DIR" --parallel "$JOBS" --target skein-tests >>"$LOG" 2>&1 || {
  echo "tsan-check: build failed (see $LOG)" >&2
  exit 1
}

# second_deadlock_stack: both stacks of a lock-order report. Each run must also have run tests:
# a filter that matches nothing would pass silently.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1${TSAN_OPTIONS:+:$TSAN_OPTIONS}"
export POCL_DEVICES=basic
export SKEIN_CACHE_DIR="$BUILD_DIR/tsan-kernel-cache"
status=0
out="$(mktemp)"
"$BUILD_DIR/tests/skein-tests" --gtest_filter="$FILTER" >"$out" 2>&1 || status=$?
cat "$out" >>"$LOG"
ran="$(grep -c '^\[       OK \]' "$out" || true)"
rm -f "$out"
if ((status != 0)); then
  echo "tsan-check: FAILED (exit $status; see $LOG)"
  exit 1
fi
if ((ran < 4)); then
  echo "tsan-check: FAILED: only $ran threaded tests ran (expected at least 4)"
  exit 1
fi
echo "tsan-check: $ran threaded tests passed under ThreadSanitizer, no race reported"
