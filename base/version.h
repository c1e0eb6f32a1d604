// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// softdat's version, in one place: the provider version an IA reports (provider_version_major and
// _minor), what the tools print for -V, and the Debian package's version (tools/install/package.sh
// reads kVersionMajor and kVersionMinor from this file).
#pragma once

namespace softdat {

inline constexpr unsigned kVersionMajor = 0;
inline constexpr unsigned kVersionMinor = 2;
inline constexpr char kVersionText[] = "0.2";

}  // namespace softdat
