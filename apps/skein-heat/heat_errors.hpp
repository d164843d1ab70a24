// SPDX-License-Identifier: BSD-3-Clause
// skein-heat's errors that every rank raises alike (bad options, a checkpoint that does not fit
// them): every rank returns the status, rank 0 says why, nobody needs to be aborted.
#pragma once

#include <string>
#include <utility>

#include <skein/error.hpp>

namespace skein::heat {

class AgreedError : public skein::LogicError {
 public:
  AgreedError(std::string what, std::string hint = {}, int status = 1)
      : skein::LogicError(skein::ErrorInfo{
            .what = std::move(what), .call = "skein-heat", .hint = std::move(hint)}),
        status_(status) {}
  int status() const { return status_; }

 private:
  int status_;
};

}  // namespace skein::heat
