// SPDX-License-Identifier: BSD-3-Clause
// SHA-256 through OpenSSL's EVP interface (libcrypto), which picks the fastest implementation the
// CPU offers (SHA extensions, AVX2).
#include "skein/detail/sha256.hpp"

#include <openssl/err.h>
#include <openssl/evp.h>

#include <fmt/format.h>

#include "skein/error.hpp"

namespace skein::detail {

namespace {

// libcrypto fails only when out of memory or misconfigured (a FIPS provider without SHA-256).
void check_ssl(int ok, const char* call) {
  if (ok == 1) return;
  const unsigned long code = ERR_get_error();
  char text[256] = "no error queued";
  if (code != 0) ERR_error_string_n(code, text, sizeof text);
  throw RuntimeError(ErrorInfo{.what = fmt::format("OpenSSL's SHA-256 failed: {}", text),
                               .call = call,
                               .hint = "Check the OpenSSL configuration (OPENSSL_CONF) and that "
                                       "libcrypto's default provider is available."});
}

}  // namespace

void Sha256::Free::operator()(evp_md_ctx_st* ctx) const noexcept { EVP_MD_CTX_free(ctx); }

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) check_ssl(0, "EVP_MD_CTX_new");
  reset();
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::reset() {
  check_ssl(EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr), "EVP_DigestInit_ex");
}

void Sha256::update(std::span<const std::byte> data) {
  if (data.empty()) return;
  check_ssl(EVP_DigestUpdate(ctx_.get(), data.data(), data.size()), "EVP_DigestUpdate");
}

std::array<std::uint8_t, 32> Sha256::finish() {
  std::array<std::uint8_t, 32> digest{};
  unsigned int length = 0;
  check_ssl(EVP_DigestFinal_ex(ctx_.get(), digest.data(), &length), "EVP_DigestFinal_ex");
  return digest;
}

std::array<std::uint8_t, 32> sha256(std::span<const std::byte> data) {
  Sha256 h;
  h.update(data);
  return h.finish();
}

std::string to_hex(std::span<const std::uint8_t> bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (std::uint8_t b : bytes) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 0xf]);
  }
  return out;
}

std::string sha256_hex(std::string_view text) {
  return to_hex(sha256(std::as_bytes(std::span(text.data(), text.size()))));
}

}  // namespace skein::detail
