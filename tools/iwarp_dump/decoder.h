// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// iwarp-dump's decoder: one direction of an iWARP TCP stream (MPA Request or Reply, then FPDUs)
// turned into one text line per frame with every field of the MPA, DDP and RDMAP headers and a
// CRC verdict. Byte stream in, lines out; no I/O. The field layouts come from
// transport/tcp/wire.h (docs/WIRE.md); unlike softdat's receive path, nothing here refuses a
// frame: whatever is on the wire is shown, and what is wrong with it is said.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace softdat::tools::iwarp_dump {

enum class CrcMode : std::uint8_t {
  kAuto,  // from the connection's MPA frames when seen; else a field of 0 reads as "off or bad"
  kOn,
  kOff,
};

struct Options {
  CrcMode crc = CrcMode::kAuto;
  std::size_t payload_bytes = 0;  // payload bytes shown in hex per FPDU
};

// What the MPA frame at the start of a stream said (for the other direction's CRC verdicts).
struct MpaSummary {
  bool reply = false;
  bool crc = false;
  bool markers = false;
  bool rejected = false;
};

// One decoded frame. `offset` is the frame's first byte in the stream, `end` one past its last.
struct Line {
  std::uint64_t offset = 0;
  std::uint64_t end = 0;
  std::string text;
  bool crc_bad = false;  // an FPDU whose CRC field does not match its bytes (CRC on)
};

class StreamDecoder {
 public:
  using Sink = std::function<void(const Line&)>;

  StreamDecoder(const Options& options, Sink sink) : options_(options), sink_(std::move(sink)) {}

  // Whether the connection uses CRC, once both MPA frames are known (the other direction's frame
  // included): either side setting C means both send and check it (RFC 5044 §7.1).
  void SetNegotiatedCrc(bool on) { negotiated_crc_ = on; }

  // The next bytes of the stream, in order; every frame they complete is reported.
  void Feed(const std::uint8_t* bytes, std::size_t length);
  // The stream ended (or has a gap): a frame left incomplete is reported as such.
  void Finish(const char* why = "stream ends");

  // The MPA frame the stream started with, if it did and it is complete.
  const std::optional<MpaSummary>& mpa() const { return mpa_; }
  std::uint64_t fpdus() const { return fpdus_; }
  std::uint64_t bad_crcs() const { return bad_crcs_; }
  // True once the decoder lost the frame boundaries (a length field it cannot trust): the rest
  // of the stream is not decoded.
  bool lost() const { return lost_; }

 private:
  bool TryMpa();
  bool TryFpdu();
  void Emit(std::uint64_t length, std::string text, bool crc_bad = false);

  const Options options_;
  const Sink sink_;
  std::optional<bool> negotiated_crc_;
  std::vector<std::uint8_t> buffer_;  // bytes fed and not yet decoded
  std::uint64_t offset_ = 0;          // stream offset of buffer_[0]
  bool started_ = false;              // past the MPA frame (or there is none)
  bool lost_ = false;
  std::optional<MpaSummary> mpa_;
  std::uint64_t fpdus_ = 0;
  std::uint64_t bad_crcs_ = 0;
};

// Peeks at the start of a stream: the MPA frame's summary if it begins with a whole one.
std::optional<MpaSummary> PeekMpa(const std::uint8_t* bytes, std::size_t length);

}  // namespace softdat::tools::iwarp_dump
