// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// TxStream, writing: the turn of batches, the write and the wait for socket room, completions,
// coalescing, and Post's latency path (framing is in tx_stream_frame.cc).
#include "transport/tcp/tx_stream.h"

#include <sys/socket.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstring>

#include "base/log.h"
#include "transport/tcp/connection.h"
#include "transport/tcp/kick_queue.h"
#include "transport/tcp/mono_clock.h"

namespace softdat::transport::tcp {
namespace {

// What one turn may write before it lets other connections run: this many batches, and about
// this many payload bytes.
constexpr int kBatchesPerTurn = 8;
constexpr std::size_t kTurnBytes = 2 * 1024 * 1024;

}  // namespace

TxStream::TxStream(Connection& connection)
    : c_(connection),
      batch_(connection.options_.buffers->frames, connection.options_.buffers->staging,
             &connection.options_.buffers->sendmsg_calls),
      written_(std::max<std::uint32_t>(1, connection.config_.max_send_work)) {}

void TxStream::Enter(TxEvent event) {
  const std::optional<TxState> next = Next(state_, event);
  assert(next.has_value() && "TxStream: a transition its state does not allow");
  if (next) state_ = *next;
}

bool TxStream::MayWrite() const {
  const SetupState setup = c_.setup();
  return (setup == SetupState::kEstablished || setup == SetupState::kClosing) && state_ == TxState::kOpen;
}

// A read-side poll (PollIo, after every read) then skips the batch machinery, which is on every
// ping-pong message's receive path (docs/PERFORMANCE.md, "Small messages").
bool TxStream::Idle() const {
  if (c_.setup() != SetupState::kEstablished || state_ != TxState::kOpen || batch_.held() || written_count_ != 0 ||
      message_.kind != Kind::kNone || owe_rtr_ || !c_.reads_in_.empty())
    return false;
  return c_.posts_.count() == 0;  // a Work posted meanwhile comes with the kick its Post made
}

bool TxStream::AllOnSocket() const {
  return state_ == TxState::kOpen && batch_.empty() && message_.kind == Kind::kNone && written_sent_ == written_count_ &&
         !owe_rtr_ && c_.reads_in_.empty() && c_.posts_.count() == 0;
}

bool TxStream::Drained() const { return batch_.empty() && message_.kind == Kind::kNone; }

void TxStream::Pump() {
  if (Idle()) return;
  PumpBatches();
  // Everything is on the socket: the send blocks go back to the pool until there is more.
  if (batch_.empty()) batch_.Drop();
}

void TxStream::PumpBatches() {
  // Held: the Reply waits for its connection's ESTABLISHED to be delivered (StartAccept).
  if (state_ == TxState::kBlocked || state_ == TxState::kHeld || state_ == TxState::kShut ||
      c_.setup() == SetupState::kEnded)
    return;
  if (state_ == TxState::kFailed) {
    if (from_post_) return;
    // A write from Post failed; the connection ends here, where events may be reported.
    SOFTDAT_LOG(kWarn, "tcp %s: send failed: %s; breaking the connection", c_.Describe().data(),
                std::strerror(failed_errno_));
    c_.End(ConnectionEnd::kBroken);
    return;
  }
  if (!batch_.Hold()) return Fail(ENOMEM);
  std::size_t turn_bytes = 0;
  for (int batch = 0; batch < kBatchesPerTurn && turn_bytes < kTurnBytes; ++batch) {
    if (!Flush()) return;
    batch_.Reset();
    if (!from_post_) CompleteWritten();
    if (c_.setup() == SetupState::kEnded) return;
    if (!MayWrite()) {
      // Gated (held until the initiator's first FPDU), or not carrying traffic (setup frames were
      // all there was to write): a graceful close may still be waiting for this.
      c_.MaybeFinishClose();
      return;
    }
    bool framed = false;
    while (true) {
      if (message_.kind == Kind::kNone && !NextMessage()) break;
      const std::size_t before = batch_.bytes();
      FrameOne();
      if (batch_.bytes() == before) break;  // no room: write this batch first
      framed = true;
    }
    if (!framed) {
      c_.MaybeFinishClose();
      return;
    }
    turn_bytes += batch_.bytes();
  }
  // Still more to send: come back after the other connections had a turn.
  c_.Kick();
}

void TxStream::Fail(int error) {
  if (from_post_) {
    // Post may not report events: the next poll ends the connection.
    if (state_ == TxState::kOpen || state_ == TxState::kGated || state_ == TxState::kBlocked)
      Enter(TxEvent::kWriteFailed);
    failed_errno_ = error;
    c_.Kick();
    return;
  }
  SOFTDAT_LOG(kWarn, "tcp %s: send failed: %s; breaking the connection", c_.Describe().data(), std::strerror(error));
  c_.End(ConnectionEnd::kBroken);
}

void TxStream::NoteWrite() {
  last_write_ns_ = MonotonicNs();
  c_.options_.buffers->last_write_ns.store(last_write_ns_, std::memory_order_relaxed);
  if (writes_without_read_ < 2) ++writes_without_read_;
}

bool TxStream::Flush() {
  if (!batch_.empty()) NoteWrite();
  switch (batch_.WriteTo(c_.fd())) {
    case TxBatch::Write::kDone:
      written_sent_ = written_count_;  // everything framed is on the socket now
      return true;
    case TxBatch::Write::kBlocked:
      Enter(TxEvent::kSocketFull);
      c_.socket_.async_wait(asio::socket_base::wait_write,
                            [self = c_.shared_from_this()](const boost::system::error_code& error) {
                              Connection::IoLock lock(*self);
                              if (self->detached()) return;
                              TxStream& tx = self->tx_;
                              if (tx.state_ == TxState::kBlocked) tx.Enter(TxEvent::kRoom);
                              if (error || self->setup() == SetupState::kEnded) return;
                              tx.Pump();
                            });
      return false;
    case TxBatch::Write::kError:
      break;
  }
  Fail(errno != 0 ? errno : EPIPE);
  return false;
}

bool TxStream::WriteBatchNow() { return batch_.WriteTo(c_.fd()) == TxBatch::Write::kDone; }

void TxStream::Append(const std::uint8_t* bytes, std::size_t length) {
  if (length == 0) return;  // after a Reserve: the frames block is held
  std::memcpy(batch_.Reserve(length), bytes, length);
}

void TxStream::Abandon() {
  batch_.Abandon();
  if (state_ != TxState::kShut) Enter(TxEvent::kShut);
}

bool TxStream::Streaming() const { return writes_without_read_ >= 2 && c_.options_.coalesce_ns != 0; }

bool TxStream::Due(std::uint64_t ia_last_write_ns) const {
  if (!Streaming()) return true;
  const std::uint64_t last = std::max(last_write_ns_, ia_last_write_ns);
  const std::uint64_t now = MonotonicNs();
  return now > last && now - last >= c_.options_.coalesce_ns;
}

// Completes the Sends and Writes whose bytes are all on the socket, in order. Those framed into a
// batch that waits for room stay: their payload (an inline copy, a snapshot) is still referenced
// by the batch, and a completion would free it for reuse before it left.
void TxStream::CompleteWritten() {
  const std::size_t count = written_sent_;
  if (count == 0) return;
  std::uint32_t inline_done = 0;
  for (std::size_t i = 0; i < count; ++i) inline_done += written_[i].inline_charged;
  if (inline_done != 0) c_.posts_.ReleaseInline(inline_done);
  for (std::size_t i = 0; i < count && !c_.detached(); ++i)
    c_.events_->OnWorkDone(written_[i].id, WorkStatus::kSuccess, written_[i].length);
  c_.Reported();
  // The ones still waiting move to the front (a few at most: one batch's worth).
  const std::size_t waiting = written_count_ - count;
  for (std::size_t i = 0; i < waiting; ++i) written_[i] = written_[count + i];
  written_count_ = waiting;
  written_sent_ = 0;
}

// The latency path, from Post with io_mutex_ held: when nobody else is at this connection and no
// coalescing holds it back (an earlier write's completion unreported, a send-only stream inside
// its window, or other connections waiting for a drain), the Work is written from the consumer's
// thread now. Request-response traffic, like every ping-pong message, and an occasional Send go
// out at once.
void TxStream::WriteFromPost() {
  if (!MayWrite()) return;
  // progress=poll: the consumer's next DAT call may never come (it posts, then sleeps), so the
  // Post writes now whatever the socket takes (a full socket is all that waits, for that call).
  if (!c_.options_.post_writes_all) {
    if (written_count_ != 0) return;
    if (!Due(c_.options_.buffers->last_write_ns.load(std::memory_order_relaxed))) return;
    if (Streaming() && c_.options_.kicks != nullptr && c_.options_.kicks->queued()) return;
  }
  from_post_ = true;
  // The shortest form: a Send framed whole at post, the only Work queued on an idle connection,
  // goes out with one send() straight from its frame, no batch (a ping-pong's post;
  // docs/PERFORMANCE.md, "Small messages"). What the socket does not take at once becomes a
  // batch, as if Pump had framed it.
  PostQueue::Posted posted;
  if (written_count_ == 0 && c_.setup() == SetupState::kEstablished && batch_.empty() && message_.kind == Kind::kNone &&
      !owe_rtr_ && c_.reads_in_.empty() && c_.posts_.TakeLoneFramed(posted)) {
    written_[0] = Written{posted.work.id, static_cast<std::uint32_t>(posted.work.length), posted.inline_charged};
    written_count_ = 1;
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(posted.inline_segment.address);
    const std::size_t size = posted.inline_segment.length;
    const ssize_t n = ::send(c_.fd(), bytes, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    c_.options_.buffers->sendmsg_calls.fetch_add(1, std::memory_order_relaxed);
    NoteWrite();  // after the write: the peer has the frame already
    if (n == static_cast<ssize_t>(size)) {
      written_sent_ = 1;  // completed at the next poll (CompleteWritten)
    } else if (!batch_.Hold()) {
      Fail(ENOMEM);
    } else {
      const std::size_t done = n > 0 ? static_cast<std::size_t>(n) : 0;
      batch_.AddExternal(bytes + done, size - done);
      Pump();
    }
  } else {
    Pump();
  }
  from_post_ = false;
}

}  // namespace softdat::transport::tcp
