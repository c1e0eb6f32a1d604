// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What consumer threads call on a connection besides Connect and Accept: Post (and its latency
// path), the note that receive buffers came, and the request to disconnect.
#include <mutex>

#include "base/log.h"

#include "transport/tcp/connection.h"

namespace softdat::transport::tcp {

Status Connection::Post(const Work& work) {
  // The connection ended and its OnEnded is on its way (core holds the EP's state lock around
  // this call, so it has not run yet): the Work is accepted and left for that end to flush, as
  // core promises (the end flushes the request, or the request sees the end).
  if (setup_.load(std::memory_order_acquire) == SetupState::kEnded) return Status::Ok();
  if (Status status = posts_.Add(work); !status.ok()) return status;
  // The latency path: when nobody else is at this connection, the Work is written from this
  // thread now (TxStream::WriteFromPost). Post reports nothing (core holds its EP locks around
  // it), so it takes io_mutex_ plainly, not through IoLock: what it wrote completes at the next
  // poll of this connection: when that is all that is left, the poll need not be now (Defer).
  bool on_socket = false;
  if (io_mutex_.try_lock()) {
    std::lock_guard lock(io_mutex_, std::adopt_lock);
    if (!detached()) {
      tx_.WriteFromPost();
      on_socket = tx_.AllOnSocket();
    }
  }
  if (on_socket) {
    Defer();
  } else {
    Kick();
  }
  return Status::Ok();
}

void Connection::RecvBuffersAvailable() {
  if (rx_.NoteBuffersPosted()) Kick();
}

void Connection::Disconnect(bool graceful) {
  if (!started_.load()) return;
  SOFTDAT_LOG(kDebug, "tcp %s: the consumer asks for a%s disconnect", Describe().data(), graceful ? " graceful" : "n abrupt");
  if (graceful) {
    DisconnectRequest none = DisconnectRequest::kNone;
    disconnect_.compare_exchange_strong(none, DisconnectRequest::kGraceful);
  } else {
    disconnect_.store(DisconnectRequest::kAbrupt);
  }
  Kick();
}

}  // namespace softdat::transport::tcp
