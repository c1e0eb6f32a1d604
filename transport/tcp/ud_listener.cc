// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The UD resolution listener (ud_listener.h): requests in, the consumer's answers out, repeats.
#include "transport/tcp/ud_listener.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "base/log.h"

namespace softdat::transport::tcp {
namespace {

constexpr int kReadsPerTurn = 64;

}  // namespace

Status UdListenerCore::Open(const sockaddr_in& ia, std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in at = ia;
  at.sin_port = htons(port);
  socklen_t length = sizeof at;
  if (fd < 0 || ::bind(fd, reinterpret_cast<const sockaddr*>(&at), sizeof at) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&at), &length) != 0) {
    const int error = errno;
    if (fd >= 0) ::close(fd);
    char text[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &ia.sin_addr, text, sizeof text);
    if (error == EADDRINUSE) {
      SOFTDAT_LOG(kInfo, "tcp UD listener %s:%u: cannot listen: the UDP port is already in use", text, port);
      return Status(Code::kConnQualInUse);
    }
    SOFTDAT_LOG(kError, "tcp UD listener %s:%u: cannot listen: %s", text, port, std::strerror(error));
    return Status(Code::kConnQualUnavailable);
  }
  local_ = at;
  rx_.resize(ud::kMaxMessage + 1);
  boost::system::error_code ignored;
  std::lock_guard lock(mutex_);
  socket_.assign(asio::ip::udp::v4(), fd, ignored);
  ArmRead();
  return Status::Ok();
}

void UdListenerCore::Stop() {
  events_.store(nullptr, std::memory_order_seq_cst);
  while (calling_.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  std::lock_guard lock(mutex_);
  boost::system::error_code ignored;
  socket_.close(ignored);  // the port is free when dat_psp_free returns; a pending wait ends aborted
}

void UdListenerCore::ArmRead() {
  socket_.async_wait(asio::socket_base::wait_read, [self = shared_from_this()](const boost::system::error_code& error) {
    if (error) return;  // closed
    std::vector<std::unique_ptr<PendingConnection>> arrived;
    {
      std::lock_guard lock(self->mutex_);
      if (!self->socket_.is_open()) return;
      self->ReadAvailable();
      self->ArmRead();
      arrived.swap(self->arrived_);
    }
    // Reported with no lock held (core posts the CR event); stopped: refused as they go.
    self->calling_.fetch_add(1, std::memory_order_seq_cst);
    ListenEvents* events = self->events_.load(std::memory_order_seq_cst);
    for (auto& request : arrived)
      if (events != nullptr) events->OnConnectRequest(std::move(request));
    self->calling_.fetch_sub(1, std::memory_order_seq_cst);
  });
}

void UdListenerCore::ReadAvailable() {
  for (int i = 0; i < kReadsPerTurn; ++i) {
    sockaddr_in from{};
    socklen_t from_length = sizeof from;
    const ssize_t n = ::recvfrom(socket_.native_handle(), rx_.data(), rx_.size(), MSG_DONTWAIT,
                                 reinterpret_cast<sockaddr*>(&from), &from_length);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    ud::Header header;
    std::span<const std::uint8_t> payload;
    const ud::DecodeError error = ud::Decode({rx_.data(), static_cast<std::size_t>(n)}, header, payload);
    if (error != ud::DecodeError::kNone || header.type != ud::Type::kResolveRequest || header.destination_key != 0 ||
        header.source_key == 0) {
      SOFTDAT_LOG(kDebug, "tcp UD listener :%u: dropped %zd bytes from port %u: %s", port(), n, ntohs(from.sin_port),
                  error != ud::DecodeError::kNone ? ud::DescribeDecodeError(error) : "not a Resolve Request");
      continue;
    }
    OnRequest(header, payload, from);
  }
}

UdListenerCore::Remembered* UdListenerCore::Find(const Requester& requester) {
  const auto found = std::find_if(remembered_.begin(), remembered_.end(),
                                  [&](const Remembered& r) { return r.requester == requester; });
  return found == remembered_.end() ? nullptr : &*found;
}

void UdListenerCore::OnRequest(const ud::Header& header, std::span<const std::uint8_t> payload,
                               const sockaddr_in& from) {
  const Requester requester{from, header.source_key, header.request};
  if (const Remembered* known = Find(requester)) {
    if (known->state != Remembered::State::kPending) Repeat(*known);  // our answer was lost
    return;
  }
  if (remembered_.size() == kRemembered) remembered_.pop_front();
  Remembered entry;
  entry.requester = requester;
  remembered_.push_back(std::move(entry));
  arrived_.push_back(std::make_unique<UdPendingConnection>(shared_from_this(), requester, payload));
}

void UdListenerCore::Repeat(const Remembered& remembered) {
  if (remembered.state == Remembered::State::kRejected) {
    SendReject(remembered.requester, remembered.reject_type, remembered.answer);
  } else if (const std::shared_ptr<UdCore> endpoint = remembered.endpoint.lock()) {
    endpoint->Answer(remembered.requester.address, remembered.requester.key, remembered.requester.request,
                     remembered.answer);
  }
}

void UdListenerCore::SendReject(const Requester& requester, ud::Type type, std::span<const std::uint8_t> private_data) {
  if (!socket_.is_open()) return;
  std::uint8_t message[ud::kMaxMessage];
  ud::EncodeHeader(ud::Header{type, static_cast<std::uint16_t>(private_data.size()), requester.key, 0, requester.request},
                   message);
  if (!private_data.empty()) std::memcpy(message + ud::kHeaderSize, private_data.data(), private_data.size());
  const std::size_t size = ud::Seal(message, ud::kHeaderSize + private_data.size());
  (void)::sendto(socket_.native_handle(), message, size, MSG_DONTWAIT | MSG_NOSIGNAL,
                 reinterpret_cast<const sockaddr*>(&requester.address), sizeof requester.address);
}

void UdListenerCore::Accepted(const Requester& requester, const std::shared_ptr<UdCore>& endpoint,
                              std::span<const std::uint8_t> private_data) {
  std::lock_guard lock(mutex_);
  endpoint->Answer(requester.address, requester.key, requester.request, private_data);
  if (Remembered* known = Find(requester)) {
    known->state = Remembered::State::kAccepted;
    known->endpoint = endpoint;
    known->answer.assign(private_data.begin(), private_data.end());
  }
}

void UdListenerCore::Rejected(const Requester& requester, ud::Type type, std::span<const std::uint8_t> private_data) {
  std::lock_guard lock(mutex_);
  SendReject(requester, type, private_data);
  if (Remembered* known = Find(requester)) {
    known->state = Remembered::State::kRejected;
    known->reject_type = type;
    known->answer.assign(private_data.begin(), private_data.end());
  }
}

UdPendingConnection::~UdPendingConnection() {
  if (!answered_) listener_->Rejected(requester_, ud::Type::kResolveRefused, {});
}

void UdPendingConnection::Reject(std::span<const std::uint8_t> private_data) {
  if (answered_) return;
  answered_ = true;
  listener_->Rejected(requester_, ud::Type::kResolveReject, private_data);
}

Status UdPendingConnection::AcceptDatagram(Endpoint& endpoint, std::span<const std::uint8_t> private_data,
                                           std::unique_ptr<AddressHandle>& requester) {
  auto* ud_endpoint = dynamic_cast<UdEndpoint*>(&endpoint);
  if (ud_endpoint == nullptr) return Status(Code::kInvalidParameter, Detail::kParamEp);
  if (answered_) return Status(Code::kInvalidState);
  if (private_data.size() > ud::kMaxPayload) return Status(Code::kInvalidParameter, Detail::kParamPrivateDataSize);
  answered_ = true;
  listener_->Accepted(requester_, ud_endpoint->core(), private_data);
  requester = std::make_unique<UdAddressHandle>(requester_.address.sin_addr.s_addr, ntohs(requester_.address.sin_port),
                                                requester_.key);
  return Status::Ok();
}

Status CreateDatagramListener(asio::io_context& io, const sockaddr_in& ia, std::uint16_t port, ListenEvents* events,
                              std::unique_ptr<Listener>& out) {
  auto core = std::make_shared<UdListenerCore>(io, events);
  if (Status status = core->Open(ia, port); !status.ok()) return status;
  out = std::make_unique<UdListener>(std::move(core));
  return Status::Ok();
}

}  // namespace softdat::transport::tcp
