# SPDX-License-Identifier: BSD-3-Clause
"""skein.DistArray (row blocks), skein.GridArray (process grids) and skein.dist's operations,
each against NumPy on the global array, which every rank computes from the same seed: uneven
blocks, members without rows, one row, halos, C and Fortran order, errors seen on the root only."""
import numpy as np
import pytest
from mpi4py import MPI

import skein

WORLD = MPI.COMM_WORLD


def global_values(seed, shape, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return rng.integers(-50, 50, size=shape).astype(dtype)


def uneven_counts(members, rows):
    """Member 0 owns nothing, member 1 one row, the rest share what is left (uneven)."""
    if members == 1:
        return [rows]
    counts = [0, 1] + [0] * (members - 2)
    rest = rows - 1
    for m in range(2, members):
        counts[m] = rest // (members - 2) + (1 if m - 2 < rest % (members - 2) else 0)
    if members == 2:
        counts[1] = rows
    return counts


@pytest.mark.parametrize("split", ["even", "counts", "weights"])
def test_dist_array_scatter_gather(comm, rng_seed, split):
    host = global_values(rng_seed, (7, 3))
    kwargs = {"even": {}, "counts": {"counts": uneven_counts(comm.size, 7)},
              "weights": {"weights": [1.0 + m for m in range(comm.size)]}}[split]
    a = skein.DistArray(comm, (7, 3), np.float64, **kwargs)
    a.scatter(host if WORLD.rank == 0 else None, root=0)
    begin, end = a.rank_rows
    np.testing.assert_array_equal(a.gather_local(), host[begin:end])
    for l in range(a.local_size):
        b, e = a.local_rows(l)
        np.testing.assert_array_equal(a.local(l).get(), host[b:e])
    root = WORLD.size - 1
    gathered = a.gather(root=root)
    if WORLD.rank == root:
        np.testing.assert_array_equal(gathered, host)
    else:
        assert gathered is None
    np.testing.assert_array_equal(a.all_gather(), host)
    a.scatter_local(host[begin:end] * 2)
    np.testing.assert_array_equal(a.all_gather(), host * 2)


def test_one_row_and_members_without_rows(comm):
    # One row over every member: all but one own nothing.
    a = skein.DistArray(comm, (1,), np.int32)
    a.scatter(np.array([42], np.int32) if WORLD.rank == 0 else None)
    np.testing.assert_array_equal(a.all_gather(), [42])
    assert skein.dist.sum(a) == 42
    empty = skein.DistArray(comm, (0, 4), np.float32)
    assert empty.all_gather().shape == (0, 4)
    assert skein.dist.sum(empty) == 0


def test_halo_exchange_periodic(comm, rng_seed):
    rows = 2 * comm.size + 1
    host = global_values(rng_seed, (rows, 2))
    a = skein.DistArray(comm, (rows, 2), np.float64, halo=1, periodic=True)
    a.scatter(host if WORLD.rank == 0 else None)
    a.exchange_halos()
    for l in range(a.local_size):
        b, e = a.local_rows(l)
        expected = host[np.arange(b - 1, e + 1) % rows]
        np.testing.assert_array_equal(a.local_with_halo(l).get(), expected)


def test_reductions_and_elementwise(comm, rng_seed):
    shape = (comm.size * 3 + 2, 4)
    x_host = global_values(rng_seed, shape)
    y_host = global_values(rng_seed + 1, shape)
    counts = uneven_counts(comm.size, shape[0])
    x, y, out = (skein.DistArray(comm, shape, np.float64, counts=counts) for _ in range(3))
    x.scatter(x_host if WORLD.rank == 0 else None)
    y.scatter(y_host if WORLD.rank == 0 else None)
    for det in (False, True):
        assert skein.dist.sum(x, deterministic=det) == x_host.sum()
        assert skein.dist.min(x, deterministic=det) == x_host.min()
        assert skein.dist.max(x, deterministic=det) == x_host.max()
        assert skein.dist.dot(x, y, deterministic=det) == np.sum(x_host * y_host)
    assert skein.dist.nrm2(x) == pytest.approx(np.linalg.norm(x_host), rel=1e-14)
    assert skein.dist.dots([(x, y), (x, x)]) == [np.sum(x_host * y_host), np.sum(x_host**2)]
    assert skein.dist.sums([x, y]) == [x_host.sum(), y_host.sum()]
    pending = skein.dist.begin_dots([(y, y)])
    assert pending.wait() == [np.sum(y_host**2)] and pending.waited
    skein.dist.axpy(2.0, x, y, out)
    np.testing.assert_array_equal(out.all_gather(), 2 * x_host + y_host)
    skein.dist.scale(-0.5, x, out)
    np.testing.assert_array_equal(out.all_gather(), -0.5 * x_host)
    skein.dist.fill(out, 3)
    np.testing.assert_array_equal(out.all_gather(), np.full(shape, 3.0))
    skein.dist.copy(y, out)
    np.testing.assert_array_equal(out.all_gather(), y_host)


def poisson_fields(comm, rng_seed):
    """x (halo 1), y and out as DistArrays of one global (rows, cols) shape, x and y scattered from
    seeded host values; the 5-point Poisson stencil with p . w (zero outside the grid); and the
    host's w = A x."""
    rows, cols = 2 * comm.size + 3, 5
    hx = global_values(rng_seed, (rows, cols))
    hy = global_values(rng_seed + 1, (rows, cols))
    x = skein.DistArray(comm, (rows, cols), np.float64, halo=1)
    y, out = (skein.DistArray(comm, (rows, cols), np.float64) for _ in range(2))
    x.scatter(hx if WORLD.rank == 0 else None)
    y.scatter(hy if WORLD.rank == 0 else None)
    apply = skein.StencilKernel(
        "float64 p", "float64 w",
        "w = 4 * p - (gidx[0] > 0 ? p(-1, 0) : 0.0) - (gidx[0] + 1 < gshape[0] ? p(1, 0) : 0.0)"
        " - (gidx[1] > 0 ? p(0, -1) : 0.0) - (gidx[1] + 1 < gshape[1] ? p(0, 1) : 0.0)",
        name="py_dv_poisson", reduction=skein.StencilReduction(map="p * w", dtype="float64"))
    padded = np.pad(hx, 1)
    hw = (4 * hx - padded[:-2, 1:-1] - padded[2:, 1:-1] - padded[1:-1, :-2] - padded[1:-1, 2:])
    return hx, hy, x, y, out, apply, hw


def test_values_on_the_devices(comm, rng_seed):
    """dots/sums/stencil_reduce/update_and_reduce _to_devices: one skein.Array per local member,
    equal everywhere, read by the next kernels through raw parameters; the halo exchange
    overlapped; a wrong per-member list raises on every rank and the next right call works."""
    hx, hy, x, y, out, apply, hw = poisson_fields(comm, rng_seed)
    vals = skein.dist.dots_to_devices([(x, y), (x, x)])
    assert len(vals) == x.local_size
    for v in vals:
        np.testing.assert_array_equal(v.get(), [np.sum(hx * hy), np.sum(hx * hx)])
    sums = skein.dist.sums_to_devices([y])
    assert [s.get()[0] for s in sums] == [hy.sum()] * x.local_size
    # out = vals[0] * y + vals[1] * 0, the values read on the devices.
    scale = skein.ElementwiseKernel("raw float64 a, float64 y", "float64 o", "o = a[0] * y",
                                    name="py_dv_scale")
    skein.dist.elementwise(scale, [vals, y, out])
    np.testing.assert_array_equal(out.all_gather(), np.sum(hx * hy) * hy)
    # A stencil with p . w on the devices, p's halos exchanged on a second queue meanwhile.
    halo_queue = skein.Queue(x.queue.context, x.queue.device_idxs, priority="high")
    overlap = skein.dist.HaloOverlap(halo_queue, [x])
    pw = skein.dist.stencil_reduce_to_devices(apply, [x, out], overlap=overlap)
    np.testing.assert_array_equal(out.all_gather(), hw)
    assert [v.get()[0] for v in pw] == [np.sum(hx * hw)] * x.local_size
    # The fused update with alpha = vals[1] / pw read on the devices.
    update = skein.FusedKernel("raw float64 v, raw float64 q, float64 w", "float64 y",
                               "y -= (v[1] / q[0]) * w", "float64 yy", "y * y", "a + b", "0",
                               name="py_dv_update")
    yy = skein.dist.update_and_reduce_to_devices(update, [vals, pw, out, y])
    alpha = np.sum(hx * hx) / np.sum(hx * hw)
    want = hy - alpha * hw
    np.testing.assert_allclose(y.all_gather(), want, rtol=1e-14, atol=1e-12)
    for v in yy:
        assert v.get()[0] == pytest.approx(np.sum(want * want), rel=1e-13)
    # One array too many: refused on every rank, then the right call works.
    with pytest.raises(skein.errors.LogicError, match="per-member"):
        skein.dist.elementwise(scale, [vals + [vals[0]], y, out])
    skein.dist.elementwise(scale, [sums, x, out])
    np.testing.assert_array_equal(out.all_gather(), hy.sum() * hx)


def test_member_values_combined_once(comm, rng_seed):
    """update_and_reduce_members and stencil_reduce_members leave each member's own value in a
    slot (checked against the member's rows before the combine), combine_members gives every
    member the totals in one collective; a wrong list raises on every rank, then the right call
    works."""
    hx, hy, x, y, out, apply, hw = poisson_fields(comm, rng_seed)
    x.exchange_halos()
    update = skein.FusedKernel("float64 c", "float64 y", "y *= c", "float64 yy", "y * y", "a + b",
                               "0", name="py_mv_scale")
    into = [skein.Array.zeros(x.queue, (2,), np.float64, device_idx=x.local(i).device_idx)
            for i in range(x.local_size)]
    skein.dist.update_and_reduce_members(update, [0.5, y], into, 0)
    skein.dist.stencil_reduce_members(apply, [x, out], into, 1)
    hy2 = 0.5 * hy
    for i, v in enumerate(into):
        b = x.local_rows(i)
        np.testing.assert_allclose(v.get(), [np.sum(hy2[b[0]:b[1]] ** 2),
                                             np.sum(hx[b[0]:b[1]] * hw[b[0]:b[1]])], rtol=1e-13)
    skein.dist.combine_members(x, into, "sum")
    for v in into:
        np.testing.assert_allclose(v.get(), [np.sum(hy2 ** 2), np.sum(hx * hw)], rtol=1e-13)
    np.testing.assert_array_equal(out.all_gather(), hw)
    with pytest.raises(skein.errors.LogicError, match="per-member"):
        skein.dist.combine_members(x, into + [into[0]])
    skein.dist.combine_members(x, into, "max")
    for v in into:
        np.testing.assert_allclose(v.get(), [np.sum(hy2 ** 2), np.sum(hx * hw)], rtol=1e-13)


def test_member_values_combined_on_a_second_queue(comm, rng_seed):
    """combine_members(..., on=queue) combines on that queue while the arrays' queue runs an
    update; once the queue waits for the returned events the values are the totals and the update
    is right; a queue of another context raises on every rank, then the right call works."""
    hx, hy, x, y, out, apply, hw = poisson_fields(comm, rng_seed)
    update = skein.FusedKernel("float64 c", "float64 y", "y *= c", "float64 yy", "y * y", "a + b",
                               "0", name="py_mv_scale2")
    scale = skein.ElementwiseKernel("double x", "double z", "z = 3 * x", name="py_mv_triple",
                                    spare_compute_units=2)
    devices = [x.local(i).device_idx for i in range(x.local_size)]
    into = [skein.Array.zeros(x.queue, (1,), np.float64, device_idx=d) for d in devices]
    skein.dist.update_and_reduce_members(update, [0.5, y], into, 0)
    side = skein.Queue(x.queue.context, devices)
    events = skein.dist.combine_members(x, into, "sum", on=side)
    assert len(events) == x.local_size
    skein.dist.elementwise(scale, [x, out])  # on the arrays' queue, alongside the combine
    for e, d in zip(events, devices):
        x.queue.wait_for(e, d)
    for v in into:
        np.testing.assert_allclose(v.get(), [np.sum((0.5 * hy) ** 2)], rtol=1e-13)
    np.testing.assert_array_equal(out.all_gather(), 3 * hx)
    other = skein.Queue(skein.Context.from_devices([x.queue.context.device(devices[0])]))
    with pytest.raises(skein.errors.LogicError, match="another context"):
        skein.dist.combine_members(x, into, "max", on=other)
    assert skein.dist.combine_members(x, into, "max") is None
    for v in into:
        np.testing.assert_allclose(v.get(), [np.sum((0.5 * hy) ** 2)], rtol=1e-13)


def test_replicated_and_gemv(comm, rng_seed):
    a_host = global_values(rng_seed, (5, 3))
    x_host = global_values(rng_seed + 1, (3,))
    a = skein.DistArray(comm, (5, 3), np.float64)
    a.scatter(a_host if WORLD.rank == 0 else None)
    x = skein.ReplicatedArray(comm, (3,), np.float64)
    x.broadcast_from_host(x_host if WORLD.rank == 0 else None, root=0)
    for l in range(x.local_size):
        np.testing.assert_array_equal(x.get(l), x_host)
    y = skein.DistArray(comm, (5,), np.float64)
    skein.dist.gemv(1.0, a, x, 0.0, y)
    np.testing.assert_allclose(y.all_gather(), a_host @ x_host, rtol=1e-14)
    full = skein.dist.replicate(a)
    np.testing.assert_array_equal(full.get(), a_host)


def test_root_errors_raise_on_every_rank(comm, rng_seed):
    host = global_values(rng_seed, (4, 2))
    a = skein.DistArray(comm, (4, 2), np.float64)
    # Only the root can see that its array is wrong; every rank raises, none hangs.
    wrong = host.T.copy() if WORLD.rank == 0 else None  # same size, wrong shape
    with pytest.raises(skein.LogicError, match="scatter"):
        a.scatter(wrong)
    wrong = host.astype(np.int64) if WORLD.rank == 0 else None  # same size, wrong dtype
    with pytest.raises(skein.LogicError, match="scatter"):
        a.scatter(wrong)
    with pytest.raises(skein.LogicError):
        a.gather(root=WORLD.size)
    # A mismatched layout: another shape on rank 0.
    if WORLD.size > 1:
        with pytest.raises(skein.LogicError):
            skein.DistArray(comm, (5 if WORLD.rank == 0 else 4, 2), np.float64)
    # Then the right call, and the data read back.
    a.scatter(host if WORLD.rank == 0 else None)
    np.testing.assert_array_equal(a.all_gather(), host)


def test_grid_array_halos_and_orders(comm, rng_seed):
    shape = (6, 5)
    host = global_values(rng_seed, shape + (2,))
    g = skein.GridArray(comm, shape, np.float64, components=2, halo=1, stencil="box",
                        lower="periodic", upper="periodic")
    assert g.shape == shape + (2,)
    assert int(np.prod(g.layout.process_grid())) == comm.size
    g.scatter(host if WORLD.rank == 0 else None)
    gathered = g.gather(root=0)
    if WORLD.rank == 0:
        np.testing.assert_array_equal(gathered, host)
    g.exchange_halos()
    for l in range(g.local_size):
        (oy, ox), (ey, ex) = g.local_block(l)
        np.testing.assert_array_equal(g.local(l).get(), host[oy:oy + ey, ox:ox + ex])
        if ey == 0 or ex == 0:
            continue
        rows = np.arange(oy - 1, oy + ey + 1) % shape[0]
        cols = np.arange(ox - 1, ox + ex + 1) % shape[1]
        np.testing.assert_array_equal(g.local_with_halo(l).get(), host[np.ix_(rows, cols)])
    assert skein.dist.sum(g) == host.sum()
    assert skein.dist.dot(g, g, deterministic=True) == np.sum(host**2)

    # Fortran order: the same memory seen as the reversed shape.
    f = skein.GridArray(comm, (5, 6), np.int32, order="F", halo=(1, 0), upper=[7, "open"])
    assert f.layout.global_shape("F") == (5, 6) and f.shape == (6, 5)
    fhost = np.asfortranarray(global_values(rng_seed + 1, (5, 6), np.int32))
    f.scatter(fhost if WORLD.rank == 0 else None, order="F")
    out = f.gather(root=0, order="F")
    if WORLD.rank == 0:
        assert out.shape == (5, 6) and out.flags.f_contiguous
        np.testing.assert_array_equal(out, fhost)
    f.exchange_halos()
    for l in range(f.local_size):
        (oy, ox), (ey, ex) = f.local_block(l)
        assert f.local_block(l, order="F") == ((ox, oy), (ex, ey))
        if ey > 0 and ex > 0 and ox + ex == 5:
            # Beyond the upper side of the first Fortran axis (the C array's last): 7.
            np.testing.assert_array_equal(f.local_with_halo(l).get()[:, -1], np.full(ey, 7))

    # Another process grid: the same global array after redistribute.
    other = skein.GridArray(comm, shape, np.float64, components=2, grid=[comm.size, 1])
    skein.redistribute(g, other)
    gathered = other.gather(root=0)
    if WORLD.rank == 0:
        np.testing.assert_array_equal(gathered, host)


def test_grid_errors(comm):
    with pytest.raises(skein.LogicError):
        skein.GridArray(comm, (4, 4), np.float64, grid=[comm.size + 1, 1])
    with pytest.raises(skein.LogicError, match="boundary"):
        skein.GridArray(comm, (4, 4), np.float64, lower="sticky")
    g = skein.GridArray(comm, (4, 4), np.float64)
    g.scatter(np.ones((4, 4)) if WORLD.rank == 0 else None)
    assert skein.dist.sum(g) == 16
