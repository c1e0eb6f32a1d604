// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Parsing of dat.conf IA parameter strings and resolution of tcp IA addresses.
#include "transport/ia_params.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdint>
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

// Whether this host has `address`: whether a socket can be bound to it, as the IA's listeners
// and connections will be (127.0.0.0/8 and 0.0.0.0 included; with net.ipv4.ip_nonlocal_bind
// any address, as for the IA's own sockets).
bool IsLocalAddress(const sockaddr_in& address) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return true;  // cannot tell (out of descriptors): the IA's own sockets will say
  sockaddr_in probe = address;
  probe.sin_port = 0;
  const bool bound = ::bind(fd, reinterpret_cast<const sockaddr*>(&probe), sizeof probe) == 0;
  const bool not_here = !bound && errno == EADDRNOTAVAIL;
  ::close(fd);
  return !not_here;
}

// "this host's IPv4 addresses: 127.0.0.1 (lo), 192.0.2.2 (eth0)", for a reason.
std::string HostAddresses() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "this host's addresses cannot be listed";
  std::string text;
  for (ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET) continue;
    char name[INET_ADDRSTRLEN] = "";
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(entry->ifa_addr)->sin_addr, name, sizeof name);
    text += (text.empty() ? "" : ", ") + std::string(name) + " (" + entry->ifa_name + ")";
  }
  freeifaddrs(list);
  return text.empty() ? "this host has no IPv4 address" : "this host's IPv4 addresses: " + text;
}

// The options' parsers and printers (the table is at the end of this namespace).
bool ApplyProgress(std::string_view value, IaOptions& options, std::string& why) {
  if (value == "thread") {
    options.progress = ProgressMode::kThread;
  } else if (value == "poll") {
    options.progress = ProgressMode::kPoll;
  } else {
    why = "progress must be thread or poll, got \"" + std::string(value) + "\"";
    return false;
  }
  return true;
}
std::string ShowProgress(const IaOptions& options) {
  return options.progress == ProgressMode::kPoll ? "poll" : "thread";
}

// A number option up to `max`: sets `field`, or says what was expected in `why`.
bool SetNumber(std::string_view value, std::uint32_t max, std::uint32_t& field, const char* expected,
               std::string& why) {
  std::uint32_t parsed = 0;
  if (ParseUnsigned(value, parsed) && parsed <= max) {
    field = parsed;
    return true;
  }
  why = std::string(expected) + ", got \"" + std::string(value) + "\"";
  return false;
}
template <std::uint32_t IaOptions::*field>
std::string ShowNumber(const IaOptions& options) {
  return std::to_string(options.*field);
}

bool ApplyRnrTimeout(std::string_view value, IaOptions& options, std::string& why) {
  return SetNumber(value, UINT32_MAX, options.rnr_timeout_ms,
                   "rnr_timeout_ms must be a number of milliseconds (0: forever)", why);
}
bool ApplyTimeout(std::string_view value, IaOptions& options, std::string& why) {
  return SetNumber(value, 86'400'000, options.timeout_ms,
                   "timeout_ms must be a number of milliseconds up to a day (0: the kernel's limits)", why);
}
bool ApplySpin(std::string_view value, IaOptions& options, std::string& why) {
  return SetNumber(value, 1'000'000, options.spin_us, "spin_us must be a number of microseconds up to 1000000", why);
}
bool ApplyHandoff(std::string_view value, IaOptions& options, std::string& why) {
  constexpr const char* kExpected = "handoff_us must be a number of microseconds from 1 to 1000000";
  if (!SetNumber(value, 1'000'000, options.handoff_us, kExpected, why)) return false;
  if (options.handoff_us != 0) return true;
  why = kExpected;
  return false;
}
bool ApplyThreadSpin(std::string_view value, IaOptions& options, std::string& why) {
  return SetNumber(value, 1'000'000, options.thread_spin_us,
                   "thread_spin_us must be a number of microseconds up to 1000000 (0: no busy-polling)", why);
}
bool ApplyCoalesce(std::string_view value, IaOptions& options, std::string& why) {
  return SetNumber(value, 1'000'000, options.coalesce_us,
                   "coalesce_us must be a number of microseconds up to 1000000 (0: no coalescing)", why);
}

bool ApplyCrc(std::string_view value, IaOptions& options, std::string& why) {
  if (value == "on") {
    options.mpa_crc = true;
  } else if (value == "off") {
    options.mpa_crc = false;
  } else {
    why = "crc must be on or off, got \"" + std::string(value) + "\"";
    return false;
  }
  return true;
}
std::string ShowCrc(const IaOptions& options) { return options.mpa_crc ? "on" : "off"; }

bool ApplyCongestion(std::string_view value, IaOptions& options, std::string& why) {
  // A name the kernel may know (TCP_CA_NAME_MAX is 16 with its NUL); whether it does, and lets
  // this user have it, shows when a connection asks (a warning, and the system's stays).
  bool ok = !value.empty() && value.size() < 16;
  for (char c : value) ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-');
  if (!ok) {
    why = "congestion must be auto, system or a congestion control's name (up to 15 of a-z, 0-9, _ and -), got \"" +
          std::string(value) + "\"";
    return false;
  }
  options.congestion = std::string(value);
  return true;
}
std::string ShowCongestion(const IaOptions& options) { return options.congestion; }

bool ApplyShm(std::string_view value, IaOptions& options, std::string& why) {
  if (value == "auto") {
    options.shm = ShmMode::kAuto;
  } else if (value == "off") {
    options.shm = ShmMode::kOff;
  } else {
    why = "shm must be auto or off, got \"" + std::string(value) + "\"";
    return false;
  }
  return true;
}
std::string ShowShm(const IaOptions& options) { return options.shm == ShmMode::kOff ? "off" : "auto"; }

constexpr IaOptionSpec kSpecs[] = {
    {"progress", "SOFTDAT_PROGRESS", "thread|poll", "thread", false,
     "who drives the transport: a progress thread per IA, which places arrivals and writes posted Work within "
     "handoff_us whatever the consumer does (spins on memory, sleeps); or only the consumer's own calls (busy-poll: "
     "a post writes at once, and arrivals are placed inside dat_evd_wait, dat_evd_dequeue and dat_cno_wait on any "
     "EVD of the IA, so an RDMA Write into memory the consumer spins on waits for its next call; a watchdog warns "
     "when input waits a second for one)",
     ApplyProgress, ShowProgress},
    {"rnr_timeout_ms", "SOFTDAT_RNR_TIMEOUT_MS", "N", "0", false,
     "how long a message may wait for a receive buffer before its connection is broken, in milliseconds; 0 waits "
     "forever, like rnr_retry 7",
     ApplyRnrTimeout, ShowNumber<&IaOptions::rnr_timeout_ms>},
    {"crc", "SOFTDAT_MPA_CRC", "on|off", "on", true,
     "whether to ask for the MPA CRC32c (either side asking turns it on)", ApplyCrc, ShowCrc},
    {"timeout_ms", "SOFTDAT_TIMEOUT_MS", "N", "0", true,
     "the connection's retry timeout in milliseconds, as an RNIC has one: data left unacknowledged, or a receive "
     "window left shut, for N ms breaks the connection (TCP_USER_TIMEOUT, and keepalive probes for an idle one); "
     "0: the kernel's limits (about 15 minutes of retransmissions, no probes)",
     ApplyTimeout, ShowNumber<&IaOptions::timeout_ms>},
    {"spin_us", "SOFTDAT_SPIN_US", "N", "200", false,
     "with progress=thread: how long a dat_evd_wait spins, in microseconds, on a transport that moves nothing "
     "before it sleeps; 0 sleeps at once",
     ApplySpin, ShowNumber<&IaOptions::spin_us>},
    {"handoff_us", "SOFTDAT_HANDOFF_US", "N", "200", true,
     "with progress=thread: the longest, in microseconds, that arrivals and posted Work wait for the progress "
     "thread once the consumers stop polling without waiting (a dequeue loop that ends, a spin on memory): while "
     "consumers poll, their polls put off its look (the thread sleeps on; about one system call per period)",
     ApplyHandoff, ShowNumber<&IaOptions::handoff_us>},
    {"thread_spin_us", "SOFTDAT_THREAD_SPIN_US", "N", "50", true,
     "with progress=thread: how long, in microseconds, the progress thread busy-polls the sockets after traffic "
     "before it sleeps, while a CPU is idle (the CPU it may burn so that an arrival lands within microseconds "
     "while no consumer polls); 0 sleeps at once",
     ApplyThreadSpin, ShowNumber<&IaOptions::thread_spin_us>},
    {"coalesce_us", "SOFTDAT_COALESCE_US", "N", "16", true,
     "how long, in microseconds, the small Sends of a send-only stream may wait to go out together in one write; "
     "0 writes each at once",
     ApplyCoalesce, ShowNumber<&IaOptions::coalesce_us>},
    {"congestion", "SOFTDAT_TCP_CONGESTION", "auto|system|NAME", "auto", true,
     "each connection's TCP congestion control: auto gives Reno between two addresses of this host and the "
     "system's (net.ipv4.tcp_congestion_control) to others; system always the system's; NAME (reno, cubic, bbr, "
     "...) that one, or the system's with a warning where the kernel refuses it",
     ApplyCongestion, ShowCongestion},
    {"shm", "SOFTDAT_SHM", "auto|off", "auto", true,
     "auto: a connection between two softdat IAs of this host and network namespace runs over shared memory "
     "(rings in a memfd, cross-memory attach for large transfers) with the same DAT semantics, and every other "
     "peer (another host or namespace, siw, OFED DAPL) over iWARP on TCP, unchanged; off: TCP always",
     ApplyShm, ShowShm},
};

const IaOptionSpec* FindSpec(std::string_view key) {
  for (const IaOptionSpec& spec : kSpecs)
    if (key == spec.key) return &spec;
  return nullptr;
}

// The known keys, for the reason an unknown one gets: "progress=thread|poll, ...".
std::string KnownKeys() {
  std::string text;
  for (const IaOptionSpec& spec : kSpecs) text += (text.empty() ? "" : ", ") + std::string(spec.key) + "=" + spec.values;
  return text;
}

bool ApplyEnvironment(IaOptions& options, std::string& why) {
  for (const IaOptionSpec& spec : kSpecs) {
    const char* value = std::getenv(spec.variable);
    if (value == nullptr) continue;
    std::string reason;
    if (!spec.apply(value, options, reason)) {
      why = std::string("the environment's ") + spec.variable + "=" + value + ": " + reason;
      return false;
    }
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
    const std::string_view key = option.substr(0, equals);
    const IaOptionSpec* spec = FindSpec(key);
    if (spec == nullptr) {
      why = "unknown option \"" + std::string(key) + "\"; known: " + KnownKeys();
      return kBadParams;
    }
    if (!spec->apply(option.substr(equals + 1), parsed.options, why)) return kBadParams;
  }
  out = std::move(parsed);
  return Status::Ok();
}

std::span<const IaOptionSpec> IaOptionSpecs() { return kSpecs; }

std::string LoopbackCannotReach(const sockaddr_in& local, const sockaddr_in& remote) {
  const auto loopback = [](const sockaddr_in& a) { return (ntohl(a.sin_addr.s_addr) >> 24) == 127; };
  if (!loopback(local) || loopback(remote) || IsLocalAddress(remote)) return "";
  char local_text[INET_ADDRSTRLEN] = "", remote_text[INET_ADDRSTRLEN] = "";
  inet_ntop(AF_INET, &local.sin_addr, local_text, sizeof local_text);
  inet_ntop(AF_INET, &remote.sin_addr, remote_text, sizeof remote_text);
  // The interfaces that may reach it: those whose subnet holds it, else every one but loopback.
  std::string same_subnet, others;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
      if (entry->ifa_addr == nullptr || entry->ifa_addr->sa_family != AF_INET || entry->ifa_netmask == nullptr) continue;
      const in_addr address = reinterpret_cast<const sockaddr_in*>(entry->ifa_addr)->sin_addr;
      const std::uint32_t mask = reinterpret_cast<const sockaddr_in*>(entry->ifa_netmask)->sin_addr.s_addr;
      if ((ntohl(address.s_addr) >> 24) == 127) continue;
      char text[INET_ADDRSTRLEN] = "";
      inet_ntop(AF_INET, &address, text, sizeof text);
      const std::string ia = std::string("softdat-tcp-") + entry->ifa_name + " (\"tcp " + entry->ifa_name + "\", " + text + ")";
      std::string& into = (address.s_addr & mask) == (remote.sin_addr.s_addr & mask) ? same_subnet : others;
      if (into.find(ia) == std::string::npos) into += (into.empty() ? "" : ", ") + ia;
    }
    freeifaddrs(list);
  }
  const std::string& candidates = same_subnet.empty() ? others : same_subnet;
  std::string why = std::string("this IA is bound to ") + local_text +
                    ", a loopback address, which reaches only this host: it cannot reach " + remote_text +
                    " (the connection ends DAT_CONNECTION_EVENT_UNREACHABLE)";
  if (candidates.empty()) return why + "; this host has no network interface with an IPv4 address";
  return why + "; use the IA of a network interface, as an install names it: " + candidates;
}

Status ResolveIpv4(const std::string& address_or_interface, sockaddr_in& out, std::string& why) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  if (inet_pton(AF_INET, address_or_interface.c_str(), &address.sin_addr) == 1) {
    if (!IsLocalAddress(address)) {
      why = "\"" + address_or_interface + "\" is not an address of this host, so nothing could listen or connect from it; " +
            HostAddresses();
      return kBadParams;
    }
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
    why = "\"" + address_or_interface + "\" is neither an IPv4 address nor an interface with an IPv4 address; " +
          HostAddresses();
    return kBadParams;
  }
  out = address;
  return Status::Ok();
}

}  // namespace softdat
