// SHA-256 (FIPS 180-4), for naming and checking the entries of the compile cache. Written from the
// standard so that Skein needs no crypto library; it is not meant to resist side channels.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace skein::detail {

// Incremental hashing, for data that arrives in pieces (the cache key's length-prefixed parts).
class Sha256 {
 public:
  Sha256();
  void update(std::span<const std::byte> data);
  void update(std::string_view text) { update(std::as_bytes(std::span(text.data(), text.size()))); }
  // The digest. The object is spent afterwards: reset() before hashing anything else.
  std::array<std::uint8_t, 32> finish();
  void reset();

 private:
  void compress(const std::uint8_t* block);

  std::array<std::uint32_t, 8> state_{};
  std::array<std::uint8_t, 64> buffer_{};
  std::size_t buffered_ = 0;      // bytes waiting in buffer_
  std::uint64_t total_bytes_ = 0; // message length so far, for the padding
};

std::array<std::uint8_t, 32> sha256(std::span<const std::byte> data);
// Lower-case hex of the digest of `text`.
std::string sha256_hex(std::string_view text);
// Lower-case hex of any digest.
std::string to_hex(std::span<const std::uint8_t> bytes);

}  // namespace skein::detail
