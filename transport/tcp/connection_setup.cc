// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Connection setup and teardown: TCP connect, the MPA Request/Reply exchange with the RFC 6581
// IRD/ORD and ready-to-receive negotiation, graceful and abrupt disconnect, Terminate, and the
// single place a connection ends (End).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <thread>
#include <utility>

#include "base/log.h"
#include "transport/tcp/congestion.h"
#include "transport/tcp/crc32c.h"
#include "transport/tcp/kick_queue.h"
#include "transport/tcp/poll_set.h"
#include "transport/tcp/socket_fd.h"
#include "transport/tcp/tcp_connection.h"

namespace softdat::transport::tcp {
namespace {

// How long a passive connection waits for the active side's ready-to-receive FPDU, and how long
// a graceful disconnect waits for the peer's FIN before it closes anyway.
constexpr auto kRtrTimeout = std::chrono::seconds(10);
constexpr auto kCloseLinger = std::chrono::seconds(3);

std::uint32_t AtLeastOne(std::uint32_t n) { return std::max<std::uint32_t>(n, 1); }

std::size_t MpaFrameSize(const wire::MpaFrame& frame) {
  return wire::kMpaFrameHeaderSize + (frame.enhanced ? wire::kMpaEnhancedBlockSize : 0);
}

}  // namespace

Connection::Connection(asio::io_context& io, const ConnectionOptions& options, const EndpointConfig& config,
                       EndpointEvents* events)
    : io_(io),
      options_(options),
      config_(config),
      posted_(AtLeastOne(config.max_send_work)),
      inline_(options.buffers->inline_copy),
      events_(events),
      socket_(io),
      timer_(io),
      rnr_timer_(io),
      crc_(options.mpa_crc),
      ord_(AtLeastOne(config.max_rdma_read_out)),
      written_ids_(AtLeastOne(config.max_send_work)),
      written_lengths_(AtLeastOne(config.max_send_work)),
      written_inline_(AtLeastOne(config.max_send_work)),
      responses_(AtLeastOne(config.max_rdma_read_in)),
      reads_(AtLeastOne(config.max_rdma_read_out)) {
  private_data_.reserve(wire::kMaxMpaPrivateData);
  options_.buffers->live_connections.fetch_add(1, std::memory_order_relaxed);
}

Connection::~Connection() {
  ReleaseRx();
  options_.buffers->live_connections.fetch_sub(1, std::memory_order_relaxed);
}

Status Connection::Connect(const sockaddr_in& remote, std::uint16_t port, std::span<const std::uint8_t> private_data,
                           std::uint64_t timeout_us) {
  if (private_data.size() > options_.max_private_data) return Status(Code::kInvalidParameter, Detail::kParamPrivateDataSize);
  if (started_.exchange(true)) return Status(Code::kInvalidState, Detail::kEpConnected);
  // Nothing of the progress context runs before the post below, which orders these writes.
  private_data_.assign(private_data.begin(), private_data.end());
  sockaddr_in to = remote;
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  asio::post(io_, [self = shared_from_this(), to, timeout_us] { self->StartConnect(to, timeout_us); });
  return Status::Ok();
}

Status Connection::Accept(asio::ip::tcp::socket socket, const wire::MpaFrame& request,
                          std::span<const std::uint8_t> private_data) {
  if (private_data.size() > options_.max_private_data) return Status(Code::kInvalidParameter, Detail::kParamPrivateDataSize);
  if (started_.exchange(true)) return Status(Code::kInvalidState, Detail::kEpConnected);
  {
    IoLock lock(*this);
    socket_ = std::move(socket);
    private_data_.assign(private_data.begin(), private_data.end());
  }
  asio::post(io_, [self = shared_from_this(), request] { self->StartAccept(request); });
  return Status::Ok();
}

void Connection::RecvBuffersAvailable() {
  if (recv_available_.exchange(true)) return;
  Kick();
}

void Connection::Kick() {
  if (kick_pending_.exchange(true)) return;
  if (options_.kicks != nullptr) {
    options_.kicks->Push(shared_from_this());
  } else {
    asio::post(io_, [self = shared_from_this()] { (void)self->OnKick(false); });
  }
}

void Connection::Disconnect(bool graceful) {
  if (!started_.load()) return;
  if (graceful) {
    int none = 0;
    disconnect_request_.compare_exchange_strong(none, 1);
  } else {
    disconnect_request_.store(2);
  }
  Kick();
}

void Connection::Detach() {
  {
    std::lock_guard lock(io_mutex_);
    detached_ = true;
    events_ = nullptr;
    report_pending_ = false;
  }
  // A delivery that began before is the last event of this endpoint: wait for it. It takes no
  // lock of ours and runs no consumer code (CNO agents are deferred), so it ends on its own.
  while (delivering_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  asio::post(io_, [self = shared_from_this()] {
    IoLock lock(*self);
    self->phase_ = Phase::kEnded;
    self->ended_ = true;
    self->timer_.cancel();
    self->rnr_timer_.cancel();
    self->CloseSocket();
  });
}

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

sockaddr_in Connection::local_address() const {
  std::lock_guard lock(address_mutex_);
  return local_;
}

sockaddr_in Connection::remote_address() const {
  std::lock_guard lock(address_mutex_);
  return remote_;
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

void Connection::RecordAddresses() {
  boost::system::error_code error;
  const auto local = socket_.local_endpoint(error);
  const auto remote = socket_.remote_endpoint(error);
  std::lock_guard lock(address_mutex_);
  if (local.protocol() == asio::ip::tcp::v4()) std::memcpy(&local_, local.data(), sizeof local_);
  if (remote.protocol() == asio::ip::tcp::v4()) std::memcpy(&remote_, remote.data(), sizeof remote_);
}

void Connection::StartConnect(sockaddr_in remote, std::uint64_t timeout_us) {
  IoLock lock(*this);
  {
    std::lock_guard address_lock(address_mutex_);  // for log lines before the socket connects
    remote_ = remote;
  }
  if (detached_ || phase_ != Phase::kIdle) return;
  phase_ = Phase::kConnecting;
  boost::system::error_code error;
  const int fd = OpenCloseOnExecSocket();
  if (fd < 0) {
    error = boost::system::error_code(errno, boost::system::system_category());
  } else {
    socket_.assign(asio::ip::tcp::v4(), fd, error);
    if (error) ::close(fd);
  }
  if (!error) {
    // The IA's address now, the port at connect(): bind() to port 0 must find a port no socket
    // uses for any peer, and with the ephemeral range half full of TIME_WAIT (a thousand
    // connections opened and closed a few times a minute) each search took milliseconds; a
    // burst of 1,000 connects took 5 s, and the peer closed the connections whose MPA Request
    // had not gone out by then. connect() needs the port free only towards its own peer.
    // (A kernel older than 4.2 refuses the option: bind() then picks the port as before.)
    const int on = 1;
    (void)::setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &on, sizeof on);
    // Shareable, as a kernel iWARP stack's own sockets are: rdma_cm picks a port for siw's
    // connections from the ephemeral range without asking TCP, and siw's bind() with
    // SO_REUSEADDR to a port this connection holds (or its TIME_WAIT does) failed unless this
    // socket allowed it too; the iWARP peer's connect then failed with "Address already in use".
    // connect() still refuses a four-tuple in use, so nothing else changes.
    (void)::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    asio::ip::tcp::endpoint local(asio::ip::address_v4(ntohl(options_.local.sin_addr.s_addr)), 0);
    socket_.bind(local, error);
  }
  if (error) {
    SOFTDAT_LOG(kError, "tcp %s: cannot open a socket on the IA address: %s", Describe().data(), error.message().c_str());
    End(ConnectionEnd::kUnreachable);
    return;
  }
  if (timeout_us != std::numeric_limits<std::uint64_t>::max()) {
    // Asio's clock arithmetic overflows near the top of the range: a year is forever enough.
    const std::uint64_t capped = std::min<std::uint64_t>(timeout_us, 365ull * 24 * 3600 * 1000000);
    timer_.expires_after(std::chrono::microseconds(capped));
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
      IoLock lock(*self);
      if (error || self->detached_) return;
      if (self->phase_ != Phase::kConnecting && self->phase_ != Phase::kAwaitReply) return;
      SOFTDAT_LOG(kInfo, "tcp %s: connect timed out", self->Describe().data());
      self->End(ConnectionEnd::kTimedOut);
    });
  }
  asio::ip::tcp::endpoint to(asio::ip::address_v4(ntohl(remote.sin_addr.s_addr)), ntohs(remote.sin_port));
  socket_.async_connect(to, [self = shared_from_this()](const boost::system::error_code& error) {
    IoLock lock(*self);
    if (self->detached_ || self->phase_ != Phase::kConnecting) return;
    self->OnConnected(error);
  });
}

void Connection::ApplySocketOptions() {
  boost::system::error_code ignored;
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
  socket_.non_blocking(true, ignored);
  if (options_.timeout_ms == 0) return;
  // An RNIC breaks a connection whose peer stops answering after its retry timeout; the kernel
  // does the same for us: unacknowledged data (or a shut receive window) for timeout_ms ends the
  // socket with ETIMEDOUT, which the next read reports as a broken connection. Keepalive probes
  // make an idle connection notice too; TCP_USER_TIMEOUT then decides when they have failed.
  const int fd = socket_.native_handle();
  const unsigned timeout = options_.timeout_ms;
  const int on = 1;
  const int idle = static_cast<int>(std::max(1u, timeout / 2000));      // seconds
  const int interval = static_cast<int>(std::max(1u, timeout / 4000));  // seconds
  const int probes = 9;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout, sizeof timeout) != 0 ||
      ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on) != 0 ||
      ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) != 0 ||
      ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval) != 0 ||
      ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes) != 0)
    SOFTDAT_LOG(kWarn, "tcp: cannot set the %u ms timeout on a connection: %s", timeout, std::strerror(errno));
}

// The IA's congestion= (congestion.h), on the addresses RecordAddresses took. A refusal leaves the
// system's choice and the connection works on: said at the default level when the IA named the
// algorithm, quietly for auto's Reno.
void Connection::ApplyCongestion() {
  const int fd = socket_.native_handle();
  sockaddr_in local{}, remote{};
  {
    std::lock_guard lock(address_mutex_);  // as RecordAddresses found them
    local = local_;
    remote = remote_;
  }
  if (local.sin_family != AF_INET) return;
  const char* algorithm = CongestionFor(options_.congestion, local, remote);
  if (algorithm == nullptr || SetCongestion(fd, algorithm)) return;
  const int error = errno;
  constexpr const char* kRefused =
      "tcp: the kernel refuses congestion control %s on a connection (%s); it keeps the system's "
      "(net.ipv4.tcp_allowed_congestion_control lists what this user may choose)";
  if (options_.congestion == "auto") {
    SOFTDAT_LOG(kInfo, kRefused, algorithm, std::strerror(error));
  } else {
    SOFTDAT_LOG(kWarn, kRefused, algorithm, std::strerror(error));
  }
}

void Connection::OnConnected(const boost::system::error_code& error) {
  if (error) {
    if (error.value() == EADDRNOTAVAIL && error.category() == boost::system::system_category()) {
      // Not the peer's doing: this host has no port left to reach it from. Said at the default
      // level, since the remedy is the administrator's.
      SOFTDAT_LOG(kWarn, "tcp %s: connect failed: no local port is free towards the peer (the ephemeral range, "
                  "net.ipv4.ip_local_port_range, is used up)", Describe().data());
    } else {
      SOFTDAT_LOG(kInfo, "tcp %s: connect failed: %s", Describe().data(), error.message().c_str());
    }
    End(ConnectionEnd::kUnreachable);
    return;
  }
  ApplySocketOptions();
  RecordAddresses();
  ApplyCongestion();
  StartPolling();

  wire::MpaFrame request;
  request.crc = options_.mpa_crc;
  request.enhanced = true;
  request.revision = 2;
  request.peer_to_peer = true;
  request.rtr_write = true;
  request.ird = static_cast<std::uint16_t>(std::min<std::uint32_t>(config_.max_rdma_read_in, 0x3FFF));
  request.ord = static_cast<std::uint16_t>(std::min<std::uint32_t>(config_.max_rdma_read_out, 0x3FFF));
  request.private_data_length = static_cast<std::uint16_t>(private_data_.size());
  if (!tx_.Hold()) return FailTx(ENOMEM);
  (void)wire::EncodeMpaFrame(request, tx_.Reserve(MpaFrameSize(request)));
  WriteRaw(private_data_.data(), private_data_.size());
  phase_ = Phase::kAwaitReply;
  PumpTx();
  if (phase_ == Phase::kEnded) return;
  ReadLoop();
}

Connection::Frame Connection::ReadMpaReply() {
  const std::size_t available = rx_end_ - rx_start_;
  if (available < wire::kMpaFrameHeaderSize) return Frame::kNeedMore;
  const std::uint8_t* bytes = rx_ + rx_start_;
  wire::MpaFrame reply;
  std::uint16_t pd_length = 0;
  const char* why = nullptr;
  if (!wire::DecodeMpaHeader(bytes, true, reply, pd_length, why)) {
    SOFTDAT_LOG(kWarn, "tcp %s: connect refused by a bad MPA Reply: %s", Describe().data(), why);
    End(ConnectionEnd::kNonPeerRejected);
    return Frame::kEnded;
  }
  if (available < wire::kMpaFrameHeaderSize + pd_length) return Frame::kNeedMore;
  if (reply.enhanced) wire::DecodeMpaBlock(bytes + wire::kMpaFrameHeaderSize, reply);
  const std::size_t block = reply.enhanced ? wire::kMpaEnhancedBlockSize : 0;
  const std::span<const std::uint8_t> peer_data(bytes + wire::kMpaFrameHeaderSize + block, reply.private_data_length);
  rx_start_ += wire::kMpaFrameHeaderSize + pd_length;
  timer_.cancel();
  if (reply.rejected) {
    SOFTDAT_LOG(kInfo, "tcp %s: the peer rejected the connection", Describe().data());
    End(ConnectionEnd::kPeerRejected, peer_data);
    return Frame::kEnded;
  }
  if (reply.markers) {
    SOFTDAT_LOG(kWarn, "tcp %s: the peer asks for MPA markers, which softdat does not send", Describe().data());
    End(ConnectionEnd::kNonPeerRejected);
    return Frame::kEnded;
  }
  // C in either frame: both directions carry and check the CRC (RFC 5044 §7.1).
  SetCrc(reply.crc || options_.mpa_crc);
  if (reply.enhanced && reply.peer_to_peer) {
    if (reply.ird != 0) ord_ = std::min<std::uint32_t>(ord_, reply.ird);
    rtr_pending_ = reply.rtr_write;
  }
  Establish(peer_data);
  if (phase_ == Phase::kEnded) return Frame::kEnded;
  PumpTx();  // the ready-to-receive FPDU goes first, whether or not the consumer posts
  return phase_ == Phase::kEnded ? Frame::kEnded : Frame::kDone;
}

void Connection::StartAccept(wire::MpaFrame request) {
  IoLock lock(*this);
  if (detached_ || phase_ != Phase::kIdle) {
    CloseSocket();
    return;
  }
  ApplySocketOptions();
  RecordAddresses();
  ApplyCongestion();
  StartPolling();

  wire::MpaFrame reply;
  reply.reply = true;
  reply.revision = request.revision;
  reply.crc = request.crc || options_.mpa_crc;
  SetCrc(reply.crc);
  const char* refusal = request.markers ? "the peer asks for MPA markers" : nullptr;
  bool await_rtr = false;
  if (request.enhanced) {
    reply.enhanced = true;
    reply.peer_to_peer = request.peer_to_peer;
    reply.ird = static_cast<std::uint16_t>(std::min<std::uint32_t>(config_.max_rdma_read_in, 0x3FFF));
    reply.ord = static_cast<std::uint16_t>(std::min<std::uint32_t>(config_.max_rdma_read_out, 0x3FFF));
    if (request.ird != 0) ord_ = std::min<std::uint32_t>(ord_, request.ird);
    if (request.peer_to_peer) {
      if (request.rtr_write) {
        reply.rtr_write = true;
        await_rtr = true;
      } else if (request.rtr_send || request.rtr_read) {
        refusal = "the peer offers only a Send or Read ready-to-receive message";
      }
    }
  }
  if (refusal != nullptr) {
    SOFTDAT_LOG(kWarn, "tcp %s: accept failed: %s", Describe().data(), refusal);
    reply.rejected = true;
    reply.private_data_length = 0;
    if (!tx_.Hold()) return End(ConnectionEnd::kAcceptFailed);
    (void)wire::EncodeMpaFrame(reply, tx_.Reserve(MpaFrameSize(reply)));
    (void)FlushTx();
    End(ConnectionEnd::kAcceptFailed);
    return;
  }
  reply.private_data_length = static_cast<std::uint16_t>(private_data_.size());
  if (!tx_.Hold()) return FailTx(ENOMEM);
  (void)wire::EncodeMpaFrame(reply, tx_.Reserve(MpaFrameSize(reply)));
  WriteRaw(private_data_.data(), private_data_.size());
  if (await_rtr) {
    phase_ = Phase::kAwaitRtr;
    timer_.expires_after(kRtrTimeout);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
      IoLock lock(*self);
      if (error || self->detached_ || self->phase_ != Phase::kAwaitRtr) return;
      SOFTDAT_LOG(kWarn, "tcp %s: accept failed: no ready-to-receive FPDU from the peer", self->Describe().data());
      self->End(ConnectionEnd::kAcceptFailed);
    });
  } else {
    awaiting_first_fpdu_ = true;
    Establish({});
  }
  if (phase_ == Phase::kEnded) return;
  PumpTx();
  if (phase_ == Phase::kEnded) return;
  ReadLoop();
}

void Connection::Establish(std::span<const std::uint8_t> private_data) {
  phase_ = Phase::kEstablished;
  if (events_ != nullptr) events_->OnEstablished(private_data);
  report_pending_ = true;
}

void Connection::StartPolling() {
  if (options_.poll_set == nullptr || polled_) return;
  polled_ = options_.poll_set->Add(socket_.native_handle(), shared_from_this(), poll_token_);
  reading_ = polled_;
}

void Connection::StopReading() {
  if (!polled_ || !reading_) return;
  reading_ = false;
  options_.poll_set->SetReading(socket_.native_handle(), poll_token_, false);
}

bool Connection::PollIo(bool wait) {
  IoLock lock(*this, wait);
  // Without `wait`, a busy connection is left to its holder; a level-triggered PollSet reports it
  // again if need be.
  if (!lock.owns_lock()) return false;
  if (detached_) return false;
  // A connection held for a receive buffer is reported only when its peer ended the connection
  // or the socket failed (PollSet::SetReading).
  if (rx_held_) return EndIfPeerGone();
  if (phase_ != Phase::kAwaitReply && phase_ != Phase::kAwaitRtr && phase_ != Phase::kEstablished &&
      phase_ != Phase::kClosing)
    return false;
  const std::uint64_t reads = rx_reads_;
  ReadLoop();
  if (phase_ == Phase::kEnded) return true;
  // A consumer's poll inside a send-only stream's coalescing window leaves queued Work to its
  // kick (OnKick), as the kick itself does: otherwise a consumer that polls one EVD between
  // posts (a stream loop looking for the peer's answer) writes every Send alone.
  if (wait || TxDue()) PumpTx();
  return rx_reads_ != reads;  // something arrived (a poll that found nothing moved nothing)
}

// The messages waiting for receive buffers are the peer's last: it closed (or died, and its kernel
// closed for it) or the socket failed (a reset, the keepalive or user timeout). An RNIC's
// connection in RNR retry ends with its peer; the waiting messages are discarded, never delivered
// after the end (they took no buffer), and the end is BROKEN: what the peer sent did not all
// arrive. Without this the connection waited for a buffer forever and its EP never heard of the
// end (a dead client of an overloaded SRQ server leaked an EP for good).
bool Connection::EndIfPeerGone() {
  pollfd p{socket_.native_handle(), POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0 || (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) == 0) return false;
  int error = 0;
  socklen_t length = sizeof error;
  (void)::getsockopt(socket_.native_handle(), SOL_SOCKET, SO_ERROR, &error, &length);
  SOFTDAT_LOG(kInfo, "tcp %s: the peer %s while message %u waited for a receive buffer; the waiting messages "
              "are discarded", Describe().data(), error != 0 ? std::strerror(error) : "closed the connection",
              expected_msn_);
  End(ConnectionEnd::kBroken);
  return true;
}

bool Connection::OnKick(bool consumer, std::uint64_t ia_last_write_ns) {
  IoLock lock(*this);
  if (detached_ || phase_ == Phase::kEnded || phase_ == Phase::kIdle) {
    kick_pending_ = false;
    return true;
  }
  // A consumer's poll inside the coalescing window of a send-only stream leaves the queued Work
  // for a later poll (the kick stays pending: KickQueue queues it again), unless something else
  // needs this connection now.
  if (consumer && disconnect_request_.load() == 0 && !(rx_held_ && recv_available_.load()) && !TxDue(ia_last_write_ns))
    return false;
  kick_pending_ = false;
  switch (disconnect_request_.exchange(0)) {
    case 2:
      End(ConnectionEnd::kDisconnected);
      return true;
    case 1:
      BeginClose();
      if (phase_ == Phase::kEnded) return true;
      break;
    default:
      break;
  }
  if (recv_available_.exchange(false) && rx_held_) {
    rx_held_ = false;
    ReadLoop();
    if (phase_ == Phase::kEnded) return true;
  }
  PumpTx();
  return true;
}

void Connection::BeginClose() {
  switch (phase_) {
    case Phase::kConnecting:
    case Phase::kAwaitReply:
    case Phase::kAwaitRtr:
      End(ConnectionEnd::kDisconnected);
      return;
    case Phase::kEstablished:
      phase_ = Phase::kClosing;
      timer_.expires_after(kCloseLinger);
      timer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
        IoLock lock(*self);
        if (error || self->detached_ || self->phase_ != Phase::kClosing) return;
        SOFTDAT_LOG(kInfo, "tcp %s: graceful disconnect did not finish in time; closing", self->Describe().data());
        self->End(ConnectionEnd::kDisconnected);
      });
      return;
    default:
      return;
  }
}

void Connection::MaybeFinishClose() {
  if (phase_ != Phase::kClosing || fin_sent_) return;
  if (!tx_.empty() || tx_message_.kind != TxKind::kNone || responses_count_ != 0 || reads_count_ != 0) return;
  {
    std::lock_guard lock(post_mutex_);
    if (posted_count_ != 0) return;
  }
  fin_sent_ = true;
  boost::system::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

void Connection::End(ConnectionEnd why, std::span<const std::uint8_t> private_data) {
  if (phase_ == Phase::kEnded) return;
  phase_ = Phase::kEnded;
  ended_ = true;
  rx_held_ = false;
  timer_.cancel();
  rnr_timer_.cancel();
  CloseSocket();
  // Nothing more is read or written: the blocks go back to the pool now, the receive block once
  // OnEnded has run (a reject's private data lies in it).
  tx_.Abandon();
  std::uint8_t* const rx = std::exchange(rx_, nullptr);
  BlockPool& rx_pool = rx_small_ ? options_.buffers->rx_held : options_.buffers->rx;
  rx_small_ = false;
  rx_start_ = rx_end_ = 0;
  if (events_ != nullptr) events_->OnEnded(why, private_data);
  report_pending_ = true;
  if (rx != nullptr) rx_pool.Release(rx);
}

void Connection::CloseSocket() {
  boost::system::error_code ignored;
  if (!socket_.is_open()) return;
  if (polled_) {
    options_.poll_set->Remove(socket_.native_handle(), poll_token_);
    polled_ = reading_ = false;
  }
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

void Connection::Terminate(wire::TerminateCode code) {
  SOFTDAT_LOG(kWarn, "tcp %s: terminating the connection: %s", Describe().data(), wire::DescribeTerminate(code));
  if (!socket_.is_open()) return;
  // Best effort: a Terminate may only follow whole FPDUs, and we never block for it.
  if (tx_.WriteTo(socket_.native_handle()) != TxBatch::Write::kDone) return;
  std::uint8_t frame[wire::kUntaggedHeaderSize + 4 + 3 + wire::kCrcSize] = {};
  wire::FpduHeader header;
  header.opcode = wire::Opcode::kTerminate;
  header.last = true;
  header.queue = wire::kQueueTerminate;
  header.msn = 1;
  header.ulpdu_length = static_cast<std::uint16_t>(wire::kUntaggedHeaderSize - wire::kLengthFieldSize + 4);
  const std::size_t header_size = wire::EncodeHeader(header, frame);
  wire::EncodeTerminateControl(code, false, frame + header_size);
  std::size_t length = header_size + 4 + wire::PadSize(header.ulpdu_length);
  // Without CRC the field is still sent, as zeros (RFC 5044 §4.1).
  const std::uint32_t crc = crc_ ? Crc32c(frame, length) : 0;
  for (int i = 0; i < 4; ++i) frame[length + i] = static_cast<std::uint8_t>(crc >> (8 * i));
  length += wire::kCrcSize;
  (void)::send(socket_.native_handle(), frame, length, MSG_NOSIGNAL | MSG_DONTWAIT);
}

}  // namespace softdat::transport::tcp
