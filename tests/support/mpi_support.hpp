// SPDX-License-Identifier: BSD-3-Clause
// Small helpers shared by the MPI test programs.
#pragma once

#include <mpi.h>
#include <unistd.h>

#include <string>

namespace skein::test {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int world_size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// Whether `condition` holds on every rank (a collective: every rank must call it). A test that
// makes a collective call only where some local condition holds must decide it for all ranks
// alike (members per rank may differ).
inline bool on_every_rank(bool condition) {
  int mine = condition ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all != 0;
}

// This host's name (as gethostname gives it, at most 255 characters).
inline std::string hostname() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

}  // namespace skein::test
