# SPDX-License-Identifier: BSD-3-Clause
"""skein.hdf5.File and skein.CheckpointManager from every rank: round trips into other layouts,
attributes, h5py (which shares no code with Skein) reading the files; without HDF5 in Skein, the
clean error."""
import os

import numpy as np
import pytest
from mpi4py import MPI

import skein

WORLD = MPI.COMM_WORLD
HDF5 = skein.hdf5.available()
needs_hdf5 = pytest.mark.skipif(not HDF5, reason="this Skein was built without HDF5")


def values(seed, shape, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@needs_hdf5
def test_hdf5_round_trip_read_by_h5py(comm, rng_seed, shared_tmp):
    h5py = pytest.importorskip("h5py")
    path = os.path.join(shared_tmp, "fields.h5")
    host = values(rng_seed, (9, 4))
    ghost = values(rng_seed + 1, (5, 6), np.float32)
    a = skein.DistArray(comm, (9, 4), np.float64, counts=[0] * (comm.size - 1) + [9])
    a.scatter(host if WORLD.rank == 0 else None)
    g = skein.GridArray(comm, (5, 6), np.float32, halo=1)
    g.scatter(ghost if WORLD.rank == 0 else None)
    with skein.hdf5.File.create(comm, path) as f:
        f.write("fields/a", a, step=3, time=0.25, attributes={"note": "x", "ks": [1, 2]})
        f.write("g", g, checksum=False)
        f.write_host("scalar", np.array(7.5))
        f.set_attribute("/", "steps", 100)
        f.set_attribute("g", "lambda", 0.5)
    # Read back into other layouts.
    with skein.hdf5.File.open(comm, path) as f:
        assert f.datasets() == ["fields/a", "g", "scalar"]
        info = f.info("fields/a")
        assert (info.shape, info.dtype, info.step, info.time) == ((9, 4), np.float64, 3, 0.25)
        assert info.attributes["note"] == "x" and info.attributes["ks"] == [1, 2]
        b = skein.DistArray(comm, (9, 4), np.float64)  # even blocks this time
        f.read("fields/a", b)
        h = skein.GridArray(comm, (5, 6), np.float32, grid=[1, comm.size])
        f.read("g", h)
        assert f.attribute("/", "steps") == 100 and f.attribute("g", "missing") is None
        np.testing.assert_array_equal(f.read_host("scalar"), np.array(7.5))
        assert f.exists("g") and not f.exists("nothing")
    np.testing.assert_array_equal(b.all_gather(), host)
    gathered = h.gather(root=0)
    if WORLD.rank == 0:
        np.testing.assert_array_equal(gathered, ghost)
        with h5py.File(path, "r") as f:
            np.testing.assert_array_equal(f["fields/a"][...], host)
            np.testing.assert_array_equal(f["g"][...], ghost)
            assert f.attrs["steps"] == 100 and f["g"].attrs["lambda"] == 0.5
    WORLD.barrier()


@needs_hdf5
def test_hdf5_errors_then_the_right_call(comm, shared_tmp):
    path = os.path.join(shared_tmp, "e.h5")
    with skein.hdf5.File.create(comm, path) as f:
        f.write("a", skein.DistArray(comm, (4,), np.float64))
        with pytest.raises(skein.LogicError):
            f.read("a", skein.DistArray(comm, (5,), np.float64))  # another shape
        with pytest.raises(skein.Error):
            f.write("a", skein.DistArray(comm, (4,), np.float64))  # exists, no overwrite
        with pytest.raises(skein.LogicError, match="option"):
            f.write("b", skein.DistArray(comm, (4,), np.float64), chunks=2)
        f.write("a", skein.DistArray(comm, (4,), np.float64), overwrite=True)
        assert f.datasets() == ["a"]
    with pytest.raises(skein.Error):
        skein.hdf5.File.open(comm, os.path.join(shared_tmp, "missing.h5"))


@needs_hdf5
def test_checkpoint_restart_on_another_layout(comm, rng_seed, shared_tmp):
    directory = os.path.join(shared_tmp, "checkpoints")
    host = values(rng_seed, (6, 3))
    u = skein.DistArray(comm, (6, 3), np.float64)
    g = skein.GridArray(comm, (4, 4), np.float64, halo=1)
    checkpoints = skein.CheckpointManager(comm, directory, keep=2)
    assert checkpoints.restore_latest({"u": u}) is None
    for step in (1, 2, 3):
        u.scatter(host * step if WORLD.rank == 0 else None)
        info = checkpoints.write(step, 0.5 * step, {"u": u, "g": g}, attributes={"dt": 0.5})
    assert info.step == 3 and info.ranks == WORLD.size
    assert info.arrays["u"][0] == (6, 3)
    assert [c.step for c in checkpoints.list()] == [2, 3]  # keep=2
    # Restored into another row split and another process grid.
    v = skein.DistArray(comm, (6, 3), np.float64, counts=[6] + [0] * (comm.size - 1))
    w = skein.GridArray(comm, (4, 4), np.float64, grid=[comm.size, 1])
    restored = checkpoints.restore_latest({"u": v, "g": w})
    assert restored.step == 3 and restored.time == 1.5 and restored.attributes["dt"] == 0.5
    np.testing.assert_array_equal(v.all_gather(), host * 3)
    older = checkpoints.restore(checkpoints.list()[0], {"u": v})
    assert older.step == 2
    np.testing.assert_array_equal(v.all_gather(), host * 2)
    with pytest.raises(skein.LogicError):
        checkpoints.restore_latest({"u": skein.DistArray(comm, (7, 3), np.float64)})


@pytest.mark.skipif(HDF5, reason="this Skein has HDF5")
def test_without_hdf5_the_error_says_so(comm, shared_tmp):
    with pytest.raises(skein.Error, match="HDF5"):
        skein.hdf5.File.create(comm, os.path.join(shared_tmp, "x.h5"))
