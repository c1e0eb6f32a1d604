// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A piece of the consumer's registered memory as every layer below dat/ passes it around: the
// fields of a DAT LMR triplet after core has checked them. srq/ stores posted receive buffers as
// these and transports scatter into and gather from them, so neither converts the other's type.
#pragma once

#include <cstdint>

namespace softdat {

struct Segment {
  std::uint64_t address = 0;
  std::uint32_t length = 0;
  std::uint32_t key = 0;  // the lmr_context (the local key a device transport gives its NIC)
};

}  // namespace softdat
