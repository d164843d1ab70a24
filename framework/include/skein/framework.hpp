// SPDX-License-Identifier: BSD-3-Clause
// The framework's umbrella header (Skein::framework): devices, contexts, queues, buffers, arrays,
// kernels, BLAS, pools. It needs no MPI: a program that links Skein::framework alone (find_package
// (Skein CONFIG REQUIRED COMPONENTS framework)) builds and runs without it. <skein/skein.hpp>, the
// umbrella of Skein::skein, adds the runtime, the Communicator, distributed arrays and I/O.
#pragma once

#include "skein/config.hpp"
#include "skein/api.hpp"
#include "skein/array.hpp"
#include "skein/array_ops.hpp"
#include "skein/blas.hpp"
#include "skein/buffer.hpp"
#include "skein/context.hpp"
#include "skein/ctypes.hpp"
#include "skein/device.hpp"
#include "skein/device_parameters.hpp"
#include "skein/driver.hpp"
#include "skein/dtype.hpp"
#include "skein/elementwise.hpp"
#include "skein/error.hpp"
#include "skein/event.hpp"
#include "skein/memory.hpp"
#include "skein/functions.hpp"
#include "skein/fused.hpp"
#include "skein/log.hpp"
#include "skein/memory_pool.hpp"
#include "skein/multi_device.hpp"
#include "skein/occupancy.hpp"
#include "skein/operand.hpp"
#include "skein/platform.hpp"
#include "skein/program.hpp"
#include "skein/queue.hpp"
#include "skein/reduction.hpp"
#include "skein/static_kernel.hpp"
#include "skein/stencil.hpp"
#include "skein/template.hpp"
#include "skein/version.hpp"
#include "skein/virtual_alloc.hpp"
