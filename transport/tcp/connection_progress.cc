// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// How the progress context drives a connection: a poll of its socket, a kick from a consumer
// thread, the delivery of what a locked section reported, the PollSet registration (and what a
// held receive stream watches), and Detach, after which no event runs.
#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>

#include <boost/asio/post.hpp>
#include <cstdio>
#include <cstring>
#include <thread>

#include "base/log.h"
#include "transport/tcp/connection.h"
#include "transport/tcp/kick_queue.h"
#include "transport/tcp/poll_set.h"

namespace softdat::transport::tcp {

void Connection::UnlockAndDeliver() {
  EndpointEvents* deliver = nullptr;
  if (report_pending_ && events_ != nullptr) {
    deliver = events_;
    // Under io_mutex_: a Detach that takes the mutex next sees it and waits for the delivery.
    delivering_.fetch_add(1, std::memory_order_relaxed);
  }
  report_pending_ = false;
  io_mutex_.unlock();
  if (deliver == nullptr) return;
  deliver->Deliver();
  delivering_.fetch_sub(1, std::memory_order_release);
}

bool Connection::PollIo(bool wait) {
  IoLock lock(*this, wait);
  // Without `wait`, a busy connection is left to its holder; a level-triggered PollSet reports it
  // again if need be.
  if (!lock.owns_lock() || detached()) return false;
  // A held receive stream is reported only when its peer ended the connection or the socket
  // failed (SetReading).
  if (rx_.held()) return EndIfPeerGone();
  const SetupState state = setup();
  if (state != SetupState::kAwaitReply && state != SetupState::kAwaitRtr && !Carries(state)) return false;
  const std::uint64_t reads = rx_.reads();
  rx_.Read();
  if (setup() == SetupState::kEnded) return true;
  // A consumer's poll inside a send-only stream's coalescing window leaves queued Work to its
  // kick (OnKick), as the kick itself does: otherwise a consumer that polls one EVD between
  // posts (a stream loop looking for the peer's answer) writes every Send alone.
  if (wait || tx_.Due()) tx_.Pump();
  return rx_.reads() != reads;  // something arrived (a poll that found nothing moved nothing)
}

bool Connection::OnKick(bool consumer, std::uint64_t ia_last_write_ns) {
  IoLock lock(*this);
  if (detached() || setup() == SetupState::kEnded || setup() == SetupState::kIdle) {
    kick_state_ = KickState::kNone;
    return true;
  }
  // A consumer's poll inside the coalescing window of a send-only stream leaves the queued Work
  // for a later poll (the kick stays pending: KickQueue queues it again), unless something else
  // needs this connection now.
  if (consumer && disconnect_.load() == DisconnectRequest::kNone && !(rx_.held() && rx_.buffers_posted()) &&
      !tx_.Due(ia_last_write_ns))
    return false;
  kick_state_ = KickState::kNone;
  switch (disconnect_.exchange(DisconnectRequest::kNone)) {
    case DisconnectRequest::kAbrupt:
      End(ConnectionEnd::kDisconnected);
      return true;
    case DisconnectRequest::kGraceful:
      BeginClose();
      if (setup() == SetupState::kEnded) return true;
      break;
    case DisconnectRequest::kNone:
      break;
  }
  rx_.ResumeIfPosted();
  if (setup() == SetupState::kEnded) return true;
  tx_.Pump();
  return true;
}

void Connection::Kick() {
  const KickState was = kick_state_.exchange(KickState::kKicked);
  if (was == KickState::kKicked) return;
  if (options_.kicks == nullptr) {
    if (was == KickState::kNone) asio::post(io_, [self = shared_from_this()] { (void)self->OnKick(false); });
  } else if (was == KickState::kNone) {
    options_.kicks->Push(shared_from_this());
  } else {
    options_.kicks->WakeForQueued();  // queued by Defer, which woke nobody
  }
}

// A completion nobody waits for waits for the next call that could see it (a dequeue, a wait, the
// progress thread's next drain), as a completion waits in a device's CQ: waking the thread for it
// cost a wake-up per signaled RDMA Write where consumers spin on memory, each, on a two-CPU
// machine, preempting a spinner (PERFORMANCE.md, "Progress"); LocalConnection::Defer is the
// same-host path's. The order is the same-host path's: queued, a fence, the count of waiters (a
// waiter counts itself, then drains the ring: TcpTransport::Pause).
void Connection::Defer() {
  if (options_.kicks == nullptr) return Kick();
  KickState none = KickState::kNone;
  if (!kick_state_.compare_exchange_strong(none, KickState::kQueued)) return;  // queued already
  options_.kicks->Push(shared_from_this(), false);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (options_.kicks->MayBeWaitedOn()) Kick();
}

void Connection::Detach() {
  {
    std::lock_guard lock(io_mutex_);
    events_ = nullptr;
    report_pending_ = false;
  }
  // A delivery that began before is the last event of this endpoint: wait for it. It takes no
  // lock of ours and runs no consumer code (CNO agents are deferred), so it ends on its own.
  while (delivering_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  asio::post(io_, [self = shared_from_this()] {
    IoLock lock(*self);
    if (self->setup() != SetupState::kEnded) self->Enter(SetupEvent::kEnd);
    self->rx_.End();
    self->timer_.cancel();
    self->CloseSocket();
    self->tx_.Abandon();
  });
}

std::array<char, 64> Connection::Describe() const {
  const sockaddr_in local = local_address();
  const sockaddr_in remote = remote_address();
  char local_text[INET_ADDRSTRLEN] = "?";
  char remote_text[INET_ADDRSTRLEN] = "?";
  if (local.sin_family == AF_INET) inet_ntop(AF_INET, &local.sin_addr, local_text, sizeof local_text);
  if (remote.sin_family == AF_INET) inet_ntop(AF_INET, &remote.sin_addr, remote_text, sizeof remote_text);
  std::array<char, 64> text{};
  if (local.sin_family != AF_INET)  // not connected yet
    std::snprintf(text.data(), text.size(), "-> %s:%u", remote_text, ntohs(remote.sin_port));
  else
    std::snprintf(text.data(), text.size(), "%s:%u -> %s:%u", local_text, ntohs(local.sin_port), remote_text,
                  ntohs(remote.sin_port));
  return text;
}

void Connection::StartPolling() {
  if (options_.poll_set == nullptr || poll_.registered) return;
  poll_.registered = options_.poll_set->Add(fd(), shared_from_this(), poll_.token);
  poll_.watch = PollSet::Watch::kData;
}

void Connection::SetWatch(PollSet::Watch watch) {
  if (!poll_.registered || poll_.watch == watch) return;
  poll_.watch = watch;
  options_.poll_set->SetWatch(fd(), poll_.token, watch);
}

// A held connection was reported: the peer's end, or a failure. The messages waiting for receive
// buffers are the peer's last.
// - A reset or a failed socket (a dead peer that got data from us, the keepalive or user timeout):
//   an RNIC's connection in RNR retry ends with its peer; the waiting messages are discarded,
//   never delivered after the end (they took no buffer), and the end is BROKEN: what the peer
//   sent did not all arrive. Without this the connection waited for a buffer forever and its EP
//   never heard of the end (a dead client of an overloaded SRQ server leaked an EP).
// - A FIN alone: a graceful disconnect, or a process that ended (its kernel closed for it; the two
//   look the same here). What the peer sent is whole in our socket, and a graceful peer counts it
//   delivered, so it keeps waiting for buffers, for kCloseLinger at most (the dead peer's EP hears
//   within that bound). Only a failure is watched for meanwhile: the FIN would be reported again
//   and again.
bool Connection::EndIfPeerGone() {
  pollfd p{fd(), POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) == 0) return false;
  int error = 0;
  socklen_t length = sizeof error;
  (void)::getsockopt(fd(), SOL_SOCKET, SO_ERROR, &error, &length);
  if ((p.revents & POLLERR) == 0 && error == 0) {
    rx_.HoldAfterPeerClosed();
    SetWatch(PollSet::Watch::kFailure);
    return false;
  }
  SOFTDAT_LOG(kInfo, "tcp %s: the connection failed (%s) while message %u waited for a receive buffer; the "
              "waiting messages are discarded", Describe().data(), error != 0 ? std::strerror(error) : "reset",
              rx_.expected_msn());
  End(ConnectionEnd::kBroken);
  return true;
}

}  // namespace softdat::transport::tcp
