// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Fuzz target: softdat-tcp's UD datagram path (transport/tcp/ud_*.h) as a hostile host on the
// network reaches it: one UDP message, sent from a socket of the harness's own to a live UD
// endpoint (with receive buffers), to a UD listener (whose consumer accepts, rejects or drops
// each request), or to a UD endpoint with a Resolve pending. The transport runs in busy-poll mode
// on the fuzzer's thread and is made once; each input then runs until the message was handled.
//
// Input: byte 0 says where and how, the rest is the message.
//   bits 0-1  the target: 0 the receiving endpoint, 1 the listener, 2 the resolving endpoint
//   bit 2     write the target's key into the destination key field (0 for the listener)
//   bit 3     make the length field and the CRC right (so the input reaches the checks behind them)
//   bit 4     the resolving endpoint resolves first, under the message's request number
//   bits 5-6  the listener's consumer: 0 drops a request, 1 accepts it on the receiving endpoint,
//             2 rejects it with private data
// Besides "no crash, no undefined behaviour": a receive never reports more than its buffer holds,
// nor a datagram that failed a check; a well-formed datagram for the receiving endpoint arrives
// whole, behind its GRH.
#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "transport/ia_params.h"
#include "transport/listener.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/tcp/ud_endpoint.h"
#include "transport/tcp/ud_wire.h"

namespace tcp = softdat::transport::tcp;
namespace ud = softdat::transport::tcp::ud;
namespace transport = softdat::transport;

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

constexpr std::size_t kBuffers = 4;
constexpr std::size_t kBufferSize = ud::kGrhSize + 512;

// A UD endpoint's reports: receive buffers from a fixed set, everything else counted.
class Sink final : public transport::EndpointEvents {
 public:
  void OnEstablished(std::span<const std::uint8_t>) override {}
  void OnEnded(transport::ConnectionEnd, std::span<const std::uint8_t>) override {}
  transport::RecvAcquire AcquireRecv(std::uint32_t, transport::RecvTarget& target) override {
    segment_ = softdat::Segment{reinterpret_cast<std::uint64_t>(buffers_[next_ % kBuffers]), kBufferSize, 0};
    target = transport::RecvTarget{std::span<const softdat::Segment>(&segment_, 1), kBufferSize};
    ++next_;
    return transport::RecvAcquire::kTaken;
  }
  void OnRecvDone(std::uint32_t, transport::WorkStatus status, const transport::RecvInfo& info) override {
    Check(info.length <= kBufferSize);
    last_status = status;
    last_length = info.length;
    last_bytes = buffers_[(next_ - 1) % kBuffers];
    ++recvs;
  }
  void OnDeviceRecvDone(std::uint64_t, transport::WorkStatus, const transport::RecvInfo&) override { std::abort(); }
  void OnWorkDone(std::uint64_t, transport::WorkStatus, std::uint32_t) override {}
  transport::RemoteResolution ResolveRemote(std::uint32_t, std::uint64_t, std::uint64_t,
                                            transport::RemoteAccess) override {
    std::abort();  // no RDMA on a datagram endpoint
  }
  void OnResolved(std::uint64_t, std::unique_ptr<transport::AddressHandle> peer,
                  std::span<const std::uint8_t>) override {
    Check(peer != nullptr);
    ++answers;
  }
  void OnResolveFailed(std::uint64_t, transport::ConnectionEnd, std::span<const std::uint8_t>) override { ++answers; }

  std::uint64_t recvs = 0, answers = 0;
  transport::WorkStatus last_status = transport::WorkStatus::kSuccess;
  std::uint32_t last_length = 0;
  const std::uint8_t* last_bytes = nullptr;

 private:
  std::uint8_t buffers_[kBuffers][kBufferSize] = {};
  softdat::Segment segment_;
  std::uint64_t next_ = 0;
};

class Requests final : public transport::ListenEvents {
 public:
  void OnConnectRequest(std::unique_ptr<transport::PendingConnection> request) override {
    ++requests;
    Check(request->datagram());
    const std::uint8_t reply[] = {'f', 'u', 'z', 'z'};
    if (answer == 1) {
      std::unique_ptr<transport::AddressHandle> requester;
      Check(request->AcceptDatagram(*accepting, reply, requester).ok());
      Check(requester != nullptr);
    } else if (answer == 2) {
      request->Reject(reply);
    }
  }
  transport::Endpoint* accepting = nullptr;
  int answer = 0;
  std::uint64_t requests = 0;
};

struct World {
  World() {
    softdat::IaParams params;
    params.address = "127.0.0.1";
    params.options.progress = softdat::ProgressMode::kPoll;
    std::string why;
    Check(tcp::CreateTcpTransport(params, why, transport).ok());
    Check(transport->ListenDatagram(0, &requests, listener).ok());
    transport::EndpointConfig config;
    config.datagram = true;
    config.max_send_work = config.max_recv_work = 16;
    config.max_send_segments = config.max_recv_segments = 1;
    Check(transport->CreateEndpoint(config, &receiver_events, receiver).ok());
    Check(transport->CreateEndpoint(config, &resolver_events, resolver).ok());
    requests.accepting = receiver.get();
    raw = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  }
  std::unique_ptr<transport::Transport> transport;
  Requests requests;
  std::unique_ptr<transport::Listener> listener;
  Sink receiver_events, resolver_events;
  std::unique_ptr<transport::Endpoint> receiver, resolver;
  int raw = -1;
};

World& TheWorld() {
  static World* world = new World();  // lives for the process: the fuzzer never exits cleanly
  return *world;
}

std::uint32_t KeyOf(const transport::Endpoint& endpoint) {
  return static_cast<const tcp::UdEndpoint&>(endpoint).core()->key();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv("SOFTDAT_LOG", "error", 0);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > ud::kMaxMessage + 2) return 0;
  World& w = TheWorld();
  const std::uint8_t flags = data[0];
  std::vector<std::uint8_t> message(data + 1, data + size);
  const int target = flags & 3;
  if (target == 3) return 0;
  transport::Endpoint* endpoint = target == 0 ? w.receiver.get() : target == 2 ? w.resolver.get() : nullptr;
  std::uint16_t port = endpoint != nullptr ? ntohs(endpoint->local_address().sin_port) : w.listener->port();
  if ((flags & 4) && message.size() >= ud::kHeaderSize) {
    const std::uint32_t key = endpoint != nullptr ? KeyOf(*endpoint) : 0;
    for (int i = 0; i < 4; ++i) message[8 + i] = static_cast<std::uint8_t>(key >> (24 - 8 * i));
  }
  if ((flags & 8) && message.size() >= ud::kHeaderSize + ud::kCrcSize) {
    const std::size_t length = std::min(message.size() - ud::kHeaderSize - ud::kCrcSize, ud::kMaxPayload);
    message.resize(ud::kHeaderSize + length + ud::kCrcSize);
    message[6] = static_cast<std::uint8_t>(length >> 8);
    message[7] = static_cast<std::uint8_t>(length);
    ud::Seal(message.data(), ud::kHeaderSize + length);
  }
  if ((flags & 16) && message.size() >= ud::kHeaderSize) {
    std::uint64_t request = 0;
    for (int i = 0; i < 8; ++i) request = request << 8 | message[16 + i];
    sockaddr_in to = w.transport->address();
    (void)w.resolver->Resolve(to, ntohs(w.receiver->local_address().sin_port), {}, 1000, request);
  }
  w.requests.answer = (flags >> 5) & 3;

  // What the checks say should become of the message.
  ud::Header header;
  std::span<const std::uint8_t> payload;
  const bool valid = ud::Decode(message, header, payload) == ud::DecodeError::kNone;
  const bool datagram_for_receiver = valid && target == 0 && header.type == ud::Type::kData &&
                                     header.destination_key == KeyOf(*w.receiver);
  const bool request_for_listener = valid && target == 1 && header.type == ud::Type::kResolveRequest &&
                                    header.destination_key == 0 && header.source_key != 0;

  const std::uint64_t recvs = w.receiver_events.recvs, requests = w.requests.requests;
  sockaddr_in to = w.transport->address();
  to.sin_port = htons(port);
  if (::sendto(w.raw, message.data(), message.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) < 0)
    return 0;
  // Loopback delivers at once; busy-poll runs the socket handlers every few idle calls.
  for (int i = 0; i < 64; ++i) {
    (void)w.transport->Progress();
    if (w.receiver_events.recvs != recvs || w.requests.requests != requests) break;
  }
  if (datagram_for_receiver) {
    Check(w.receiver_events.recvs == recvs + 1);
    if (ud::kGrhSize + header.length <= kBufferSize) {
      Check(w.receiver_events.last_status == transport::WorkStatus::kSuccess);
      Check(w.receiver_events.last_length == ud::kGrhSize + header.length);
      Check(std::memcmp(w.receiver_events.last_bytes + ud::kGrhSize, payload.data(), payload.size()) == 0);
    } else {
      Check(w.receiver_events.last_status == transport::WorkStatus::kLocalLength);
    }
  } else {
    Check(w.receiver_events.recvs == recvs);  // nothing else takes a buffer
  }
  // A repeat of a remembered request is answered again, not reported: at most one report.
  Check(w.requests.requests <= requests + (request_for_listener ? 1 : 0));
  return 0;
}
