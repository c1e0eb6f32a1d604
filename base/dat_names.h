// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The names of DAT event numbers and DAT_RETURN values, for log lines and tools that would
// otherwise print hex: "DAT_CONNECTION_EVENT_UNREACHABLE" instead of 0x4008,
// "DAT_INVALID_STATE DAT_INVALID_STATE_EP_DISCONNECTED" instead of 0x70047. Values are taken as
// plain integers so that any layer can name them without including the DAT headers. Nothing
// allocates: the texts come back in a small value, usable on any path and from any thread.
#pragma once

#include <cstdint>

namespace softdat {

// The DAT name of an event number (DAT_EVENT_NUMBER), or null when DAT defines none.
const char* DatEventName(std::uint32_t number);
// The DAT name of a DAT_RETURN's type (its major part), or null.
const char* DatReturnTypeName(std::uint32_t value);
// The DAT name of a DAT_RETURN's subtype, or null when it has none (0) or DAT defines none.
const char* DatReturnSubtypeName(std::uint32_t value);

struct DatName {
  char text[96] = "";
};
// "DAT_CONNECTION_EVENT_BROKEN", or "event 0x1234" for a number DAT does not name.
DatName DatEventText(std::uint32_t number);
// "DAT_INVALID_PARAMETER DAT_INVALID_ARG3" (type, then subtype when there is one, as dat_strerror
// gives them), or the hex of what DAT does not name.
DatName DatReturnText(std::uint32_t value);

}  // namespace softdat
