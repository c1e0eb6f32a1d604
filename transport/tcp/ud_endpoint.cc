// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The UD endpoint (ud_endpoint.h): sends, receives, resolutions and their repeats.
#include "transport/tcp/ud_endpoint.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

#include "base/log.h"
#include "transport/tcp/gather.h"

namespace softdat::transport::tcp {
namespace {

using Clock = std::chrono::steady_clock;

// A Resolve Request is sent again after this, then after twice as long each time, up to the cap.
constexpr std::chrono::milliseconds kFirstRepeat{200};
constexpr std::chrono::milliseconds kMaxRepeat{2000};
// Datagrams one handler reads before it lets others run.
constexpr int kReadsPerTurn = 64;

std::uint32_t NewKey() {
  // Random per process, then distinct per endpoint; never 0 (a listener's key).
  static std::atomic<std::uint32_t> next{std::random_device{}()};
  std::uint32_t key = 0;
  while (key == 0) key = next.fetch_add(0x9E3779B9u, std::memory_order_relaxed) * 2654435761u;
  return key;
}

std::string Text(const sockaddr_in& address) {
  char text[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &address.sin_addr, text, sizeof text);
  return std::string(text) + ":" + std::to_string(ntohs(address.sin_port));
}

// Sends one message to `to` from `fd`: a header of `header`, then `payload`. Losses are the
// service's (a full socket buffer, an unreachable peer): said at debug only.
void SendMessage(int fd, const sockaddr_in& to, const ud::Header& header, std::span<const std::uint8_t> payload) {
  std::uint8_t message[ud::kMaxMessage];
  ud::EncodeHeader(header, message);
  if (!payload.empty()) std::memcpy(message + ud::kHeaderSize, payload.data(), payload.size());
  const std::size_t size = ud::Seal(message, ud::kHeaderSize + payload.size());
  if (::sendto(fd, message, size, MSG_DONTWAIT | MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&to), sizeof to) < 0)
    SOFTDAT_LOG(kDebug, "tcp UD: a message to %s was lost: %s", Text(to).c_str(), std::strerror(errno));
}

}  // namespace

sockaddr_in UdAddressHandle::sockaddr() const {
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = address_;
  to.sin_port = htons(port_);
  return to;
}

UdCore::UdCore(asio::io_context& io, const sockaddr_in& ia, EndpointEvents* events, std::uint32_t key)
    : io_(io), key_(key), local_(ia), socket_(io), timer_(io), events_(events), rx_(kRxAt + ud::kMaxMessage + 1) {}

Status UdCore::Open() {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in at = local_;
  at.sin_port = 0;
  socklen_t length = sizeof at;
  if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&at), sizeof at) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&at), &length) != 0) {
    const int error = errno;
    if (fd >= 0) ::close(fd);
    SOFTDAT_LOG(kWarn, "tcp UD: no UDP socket on %s for a UD endpoint: %s", Text(local_).c_str(), std::strerror(error));
    return Status(error == EMFILE || error == ENFILE || error == ENOMEM ? Code::kInsufficientResources
                                                                         : Code::kInternal);
  }
  local_ = at;
  boost::system::error_code ignored;
  socket_.assign(asio::ip::udp::v4(), fd, ignored);
  std::lock_guard lock(mutex_);
  ArmRead();
  return Status::Ok();
}

Status UdCore::Send(const Work& work) {
  // Core gives this endpoint only address handles of this transport (its IA's), of datagram
  // endpoints, and payloads within the UD MTU.
  const auto& to = static_cast<const UdAddressHandle&>(*work.destination);
  std::uint8_t message[ud::kMaxMessage];
  const std::size_t length = std::min<std::size_t>(work.length, ud::kMaxPayload);
  ud::EncodeHeader(ud::Header{ud::Type::kData, static_cast<std::uint16_t>(length), to.key(), key_, 0}, message);
  (void)Gather(work.local, message + ud::kHeaderSize);
  const std::size_t size = ud::Seal(message, ud::kHeaderSize + length);
  const sockaddr_in address = to.sockaddr();
  // A datagram the socket cannot take now is lost, as UD allows: the Send still completes.
  if (::sendto(socket_.native_handle(), message, size, MSG_DONTWAIT | MSG_NOSIGNAL,
               reinterpret_cast<const sockaddr*>(&address), sizeof address) < 0)
    SOFTDAT_LOG(kDebug, "tcp UD %s: a datagram to %s was lost: %s", Text(local_).c_str(), Text(address).c_str(),
                std::strerror(errno));
  return Status::Ok();
}

Status UdCore::Resolve(const sockaddr_in& remote, std::uint16_t port, std::span<const std::uint8_t> private_data,
                       std::uint64_t timeout_us, std::uint64_t request) {
  if (private_data.size() > ud::kMaxPayload) return Status(Code::kInvalidParameter, Detail::kParamPrivateDataSize);
  PendingResolve pending;
  pending.request = request;
  pending.to = remote;
  pending.to.sin_family = AF_INET;
  pending.to.sin_port = htons(port);
  pending.private_data.assign(private_data.begin(), private_data.end());
  const Clock::time_point now = Clock::now();
  pending.deadline = timeout_us == UINT64_MAX ? Clock::time_point::max() : now + std::chrono::microseconds(timeout_us);
  pending.interval = kFirstRepeat;
  pending.next = now + pending.interval;
  std::lock_guard lock(mutex_);
  if (ended_ || events_ == nullptr) return Status(Code::kInvalidState);
  SendRequest(pending);
  pending_.push_back(std::move(pending));
  ArmTimer();
  return Status::Ok();
}

void UdCore::SendRequest(const PendingResolve& pending) {
  SendMessage(socket_.native_handle(), pending.to,
              ud::Header{ud::Type::kResolveRequest, static_cast<std::uint16_t>(pending.private_data.size()), 0, key_,
                         pending.request},
              pending.private_data);
}

void UdCore::Answer(const sockaddr_in& to, std::uint32_t key, std::uint64_t request,
                    std::span<const std::uint8_t> private_data) {
  std::lock_guard lock(mutex_);  // the socket stays open meanwhile (Detach closes it under the lock)
  if (events_ == nullptr) return;
  SendMessage(socket_.native_handle(), to,
              ud::Header{ud::Type::kResolveReply, static_cast<std::uint16_t>(private_data.size()), key, key_, request},
              private_data);
}

void UdCore::ArmTimer() {
  if (timer_armed_ || pending_.empty()) return;
  Clock::time_point when = Clock::time_point::max();
  for (const PendingResolve& p : pending_) when = std::min({when, p.next, p.deadline});
  timer_armed_ = true;
  timer_.expires_at(when);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    if (error != asio::error::operation_aborted) self->OnTimer();
  });
}

void UdCore::OnTimer() {
  mutex_.lock();
  timer_armed_ = false;
  if (events_ == nullptr) return mutex_.unlock();
  const Clock::time_point now = Clock::now();
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (now >= it->deadline) {
      SOFTDAT_LOG(kInfo, "tcp UD %s: no answer from %s within the timeout", Text(local_).c_str(), Text(it->to).c_str());
      events_->OnResolveFailed(it->request, ConnectionEnd::kTimedOut, {});
      report_pending_ = true;
      it = pending_.erase(it);
      continue;
    }
    if (now >= it->next) {
      SendRequest(*it);
      it->interval = std::min(it->interval * 2, kMaxRepeat);
      it->next = now + it->interval;
    }
    ++it;
  }
  ArmTimer();
  UnlockAndDeliver();
}

void UdCore::ArmRead() {
  socket_.async_wait(asio::socket_base::wait_read, [self = shared_from_this()](const boost::system::error_code& error) {
    if (error) return;  // closed
    self->mutex_.lock();
    if (self->events_ == nullptr) return self->mutex_.unlock();
    self->ReadAvailable();
    self->ArmRead();
    self->UnlockAndDeliver();
  });
}

void UdCore::ReadAvailable() {
  for (int i = 0; i < kReadsPerTurn; ++i) {
    sockaddr_in from{};
    socklen_t from_length = sizeof from;
    // One byte more than the largest message: a longer one shows as such and is dropped.
    const ssize_t n = ::recvfrom(socket_.native_handle(), rx_.data() + kRxAt, rx_.size() - kRxAt, MSG_DONTWAIT,
                                 reinterpret_cast<sockaddr*>(&from), &from_length);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // drained (or an error the next wait reports again)
    }
    Process(static_cast<std::size_t>(n), from);
  }
}

void UdCore::Process(std::size_t size, const sockaddr_in& from) {
  ud::Header header;
  std::span<const std::uint8_t> payload;
  const ud::DecodeError error = ud::Decode({rx_.data() + kRxAt, size}, header, payload);
  if (error != ud::DecodeError::kNone) {
    SOFTDAT_LOG(kDebug, "tcp UD %s: dropped %zu bytes from %s: %s", Text(local_).c_str(), size, Text(from).c_str(),
                ud::DescribeDecodeError(error));
    return;
  }
  if (header.destination_key != key_) {
    SOFTDAT_LOG(kDebug, "tcp UD %s: dropped a message from %s for endpoint key %#x (ours: %#x)", Text(local_).c_str(),
                Text(from).c_str(), header.destination_key, key_);
    return;
  }
  switch (header.type) {
    case ud::Type::kData:
      return OnData(header, rx_.data() + ud::kGrhSize, from);
    case ud::Type::kResolveReply:
    case ud::Type::kResolveReject:
    case ud::Type::kResolveRefused:
      return OnAnswer(header, payload, from);
    case ud::Type::kResolveRequest:
      return;  // for listeners: the key check above drops it already
  }
}

void UdCore::OnData(const ud::Header& header, std::uint8_t* payload, const sockaddr_in& from) {
  if (ended_) return;
  RecvTarget target;
  report_pending_ = true;  // a buffer taken may cross a watermark
  // No buffer: the datagram is lost, as UD allows (core counts it).
  if (events_->AcquireRecv(next_msn_, target) != RecvAcquire::kTaken) return;
  const std::uint32_t msn = next_msn_++;
  RecvInfo info;
  info.extension.source_address = from.sin_addr.s_addr;
  info.extension.source_port = ntohs(from.sin_port);
  info.extension.source_qpn = ntohs(from.sin_port);
  const std::size_t total = ud::kGrhSize + header.length;
  if (total > target.capacity) {
    SOFTDAT_LOG(kInfo, "tcp UD %s: a datagram of %u bytes from %s is longer than its receive buffer (%llu bytes "
                "with the 40-byte GRH)", Text(local_).c_str(), header.length, Text(from).c_str(),
                static_cast<unsigned long long>(target.capacity));
    events_->OnRecvDone(msn, WorkStatus::kLocalLength, info);
    return;
  }
  // The GRH goes over the header, right before the payload: one contiguous copy.
  ud::WriteGrh(from.sin_addr.s_addr, local_.sin_addr.s_addr, header.length, payload - ud::kGrhSize);
  info.length = static_cast<std::uint32_t>(Scatter(target.segments, payload - ud::kGrhSize, total));
  events_->OnRecvDone(msn, WorkStatus::kSuccess, info);
}

void UdCore::OnAnswer(const ud::Header& header, std::span<const std::uint8_t> payload, const sockaddr_in& from) {
  const auto found = std::find_if(pending_.begin(), pending_.end(),
                                  [&](const PendingResolve& p) { return p.request == header.request; });
  if (found == pending_.end()) return;  // answered already: a repeat's answer
  const std::uint64_t request = found->request;
  pending_.erase(found);
  report_pending_ = true;
  switch (header.type) {
    case ud::Type::kResolveReply:
      events_->OnResolved(request,
                          std::make_unique<UdAddressHandle>(from.sin_addr.s_addr, ntohs(from.sin_port), header.source_key),
                          payload);
      return;
    case ud::Type::kResolveReject:
      events_->OnResolveFailed(request, ConnectionEnd::kPeerRejected, payload);
      return;
    default:
      events_->OnResolveFailed(request, ConnectionEnd::kNonPeerRejected, {});
      return;
  }
}

void UdCore::Disconnect() {
  asio::post(io_, [self = shared_from_this()] {
    self->mutex_.lock();
    if (self->events_ == nullptr || self->ended_) return self->mutex_.unlock();
    self->ended_ = true;
    self->pending_.clear();  // their answers are dropped from now on
    self->events_->OnEnded(ConnectionEnd::kDisconnected, {});  // no peer to tell
    self->report_pending_ = true;
    self->UnlockAndDeliver();
  });
}

void UdCore::UnlockAndDeliver() {
  EndpointEvents* events = report_pending_ ? events_ : nullptr;
  report_pending_ = false;
  if (events != nullptr) delivering_.fetch_add(1, std::memory_order_acq_rel);
  mutex_.unlock();
  if (events == nullptr) return;
  events->Deliver();
  delivering_.fetch_sub(1, std::memory_order_acq_rel);
}

void UdCore::Detach() {
  {
    std::lock_guard lock(mutex_);
    events_ = nullptr;
    pending_.clear();
    boost::system::error_code ignored;
    socket_.close(ignored);  // the port is free when this returns; a pending wait ends aborted
  }
  asio::post(io_, [self = shared_from_this()] { self->timer_.cancel(); });
  while (delivering_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

Status CreateDatagramEndpoint(asio::io_context& io, const sockaddr_in& ia, EndpointEvents* events,
                              std::unique_ptr<Endpoint>& out) {
  auto core = std::make_shared<UdCore>(io, ia, events, NewKey());
  if (Status status = core->Open(); !status.ok()) return status;
  out = std::make_unique<UdEndpoint>(std::move(core));
  return Status::Ok();
}

}  // namespace softdat::transport::tcp
