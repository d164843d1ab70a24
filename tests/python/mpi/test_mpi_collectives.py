# SPDX-License-Identifier: BSD-3-Clause
"""skein.Runtime adopting mpi4py's communicator, and skein.Communicator's collectives on
skein.Array (one per local device), each against a NumPy reference computed on every rank from
the same seed; wrong calls raise skein.LogicError on every rank, and the next call works."""
import numpy as np
import pytest
from mpi4py import MPI

import skein

WORLD = MPI.COMM_WORLD


def member_data(seed, members, n, dtype):
    """Every member's send array, the same on every rank."""
    rng = np.random.default_rng(seed)
    return [rng.integers(-9, 10, size=n).astype(dtype) for _ in range(members)]


def local_arrays(comm, queue, values):
    """skein.Arrays of this rank's members, values[member] on each member's device."""
    return [skein.Array.from_host(queue, values[comm.rank_of(l)], device_idx=comm.device_idx(l))
            for l in range(comm.local_size)]


def test_runtime_adopts_mpi4py(runtime, comm):
    assert (runtime.rank, runtime.size) == (WORLD.rank, WORLD.size)
    assert runtime.uses_mpi and not runtime.initialised_mpi
    assert len(runtime.devices) == comm.local_size >= 1
    assert runtime.queue is runtime.queue
    assert runtime.comm.Get_size() == WORLD.size  # Skein's own duplicate, as mpi4py's
    sizes = WORLD.allgather(comm.local_size)
    assert comm.size == sum(sizes)
    assert [comm.rank_of(l) for l in range(comm.local_size)] == list(
        range(sum(sizes[:WORLD.rank]), sum(sizes[:WORLD.rank + 1])))


@pytest.mark.parametrize("op", ["sum", "prod", "min", "max"])
def test_all_reduce(comm, queue, rng_seed, op):
    values = member_data(rng_seed, comm.size, 5, np.float64)
    expected = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max}[op](values, axis=0)
    send = local_arrays(comm, queue, values)
    recv = [skein.Array.zeros(queue, 5, np.float64, device_idx=a.device_idx) for a in send]
    events = comm.all_reduce(queue, send, recv, op=op)
    assert len(events) == comm.local_size
    for r in recv:
        np.testing.assert_array_equal(r.get(), expected)
    comm.all_reduce(queue, send, op=skein.ReduceOp.max)  # in place, with the enum
    for s in send:
        np.testing.assert_array_equal(s.get(), np.max(values, axis=0))


def test_all_gather_broadcast_reduce(comm, queue, rng_seed):
    values = member_data(rng_seed, comm.size, 3, np.int32)
    send = local_arrays(comm, queue, values)
    gathered = [skein.Array.empty(queue, 3 * comm.size, np.int32, device_idx=a.device_idx)
                for a in send]
    comm.all_gather(queue, send, gathered)
    for g in gathered:
        np.testing.assert_array_equal(g.get(), np.concatenate(values))

    root = comm.size - 1
    data = local_arrays(comm, queue, values)
    comm.broadcast(queue, data, root=root)
    for d in data:
        np.testing.assert_array_equal(d.get(), values[root])

    out = [skein.Array.zeros(queue, 3, np.int32, device_idx=a.device_idx) for a in send]
    comm.reduce(queue, send, out, op="sum", root=0)
    for l, o in enumerate(out):
        expected = np.sum(values, axis=0) if comm.rank_of(l) == 0 else np.zeros(3, np.int32)
        np.testing.assert_array_equal(o.get(), expected)


def test_reduce_scatter_and_all_to_all(comm, queue, rng_seed):
    n = 2
    values = member_data(rng_seed, comm.size, n * comm.size, np.float32)
    send = local_arrays(comm, queue, values)
    recv = [skein.Array.zeros(queue, n, np.float32, device_idx=a.device_idx) for a in send]
    comm.reduce_scatter(queue, send, recv, op="sum")
    total = np.sum(values, axis=0)
    for l, r in enumerate(recv):
        m = comm.rank_of(l)
        np.testing.assert_array_equal(r.get(), total[m * n:(m + 1) * n])

    out = [skein.Array.zeros(queue, n * comm.size, np.float32, device_idx=a.device_idx)
           for a in send]
    comm.all_to_all(queue, send, out)
    for l, o in enumerate(out):
        m = comm.rank_of(l)
        expected = np.concatenate([values[j][m * n:(m + 1) * n] for j in range(comm.size)])
        np.testing.assert_array_equal(o.get(), expected)


def test_send_recv_ring_in_a_group(comm, queue):
    # Every member sends its number to the next member around the ring, in one group.
    size = comm.size
    if size < 2:
        pytest.skip("a ring needs two members (a member cannot send to itself)")
    send = [skein.Array.from_host(queue, np.full(4, comm.rank_of(l), np.int64),
                                  device_idx=comm.device_idx(l)) for l in range(comm.local_size)]
    recv = [skein.Array.zeros(queue, 4, np.int64, device_idx=comm.device_idx(l))
            for l in range(comm.local_size)]
    with comm.group():
        for l in range(comm.local_size):
            m = comm.rank_of(l)
            comm.send(queue, send[l], (m + 1) % size, local_device=l)
            comm.recv(queue, recv[l], (m - 1) % size, local_device=l)
    for l in range(comm.local_size):
        np.testing.assert_array_equal(recv[l].get(), np.full(4, (comm.rank_of(l) - 1) % size))
    comm.barrier(queue)


def test_split(runtime, comm, queue):
    half = comm.split(color=WORLD.rank % 2, key=-WORLD.rank)
    ranks = [r for r in range(WORLD.size) if r % 2 == WORLD.rank % 2]
    sizes = WORLD.allgather(comm.local_size)
    assert half.size == sum(sizes[r] for r in ranks)
    ones = [skein.Array.from_host(queue, np.ones(2), device_idx=half.device_idx(l))
            for l in range(half.local_size)]
    half.all_reduce(queue, ones)
    np.testing.assert_array_equal(ones[0].get(), np.full(2, half.size))


def test_mismatched_sizes_raise_on_every_rank(runtime):
    # A communicator and a queue of the test's own: over NCCL a mismatch aborts the communicator
    # and its queue keeps raising (the next calls say so; new ones go on), and the session's must
    # stay usable for the other tests.
    comm, queue = skein.Communicator(runtime), skein.Queue(runtime.context)
    n = 4 if WORLD.rank == 0 else 5
    send = [skein.Array.zeros(queue, n, np.float64, device_idx=comm.device_idx(l))
            for l in range(comm.local_size)]
    # Wrong calls every rank sees alike are refused before anything moves.
    with pytest.raises(skein.LogicError):
        comm.broadcast(queue, send, root=comm.size)
    with pytest.raises(skein.LogicError, match="op"):
        comm.all_reduce(queue, send, op="median")
    if WORLD.size > 1:
        # The MPI backend raises in the call; over NCCL the call is enqueued and the agreement
        # check's verdict comes with the first host completion: then, before any value is read.
        with pytest.raises(skein.LogicError, match="all_reduce"):
            comm.all_reduce(queue, send)
            queue.synchronize()
        if comm.backend == "nccl":
            with pytest.raises(skein.Error, match="aborted"):
                send[0].get()
            comm, queue = skein.Communicator(runtime), skein.Queue(runtime.context)
    # The same call with agreeing sizes works.
    ok = [skein.Array.from_host(queue, np.ones(3), device_idx=comm.device_idx(l))
          for l in range(comm.local_size)]
    comm.all_reduce(queue, ok)
    for a in ok:
        np.testing.assert_array_equal(a.get(), np.full(3, comm.size))


def test_zero_elements(comm, queue):
    send = [skein.Array.zeros(queue, 0, np.float32, device_idx=comm.device_idx(l))
            for l in range(comm.local_size)]
    comm.all_reduce(queue, send)
    assert send[0].get().shape == (0,)


def test_a_group_ends_when_its_block_raises(comm, queue):
    # A send to oneself is refused inside the group; the group still ends, and the next
    # collective runs and gives the right sum.
    one = [skein.Array.from_host(queue, np.ones(3), device_idx=comm.device_idx(l))
           for l in range(comm.local_size)]
    with pytest.raises(skein.LogicError, match="itself"):
        with comm.group():
            comm.send(queue, one[0], comm.rank_of(0), local_device=0)
    comm.all_reduce(queue, one)
    for a in one:
        np.testing.assert_array_equal(a.get(), np.full(3, float(comm.size)))
