// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The bits a consumer passed in an enum-typed DAT argument. Consumers may pass any bits (and tests
// pass invalid ones on purpose); reading a value the enum type cannot hold as that type is
// undefined behaviour in C++ (UBSan: "not a valid value for type"), so entry points take the bits
// with memcpy, and either hand core the integer or check that the type holds the value before
// anything reads it as the enum.
#pragma once

#include <dat2/udat.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace softdat::dat {

template <class Enum>
std::uint32_t RawBits(const Enum& value) {
  static_assert(sizeof(Enum) == sizeof(std::uint32_t));
  std::uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// The largest enumerator of each enum type that softdat reads from a consumer's argument or
// struct, as dat2/dat.h and udat.h define them.
template <class Enum>
struct Largest;
template <>
struct Largest<DAT_CLOSE_FLAGS> : std::integral_constant<std::uint32_t, DAT_CLOSE_GRACEFUL_FLAG> {};
template <>
struct Largest<DAT_COMPLETION_FLAGS> : std::integral_constant<std::uint32_t, DAT_COMPLETION_EVD_THRESHOLD_FLAG> {};
template <>
struct Largest<DAT_CONNECT_FLAGS> : std::integral_constant<std::uint32_t, DAT_CONNECT_MULTIPATH_REQUIRED_FLAG> {};
template <>
struct Largest<DAT_EVD_FLAGS> : std::integral_constant<std::uint32_t, DAT_EVD_DEFAULT_FLAG> {};
template <>
struct Largest<DAT_PSP_FLAGS> : std::integral_constant<std::uint32_t, DAT_PSP_PROVIDER_FLAG> {};
template <>
struct Largest<DAT_MEM_TYPE> : std::integral_constant<std::uint32_t, DAT_MEM_TYPE_SHARED_VIRTUAL> {};
template <>
struct Largest<DAT_VA_TYPE> : std::integral_constant<std::uint32_t, DAT_VA_TYPE_ZB> {};
template <>
struct Largest<DAT_BOOLEAN> : std::integral_constant<std::uint32_t, DAT_TRUE> {};
template <>
struct Largest<DAT_SERVICE_TYPE> : std::integral_constant<std::uint32_t, DAT_SERVICE_TYPE_EXTENSION_BASE> {};
template <>
struct Largest<DAT_QOS> : std::integral_constant<std::uint32_t, DAT_QOS_PREMIUM> {};
template <>
struct Largest<DAT_PZ_PARAM_MASK> : std::integral_constant<std::uint32_t, DAT_PZ_FIELD_ALL> {};
template <>
struct Largest<DAT_LMR_PARAM_MASK> : std::integral_constant<std::uint32_t, DAT_LMR_FIELD_ALL> {};
template <>
struct Largest<DAT_RMR_PARAM_MASK> : std::integral_constant<std::uint32_t, DAT_RMR_FIELD_ALL> {};
template <>
struct Largest<DAT_EVD_PARAM_MASK> : std::integral_constant<std::uint32_t, DAT_EVD_FIELD_ALL> {};
template <>
struct Largest<DAT_CNO_PARAM_MASK> : std::integral_constant<std::uint32_t, DAT_CNO_FIELD_ALL> {};
template <>
struct Largest<DAT_SRQ_PARAM_MASK> : std::integral_constant<std::uint32_t, DAT_SRQ_FIELD_ALL> {};
template <>
struct Largest<DAT_PSP_PARAM_MASK> : std::integral_constant<std::uint32_t, DAT_PSP_FIELD_ALL> {};
template <>
struct Largest<DAT_RSP_PARAM_MASK> : std::integral_constant<std::uint32_t, DAT_RSP_FIELD_ALL> {};
template <>
struct Largest<DAT_CR_PARAM_MASK> : std::integral_constant<std::uint32_t, DAT_CR_FIELD_ALL> {};

// What an enum type without a fixed underlying type holds: 0 up to the smallest all-ones value
// not below its largest enumerator ([dcl.enum]; none of these has a negative one).
template <class Enum>
constexpr std::uint32_t Holds() {
  return std::bit_ceil(Largest<Enum>::value + 1) - 1;
}

// Whether the enum type holds the consumer's value: if not, no DAT value has those bits and the
// entry point refuses the argument; if so, the argument may be read as the enum.
template <class Enum>
bool Fits(const Enum& value) {
  return (RawBits(value) & ~Holds<Enum>()) == 0;
}

// The same for bits that came without the enum type (a variadic argument read as int): the enum
// is made from them only once the type holds them.
template <class Enum>
bool FitsBits(std::uint32_t bits) {
  return (bits & ~Holds<Enum>()) == 0;
}

// A mask argument without the bits its type cannot hold (they name no field).
template <class Enum>
Enum KnownBits(const Enum& mask) {
  return static_cast<Enum>(RawBits(mask) & Holds<Enum>());
}

}  // namespace softdat::dat
