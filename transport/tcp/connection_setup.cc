// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Connection setup and teardown: TCP connect, the MPA Request/Reply exchange with the RFC 6581
// IRD/ORD and ready-to-receive negotiation, graceful and abrupt close, Terminate, and the one
// place a connection ends (End).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>

#include "base/log.h"
#include "transport/names.h"
#include "transport/tcp/congestion.h"
#include "transport/tcp/connection.h"
#include "transport/tcp/crc32c.h"
#include "transport/tcp/poll_set.h"
#include "transport/tcp/socket_fd.h"

namespace softdat::transport::tcp {
namespace {

// How long a passive connection waits for the active side's ready-to-receive FPDU (a graceful
// disconnect's wait for the peer's FIN is kCloseLinger).
constexpr auto kRtrTimeout = std::chrono::seconds(10);

std::uint32_t AtLeastOne(std::uint32_t n) { return std::max<std::uint32_t>(n, 1); }

std::size_t MpaFrameSize(const wire::MpaFrame& frame) {
  return wire::kMpaFrameHeaderSize + (frame.enhanced ? wire::kMpaEnhancedBlockSize : 0);
}

std::uint16_t IrdOrd(std::uint32_t n) { return static_cast<std::uint16_t>(std::min<std::uint32_t>(n, wire::kMaxIrdOrd)); }

}  // namespace

Connection::Connection(asio::io_context& io, const ConnectionOptions& options, const EndpointConfig& config,
                       EndpointEvents* events)
    : io_(io),
      options_(options),
      config_(config),
      events_(events),
      socket_(io),
      timer_(io),
      crc_(options.mpa_crc),
      posts_(options.buffers->inline_copy, AtLeastOne(config.max_send_work)),
      reads_out_(AtLeastOne(config.max_rdma_read_out)),
      reads_in_(AtLeastOne(config.max_rdma_read_in)),
      ord_(AtLeastOne(config.max_rdma_read_out)),
      rx_(*this),
      tx_(*this) {
  private_data_.reserve(wire::kMaxMpaPrivateData);
  options_.buffers->live_connections.fetch_add(1, std::memory_order_relaxed);
}

Connection::~Connection() { options_.buffers->live_connections.fetch_sub(1, std::memory_order_relaxed); }

void Connection::Enter(SetupEvent event) {
  const SetupState from = setup();
  const std::optional<SetupState> next = Next(from, event);
  assert(next.has_value() && "Connection: a setup transition its state does not allow");
  if (!next) return;
  // Release: Post reads the state without io_mutex_ and must see what came before an end.
  setup_.store(*next, std::memory_order_release);
  // Each connection step, at debug (the end says why: End).
  if (*next != SetupState::kEnded) SOFTDAT_LOG(kDebug, "tcp %s: %s -> %s", Describe().data(), Name(from), Name(*next));
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

sockaddr_in Connection::local_address() const {
  std::lock_guard lock(address_mutex_);
  return local_;
}

sockaddr_in Connection::remote_address() const {
  std::lock_guard lock(address_mutex_);
  return remote_;
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
  if (detached() || setup() != SetupState::kIdle) return;
  Enter(SetupEvent::kConnect);
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
    // uses for any peer, and with the ephemeral range half full of TIME_WAIT each search took
    // milliseconds (a burst of 1,000 connects took 5 s). connect() needs the port free only
    // towards its own peer. (A kernel older than 4.2 refuses the option: bind() picks as before.)
    const int on = 1;
    (void)::setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &on, sizeof on);
    // Shareable, as a kernel iWARP stack's own sockets are: rdma_cm picks a port for siw's
    // connections without asking TCP, and siw's bind() with SO_REUSEADDR to a port this
    // connection holds (or its TIME_WAIT does) failed unless this socket allowed it too.
    // connect() still refuses a four-tuple in use (docs/WIRE.md, "Addresses and ports").
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
      if (error || self->detached()) return;
      if (self->setup() != SetupState::kConnecting && self->setup() != SetupState::kAwaitReply) return;
      SOFTDAT_LOG(kInfo, "tcp %s: connect timed out", self->Describe().data());
      self->End(ConnectionEnd::kTimedOut);
    });
  }
  asio::ip::tcp::endpoint to(asio::ip::address_v4(ntohl(remote.sin_addr.s_addr)), ntohs(remote.sin_port));
  socket_.async_connect(to, [self = shared_from_this()](const boost::system::error_code& error) {
    IoLock lock(*self);
    if (self->detached() || self->setup() != SetupState::kConnecting) return;
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
  const unsigned timeout = options_.timeout_ms;
  const int on = 1;
  const int idle = static_cast<int>(std::max(1u, timeout / 2000));      // seconds
  const int interval = static_cast<int>(std::max(1u, timeout / 4000));  // seconds
  const int probes = 9;
  if (::setsockopt(fd(), IPPROTO_TCP, TCP_USER_TIMEOUT, &timeout, sizeof timeout) != 0 ||
      ::setsockopt(fd(), SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on) != 0 ||
      ::setsockopt(fd(), IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle) != 0 ||
      ::setsockopt(fd(), IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval) != 0 ||
      ::setsockopt(fd(), IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes) != 0)
    SOFTDAT_LOG(kWarn, "tcp: cannot set the %u ms timeout on a connection: %s", timeout, std::strerror(errno));
}

// The IA's congestion= (congestion.h), on the addresses RecordAddresses took. A refusal leaves the
// system's choice and the connection works on: said at the default level when the IA named the
// algorithm, quietly for auto's Reno.
void Connection::ApplyCongestion() {
  sockaddr_in local{}, remote{};
  {
    std::lock_guard lock(address_mutex_);  // as RecordAddresses found them
    local = local_;
    remote = remote_;
  }
  if (local.sin_family != AF_INET) return;
  const char* algorithm = CongestionFor(options_.congestion, local, remote);
  if (algorithm == nullptr || SetCongestion(fd(), algorithm)) return;
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
      // The consumer sees it (DAT_CONNECTION_EVENT_UNREACHABLE): said at the default level, with why.
      SOFTDAT_LOG(kWarn, "tcp %s: connect failed: %s%s; the endpoint gets DAT_CONNECTION_EVENT_UNREACHABLE",
                  Describe().data(), error.message().c_str(),
                  error.value() == ECONNREFUSED && error.category() == boost::system::system_category()
                      ? " (nobody listens on that port there)"
                      : "");
    }
    End(ConnectionEnd::kUnreachable);
    return;
  }
  ApplySocketOptions();
  RecordAddresses();
  ApplyCongestion();
  SOFTDAT_LOG(kInfo, "tcp %s: over TCP", Describe().data());  // the same-host path says "shared memory"
  StartPolling();
  SendMpaRequest();
}

void Connection::SendMpaRequest() {
  wire::MpaFrame request;
  request.crc = options_.mpa_crc;
  request.enhanced = true;
  request.revision = 2;
  request.peer_to_peer = true;
  request.rtr_write = true;
  request.ird = IrdOrd(config_.max_rdma_read_in);
  request.ord = IrdOrd(config_.max_rdma_read_out);
  request.private_data_length = static_cast<std::uint16_t>(private_data_.size());
  if (!tx_.Hold()) return tx_.Fail(ENOMEM);
  (void)wire::EncodeMpaFrame(request, tx_.Reserve(MpaFrameSize(request)));
  tx_.Append(private_data_.data(), private_data_.size());
  Enter(SetupEvent::kTcpConnected);
  tx_.Pump();
  if (setup() == SetupState::kEnded) return;
  rx_.Read();
}

bool Connection::ReadMpaReply() {
  const std::span<const std::uint8_t> buffered = rx_.buffered();
  if (buffered.size() < wire::kMpaFrameHeaderSize) return false;
  const std::uint8_t* bytes = buffered.data();
  wire::MpaFrame reply;
  std::uint16_t pd_length = 0;
  const char* why = nullptr;
  if (!wire::DecodeMpaHeader(bytes, true, reply, pd_length, why)) {
    SOFTDAT_LOG(kWarn, "tcp %s: connect refused by a bad MPA Reply: %s", Describe().data(), why);
    End(ConnectionEnd::kNonPeerRejected);
    return true;
  }
  if (buffered.size() < wire::kMpaFrameHeaderSize + pd_length) return false;
  if (reply.enhanced) wire::DecodeMpaBlock(bytes + wire::kMpaFrameHeaderSize, reply);
  const std::size_t block = reply.enhanced ? wire::kMpaEnhancedBlockSize : 0;
  const std::span<const std::uint8_t> peer_data(bytes + wire::kMpaFrameHeaderSize + block, reply.private_data_length);
  rx_.Consume(wire::kMpaFrameHeaderSize + pd_length);
  timer_.cancel();
  if (reply.rejected) {
    SOFTDAT_LOG(kInfo, "tcp %s: the peer rejected the connection", Describe().data());
    End(ConnectionEnd::kPeerRejected, peer_data);
    return true;
  }
  if (reply.markers) {
    SOFTDAT_LOG(kWarn, "tcp %s: the peer asks for MPA markers, which softdat does not send", Describe().data());
    End(ConnectionEnd::kNonPeerRejected);
    return true;
  }
  // C in either frame: both directions carry and check the CRC (RFC 5044 §7.1).
  crc_ = reply.crc || options_.mpa_crc;
  posts_.EnableFraming(crc_);
  if (reply.enhanced && reply.peer_to_peer) {
    if (reply.ird != 0) ord_ = std::min<std::uint32_t>(ord_, reply.ird);
    if (reply.rtr_write) tx_.OweRtr();
  }
  Establish(SetupEvent::kReplyAccepted, peer_data);
  if (setup() == SetupState::kEnded) return true;
  tx_.Pump();  // the ready-to-receive FPDU goes first, whether or not the consumer posts
  return true;
}

// The Reply is made and the connection reported established in one section; the ESTABLISHED is
// delivered as that section ends, and only then does the Reply go out (SendAcceptReply). A
// responder's ESTABLISHED delivered after its Reply could follow the DISCONNECTEDs of the peer's
// earlier connections (each its own socket), which consumers written for IB do not expect: stock
// dtestcm's server freed the EP of such a late ESTABLISHED and then waited for ever for its end.
// Reported only when the ready-to-receive FPDU came, it could follow them too.
void Connection::StartAccept(wire::MpaFrame request) {
  bool await_rtr = false;
  {
    IoLock lock(*this);
    if (!ReportAccepted(request, await_rtr)) return;
  }
  SendAcceptReply(await_rtr);
}

bool Connection::ReportAccepted(const wire::MpaFrame& request, bool& await_rtr) {
  if (detached() || setup() != SetupState::kIdle) {
    CloseSocket();
    return false;
  }
  ApplySocketOptions();
  RecordAddresses();
  ApplyCongestion();
  SOFTDAT_LOG(kInfo, "tcp %s: over TCP", Describe().data());

  wire::MpaFrame reply;
  reply.reply = true;
  reply.revision = request.revision;
  reply.crc = request.crc || options_.mpa_crc;
  crc_ = reply.crc;
  posts_.EnableFraming(crc_);
  const char* refusal = request.markers ? "the peer asks for MPA markers" : nullptr;
  if (request.enhanced) {
    reply.enhanced = true;
    reply.peer_to_peer = request.peer_to_peer;
    reply.ird = IrdOrd(config_.max_rdma_read_in);
    reply.ord = IrdOrd(config_.max_rdma_read_out);
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
    if (!tx_.Hold()) {
      End(ConnectionEnd::kAcceptFailed);
      return false;
    }
    (void)wire::EncodeMpaFrame(reply, tx_.Reserve(MpaFrameSize(reply)));
    (void)tx_.Flush();
    End(ConnectionEnd::kAcceptFailed);
    return false;
  }
  reply.private_data_length = static_cast<std::uint16_t>(private_data_.size());
  if (!tx_.Hold()) {
    tx_.Fail(ENOMEM);
    return false;
  }
  (void)wire::EncodeMpaFrame(reply, tx_.Reserve(MpaFrameSize(reply)));
  tx_.Append(private_data_.data(), private_data_.size());
  // Nothing is written until the ESTABLISHED is delivered (kHeld), and then no FPDU goes out
  // before the initiator's first one (kGated): its ready-to-receive FPDU with P2P (RFC 6581), its
  // first FPDU without (RFC 5044 §7.1.2, rule 4; Linux siw drops a Reply that arrives with FPDU
  // bytes behind it). Nobody reads the socket meanwhile: a peer sends nothing before the Reply.
  tx_.Enter(TxEvent::kHoldReply);
  Establish(SetupEvent::kAccepted, {});
  return setup() != SetupState::kEnded;
}

void Connection::SendAcceptReply(bool await_rtr) {
  IoLock lock(*this);
  // An abrupt close or a freed EP while the ESTABLISHED was delivered ended it; a graceful one
  // waits for the Reply (the stream is not drained), and goes on from here.
  if (detached()) {
    CloseSocket();
    return;
  }
  if (setup() == SetupState::kEnded) return;
  tx_.Enter(TxEvent::kReleaseReply);
  StartPolling();
  // A graceful close asked for meanwhile has its own bound on the timer (BeginClose).
  if (await_rtr && setup() == SetupState::kEstablished) {
    // The initiator promised a ready-to-receive FPDU: without it nothing this side posts can go.
    timer_.expires_after(kRtrTimeout);
    timer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
      IoLock lock(*self);
      if (error || self->detached() || self->setup() == SetupState::kEnded || self->tx_.state() != TxState::kGated)
        return;
      SOFTDAT_LOG(kWarn, "tcp %s: no ready-to-receive FPDU from the peer in %lld s; breaking the connection",
                  self->Describe().data(), static_cast<long long>(kRtrTimeout.count()));
      self->End(ConnectionEnd::kBroken);
    });
  }
  tx_.Pump();
  if (setup() == SetupState::kEnded) return;
  rx_.Read();
}

void Connection::Establish(SetupEvent event, std::span<const std::uint8_t> private_data) {
  Enter(event);
  if (!detached()) events_->OnEstablished(private_data);
  Reported();
}

void Connection::OnFirstFpdu() {
  if (tx_.state() == TxState::kGated) {
    tx_.Enter(TxEvent::kFirstFpduSeen);
    Kick();  // what waited for it may go now
  }
  if (setup() == SetupState::kAwaitRtr) {
    // The first FPDU after our Reply is the peer's ready-to-receive: the connection is up.
    timer_.cancel();
    Establish(SetupEvent::kRtrArrived, {});
  }
}

void Connection::BeginClose() {
  switch (setup()) {
    case SetupState::kConnecting:
    case SetupState::kAwaitReply:
    case SetupState::kAwaitRtr:
      End(ConnectionEnd::kDisconnected);
      return;
    case SetupState::kEstablished:
      Enter(SetupEvent::kClose);
      timer_.expires_after(kCloseLinger);
      timer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
        IoLock lock(*self);
        const SetupState setup = self->setup();
        if (error || self->detached() || (setup != SetupState::kClosing && setup != SetupState::kFinSent)) return;
        SOFTDAT_LOG(kInfo, "tcp %s: graceful disconnect did not finish in time; closing", self->Describe().data());
        self->End(ConnectionEnd::kDisconnected);
      });
      return;
    default:
      return;
  }
}

// A graceful close sends its FIN once everything queued, framed and in flight either way is done.
void Connection::MaybeFinishClose() {
  if (setup() != SetupState::kClosing) return;
  if (!tx_.Drained() || !reads_in_.empty() || !reads_out_.empty() || !posts_.Empty()) return;
  Enter(SetupEvent::kFinSent);
  tx_.Enter(TxEvent::kShut);
  boost::system::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
}

void Connection::End(ConnectionEnd why, std::span<const std::uint8_t> private_data) {
  if (setup() == SetupState::kEnded) return;
  SOFTDAT_LOG(kDebug, "tcp %s: %s -> ended: %s", Describe().data(), Name(setup()), ConnectionEndName(why));
  Enter(SetupEvent::kEnd);
  rx_.End();
  timer_.cancel();
  CloseSocket();
  // Nothing more is read or written: the send blocks go back now, the receive block once OnEnded
  // has run (a reject's private data lies in it).
  tx_.Abandon();
  if (!detached()) events_->OnEnded(why, private_data);
  Reported();
  rx_.ReleaseBlock();
}

void Connection::CloseSocket() {
  if (!socket_.is_open()) return;
  if (poll_.registered) {
    options_.poll_set->Remove(fd(), poll_.token);
    poll_ = PollRegistration{};
  }
  boost::system::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

void Connection::Terminate(wire::TerminateCode code) {
  SOFTDAT_LOG(kWarn, "tcp %s: terminating the connection: %s", Describe().data(), wire::DescribeTerminate(code));
  if (!socket_.is_open()) return;
  // Best effort: a Terminate may only follow whole FPDUs, and we never block for it.
  if (!tx_.WriteBatchNow()) return;
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
  wire::StoreLe32(frame + length, crc_ ? Crc32c(frame, length) : 0);
  length += wire::kCrcSize;
  (void)::send(fd(), frame, length, MSG_NOSIGNAL | MSG_DONTWAIT);
}

}  // namespace softdat::transport::tcp
