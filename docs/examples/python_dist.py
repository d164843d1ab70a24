# SPDX-License-Identifier: BSD-3-Clause
"""Skein's distributed layer from Python: a runtime over mpi4py's communicator, a collective, an
array in row blocks and one over a process grid, skein.dist's operations, an HDF5 file and a
checkpoint restored onto another layout. Every result is checked against NumPy on the host.

    mpirun -n 2 python3 python_dist.py     (a Skein built with MPI and HDF5)

Exits 0 when every check passes (on every rank: each checks what it can see)."""

import os
import shutil
import tempfile

import numpy as np
from mpi4py import MPI  # starts MPI; Skein adopts its communicator

import skein


def main(directory):
    runtime = skein.Runtime(comm=MPI.COMM_WORLD)  # Skein works on its own duplicate
    comm = skein.Communicator(runtime)  # its members: every device of every rank
    queue = runtime.queue  # one queue over this rank's devices
    rank = runtime.rank

    # A collective: one array per local device, member m holding m + 1; the maximum over members.
    send = [skein.Array.from_host(queue, np.full(4, comm.rank_of(l) + 1.0),
                                  device_idx=comm.device_idx(l)) for l in range(comm.local_size)]
    comm.all_reduce(queue, send, op="max")  # in place; 'sum', 'prod', 'min', 'max', 'avg'
    for a in send:
        assert np.array_equal(a.get(), np.full(4, float(comm.size)))

    # Row blocks: the root's NumPy array scattered, y = 0.5 x + 2 and a dot product over members.
    host = np.arange(30, dtype=np.float64).reshape(10, 3)
    x = skein.DistArray(comm, (10, 3), np.float64)  # even blocks (counts=, weights= otherwise)
    x.scatter(host if rank == 0 else None, root=0)  # only the root's host array is read
    y = skein.DistArray(comm, (10, 3), np.float64)
    skein.dist.fill(y, 2.0)
    skein.dist.axpy(0.5, x, y, y)  # y = 0.5 x + y, block by block
    assert np.array_equal(y.all_gather(), 0.5 * host + 2)
    assert skein.dist.dot(x, y) == np.sum(host * (0.5 * host + 2))  # the same on every rank

    # A process grid: a periodic 2-D field, one halo point on each side and the corners ("box";
    # the default "star" exchanges the faces only), exchanged.
    field = np.random.default_rng(7).standard_normal((6, 8))
    u = skein.GridArray(comm, (6, 8), np.float64, halo=1, stencil="box", lower="periodic",
                        upper="periodic")
    for l in range(u.local_size):
        (oy, ox), (ey, ex) = u.local_block(l)  # where the local block lies in the field
        u.local(l).set(field[oy:oy + ey, ox:ox + ex])
    u.exchange_halos()
    for l in range(u.local_size):
        (oy, ox), (ey, ex) = u.local_block(l)
        rows, cols = np.arange(oy - 1, oy + ey + 1) % 6, np.arange(ox - 1, ox + ex + 1) % 8
        assert np.array_equal(u.local_with_halo(l).get(), field[np.ix_(rows, cols)])

    # An HDF5 file, written by every rank, read back into one rank's rows only.
    path = os.path.join(directory, "python_dist.h5")
    with skein.hdf5.File.create(comm, path) as f:
        f.write("x", x)
        f.set_attribute("x", "units", "m")
    z = skein.DistArray(comm, (10, 3), np.float64, counts=[10] + [0] * (comm.size - 1))
    with skein.hdf5.File.open(comm, path) as f:
        f.read("x", z)
        assert f.attribute("x", "units") == "m"
    assert np.array_equal(z.all_gather(), host)

    # A checkpoint, restored onto another process grid (as a restart on another rank count).
    checkpoints = skein.CheckpointManager(comm, os.path.join(directory, "checkpoints"), keep=2)
    checkpoints.write(1, 0.1, {"u": u})
    w = skein.GridArray(comm, (6, 8), np.float64, grid=[comm.size, 1])
    restored = checkpoints.restore_latest({"u": w})
    assert restored.step == 1 and restored.time == 0.1
    gathered = w.gather(root=0)  # the whole field as NumPy on rank 0, None elsewhere
    assert np.array_equal(gathered, field) if rank == 0 else gathered is None
    if rank == 0:
        print(f"python_dist: OK on {runtime.size} rank(s), {comm.size} device(s), "
              f"{comm.backend_description}")


if __name__ == "__main__":
    # One scratch folder for every rank (rank 0 makes it), removed at the end.
    scratch = MPI.COMM_WORLD.bcast(tempfile.mkdtemp() if MPI.COMM_WORLD.rank == 0 else None)
    try:
        main(scratch)  # Skein's objects go when main() returns, before mpi4py ends MPI
    finally:
        MPI.COMM_WORLD.Barrier()
        if MPI.COMM_WORLD.rank == 0:
            shutil.rmtree(scratch)
