// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What one connection writes next, as one gather list: FPDU headers, trailers and setup frames in
// a small arena; payload either straight from the consumer's registered memory (no copy) or, when
// it must be checksummed from a private copy, from a staging copy. Written with sendmsg without
// blocking; a partial write resumes where it stopped.
//
// The gather list and arena live in one block of the transport's `frames` pool, the staging area
// in a block of its `staging` pool: a connection holds them only while it has a batch to write
// (Hold / HoldStaging), and gives them back once the batch is written (Drop), so an idle
// connection holds no send memory.
#pragma once

#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "transport/tcp/block_pool.h"

namespace softdat::transport::tcp {

class TxBatch {
 public:
  static constexpr std::size_t kArenaSize = 8192;
  static constexpr std::size_t kMaxPieces = 128;
  static constexpr std::size_t kFrameBlock = kMaxPieces * sizeof(iovec) + kArenaSize;
  static constexpr std::size_t kStagingSize = 320 * 1024;

  enum class Write : std::uint8_t { kDone, kBlocked, kError };

  // `sendmsg_calls`, if given, counts the calls WriteTo makes.
  TxBatch(BlockPool& frames, BlockPool& staging, std::atomic<std::uint64_t>* sendmsg_calls = nullptr)
      : frames_(frames), staging_pool_(staging), sendmsg_calls_(sendmsg_calls) {}
  ~TxBatch();
  TxBatch(const TxBatch&) = delete;
  TxBatch& operator=(const TxBatch&) = delete;

  // Takes the gather list and arena block if not held yet; false when no memory is to be had.
  // Every other call but empty(), WriteTo and Drop needs it held.
  bool Hold();
  // Takes the staging block if not held yet (after Hold); false when no memory is to be had.
  bool HoldStaging();
  // Gives both blocks back; only when empty().
  void Drop();
  // Forgets what is unwritten and gives both blocks back (the connection ended).
  void Abandon();
  bool held() const { return pieces_ != nullptr; }

  // Nothing queued is left unwritten.
  bool empty() const { return next_ == count_; }
  // Starts a new batch; only when empty().
  void Reset();

  std::size_t arena_room() const { return kArenaSize - arena_used_; }
  // Staging room, counting a staging block not taken yet.
  std::size_t staging_room() const { return kStagingSize - staging_used_; }
  std::size_t piece_room() const { return kMaxPieces - count_; }
  std::size_t bytes() const { return bytes_; }

  // Appends `length` arena bytes to the list and returns them for the caller to fill (they
  // stay put until Reset). Needs arena_room() >= length and a free piece.
  std::uint8_t* Reserve(std::size_t length);
  // Like Reserve, from the payload staging area (HoldStaging, staging_room() >= length).
  std::uint8_t* ReserveStaging(std::size_t length);
  // Appends memory the caller keeps valid until the batch is written. Needs a free piece.
  void AddExternal(const void* data, std::size_t length);

  // Writes as much as the socket takes. kError leaves errno set (0 when the peer closed).
  Write WriteTo(int fd);

 private:
  enum class Source : std::uint8_t { kArena, kStaging, kExternal };
  void Append(const void* data, std::size_t length, Source source);

  BlockPool& frames_;
  BlockPool& staging_pool_;
  std::atomic<std::uint64_t>* sendmsg_calls_;
  iovec* pieces_ = nullptr;          // kMaxPieces, at the front of the frames block
  std::uint8_t* arena_ = nullptr;    // kArenaSize, behind them
  std::uint8_t* staging_ = nullptr;  // a staging block, or null
  std::size_t arena_used_ = 0;
  std::size_t staging_used_ = 0;
  std::size_t count_ = 0;
  std::size_t next_ = 0;  // first piece not fully written
  std::size_t bytes_ = 0;
  Source last_ = Source::kExternal;
};

}  // namespace softdat::transport::tcp
