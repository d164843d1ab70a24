// SPDX-License-Identifier: BSD-3-Clause
// SHA-256, through OpenSSL's libcrypto (EVP), for naming and checking the entries of the compile
// cache and for the checkpoints' checksums.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "skein/export.hpp"

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX, kept out of Skein's headers

namespace skein::detail {

// Incremental hashing, for data that arrives in pieces (the cache key's length-prefixed parts, a
// file read in blocks). Not copyable; movable.
class SKEIN_EXPORT Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  void update(std::span<const std::byte> data);
  void update(std::string_view text) { update(std::as_bytes(std::span(text.data(), text.size()))); }
  // The digest. The object is spent afterwards: reset() before hashing anything else.
  std::array<std::uint8_t, 32> finish();
  void reset();

 private:
  struct Free {
    void operator()(evp_md_ctx_st* ctx) const noexcept;
  };
  std::unique_ptr<evp_md_ctx_st, Free> ctx_;
};

SKEIN_EXPORT std::array<std::uint8_t, 32> sha256(std::span<const std::byte> data);
// Lower-case hex of the digest of `text`.
SKEIN_EXPORT std::string sha256_hex(std::string_view text);
// Lower-case hex of any digest.
SKEIN_EXPORT std::string to_hex(std::span<const std::uint8_t> bytes);

}  // namespace skein::detail
