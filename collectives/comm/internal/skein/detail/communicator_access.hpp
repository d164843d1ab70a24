// SPDX-License-Identifier: BSD-3-Clause
// The collectives layers' access to a Communicator beyond its public interface: its state
// (Communicator::Impl, which is not public, for comm's own sources) and another handle to the same
// communicator (for the distributed arrays of the dist layer, which keep one). The public header
// names this struct as its only friend, so that no other layer's class needs to be one.
#pragma once

#include "skein/communicator.hpp"

namespace skein::detail {

struct CommunicatorAccess {
  static Communicator::Impl& impl(Communicator& comm) { return *comm.impl_; }
  // Another handle to `comm`'s communicator: it stays valid when `comm` is moved or destroyed.
  static Communicator share(const Communicator& comm) { return comm.share(); }
};

}  // namespace skein::detail
