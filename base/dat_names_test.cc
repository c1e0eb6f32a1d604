// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The names dat_names gives are DAT's: every DAT_RETURN type and subtype libdat2's dat_strerror
// can name gets the same name here, and the event numbers are named as <dat2/dat.h> names them.
#include "base/dat_names.h"

#include <dat2/udat.h>

#include <cstring>
#include <string>

#include <gtest/gtest.h>

namespace softdat {
namespace {

TEST(DatNames, EveryTypeAndSubtypeDatStrerrorNamesIsNamedTheSame) {
  int types = 0, subtypes = 0;
  for (std::uint32_t type = 0; type <= 0x3fff; ++type) {
    const std::uint32_t value = type << 16;
    const char* major = nullptr;
    const char* minor = nullptr;
    if (dat_strerror(static_cast<DAT_RETURN>(value), &major, &minor) != DAT_SUCCESS) continue;
    ASSERT_NE(DatReturnTypeName(value), nullptr) << std::hex << value << " " << major;
    EXPECT_STREQ(DatReturnTypeName(value), major);
    ++types;
  }
  for (std::uint32_t subtype = 1; subtype <= 0xffff; ++subtype) {
    const std::uint32_t value = static_cast<std::uint32_t>(DAT_INVALID_STATE) | subtype;
    const char* major = nullptr;
    const char* minor = nullptr;
    if (dat_strerror(static_cast<DAT_RETURN>(value), &major, &minor) != DAT_SUCCESS) continue;
    ASSERT_NE(DatReturnSubtypeName(value), nullptr) << std::hex << subtype << " " << minor;
    // libdat2 spells one subtype otherwise than <dat2/dat_error.h> does; the header's name is ours.
    if (std::strcmp(minor, "DAT_INVALID_STATE_EP_EVD_RCV") == 0) minor = "DAT_INVALID_STATE_EP_EVD_RECV";
    EXPECT_STREQ(DatReturnSubtypeName(value), minor);
    ++subtypes;
  }
  EXPECT_GE(types, 19);
  EXPECT_GE(subtypes, 90);
}

constexpr std::uint32_t Bits(DAT_RETURN type, DAT_RETURN_SUBTYPE subtype) {
  return static_cast<std::uint32_t>(type) | static_cast<std::uint32_t>(subtype);
}

TEST(DatNames, ReturnTextIsTypeThenSubtype) {
  EXPECT_STREQ(DatReturnText(DAT_SUCCESS).text, "DAT_SUCCESS");
  EXPECT_STREQ(DatReturnText(Bits(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3)).text, "DAT_INVALID_PARAMETER DAT_INVALID_ARG3");
  EXPECT_STREQ(DatReturnText(Bits(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_DISCONNECTED)).text,
               "DAT_INVALID_STATE DAT_INVALID_STATE_EP_DISCONNECTED");
  EXPECT_STREQ(DatReturnText(0x7ff0000).text, "DAT_RETURN 0x7ff0000");
  EXPECT_STREQ(DatReturnText(static_cast<std::uint32_t>(DAT_QUEUE_EMPTY) | 0x7777).text, "DAT_QUEUE_EMPTY subtype 0x7777");
}

TEST(DatNames, EventNumbers) {
  EXPECT_STREQ(DatEventName(DAT_CONNECTION_EVENT_UNREACHABLE), "DAT_CONNECTION_EVENT_UNREACHABLE");
  EXPECT_STREQ(DatEventName(DAT_DTO_COMPLETION_EVENT), "DAT_DTO_COMPLETION_EVENT");
  EXPECT_STREQ(DatEventName(DAT_ASYNC_ERROR_EP_BROKEN), "DAT_ASYNC_ERROR_EP_BROKEN");
  EXPECT_STREQ(DatEventName(DAT_SOFTWARE_EVENT), "DAT_SOFTWARE_EVENT");
  EXPECT_EQ(DatEventName(0x4009), nullptr);
  EXPECT_STREQ(DatEventText(0x4008).text, "DAT_CONNECTION_EVENT_UNREACHABLE");
  EXPECT_STREQ(DatEventText(0x4009).text, "event 0x4009");
}

}  // namespace
}  // namespace softdat
