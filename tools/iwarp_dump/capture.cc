// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Reading pcap/pcapng with libpcap and reassembling TCP streams (see capture.h).
#include "tools/iwarp_dump/capture.h"

#include <arpa/inet.h>
#include <pcap/pcap.h>

#include <algorithm>
#include <deque>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>

namespace softdat::tools::iwarp_dump {
namespace {

std::uint16_t Get16(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] << 8 | p[1]); }
std::uint32_t Get32(const std::uint8_t* p) {
  return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | p[3];
}

struct Segment {
  std::string from, to;
  std::uint32_t seq = 0;
  bool syn = false;
  bool ack = false;
  const std::uint8_t* data = nullptr;
  std::size_t length = 0;
};

std::string Endpoint(int family, const std::uint8_t* address, std::uint16_t port) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(family, address, text, sizeof text);
  return (family == AF_INET6 ? "[" + std::string(text) + "]" : std::string(text)) + ":" + std::to_string(port);
}

// The TCP segment in an IP packet; nullopt for anything else.
std::optional<Segment> ParseIp(const std::uint8_t* p, std::size_t n) {
  if (n < 1) return std::nullopt;
  int family;
  const std::uint8_t *src, *dst, *tcp;
  std::size_t tcp_length;
  if ((p[0] >> 4) == 4) {
    if (n < 20) return std::nullopt;
    const std::size_t ihl = (p[0] & 0x0F) * 4u;
    const std::size_t total = std::min<std::size_t>(Get16(p + 2), n);
    if (p[9] != 6 || ihl < 20 || total < ihl) return std::nullopt;
    if ((Get16(p + 6) & 0x3FFF) != 0) return std::nullopt;  // fragments: not on loopback or veth
    family = AF_INET;
    src = p + 12;
    dst = p + 16;
    tcp = p + ihl;
    tcp_length = total - ihl;
  } else if ((p[0] >> 4) == 6) {
    if (n < 40 || p[6] != 6) return std::nullopt;  // TCP right after the fixed header only
    family = AF_INET6;
    src = p + 8;
    dst = p + 24;
    tcp = p + 40;
    tcp_length = std::min<std::size_t>(Get16(p + 4), n - 40);
  } else {
    return std::nullopt;
  }
  if (tcp_length < 20) return std::nullopt;
  const std::size_t data_offset = (tcp[12] >> 4) * 4u;
  if (data_offset < 20 || data_offset > tcp_length) return std::nullopt;
  Segment s;
  s.from = Endpoint(family, src, Get16(tcp));
  s.to = Endpoint(family, dst, Get16(tcp + 2));
  s.seq = Get32(tcp + 4);
  s.syn = (tcp[13] & 0x02) != 0;
  s.ack = (tcp[13] & 0x10) != 0;
  s.data = tcp + data_offset;
  s.length = tcp_length - data_offset;
  return s;
}

// The IP packet inside a link-layer frame.
std::optional<Segment> ParseLink(int link, const std::uint8_t* p, std::size_t n) {
  std::size_t at = 0;
  std::uint16_t protocol = 0;
  switch (link) {
    case DLT_EN10MB:
      if (n < 14) return std::nullopt;
      protocol = Get16(p + 12);
      at = 14;
      while (protocol == 0x8100 && n >= at + 4) {  // VLAN tags
        protocol = Get16(p + at + 2);
        at += 4;
      }
      break;
    case DLT_LINUX_SLL:
      if (n < 16) return std::nullopt;
      protocol = Get16(p + 14);
      at = 16;
      break;
#ifdef DLT_LINUX_SLL2
    case DLT_LINUX_SLL2:
      if (n < 20) return std::nullopt;
      protocol = Get16(p);
      at = 20;
      break;
#endif
    case DLT_NULL:
    case DLT_LOOP:
      if (n < 4) return std::nullopt;
      at = 4;  // the address family, host or network order: the IP version nibble says enough
      break;
    case DLT_RAW:
#ifdef DLT_IPV4
    case DLT_IPV4:
    case DLT_IPV6:
#endif
      break;
    default:
      return std::nullopt;
  }
  if (protocol != 0 && protocol != 0x0800 && protocol != 0x86DD) return std::nullopt;
  return ParseIp(p + at, n - at);
}

// Reassembly state of one direction.
struct Assembler {
  Direction* direction;
  bool based = false;
  std::uint32_t base = 0;  // the sequence number of stream offset 0
  std::map<std::uint64_t, std::pair<std::vector<std::uint8_t>, double>> pending;  // out of order

  void Add(const Segment& s, double time) {
    if (s.syn) {
      direction->saw_syn = true;
      base = s.seq + 1;
      based = true;
      return;  // (data on a SYN is not used by TCP stacks we meet)
    }
    if (s.length == 0) return;
    if (!based) {
      base = s.seq;
      based = true;
    }
    const std::uint64_t offset = static_cast<std::uint32_t>(s.seq - base);
    if (offset > direction->bytes.size()) {
      pending.emplace(offset, std::make_pair(std::vector<std::uint8_t>(s.data, s.data + s.length), time));
      return;
    }
    Append(offset, s.data, s.length, time);
    while (!pending.empty() && pending.begin()->first <= direction->bytes.size()) {
      auto node = pending.extract(pending.begin());
      Append(node.key(), node.mapped().first.data(), node.mapped().first.size(), node.mapped().second);
    }
  }
  // No more bytes will come: bytes still waiting for a hole to fill mean a gap.
  void Retire() {
    if (!pending.empty()) direction->gap = true;
  }
  void Append(std::uint64_t offset, const std::uint8_t* data, std::size_t length, double time) {
    const std::uint64_t have = direction->bytes.size();
    if (offset + length <= have) return;  // a retransmission of bytes already kept
    const std::size_t skip = static_cast<std::size_t>(have - offset);
    direction->times.emplace_back(have, time);
    direction->bytes.insert(direction->bytes.end(), data + skip, data + length);
  }
};

}  // namespace

double Direction::TimeAt(std::uint64_t offset) const {
  auto it = std::upper_bound(times.begin(), times.end(), std::make_pair(offset, 1e300));
  return it == times.begin() ? 0.0 : std::prev(it)->second;
}

bool LooksLikeCapture(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::uint8_t magic[4] = {};
  if (!in.read(reinterpret_cast<char*>(magic), 4)) return false;
  const std::uint32_t be = Get32(magic);
  return be == 0xa1b2c3d4 || be == 0xd4c3b2a1 || be == 0xa1b23c4d || be == 0x4d3cb2a1 || be == 0x0a0d0d0a;
}

bool ReadCapture(const std::string& path, std::vector<Connection>& out, std::string& error) {
  char errbuf[PCAP_ERRBUF_SIZE] = {};
  std::unique_ptr<pcap_t, void (*)(pcap_t*)> pcap(pcap_open_offline(path.c_str(), errbuf), pcap_close);
  if (pcap == nullptr) {
    error = errbuf;
    return false;
  }
  const int link = pcap_datalink(pcap.get());
  std::deque<Connection> connections;  // stable addresses: assemblers point into it
  // "from>to" -> the assembler of that direction of the latest connection on that 4-tuple.
  std::map<std::string, std::unique_ptr<Assembler>> assemblers;
  std::optional<double> first_time;
  pcap_pkthdr* header = nullptr;
  const u_char* data = nullptr;
  int rc;
  while ((rc = pcap_next_ex(pcap.get(), &header, &data)) == 1) {
    const double time = header->ts.tv_sec + header->ts.tv_usec / 1e6;
    if (!first_time) first_time = time;
    std::optional<Segment> s = ParseLink(link, data, header->caplen);
    if (!s) continue;
    const std::string key = s->from + ">" + s->to;
    const std::string reverse = s->to + ">" + s->from;
    auto it = assemblers.find(key);
    const bool opening = s->syn && !s->ack;  // a client's SYN: always a new connection
    if (it == assemblers.end() || opening) {
      Direction* direction = nullptr;
      auto back = assemblers.find(reverse);
      if (!opening && back != assemblers.end()) {
        // The other direction of a connection already seen, if that one has no partner yet.
        for (Connection& c : connections)
          if (&c.forward == back->second->direction && c.backward.from.empty()) direction = &c.backward;
      }
      if (direction == nullptr) {
        connections.emplace_back();
        direction = &connections.back().forward;
        // The 4-tuple's old connection is over: what it still misses is a gap.
        if (opening && back != assemblers.end()) {
          back->second->Retire();
          assemblers.erase(back);
        }
        if (it != assemblers.end()) it->second->Retire();
      }
      direction->from = s->from;
      direction->to = s->to;
      auto assembler = std::make_unique<Assembler>();
      assembler->direction = direction;
      it = assemblers.insert_or_assign(key, std::move(assembler)).first;
    }
    it->second->Add(*s, time - *first_time);
  }
  if (rc == -1) {
    error = pcap_geterr(pcap.get());
    return false;
  }
  for (auto& [key, assembler] : assemblers) assembler->Retire();
  out.assign(std::make_move_iterator(connections.begin()), std::make_move_iterator(connections.end()));
  return true;
}

}  // namespace softdat::tools::iwarp_dump
