// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The transport interface: one Transport per open IA, chosen by the dat.conf IA params. It
// creates endpoints, listeners and device resources, and drives its own progress (a progress
// thread, or Progress() from the consumer's thread in busy-poll mode). Mechanism only: every DAT
// rule lives in core/, srq/ and evd/, which never name a concrete transport: core is handed a
// TransportFactory (transport/factory.h picks the backend by the IA params' first word; tests
// hand in fakes).
//
// Two receive models, told apart by Capabilities::receive_model:
//  - kSoftware (tcp, fake): the transport asks core for a buffer when a message starts arriving
//    (EndpointEvents::AcquireRecv); srq/ decides which one, so SRQ semantics are shared.
//  - kDevice (verbs): core posts receives down (Endpoint::PostRecv, DeviceSrq::PostRecv) and the
//    NIC chooses; completions name the posted receive.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "transport/completion_queue.h"
#include "transport/device_resources.h"
#include "transport/endpoint.h"
#include "transport/ia_params.h"
#include "transport/listener.h"

namespace softdat::transport {

enum class ReceiveModel : std::uint8_t { kSoftware, kDevice };

// What a transport can do; core reports it in the IA and provider attributes and checks
// consumer requests against it. Zero means "not supported" for counts.
// The largest payload of one tcp FPDU: Capabilities::transport_mtu's default.
inline constexpr std::uint32_t kTcpFpduPayload = 65440;

// How many LMRs and bound RMRs one IA may have: core's key table holds that many, and so does the
// table a transport publishes keys in (PublishKey).
inline constexpr std::uint32_t kMaxMemoryKeys = 16384;

// What a key core published grants a peer (Transport::PublishKey).
struct PublishedKey {
  std::uint32_t key = 0;  // lmr_context or rmr_context: slot << 8 | generation
  std::uint64_t address = 0;
  std::uint64_t length = 0;
  bool remote_read = false;
  bool remote_write = false;
  const ProtectionDomain* pd = nullptr;  // the key's protection zone
  std::uint64_t endpoint = 0;            // an RMR bound to an EP: its EndpointConfig::owner; else 0
};

struct Capabilities {
  ReceiveModel receive_model = ReceiveModel::kSoftware;
  bool device_memory_keys = false;  // RegisterMemory gives the keys (else core issues them)
  bool rdma_read = false;
  bool busy_poll = false;           // Progress() must be called by the consumer's waits
  bool srq = false;
  bool srq_resize = false;          // DeviceSrq::Resize works (software: always)
  bool srq_limit = false;           // low watermark event (software: always)
  bool recv_solicited_known = true; // RecvInfo::solicited is reported (verbs: ibv_wc has no such flag)
  bool rnr_waits = true;            // a Send without a receive buffer waits (iWARP devices break instead)
  std::uint32_t max_endpoints = 0;
  std::uint32_t max_send_work = 0;      // per endpoint
  std::uint32_t max_recv_work = 0;      // per endpoint
  std::uint32_t max_segments = 0;       // per posted operation
  std::uint32_t max_message_size = 0;
  std::uint32_t max_rdma_size = 0;
  std::uint32_t max_private_data = 0;   // connect, accept and reject private data
  std::uint32_t max_rdma_read_in = 0;   // per endpoint (IRD)
  std::uint32_t max_rdma_read_out = 0;  // per endpoint (ORD)
  std::uint32_t max_srq_work = 0;
  std::uint32_t max_srq_segments = 0;
  // The payload bytes one wire unit carries, reported as the provider attribute
  // DAT_IB_TRANSPORT_MTU (stock dtestsrq sizes its buffers from it when not given -b): a device
  // transport's port's active MTU in bytes (ibv_port_attr.active_mtu: 256 to 4096); the tcp
  // transport's FPDU payload, which is this default (transport/tcp/wire.h kMaxFpduPayload;
  // tcp_mtu_test pins the two together).
  std::uint32_t transport_mtu = kTcpFpduPayload;
  // The DAT IB extensions the transport carries (dat_ib_extensions.h): each one it lacks is
  // reported FALSE in the provider attributes and refused with DAT_MODEL_NOT_SUPPORTED.
  bool immediate_data = false;  // WorkKind::kRdmaWriteImmediate, RecvInfo::immediate
  bool atomics = false;         // WorkKind::kFetchAdd and kCompareSwap, RemoteAccess::kAtomic
  bool datagrams = false;       // EndpointConfig::datagram, Resolve, ListenDatagram
  // A datagram Post that returned kOk has left (a UDP send): core completes it at once, where a
  // device reports a UD Send's completion like any other.
  bool datagram_done_at_post = false;
  std::uint32_t max_datagram = 0;  // payload bytes of one datagram (the UD MTU)
};

class Transport {
 public:
  // Every endpoint, listener and device resource is destroyed before the transport.
  virtual ~Transport() = default;

  virtual const Capabilities& capabilities() const = 0;
  // The IA address (IPv4), reported by dat_ia_query and used as the local connection address.
  virtual sockaddr_in address() const = 0;

  virtual Status CreateProtectionDomain(std::unique_ptr<ProtectionDomain>& out) = 0;
  // Device transports register memory; software ones return kOk and leave `out` null.
  virtual Status RegisterMemory(ProtectionDomain& pd, void* address, std::uint64_t length,
                                MemoryAccess access, std::unique_ptr<MemoryRegion>& out) = 0;
  // Device receive model only (kModelNotSupported otherwise).
  virtual Status CreateDeviceSrq(ProtectionDomain& pd, std::uint32_t max_work,
                                 std::uint32_t max_segments, DeviceSrqEvents* events,
                                 std::unique_ptr<DeviceSrq>& out) = 0;

  // A completion queue for one DTO EVD, holding at least `entries` completions
  // (completion_queue.h). Transports that report completions from their own progress refuse
  // (kModelNotSupported, the default): core's EVDs then only hold what that progress posts.
  virtual Status CreateCompletionQueue(std::uint32_t entries, std::unique_ptr<CompletionQueue>& out) {
    (void)entries;
    (void)out;
    return Status(Code::kModelNotSupported);
  }

  virtual Status CreateEndpoint(const EndpointConfig& config, EndpointEvents* events,
                                std::unique_ptr<Endpoint>& out) = 0;
  // Listens on `port` of the IA address; 0 picks a free port (Listener::port tells which).
  // kConnQualInUse when the port is taken.
  virtual Status Listen(std::uint16_t port, ListenEvents* events, std::unique_ptr<Listener>& out) = 0;
  // Listens for datagram endpoints' Resolve requests on `port` (a PSP's connection qualifier, as
  // for Listen: the two may share a number). kModelNotSupported without Capabilities::datagrams;
  // kConnQualInUse when the port is taken.
  virtual Status ListenDatagram(std::uint16_t port, ListenEvents* events, std::unique_ptr<Listener>& out) {
    (void)port, (void)events, (void)out;
    return Status(Code::kModelNotSupported);
  }

  // Software transports whose peers check remote keys without core (tcp's same-host path, where a
  // peer's RDMA Write lands without this process) learn of every key core publishes and revokes
  // (dat_lmr_create and free, dat_rmr_bind, a peer's Send with Invalidate). RevokeKey returns only
  // when no peer access through the key can be in flight, so the memory may go next. Control
  // path; nothing by default (a device resolves its own keys; core checks those tcp receives).
  virtual void PublishKey(const PublishedKey& key) { (void)key; }
  virtual void RevokeKey(std::uint32_t key) { (void)key; }

  // Makes progress on the caller's thread (a consumer's EVD wait or dequeue); true when anything
  // happened. Busy-poll mode relies on it; with a progress thread it is how a waiting consumer
  // gets its events without a hand-off (a transport may also just return false).
  virtual bool Progress() noexcept = 0;
  // Whether a consumer that is reaping events (its EVD not empty) should call Progress now rather
  // than when its EVD runs dry: the transport holds so much posted Work back that writing it later
  // would read it cold. A hint, read on every dequeue: cheap, and false by default.
  virtual bool ProgressDue() const noexcept { return false; }
  // The consumer that was calling Progress stops (its wait is about to sleep): whoever else
  // drives progress must take over now. Once ReportWaits was called, every Pause is paired with a
  // Resume when that wait returns.
  virtual void Pause() noexcept {}
  // The wait that called Pause returns (the consumer calls in again, or not at all).
  virtual void Resume() noexcept {}
  // The caller (core) promises to report every wait on this transport's events: Pause and Resume
  // around each sleep, and ConsumerWatches for each CNO (which tells its agent or fd with no call
  // of the consumer's). Then a transport knows when nobody can learn of an event without calling
  // in, and may leave a completion for the next poll, as a device leaves it in its CQ, rather than
  // wake its progress thread for it. Without this promise every completion is delivered at once.
  virtual void ReportWaits() noexcept {}
  // A CNO was created (+1) or freed (-1) on this IA.
  virtual void ConsumerWatches(int delta) noexcept { (void)delta; }
};

// Creates the transport an IA's params ask for (the factory resolves and checks the address or
// device). kInvalidParameter with a reason in `why` for a bad address or device.
using TransportFactory = Status (*)(const IaParams& params, std::string& why, std::unique_ptr<Transport>& out);

}  // namespace softdat::transport
