// The bits a consumer passed in an enum-typed DAT flag argument. Consumers may pass any bits
// (and tests pass invalid ones on purpose); reading a value outside the enum's range as the
// enum type is undefined behaviour in C++ (UBSan: "not a valid value for type"), so entry points
// take the bits with memcpy and core validates the integer.
#pragma once

#include <cstdint>
#include <cstring>

namespace softdat::dat {

template <class Enum>
std::uint32_t RawBits(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(std::uint32_t));
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

}  // namespace softdat::dat
