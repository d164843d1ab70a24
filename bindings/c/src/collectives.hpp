// SPDX-License-Identifier: BSD-3-Clause
// Checks shared by the collectives on array handles (collectives.cpp) and on native pointers
// (collectives_native.cpp).
#pragma once

#include "handles.hpp"

namespace skein::capi {

// The communicator and queue of a collective, checked (not NULL).
Communicator& checked(skein_communicator* comm, const skein_queue* queue);
// INVALID_ARGUMENT unless `member` names a member of the communicator.
void check_member(const Communicator& comm, int member, const char* parameter);

}  // namespace skein::capi
