// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A TCP relay of the project's own, put between two softdat-tcp peers (the active side connects
// to the proxy, the proxy to the passive side), that misbehaves on a script per direction the way
// a bad path or a broken middlebox would: delay every chunk, stall for seconds, cut one
// direction, flip a bit inside an FPDU's payload, or close the connection in the middle of an
// FPDU. It follows the iWARP framing (the MPA Request or Reply, then FPDUs: RFC 5044; header
// sizes: RFC 5041) only to aim: a flip lands in a payload byte, a truncation inside an FPDU.
// Reordering is not offered: TCP cannot reorder what it delivers.
//
// Threads: one accepting, two per relayed connection (one a direction); each bounded by the
// sockets' end and by Stop(). Counters are atomics, read at any time.
#pragma once

#include <netinet/in.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace softdat::testing::faults {

// What one direction of every relayed connection suffers. Offsets count the direction's bytes
// from its first (the MPA frame included); FPDU numbers count FPDUs with a payload, from 1.
struct DirectionFaults {
  static constexpr std::uint64_t kNever = std::numeric_limits<std::uint64_t>::max();
  std::chrono::milliseconds delay{0};  // each chunk waits this long before it is forwarded
  std::uint64_t stall_at = kNever;     // after this many bytes, stop relaying for stall_for
  std::chrono::milliseconds stall_for{0};
  std::uint64_t cut_at = kNever;       // after this many bytes: FIN to the receiver, the rest dropped
  std::uint64_t flip_fpdu = 0;         // flip one bit of this FPDU's payload (0: none) ...
  std::uint32_t flip_offset = 0;       // ... at this payload offset (clamped to the payload) ...
  std::uint8_t flip_mask = 0x10;       // ... by this mask ...
  bool flip_data_only = false;         // ... counting only FPDUs of data: Sends, Writes, Read Responses
  std::uint64_t truncate_fpdu = 0;     // close both ways in the middle of this FPDU's payload (0: none)
  std::uint32_t max_piece = 0;         // forward in pieces of 1..max_piece bytes (0: whole chunks) ...
  std::chrono::microseconds piece_gap{0};  // ... this far apart, so the receiver reads them apart
};

struct ProxyCounts {
  std::uint64_t connections = 0;
  std::uint64_t bytes_up = 0;    // active side -> passive side, forwarded
  std::uint64_t bytes_down = 0;  // passive side -> active side, forwarded
  std::uint64_t fpdus_up = 0;    // FPDUs with a payload seen
  std::uint64_t fpdus_down = 0;
  std::uint64_t delays = 0;      // chunks held back
  std::uint64_t stalls = 0;
  std::uint64_t cuts = 0;
  std::uint64_t flips = 0;
  std::uint64_t truncations = 0;
  std::uint64_t pieces = 0;      // sent in pieces (max_piece)
};

class FaultProxy {
 public:
  // Listens on 127.0.0.1 (a free port) and relays every connection to 127.0.0.1:target_port.
  FaultProxy(std::uint16_t target_port, const DirectionFaults& up, const DirectionFaults& down);
  ~FaultProxy();  // Stop()
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  std::uint16_t port() const { return port_; }
  ProxyCounts counts() const;
  // Closes everything and joins every thread.
  void Stop();

 private:
  struct Relay;
  void AcceptLoop();
  void Pump(std::shared_ptr<Relay> relay, bool up);

  const std::uint16_t target_port_;
  const DirectionFaults up_;
  const DirectionFaults down_;
  int listen_fd_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  std::mutex mutex_;
  std::vector<std::thread> pumps_;
  std::vector<std::shared_ptr<Relay>> relays_;
  struct Counters {
    std::atomic<std::uint64_t> connections{0}, bytes_up{0}, bytes_down{0}, fpdus_up{0}, fpdus_down{0}, delays{0},
        stalls{0}, cuts{0}, flips{0}, truncations{0}, pieces{0};
  } counters_;
};

// RDMAP opcodes (RFC 5040 section 4.3) the proxy tells apart.
inline constexpr std::uint8_t kRdmapReadRequest = 0x1;
inline constexpr std::uint8_t kRdmapTerminate = 0x7;

// Whether an FPDU carries the consumer's bytes to the receiver's memory. A Read Request's payload
// is an address and a length instead: a bit flipped there moves what the responder reads, and the
// requester, not the receiver, is the one who can notice.
inline bool CarriesData(std::uint8_t opcode) { return opcode != kRdmapReadRequest && opcode != kRdmapTerminate; }

// Follows one direction's iWARP framing: where each FPDU's payload starts and ends in the stream.
class FpduTracker {
 public:
  // Feeds the next bytes; for each FPDU with a payload whose header completes here, calls
  // on_payload(number, first payload byte's stream offset, payload length, RDMAP opcode).
  template <typename F>
  void Feed(const std::uint8_t* bytes, std::size_t length, F&& on_payload);

 private:
  enum class Stage : std::uint8_t { kMpaHeader, kMpaPrivateData, kFpduHeader, kFpduRest };
  Stage stage_ = Stage::kMpaHeader;
  std::uint64_t offset_ = 0;       // stream offset of the next byte fed
  std::uint8_t header_[20] = {};
  std::size_t have_ = 0;           // header bytes gathered
  std::uint64_t skip_ = 0;         // bytes left in the current stage
  std::uint64_t fpdus_ = 0;
};

template <typename F>
void FpduTracker::Feed(const std::uint8_t* bytes, std::size_t length, F&& on_payload) {
  std::size_t at = 0;
  while (at < length) {
    switch (stage_) {
      case Stage::kMpaHeader:
      case Stage::kFpduHeader: {
        // MPA frame: 20 bytes, PD_Length in bytes 18-19. FPDU: ULPDU_Length (2), DDP control (1),
        // RDMAP control (1; the opcode in its low four bits).
        const std::size_t need = stage_ == Stage::kMpaHeader ? 20 : 4;
        while (have_ < need && at < length) {
          header_[have_++] = bytes[at++];
          ++offset_;
        }
        if (have_ < need) return;
        have_ = 0;
        if (stage_ == Stage::kMpaHeader) {
          skip_ = (std::uint64_t{header_[18]} << 8) | header_[19];
          stage_ = Stage::kMpaPrivateData;
          break;
        }
        const std::uint64_t ulpdu = (std::uint64_t{header_[0]} << 8) | header_[1];
        const std::uint64_t pad = (4 - ((2 + ulpdu) & 3)) & 3;
        const bool tagged = (header_[2] & 0x80) != 0;
        const std::uint64_t header_size = tagged ? 16 : 20;  // from the FPDU's first byte
        const std::uint64_t start = offset_ - need;
        if (2 + ulpdu > header_size)
          on_payload(++fpdus_, start + header_size, 2 + ulpdu - header_size, std::uint8_t(header_[3] & 0x0f));
        skip_ = 2 + ulpdu + pad + 4 - need;
        stage_ = Stage::kFpduRest;
        break;
      }
      case Stage::kMpaPrivateData:
      case Stage::kFpduRest: {
        const std::uint64_t n = std::min<std::uint64_t>(skip_, length - at);
        at += n;
        offset_ += n;
        skip_ -= n;
        if (skip_ == 0) stage_ = Stage::kFpduHeader;
        break;
      }
    }
  }
}

}  // namespace softdat::testing::faults
