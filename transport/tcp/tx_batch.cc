// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// TxBatch: its pooled blocks, gather-list bookkeeping and the non-blocking sendmsg loop.
#include "transport/tcp/tx_batch.h"

#include <sys/socket.h>

#include <cerrno>

namespace softdat::transport::tcp {

TxBatch::~TxBatch() {
  frames_.Release(reinterpret_cast<std::uint8_t*>(pieces_));
  staging_pool_.Release(staging_);
}

bool TxBatch::Hold() {
  if (pieces_ != nullptr) return true;
  std::uint8_t* block = frames_.Acquire();
  if (block == nullptr) return false;
  pieces_ = reinterpret_cast<iovec*>(block);
  arena_ = block + kMaxPieces * sizeof(iovec);
  return true;
}

bool TxBatch::HoldStaging() {
  if (staging_ == nullptr) staging_ = staging_pool_.Acquire();
  return staging_ != nullptr;
}

void TxBatch::Drop() {
  if (empty()) Abandon();
}

void TxBatch::Abandon() {
  Reset();
  frames_.Release(reinterpret_cast<std::uint8_t*>(pieces_));
  staging_pool_.Release(staging_);
  pieces_ = nullptr;
  arena_ = staging_ = nullptr;
}

void TxBatch::Reset() {
  arena_used_ = 0;
  staging_used_ = 0;
  count_ = next_ = 0;
  bytes_ = 0;
  last_ = Source::kExternal;
}

std::uint8_t* TxBatch::Reserve(std::size_t length) {
  std::uint8_t* at = arena_ + arena_used_;
  arena_used_ += length;
  Append(at, length, Source::kArena);
  return at;
}

std::uint8_t* TxBatch::ReserveStaging(std::size_t length) {
  std::uint8_t* at = staging_ + staging_used_;
  staging_used_ += length;
  Append(at, length, Source::kStaging);
  return at;
}

void TxBatch::AddExternal(const void* data, std::size_t length) { Append(data, length, Source::kExternal); }

void TxBatch::Append(const void* data, std::size_t length, Source source) {
  if (length == 0) return;
  bytes_ += length;
  // Consecutive reservations from one area are adjacent in memory: one piece covers them.
  if (source != Source::kExternal && source == last_ && count_ > 0) {
    iovec& last = pieces_[count_ - 1];
    if (static_cast<std::uint8_t*>(last.iov_base) + last.iov_len == data) {
      last.iov_len += length;
      return;
    }
  }
  pieces_[count_++] = iovec{const_cast<void*>(data), length};
  last_ = source;
}

TxBatch::Write TxBatch::WriteTo(int fd) {
  while (next_ < count_) {
    msghdr message{};
    message.msg_iov = pieces_ + next_;
    message.msg_iovlen = count_ - next_;
    const ssize_t n = ::sendmsg(fd, &message, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sendmsg_calls_ != nullptr) sendmsg_calls_->fetch_add(1, std::memory_order_relaxed);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? Write::kBlocked : Write::kError;
    }
    if (n == 0) {
      errno = 0;
      return Write::kError;
    }
    auto written = static_cast<std::size_t>(n);
    while (written > 0) {
      iovec& piece = pieces_[next_];
      if (written >= piece.iov_len) {
        written -= piece.iov_len;
        ++next_;
      } else {
        piece.iov_base = static_cast<std::uint8_t*>(piece.iov_base) + written;
        piece.iov_len -= written;
        written = 0;
      }
    }
  }
  return Write::kDone;
}

}  // namespace softdat::transport::tcp
