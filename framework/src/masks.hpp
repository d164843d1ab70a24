// SPDX-License-Identifier: BSD-3-Clause
// Include/exclude regular-expression masks on names (grunnur's device and platform masks).
#pragma once

#include <regex>
#include <string>
#include <vector>

namespace skein::detail {

class NameMasks {
 public:
  // Throws LogicError naming the mask when one is not a valid regular expression.
  NameMasks(const std::vector<std::string>& include, const std::vector<std::string>& exclude,
            const char* call);
  // True when the name matches one include mask (or there are none) and no exclude mask.
  bool matches(const std::string& name) const;

 private:
  std::vector<std::regex> include_;
  std::vector<std::regex> exclude_;
};

}  // namespace skein::detail
