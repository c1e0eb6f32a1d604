// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Fuzz target: the IA params parser (transport/ia_params.h), what a dat.conf line and the
// SOFTDAT_* environment give softdat. The input's first line is the IA params text; each further
// line NAME=value sets one of the four variables the parser reads for that input only. Besides
// "no crash, no undefined behaviour", it checks the parser's promises: a refusal is
// kInvalidParameter with a reason and leaves the output alone; an acceptance names a transport
// with its printable address or device, a port of 1..255 for verbs, spin_us up to 1000000; and
// what was accepted, written back as text, parses to the same. A tcp address is then resolved
// as dat_ia_open would (a literal or an interface of this machine).
#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "transport/ia_params.h"

namespace {

using softdat::Code;
using softdat::IaParams;
using softdat::ProgressMode;
using softdat::TransportKind;

constexpr const char* kVariables[] = {"SOFTDAT_PROGRESS", "SOFTDAT_RNR_TIMEOUT_MS", "SOFTDAT_MPA_CRC", "SOFTDAT_SPIN_US"};

void Check(bool ok) {
  if (!ok) std::abort();
}

bool Printable(const std::string& word) {
  if (word.empty()) return false;
  for (char c : word) {
    if (c <= ' ' || c > '~' || c == '=') return false;
  }
  return true;
}

std::string Text(const IaParams& params) {
  std::string text = params.kind == TransportKind::kTcp ? "tcp " + params.address
                                                        : "verbs " + params.device + " " + std::to_string(params.port);
  text += params.options.progress == ProgressMode::kPoll ? " progress=poll" : " progress=thread";
  text += " rnr_timeout_ms=" + std::to_string(params.options.rnr_timeout_ms);
  text += params.options.mpa_crc ? " crc=on" : " crc=off";
  text += " spin_us=" + std::to_string(params.options.spin_us);
  text += " congestion=" + params.options.congestion;
  return text;
}

bool Same(const IaParams& a, const IaParams& b) {
  return a.kind == b.kind && a.address == b.address && a.device == b.device && a.port == b.port &&
         a.options.progress == b.options.progress && a.options.rnr_timeout_ms == b.options.rnr_timeout_ms &&
         a.options.mpa_crc == b.options.mpa_crc && a.options.spin_us == b.options.spin_us &&
         a.options.congestion == b.options.congestion;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  const std::size_t newline = all.find('\n');
  const std::string_view text = all.substr(0, newline);
  for (const char* variable : kVariables) ::unsetenv(variable);
  for (std::size_t at = newline; at != std::string_view::npos && at < all.size();) {
    const std::size_t next = all.find('\n', at + 1);
    const std::string line(all.substr(at + 1, next == std::string_view::npos ? std::string_view::npos : next - at - 1));
    const std::size_t equals = line.find('=');
    if (equals != std::string::npos && line.find('\0') == std::string::npos) {
      for (const char* variable : kVariables) {
        if (line.compare(0, equals, variable) == 0) ::setenv(variable, line.c_str() + equals + 1, 1);
      }
    }
    at = next;
  }

  IaParams params;
  params.address = "untouched";
  std::string why;
  const softdat::Status status = softdat::ParseIaParams(text, params, why);
  if (!status.ok()) {
    Check(status.code() == Code::kInvalidParameter && !why.empty());
    Check(params.address == "untouched" && params.device.empty());
    return 0;
  }
  if (params.kind == TransportKind::kTcp) {
    Check(Printable(params.address) && params.address.size() < 64 && params.device.empty());
  } else {
    Check(Printable(params.device) && params.device.size() < 64 && params.port >= 1 && params.address.empty());
  }
  Check(params.options.spin_us <= 1'000'000);
  // Written back with every option spelled out, the same params come out (the environment
  // cannot change what dat.conf says).
  IaParams again;
  std::string why_again;
  Check(softdat::ParseIaParams(Text(params), again, why_again).ok());
  Check(Same(params, again));
  if (params.kind == TransportKind::kTcp) {
    sockaddr_in address{};
    std::string why_resolve;
    const softdat::Status resolved = softdat::ResolveIpv4(params.address, address, why_resolve);
    Check(resolved.ok() ? address.sin_family == AF_INET : !why_resolve.empty());
  }
  return 0;
}
