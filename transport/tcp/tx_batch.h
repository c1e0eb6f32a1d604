// What one connection writes next, as one gather list: FPDU headers, trailers and setup frames in
// a small preallocated arena; payload either straight from the consumer's registered memory (no
// copy) or, when it must be checksummed, from a preallocated staging copy. Written with sendmsg
// without blocking; a partial write resumes where it stopped.
#pragma once

#include <sys/uio.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace softdat::transport::tcp {

class TxBatch {
 public:
  static constexpr std::size_t kArenaSize = 8192;
  static constexpr std::size_t kMaxPieces = 128;
  static constexpr std::size_t kStagingSize = 320 * 1024;

  enum class Write : std::uint8_t { kDone, kBlocked, kError };

  // Nothing queued is left unwritten.
  bool empty() const { return next_ == count_; }
  // Starts a new batch; only when empty().
  void Reset();

  std::size_t arena_room() const { return arena_.size() - arena_used_; }
  std::size_t staging_room() const { return staging_.size() - staging_used_; }
  std::size_t piece_room() const { return kMaxPieces - count_; }
  std::size_t bytes() const { return bytes_; }

  // Appends `length` arena bytes to the list and returns them for the caller to fill (they
  // stay put until Reset). Needs arena_room() >= length and a free piece.
  std::uint8_t* Reserve(std::size_t length);
  // Like Reserve, from the payload staging area (staging_room() >= length).
  std::uint8_t* ReserveStaging(std::size_t length);
  // Appends memory the caller keeps valid until the batch is written. Needs a free piece.
  void AddExternal(const void* data, std::size_t length);

  // Writes as much as the socket takes. kError leaves errno set (0 when the peer closed).
  Write WriteTo(int fd);

 private:
  enum class Source : std::uint8_t { kArena, kStaging, kExternal };
  void Append(const void* data, std::size_t length, Source source);

  std::array<std::uint8_t, kArenaSize> arena_{};
  std::array<iovec, kMaxPieces> pieces_{};
  std::vector<std::uint8_t> staging_ = std::vector<std::uint8_t>(kStagingSize);
  std::size_t arena_used_ = 0;
  std::size_t staging_used_ = 0;
  std::size_t count_ = 0;
  std::size_t next_ = 0;  // first piece not fully written
  std::size_t bytes_ = 0;
  Source last_ = Source::kExternal;
};

}  // namespace softdat::transport::tcp
