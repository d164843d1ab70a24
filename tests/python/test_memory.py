# SPDX-License-Identifier: BSD-3-Clause
"""Memory pools: DeviceMemoryPool's reuse and statistics, Array.empty(allocator=), the queue's own
pool and Context.array_pool, on every backend (the `queue` fixture)."""

import gc

import numpy
import pytest

import skein


def test_pool_reuses_blocks_and_counts(queue):
    pool = skein.DeviceMemoryPool(queue.context)
    a = skein.Array.empty(queue, 1000, numpy.float32, allocator=pool)
    st = pool.statistics
    assert (st.active_blocks, st.held_blocks, st.active_bytes) == (1, 0, 4000)
    a.set(numpy.arange(1000, dtype=numpy.float32))
    numpy.testing.assert_array_equal(a.get(), numpy.arange(1000))
    ptr_bytes = pool.managed_bytes()
    del a
    gc.collect()
    assert (pool.active_blocks, pool.held_blocks) == (0, 1)
    b = skein.Array.zeros(queue, 990, numpy.float32, allocator=pool)  # same bin: reused
    assert pool.managed_bytes() == ptr_bytes and pool.held_blocks == 0
    numpy.testing.assert_array_equal(b.get(), numpy.zeros(990))
    del b
    gc.collect()
    pool.free_held()
    assert pool.managed_bytes() == 0 and pool.held_blocks == 0
    assert skein.DeviceMemoryPool.alloc_size(skein.DeviceMemoryPool.bin_number(1000)) >= 1000


def test_pool_limit_raises_memory_error_then_works(queue):
    pool = skein.DeviceMemoryPool(queue.context)
    pool.set_limit(queue.device_idxs[0], 4096)
    assert pool.limit(queue.device_idxs[0]) == 4096
    with pytest.raises(skein.MemoryError):
        pool.empty(queue, 100000, numpy.float32)
    small = pool.empty(queue, 10, numpy.float32)
    small.set(numpy.ones(10, numpy.float32))
    numpy.testing.assert_array_equal(small.get(), numpy.ones(10))
    pool.clear_limit(queue.device_idxs[0])
    assert pool.limit(queue.device_idxs[0]) is None


def test_wrong_allocator_is_refused(queue):
    with pytest.raises(skein.LogicError):
        skein.Array.empty(queue, 10, numpy.float32, allocator="pool")


def test_array_pool_of_the_queue(queue):
    pool = skein.temporaries_pool(queue)
    pool.free_held()
    context = queue.context
    assert context.array_pool
    x = skein.Array.from_host(queue, numpy.arange(256, dtype=numpy.float32))
    before = pool.statistics.active_blocks
    y = x.copy()
    assert pool.statistics.active_blocks == before + 1  # the result came from the queue's pool
    del y
    gc.collect()
    held = pool.held_blocks
    assert held >= 1
    context.array_pool = False
    try:
        z = x.copy()
        assert pool.statistics.active_blocks == before  # a plain allocation
        numpy.testing.assert_array_equal(z.get(), numpy.arange(256))
    finally:
        context.array_pool = True
