// Parsing of dat.conf IA parameter strings and resolution of tcp IA addresses.
#include "transport/ia_params.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <charconv>
#include <vector>

namespace softdat {
namespace {

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

}  // namespace

Status ParseIaParams(std::string_view text, IaParams& out, std::string& why) {
  const std::vector<std::string_view> words = SplitWords(text);
  if (words.empty()) {
    why = "empty IA params; expected \"tcp <IPv4 address or interface>\" or \"verbs <device> <port>\"";
    return Status(Code::kInvalidParameter, Detail::kArg1);
  }
  for (std::string_view word : words) {
    if (!IsPrintableWord(word)) {
      why = "IA params contain a non-printable character";
      return Status(Code::kInvalidParameter, Detail::kArg1);
    }
  }
  IaParams parsed;
  if (words[0] == "tcp") {
    if (words.size() != 2) {
      why = "tcp IA params take one word, an IPv4 address or interface name: \"tcp 127.0.0.1\"";
      return Status(Code::kInvalidParameter, Detail::kArg1);
    }
    if (words[1].size() >= 64) {
      why = "tcp IA address is too long";
      return Status(Code::kInvalidParameter, Detail::kArg1);
    }
    parsed.kind = TransportKind::kTcp;
    parsed.address = std::string(words[1]);
  } else if (words[0] == "verbs") {
    if (words.size() != 3) {
      why = "verbs IA params take a device and a port: \"verbs rxe0 1\"";
      return Status(Code::kInvalidParameter, Detail::kArg1);
    }
    unsigned port = 0;
    const auto [end, error] = std::from_chars(words[2].data(), words[2].data() + words[2].size(), port);
    if (error != std::errc() || end != words[2].data() + words[2].size() || port < 1 || port > 255) {
      why = "verbs port must be a number from 1 to 255, got \"" + std::string(words[2]) + "\"";
      return Status(Code::kInvalidParameter, Detail::kArg1);
    }
    if (words[1].size() >= 64) {
      why = "verbs device name is too long";
      return Status(Code::kInvalidParameter, Detail::kArg1);
    }
    parsed.kind = TransportKind::kVerbs;
    parsed.device = std::string(words[1]);
    parsed.port = static_cast<std::uint8_t>(port);
  } else if (words[0] == "fake") {
    if (words.size() != 1) {
      why = "fake IA params take no further words";
      return Status(Code::kInvalidParameter, Detail::kArg1);
    }
    parsed.kind = TransportKind::kFake;
  } else {
    why = "unknown transport \"" + std::string(words[0]) + "\"; expected tcp or verbs";
    return Status(Code::kInvalidParameter, Detail::kArg1);
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
    return Status(Code::kInvalidParameter, Detail::kArg1);
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
    return Status(Code::kInvalidParameter, Detail::kArg1);
  }
  out = address;
  return Status::Ok();
}

}  // namespace softdat
