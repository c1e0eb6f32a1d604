// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The DAT IB extension header (dat_ib_extensions.h, version 2.0.9), included the one way it
// compiles: its address handle holds a struct sockaddr_in6, which udat.h only declares.
#pragma once

#include <cstdint>

// clang-format off
#include <netinet/in.h>
#include <dat2/udat.h>
#include <dat2/dat_ib_extensions.h>
// clang-format on

static_assert(sizeof(DAT_IB_EXTENSION_EVENT_DATA) <= sizeof(DAT_EVENT::event_extension_data),
              "the IB extension event data lives in DAT_EVENT's extension words");

namespace softdat::core {

// The extension's memory privilege as a plain value: C++20 will not OR two enumerations.
inline constexpr std::uint32_t kPrivRemoteAtomic = DAT_IB_MEM_PRIV_REMOTE_ATOMIC;

}  // namespace softdat::core
