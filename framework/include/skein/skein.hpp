// Skein's umbrella header: everything a simulation code uses.
#pragma once

#include "skein/config.hpp"
#include "skein/api.hpp"
#include "skein/array.hpp"
#include "skein/buffer.hpp"
#include "skein/context.hpp"
#include "skein/device.hpp"
#include "skein/device_parameters.hpp"
#include "skein/dtype.hpp"
#include "skein/error.hpp"
#include "skein/event.hpp"
#include "skein/platform.hpp"
#include "skein/queue.hpp"
