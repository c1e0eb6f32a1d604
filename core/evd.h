// The EVD handle object. The event semantics (rings, thresholds, waits, overflow) are evd/'s; this
// object binds them to a DAT handle and to its IA.
#pragma once

#include "core/handle.h"

namespace softdat::core {

class Ia;

class Evd : public HandleHeader {
 public:
  static constexpr HandleKind kKind = HandleKind::kEvd;

  Evd(Ia* ia, DAT_COUNT min_qlen, DAT_EVD_FLAGS flags) : ia_(ia), min_qlen_(min_qlen), flags_(flags) {}

  Ia* ia() const { return ia_; }
  DAT_COUNT qlen() const { return min_qlen_; }
  DAT_EVD_FLAGS flags() const { return flags_; }

 private:
  Ia* ia_;
  DAT_COUNT min_qlen_;
  DAT_EVD_FLAGS flags_;
};

}  // namespace softdat::core
