// SPDX-License-Identifier: BSD-3-Clause
#include "skein/memory_pool.hpp"

#include <map>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include "skein/detail/array_pool.hpp"
#include "skein/detail/errors.hpp"
#include "skein/detail/front.hpp"
#include "skein/detail/impl_access.hpp"
#include "skein/driver.hpp"

namespace skein {

namespace {

// PyCUDA's binning: a bin is the exponent of the size's top bit and the kMantissaBits bits below
// it. Sizes of one bin differ by less than 25%, and there are few bins (4 per power of two).
constexpr unsigned kMantissaBits = 2;
constexpr std::size_t kMantissaMask = (std::size_t{1} << kMantissaBits) - 1;

unsigned bit_log2(std::size_t v) {
  unsigned l = 0;
  while (v >>= 1) ++l;
  return l;
}

// Shifts left by `shift`, or right by -shift when it is negative.
std::size_t shift_by(std::size_t v, int shift) { return shift >= 0 ? v << shift : v >> -shift; }

// The shared part of both pools: bins of held blocks, the counts, and the out-of-memory retry.
// `Mem` is Buffer or HostBuffer; a key is (device index, the size a block was made for), with
// device 0 for host memory. A bin's vector may be empty (kept, so that a block going back and
// forth costs no allocation of the map's).
template <class Mem>
class PoolCore {
 public:
  using Key = std::pair<std::size_t, std::size_t>;
  using Make = std::function<Mem(std::size_t device_idx, std::size_t nbytes)>;

  PoolCore(const char* name, Make make) : name_(name), make_(std::move(make)) {}

  // A block for a request of `requested` bytes on `device`: the held block made for the smallest
  // size in [size, max_size] when there is one, else a new block of `size` bytes. Counts it
  // active. Returns it with its key (for give_back).
  std::pair<Mem, Key> take(std::size_t device, std::size_t size, std::size_t max_size,
                           std::size_t requested) {
    {
      std::lock_guard lock(mutex_);
      for (auto it = bins_.lower_bound(Key{device, size});
           it != bins_.end() && it->first.first == device && it->first.second <= max_size; ++it) {
        if (it->second.empty()) continue;
        Mem block = std::move(it->second.back());
        it->second.pop_back();
        --stats_.held_blocks;
        stats_.held_bytes -= block.size();
        ++stats_.active_blocks;
        stats_.active_bytes += requested;
        return {std::move(block), it->first};
      }
    }
    // Outside the lock: allocating may take long, and blocks may come back meanwhile.
    Mem block = make_with_retry(device, size);
    std::lock_guard lock(mutex_);
    ++stats_.active_blocks;
    stats_.active_bytes += requested;
    stats_.managed_bytes += block.size();
    return {std::move(block), Key{device, size}};
  }

  // Called when the last handle of an active block is gone: holds the block, or frees it when the
  // pool stopped holding or, in a pool that frees exported blocks (a queue's pool), when the
  // block's address was handed to the application (BufferAdapter::exported: work Skein does not
  // see may still use it, so it is never handed out again). Never throws (it runs in
  // destructors).
  void give_back(const Key& key, Mem&& block, std::size_t requested) noexcept {
    Mem to_free;  // freed after the lock is released
    bool exported = false;
    if constexpr (std::is_same_v<Mem, Buffer>) {
      exported = free_exported && block.adapter() && block.adapter()->exported();
    }
    {
      std::lock_guard lock(mutex_);
      --stats_.active_blocks;
      stats_.active_bytes -= requested;
      const std::size_t size = block.size();
      // Room in the block's bin first (what can throw: no memory to hold it, and it is freed
      // instead), then the move into it, which cannot throw once there is room.
      std::vector<Mem>* bin = nullptr;
      if (!stop_holding_ && !exported) {
        try {
          auto& b = bins_[key];
          if (b.size() == b.capacity()) b.reserve(std::max<std::size_t>(4, 2 * b.size()));
          bin = &b;
        } catch (...) {
        }
      }
      if (bin != nullptr) {
        bin->push_back(std::move(block));
        ++stats_.held_blocks;
        stats_.held_bytes += size;
      } else {
        stats_.managed_bytes -= size;
        to_free = std::move(block);
      }
    }
  }

  struct Freed {
    std::size_t blocks = 0;
    std::size_t bytes = 0;
  };
  // Frees the held blocks (of one device only, when `device` is given); says how many there were.
  Freed free_held(std::optional<std::size_t> device = std::nullopt) {
    std::vector<Mem> to_free;  // freed after the lock is released
    Freed freed;
    {
      std::lock_guard lock(mutex_);
      for (auto it = bins_.begin(); it != bins_.end();) {
        if (device && it->first.first != *device) {
          ++it;
          continue;
        }
        for (Mem& block : it->second) {
          freed.bytes += block.size();
          ++freed.blocks;
          to_free.push_back(std::move(block));
        }
        it = bins_.erase(it);
      }
      stats_.managed_bytes -= freed.bytes;
      stats_.held_blocks -= freed.blocks;
      stats_.held_bytes -= freed.bytes;
    }
    return freed;
  }

  void stop_holding() {
    {
      std::lock_guard lock(mutex_);
      stop_holding_ = true;
    }
    free_held();
  }

  MemoryPoolStatistics statistics() {
    std::lock_guard lock(mutex_);
    return stats_;
  }

 private:
  // As PyCUDA: out of memory, free what the pool holds and try once more.
  Mem make_with_retry(std::size_t device_idx, std::size_t nbytes) {
    try {
      return make_(device_idx, nbytes);
    } catch (const MemoryError& first) {
      const Freed freed = free_held();
      if (freed.blocks == 0) throw;
      try {
        return make_(device_idx, nbytes);
      } catch (const MemoryError& second) {
        ErrorInfo info = second.info();
        info.what += fmt::format(" (the {} had freed its {} held blocks, {}, and tried again)",
                                 name_, freed.blocks, format_bytes(freed.bytes));
        throw MemoryError(info, second.requested(), second.available());
      }
    }
  }

  const char* name_;
  Make make_;
  std::mutex mutex_;
  std::map<Key, std::vector<Mem>> bins_;
  MemoryPoolStatistics stats_;
  bool stop_holding_ = false;

 public:
  // Set once, before the pool is shared (queue_pool): exported blocks are freed, not held.
  bool free_exported = false;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// DeviceMemoryPool

// The pool's limits per device, and what its blocks hold there (counted by the blocks' owners, so
// that a block freed after its pool is gone still finds it).
struct PoolLimits {
  std::mutex mutex;
  std::map<std::size_t, std::size_t> limit;    // device index -> bytes
  std::map<std::size_t, std::size_t> managed;  // device index -> bytes of the pool's blocks
};

namespace {
// Owns one block the pool allocated; counts its bytes off when it goes.
struct CountedBlock {
  Buffer block;
  std::shared_ptr<PoolLimits> limits;
  std::size_t counted;
  CountedBlock(Buffer block, std::shared_ptr<PoolLimits> limits, std::size_t counted)
      : block(std::move(block)), limits(std::move(limits)), counted(counted) {}
  CountedBlock(const CountedBlock&) = delete;
  CountedBlock& operator=(const CountedBlock&) = delete;
  ~CountedBlock() {
    std::lock_guard lock(limits->mutex);
    limits->managed[block.device_idx()] -= counted;
  }
};
}  // namespace

// Requests of at least this many bytes in a queue's pool are not binned: see
// DeviceMemoryPool::State::size_class.
constexpr std::size_t kLargeRequest = std::size_t{1} << 20;
constexpr std::size_t kLargeGranule = std::size_t{64} << 10;

struct DeviceMemoryPool::State {
  State(Context context, Allocator base)
      : context(std::move(context)),
        limits(std::make_shared<PoolLimits>()),
        core("device memory pool",
             [this, base = std::move(base)](std::size_t device_idx, std::size_t nbytes) {
               return make_block(base, device_idx, nbytes);
             }) {}

  Buffer make_block(const Allocator& base, std::size_t device_idx, std::size_t nbytes) const {
    {
      // Reserved before allocating, so that threads allocating at once cannot pass the limit
      // together. Over the limit: a MemoryError, on which the pool frees its held blocks and
      // tries once more (PoolCore::make_with_retry).
      std::lock_guard lock(limits->mutex);
      std::size_t& managed = limits->managed[device_idx];
      if (auto it = limits->limit.find(device_idx);
          it != limits->limit.end() && (nbytes > it->second || managed > it->second - nbytes)) {
        const std::size_t left = managed < it->second ? it->second - managed : 0;
        throw MemoryError(
            ErrorInfo{.what = fmt::format("the pool's limit of {} on this device would be passed: "
                                          "its blocks hold {}, a block of {} was asked",
                                          format_bytes(it->second), format_bytes(managed),
                                          format_bytes(nbytes)),
                      .call = "DeviceMemoryPool::allocate",
                      .device = context.device(device_idx).description(),
                      .hint = "Raise the limit (DeviceMemoryPool::set_limit), drop arrays that "
                              "are no longer needed, or use smaller ones.",
                      .location = SKEIN_HERE},
            nbytes, left);
      }
      managed += nbytes;
    }
    Buffer block;
    try {
      block = base ? base(device_idx, nbytes) : Buffer::allocate(context, device_idx, nbytes);
    } catch (...) {
      std::lock_guard lock(limits->mutex);
      limits->managed[device_idx] -= nbytes;
      throw;
    }
    if (block.size() < nbytes || block.device_idx() != device_idx || block.empty() ||
        block.context_id() != detail::impl_of(context).get()) {
      {
        std::lock_guard lock(limits->mutex);
        limits->managed[device_idx] -= nbytes;
      }
      detail::raise_in(
          SKEIN_HERE, "DeviceMemoryPool::allocate",
          "The pool's base allocator must return a buffer of the pool's context, on "
          "the requested device, of at least the requested size.",
          "the base allocator returned {} bytes on device {}{} for a request of {} "
          "bytes on device {}",
          block.size(), block.device_idx(),
          block.context_id() == detail::impl_of(context).get() ? "" : " of another context", nbytes,
          device_idx);
    }
    std::shared_ptr<CountedBlock> counted;
    try {
      counted = std::make_shared<CountedBlock>(block, limits, nbytes);
    } catch (...) {
      std::lock_guard lock(limits->mutex);
      limits->managed[device_idx] -= nbytes;
      throw;
    }
    std::shared_ptr<detail::BufferAdapter> adapter(counted, block.adapter().get());
    return Buffer(context, std::move(adapter), device_idx, block.offset(), block.size());
  }

  // The size of a new block for a request, and the largest held block the request may take.
  // PyCUDA's bins: a block of the bin's largest size, reused for the bin's requests. A queue's
  // pool (large_exact) makes large requests (>= 1 MiB) blocks of their size rounded up to 64 KiB
  // instead, and lets them take a held block up to an eighth larger: a bin's quarter more on a
  // 20 GiB array would be 5 GiB that a code near the device's capacity had before the pool.
  // (A pool the application makes keeps PyCUDA's rules, bins and reuse of exported blocks
  // alike: it chose them.)
  std::pair<std::size_t, std::size_t> size_class(std::size_t nbytes) const {
    if (!large_exact || nbytes < kLargeRequest) {
      const std::size_t size = alloc_size(bin_number(nbytes));
      return {size, size};
    }
    const std::size_t size = (nbytes + kLargeGranule - 1) / kLargeGranule * kLargeGranule;
    return {size, size + size / 8};
  }

  Context context;
  std::shared_ptr<PoolLimits> limits;
  PoolCore<Buffer> core;
  bool large_exact = false;  // set once, before the pool is shared (queue_pool)
};

namespace {

// Owns an active device block. Buffers handed out point at the block's backend allocation but
// share ownership of this object (shared_ptr's aliasing constructor), so sub-regions, arrays and
// views keep it too, and the backends see their own allocation object. When the last of them
// goes, the block goes back to the pool.
struct PooledDeviceBlock {
  std::shared_ptr<DeviceMemoryPool::State> pool;
  PoolCore<Buffer>::Key key;
  Buffer block;
  std::size_t requested;

  PooledDeviceBlock(std::shared_ptr<DeviceMemoryPool::State> pool, PoolCore<Buffer>::Key key,
                    Buffer block, std::size_t requested)
      : pool(std::move(pool)), key(key), block(std::move(block)), requested(requested) {}
  PooledDeviceBlock(const PooledDeviceBlock&) = delete;
  PooledDeviceBlock& operator=(const PooledDeviceBlock&) = delete;
  ~PooledDeviceBlock() { pool->core.give_back(key, std::move(block), requested); }
};

}  // namespace

DeviceMemoryPool::DeviceMemoryPool(const Context& context, Allocator base)
    : state_(std::make_shared<State>(context, std::move(base))) {}

const Context& DeviceMemoryPool::context() const { return state_->context; }

Buffer DeviceMemoryPool::allocate(std::size_t device_idx, std::size_t nbytes) const {
  detail::check_device_idx(state_->context, device_idx, "DeviceMemoryPool::allocate");
  if (nbytes == 0) return Buffer::allocate(state_->context, device_idx, 0);
  const auto [size, max_size] = state_->size_class(nbytes);
  auto [block, key] = state_->core.take(device_idx, size, max_size, nbytes);
  std::shared_ptr<PooledDeviceBlock> owner;
  try {
    owner = std::make_shared<PooledDeviceBlock>(state_, key, std::move(block), nbytes);
  } catch (...) {
    // The block is counted active: hand it back as its owner would have.
    state_->core.give_back(key, std::move(block), nbytes);
    throw;
  }
  const Buffer& real = owner->block;
  std::shared_ptr<detail::BufferAdapter> adapter(owner, real.adapter().get());
  return Buffer(state_->context, std::move(adapter), device_idx, real.offset(), nbytes);
}

Allocator DeviceMemoryPool::allocator() const {
  return [pool = *this](std::size_t device_idx, std::size_t nbytes) {
    return pool.allocate(device_idx, nbytes);
  };
}

MemoryPoolStatistics DeviceMemoryPool::statistics() const { return state_->core.statistics(); }

void DeviceMemoryPool::set_limit(std::size_t device_idx, std::size_t bytes) const {
  detail::check_device_idx(state_->context, device_idx, "DeviceMemoryPool::set_limit");
  std::lock_guard lock(state_->limits->mutex);
  state_->limits->limit[device_idx] = bytes;
}

void DeviceMemoryPool::clear_limit(std::size_t device_idx) const {
  detail::check_device_idx(state_->context, device_idx, "DeviceMemoryPool::clear_limit");
  std::lock_guard lock(state_->limits->mutex);
  state_->limits->limit.erase(device_idx);
}

std::optional<std::size_t> DeviceMemoryPool::limit(std::size_t device_idx) const {
  detail::check_device_idx(state_->context, device_idx, "DeviceMemoryPool::limit");
  std::lock_guard lock(state_->limits->mutex);
  const auto it = state_->limits->limit.find(device_idx);
  if (it == state_->limits->limit.end()) return std::nullopt;
  return it->second;
}

std::size_t DeviceMemoryPool::managed_bytes(std::size_t device_idx) const {
  detail::check_device_idx(state_->context, device_idx, "DeviceMemoryPool::managed_bytes");
  std::lock_guard lock(state_->limits->mutex);
  const auto it = state_->limits->managed.find(device_idx);
  return it == state_->limits->managed.end() ? 0 : it->second;
}

void DeviceMemoryPool::set_limit_from_free_memory(double fraction) const {
  if (!(fraction > 0.0 && fraction <= 1.0)) {
    detail::raise_in(SKEIN_HERE, "DeviceMemoryPool::set_limit_from_free_memory",
                     "Pass a fraction of the free memory in (0, 1], e.g. 0.8.",
                     "the fraction {} is not in (0, 1]", fraction);
  }
  const Context& context = state_->context;
  for (std::size_t d = 0; d < context.num_devices(); ++d) {
    const MemoryInfo info = memory_info(context, d);
    const auto extra = static_cast<std::size_t>(static_cast<double>(info.free) * fraction);
    set_limit(d, managed_bytes(d) + extra);
  }
}
void DeviceMemoryPool::free_held() const { state_->core.free_held(); }
void DeviceMemoryPool::free_held(std::size_t device_idx) const {
  detail::check_device_idx(state_->context, device_idx, "DeviceMemoryPool::free_held");
  state_->core.free_held(device_idx);
}
void DeviceMemoryPool::stop_holding() const { state_->core.stop_holding(); }

std::uint32_t DeviceMemoryPool::bin_number(std::size_t nbytes) {
  if (nbytes == 0) return 0;
  const unsigned l = bit_log2(nbytes);
  const std::size_t shifted =
      shift_by(nbytes, static_cast<int>(kMantissaBits) - static_cast<int>(l));
  return static_cast<std::uint32_t>((std::size_t{l} << kMantissaBits) | (shifted & kMantissaMask));
}

std::size_t DeviceMemoryPool::alloc_size(std::uint32_t bin) {
  const int exponent = static_cast<int>(bin >> kMantissaBits);
  const std::size_t mantissa = bin & kMantissaMask;
  if (exponent >= static_cast<int>(sizeof(std::size_t) * 8)) {
    detail::raise_in(SKEIN_HERE, "DeviceMemoryPool::alloc_size",
                     "Use a bin that bin_number() returned.",
                     "bin {} is beyond the largest size ({} bits)", bin, sizeof(std::size_t) * 8);
  }
  const int shift = exponent - static_cast<int>(kMantissaBits);
  // The bin's largest size: its leading bits followed by ones.
  std::size_t ones = shift_by(1, shift);
  if (ones) ones -= 1;
  const std::size_t head = shift_by((std::size_t{1} << kMantissaBits) | mantissa, shift);
  return head | ones;
}

// ---------------------------------------------------------------------------------------------
// PageLockedMemoryPool

struct PageLockedMemoryPool::State {
  State(Context context, HostAllocator base)
      : context(std::move(context)),
        core("page-locked memory pool",
             [this, base = std::move(base)](std::size_t, std::size_t nbytes) {
               return make_block(base, nbytes);
             }) {}

  HostBuffer make_block(const HostAllocator& base, std::size_t nbytes) const {
    HostBuffer block = base ? base(nbytes) : HostBuffer::allocate(context, nbytes);
    if (block.size() < nbytes || block.data() == nullptr) {
      detail::raise_in(SKEIN_HERE, "PageLockedMemoryPool::allocate",
                       "The pool's base allocator must return a host buffer of at least the "
                       "requested size.",
                       "the base allocator returned {} bytes for a request of {} bytes",
                       block.size(), nbytes);
    }
    return block;
  }

  Context context;
  PoolCore<HostBuffer> core;
};

namespace {

// An active page-locked block: HostBuffers handed out hold this adapter, which shows the
// requested size and gives the block back to the pool when the last copy goes.
class PooledHostBlock final : public detail::HostBufferAdapter {
 public:
  PooledHostBlock(std::shared_ptr<PageLockedMemoryPool::State> pool, PoolCore<HostBuffer>::Key key,
                  HostBuffer block, std::size_t requested)
      : pool_(std::move(pool)), key_(key), block_(std::move(block)), requested_(requested) {}
  ~PooledHostBlock() override { pool_->core.give_back(key_, std::move(block_), requested_); }

  std::byte* data() const override { return block_.data(); }
  std::size_t size() const override { return requested_; }
  HostMemoryFlags flags() const override { return block_.flags(); }
  bool registered() const override { return block_.registered(); }
  const detail::ContextAdapter* owner() const override {
    return block_.adapter() ? block_.adapter()->owner() : nullptr;
  }

 private:
  std::shared_ptr<PageLockedMemoryPool::State> pool_;
  PoolCore<HostBuffer>::Key key_;
  HostBuffer block_;
  std::size_t requested_;
};

}  // namespace

PageLockedMemoryPool::PageLockedMemoryPool(const Context& context, HostAllocator base)
    : state_(std::make_shared<State>(context, std::move(base))) {}

const Context& PageLockedMemoryPool::context() const { return state_->context; }

HostBuffer PageLockedMemoryPool::allocate(std::size_t nbytes) const {
  if (nbytes == 0) return HostBuffer::allocate(state_->context, 0);
  const std::size_t size = DeviceMemoryPool::alloc_size(DeviceMemoryPool::bin_number(nbytes));
  auto [block, key] = state_->core.take(0, size, size, nbytes);
  std::shared_ptr<PooledHostBlock> owner;
  try {
    owner = std::make_shared<PooledHostBlock>(state_, key, std::move(block), nbytes);
  } catch (...) {
    state_->core.give_back(key, std::move(block), nbytes);
    throw;
  }
  return HostBuffer(std::move(owner));
}

HostAllocator PageLockedMemoryPool::allocator() const {
  return [pool = *this](std::size_t nbytes) { return pool.allocate(nbytes); };
}

MemoryPoolStatistics PageLockedMemoryPool::statistics() const { return state_->core.statistics(); }
void PageLockedMemoryPool::free_held() const { state_->core.free_held(); }
void PageLockedMemoryPool::stop_holding() const { state_->core.stop_holding(); }

namespace {

// The queue's pool, made on first use and then registered with its context (for trim_pools). It
// stays in the queue's Impl until the queue goes, so the reference stays valid while `queue`
// does.
const DeviceMemoryPool& queue_pool(const Queue& queue) {
  const auto& impl = detail::impl_of(queue);
  {
    std::lock_guard lock(impl->temporaries_mutex);
    if (impl->temporaries) return *impl->temporaries;
    impl->temporaries.emplace(impl->context);
    auto& state = *detail::impl_of(*impl->temporaries);
    state.large_exact = true;
    state.core.free_exported = true;
  }
  auto& context = *detail::impl_of(impl->context);
  std::lock_guard lock(context.pool_queues_mutex);
  std::erase_if(context.pool_queues,
                [](const std::weak_ptr<Queue::Impl>& q) { return q.expired(); });
  context.pool_queues.push_back(impl);
  return *impl->temporaries;
}

}  // namespace

DeviceMemoryPool temporaries_pool(const Queue& queue) { return queue_pool(queue); }

namespace detail {

Buffer allocate_array_memory(const Queue& queue, std::size_t device_idx, std::size_t nbytes) {
  const Context& context = impl_of(queue)->context;
  if (nbytes == 0 || !impl_of(context)->array_pool.load(std::memory_order_relaxed)) {
    return Buffer::allocate(context, device_idx, nbytes);
  }
  const DeviceMemoryPool& pool = queue_pool(queue);
  try {
    return pool.allocate(device_idx, nbytes);
  } catch (const MemoryError&) {
    // The device is full even after the pools were trimmed (Buffer::allocate, the pool's base),
    // or the pool's limit is reached. The pool's block is up to a quarter larger than asked: an
    // allocation of exactly the array's bytes may still fit, as it did before arrays came from
    // the pool. Not past a limit the code set on the pool, though.
    if (impl_of(pool)->size_class(nbytes).first == nbytes || pool.limit(device_idx)) {
      throw;
    }
  }
  return Buffer::allocate(context, device_idx, nbytes);
}

std::size_t trim_pools(const Context& context, std::size_t device_idx) noexcept {
  std::vector<std::shared_ptr<Queue::Impl>> queues;
  try {
    auto& impl = *impl_of(context);
    std::lock_guard lock(impl.pool_queues_mutex);
    for (const auto& weak : impl.pool_queues) {
      if (auto q = weak.lock()) queues.push_back(std::move(q));
    }
  } catch (...) {  // no memory for the list: nothing to trim
    return 0;
  }
  std::size_t freed = 0;
  for (const auto& q : queues) {
    const DeviceMemoryPool* pool = nullptr;
    {
      std::lock_guard lock(q->temporaries_mutex);
      if (q->temporaries) pool = &*q->temporaries;
    }
    if (pool == nullptr || pool->statistics().held_blocks == 0) continue;
    // The held blocks may still be read or written by work enqueued before they came back. CUDA's
    // cuMemFree waits for it by itself; OpenCL frees a buffer only once its commands are done, so
    // the memory would not be free yet for the retry. Wait for the queue on the device first (its
    // backend queue: not Queue::synchronize, whose checks may raise).
    if (device_idx < q->queues.size() && q->queues[device_idx]) {
      try {
        q->queues[device_idx]->synchronize();
      } catch (...) {  // a failed queue: its blocks are freed all the same
      }
    }
    try {
      freed += detail::impl_of(*pool)->core.free_held(device_idx).bytes;
    } catch (...) {
    }
  }
  return freed;
}

std::shared_ptr<BufferAdapter> allocate_or_trim(const Context& context, std::size_t device_idx,
                                                std::size_t size) {
  ContextAdapter& adapter = *impl_of(context)->adapter;
  try {
    return adapter.allocate(device_idx, size);
  } catch (const MemoryError&) {
    const std::size_t freed = trim_pools(context, device_idx);
    if (freed == 0) throw;
    try {
      return adapter.allocate(device_idx, size);
    } catch (const MemoryError& second) {
      ErrorInfo info = second.info();
      info.what += fmt::format(
          " (the pools of the context's queues had freed the {} they held on "
          "the device, and it was tried again)",
          format_bytes(freed));
      throw MemoryError(info, second.requested(), second.available());
    }
  }
}

}  // namespace detail

}  // namespace skein
