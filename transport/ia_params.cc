// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Parsing of dat.conf IA parameter strings and resolution of tcp IA addresses.
#include "transport/ia_params.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <charconv>
#include <cstdlib>
#include <vector>

namespace softdat {
namespace {

constexpr Status kBadParams(Code::kInvalidParameter, Detail::kParamIaName);

std::vector<std::string_view> SplitWords(std::string_view text) {
  std::vector<std::string_view> words;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
    size_t start = i;
    while (i < text.size() && text[i] != ' ' && text[i] != '\t') ++i;
    if (i > start) words.push_back(text.substr(start, i - start));
  }
  return words;
}

bool IsPrintableWord(std::string_view word) {
  for (char c : word) {
    if (c <= ' ' || c > '~') return false;
  }
  return true;
}

bool ParseUnsigned(std::string_view text, std::uint32_t& out) {
  std::uint32_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return false;
  out = value;
  return true;
}

// One option, from dat.conf ("key=value") or the environment; `source` names it in the reason.
bool ApplyOption(std::string_view key, std::string_view value, IaOptions& options,
                 const std::string& source, std::string& why) {
  if (key == "progress") {
    if (value == "thread") {
      options.progress = ProgressMode::kThread;
    } else if (value == "poll") {
      options.progress = ProgressMode::kPoll;
    } else {
      why = source + ": progress must be thread or poll, got \"" + std::string(value) + "\"";
      return false;
    }
  } else if (key == "rnr_timeout_ms") {
    if (!ParseUnsigned(value, options.rnr_timeout_ms)) {
      why = source + ": rnr_timeout_ms must be a number of milliseconds (0: forever), got \"" +
            std::string(value) + "\"";
      return false;
    }
  } else if (key == "spin_us") {
    if (!ParseUnsigned(value, options.spin_us) || options.spin_us > 1'000'000) {
      why = source + ": spin_us must be a number of microseconds up to 1000000, got \"" + std::string(value) + "\"";
      return false;
    }
  } else if (key == "timeout_ms") {
    if (!ParseUnsigned(value, options.timeout_ms) || options.timeout_ms > 86'400'000) {
      why = source + ": timeout_ms must be a number of milliseconds up to a day (0: the kernel's limits), got \"" +
            std::string(value) + "\"";
      return false;
    }
  } else if (key == "coalesce_us") {
    if (!ParseUnsigned(value, options.coalesce_us) || options.coalesce_us > 1'000'000) {
      why = source + ": coalesce_us must be a number of microseconds up to 1000000 (0: no coalescing), got \"" +
            std::string(value) + "\"";
      return false;
    }
  } else if (key == "congestion") {
    // A name the kernel may know (TCP_CA_NAME_MAX is 16 with its NUL); whether it does, and lets
    // this user have it, shows when a connection asks (a warning, and the system's stays).
    bool ok = !value.empty() && value.size() < 16;
    for (char c : value) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-');
    if (!ok) {
      why = source + ": congestion must be auto, system or a congestion control's name (up to 15 of a-z, 0-9, _ and -), got \"" +
            std::string(value) + "\"";
      return false;
    }
    options.congestion = std::string(value);
  } else if (key == "crc") {
    if (value == "on") {
      options.mpa_crc = true;
    } else if (value == "off") {
      options.mpa_crc = false;
    } else {
      why = source + ": crc must be on or off, got \"" + std::string(value) + "\"";
      return false;
    }
  } else {
    why = source + ": unknown option \"" + std::string(key) +
          "\"; known: progress=thread|poll, rnr_timeout_ms=N, crc=on|off, spin_us=N, timeout_ms=N, coalesce_us=N, "
          "congestion=auto|system|NAME";
    return false;
  }
  return true;
}

bool ApplyEnvironment(IaOptions& options, std::string& why) {
  static constexpr struct {
    const char* variable;
    const char* key;
  } kVariables[] = {{"SOFTDAT_PROGRESS", "progress"},
                    {"SOFTDAT_RNR_TIMEOUT_MS", "rnr_timeout_ms"},
                    {"SOFTDAT_MPA_CRC", "crc"},
                    {"SOFTDAT_SPIN_US", "spin_us"},
                    {"SOFTDAT_TIMEOUT_MS", "timeout_ms"},
                    {"SOFTDAT_COALESCE_US", "coalesce_us"},
                    {"SOFTDAT_TCP_CONGESTION", "congestion"}};
  for (const auto& entry : kVariables) {
    const char* value = std::getenv(entry.variable);
    if (value == nullptr) continue;
    if (!ApplyOption(entry.key, value, options, entry.variable, why)) return false;
  }
  return true;
}

}  // namespace

Status ParseIaParams(std::string_view text, IaParams& out, std::string& why) {
  std::vector<std::string_view> words;
  std::vector<std::string_view> options;
  for (std::string_view word : SplitWords(text)) {
    if (!IsPrintableWord(word)) {
      why = "IA params contain a non-printable character";
      return kBadParams;
    }
    (word.find('=') == std::string_view::npos ? words : options).push_back(word);
  }
  if (words.empty()) {
    why = "empty IA params; expected \"tcp <IPv4 address or interface>\" or \"verbs <device> <port>\"";
    return kBadParams;
  }
  IaParams parsed;
  if (words[0] == "tcp") {
    if (words.size() != 2) {
      why = "tcp IA params take one word, an IPv4 address or interface name: \"tcp 127.0.0.1\"";
      return kBadParams;
    }
    if (words[1].size() >= 64) {
      why = "tcp IA address is too long";
      return kBadParams;
    }
    parsed.kind = TransportKind::kTcp;
    parsed.address = std::string(words[1]);
  } else if (words[0] == "verbs") {
    if (words.size() != 3) {
      why = "verbs IA params take a device and a port: \"verbs rxe0 1\"";
      return kBadParams;
    }
    std::uint32_t port = 0;
    if (!ParseUnsigned(words[2], port) || port < 1 || port > 255) {
      why = "verbs port must be a number from 1 to 255, got \"" + std::string(words[2]) + "\"";
      return kBadParams;
    }
    if (words[1].size() >= 64) {
      why = "verbs device name is too long";
      return kBadParams;
    }
    parsed.kind = TransportKind::kVerbs;
    parsed.device = std::string(words[1]);
    parsed.port = static_cast<std::uint8_t>(port);
  } else {
    why = "unknown transport \"" + std::string(words[0]) + "\"; expected tcp or verbs";
    return kBadParams;
  }
  if (!ApplyEnvironment(parsed.options, why)) return kBadParams;
  for (std::string_view option : options) {
    const size_t equals = option.find('=');
    if (!ApplyOption(option.substr(0, equals), option.substr(equals + 1), parsed.options,
                     "dat.conf", why))
      return kBadParams;
  }
  out = std::move(parsed);
  return Status::Ok();
}

Status ResolveIpv4(const std::string& address_or_interface, sockaddr_in& out, std::string& why) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  if (inet_pton(AF_INET, address_or_interface.c_str(), &address.sin_addr) == 1) {
    out = address;
    return Status::Ok();
  }
  if (address_or_interface.size() >= IFNAMSIZ) {
    why = "\"" + address_or_interface + "\" is neither an IPv4 address nor an interface name";
    return kBadParams;
  }
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) {
    why = "getifaddrs failed while resolving \"" + address_or_interface + "\"";
    return Status(Code::kInternal);
  }
  bool found = false;
  for (ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    if (address_or_interface != entry->ifa_name) continue;
    address.sin_addr = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr)->sin_addr;
    found = true;
    break;
  }
  freeifaddrs(list);
  if (!found) {
    why = "\"" + address_or_interface + "\" is neither an IPv4 address nor an interface with an IPv4 address";
    return kBadParams;
  }
  out = address;
  return Status::Ok();
}

}  // namespace softdat
