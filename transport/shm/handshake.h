// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Connection setup over the rendezvous socket: the exchange MPA makes on TCP (private data, the
// consumer's accept or reject, a provider's refusal), plus what the shared-memory path needs:
//
//   active → passive   Request  ring sizes, where the active side mapped the segment, its
//                               endpoint binding, IRD/ORD, its IA address, private data;
//                               fds: the connection segment (a sealed memfd the active side made),
//                               the active side's key table and activity table (activity.h) with
//                               the connection's bit in it
//   passive → active   Accept   where it mapped the segment, its binding, IRD/ORD, whether it
//                               can attach to the active side, private data; fds: its key table
//                               and activity table with the connection's bit
//                   or Reject   by the consumer (kPeerRejected) or by the provider, private data
//   active → passive   Ready    whether it can attach to the passive side
//
// The passive side is established as its Accept goes out (as a TCP responder at its MPA Reply):
// its consumer's ESTABLISHED never waits for the active side, so it cannot come after events of
// that side's later steps (its disconnects of other connections). The Ready reaches its
// Connection, which until then sends large Sends through the ring.
//
// Each side learns the other's process from the socket (SO_PEERCRED, the kernel's word) and
// probes cross-memory attach by reading the segment's header at the address the peer named
// (cma.h); the result goes to the peer, which then knows whether its large Sends may be pulled.
//
// Everything received is checked before use: exact message lengths, the version, ring sizes, at
// most 512 bytes of private data, exactly the descriptors the message type carries, the
// segment's seals, size and header, the key table's. A message that fails any check fails the
// handshake (the socket closes; the peer sees a provider refusal). The caller bounds the time
// (the connect timeout; a passive side's deadline for the Request) and the number
// of handshakes waiting.
//
// Threads: a handshake object is used by one thread at a time.
#pragma once

#include <netinet/in.h>
#include <sys/types.h>

#include <array>
#include <cstdint>
#include <memory>
#include <span>

#include "transport/shm/activity.h"
#include "transport/shm/key_table.h"
#include "transport/shm/layout.h"
#include "transport/shm/rendezvous.h"
#include "transport/shm/shared_memory.h"
#include "transport/shm/unique_fd.h"

namespace softdat::transport::shm {

inline constexpr std::size_t kMaxPrivateData = 512;  // MPA's field; the transport's own limit is lower

struct PrivateData {
  std::array<std::uint8_t, kMaxPrivateData> bytes{};
  std::uint16_t length = 0;
  std::span<const std::uint8_t> view() const { return {bytes.data(), length}; }
  bool Assign(std::span<const std::uint8_t> data);
};

// What one side brings to a connection.
struct LocalEnd {
  KeyTable* table = nullptr;  // its published keys (the fd goes to the peer)
  Binding binding;            // the endpoint's PZ and number in that table
  std::uint32_t ird = 0;      // RDMA Reads the peer may have outstanding at us
  std::uint32_t ord = 0;      // RDMA Reads we may have outstanding at the peer
  bool attach = true;         // try cross-memory attach to the peer (false forces the ring path)
  bool allow_attach = false;  // under Yama scope 1, let the peer attach to us (PR_SET_PTRACER)
  // Our IA's activity table (its fd goes to the peer) and this connection's bit in it; none: the
  // peer marks nothing and the connection is looked at in turn only.
  const ActivityTable* activity = nullptr;
  std::uint32_t activity_slot = kNoActivitySlot;
};

// Decoded handshake messages (also what the fuzzer checks).
struct Request {
  Geometry geometry;
  std::uint64_t segment_address = 0;
  Binding binding;
  std::uint32_t ird = 0;
  std::uint32_t ord = 0;
  std::uint32_t activity_slot = kNoActivitySlot;  // with a slot, an activity table fd follows the key table's
  sockaddr_in address{};  // the active side's IA address and port, for dat_cr_query
  PrivateData private_data;
};
struct Accept {
  std::uint64_t segment_address = 0;
  Binding binding;
  std::uint32_t ird = 0;
  std::uint32_t ord = 0;
  std::uint32_t activity_slot = kNoActivitySlot;  // with a slot, an activity table fd follows the key table's
  bool attaches = false;
  PrivateData private_data;
};
struct Reject {
  bool by_consumer = false;
  PrivateData private_data;
};
struct Ready {
  bool attaches = false;
};

enum class MessageType : std::uint16_t { kRequest = 1, kAccept = 2, kReject = 3, kReady = 4, kClose = 5 };

// After establishment: how a side ended (in a kClose message, before it shuts the socket).
enum class CloseReason : std::uint8_t {
  kGraceful = 1,    // all its records are in the ring
  kAbrupt = 2,
  kTerminated = 3,  // a protocol error or a refused one-sided access (`detail`: a RemoteCheck or 0)
};

inline constexpr std::size_t kMaxMessage = 1024;

std::size_t Encode(const Request& m, std::span<std::uint8_t> out);
std::size_t Encode(const Accept& m, std::span<std::uint8_t> out);
std::size_t Encode(const Reject& m, std::span<std::uint8_t> out);
std::size_t Encode(const Ready& m, std::span<std::uint8_t> out);
std::size_t EncodeClose(CloseReason reason, std::uint32_t detail, std::span<std::uint8_t> out);
// The type of a message (false when its header is not ours), then the body by type: false
// unless the message is exactly that type's length and every field is in range.
bool DecodeType(std::span<const std::uint8_t> in, MessageType& type);
bool Decode(std::span<const std::uint8_t> in, Request& m);
bool Decode(std::span<const std::uint8_t> in, Accept& m);
bool Decode(std::span<const std::uint8_t> in, Reject& m);
bool Decode(std::span<const std::uint8_t> in, Ready& m);
bool DecodeClose(std::span<const std::uint8_t> in, CloseReason& reason, std::uint32_t& detail);

// A finished handshake: what a Connection is made of.
struct Established {
  int side = kActive;
  UniqueFd socket;
  Mapping segment;
  Geometry geometry;
  std::unique_ptr<KeyTableView> peer_table;
  std::unique_ptr<ActivityView> peer_activity;  // null: the peer has no activity table
  std::uint32_t peer_activity_slot = kNoActivitySlot;
  Binding peer_binding;         // the peer's endpoint: our one-sided accesses are checked against it
  pid_t peer_pid = 0;
  uid_t peer_uid = 0;
  bool attach = false;          // we attach to the peer (the probe passed)
  bool peer_attaches = false;   // the peer attaches to us: it may pull our large Sends
  bool await_ready = false;     // passive side: the peer's Ready is still to come (to the Connection)
  bool reported = false;        // the owner reported OnEstablished already: the Connection does not
  std::uint32_t peer_ird = 0;
  std::uint32_t peer_ord = 0;
  sockaddr_in peer_address{};   // passive side: the active side's IA address and port
  PrivateData peer_private_data;  // active side: the Accept's; passive side: the Request's
};

class ActiveHandshake {
 public:
  enum class Step : std::uint8_t { kPending, kEstablished, kRejected, kFailed };

  // Dials the listener at `address`:`port` and sends the Request. kNobody: use TCP (nothing
  // was sent); kFailed: out of resources (also use TCP). `local_address` is what the passive side
  // reports as ours.
  Dial Start(in_addr address, std::uint16_t port, const Geometry& geometry, const sockaddr_in& local_address,
             std::span<const std::uint8_t> private_data, const LocalEnd& local);
  // The socket to wait on for the answer.
  int fd() const { return socket_.get(); }
  // Reads the answer. kRejected: rejected() says by whom and with what.
  Step OnReadable();
  const Reject& rejected() const { return reject_; }
  // After kEstablished.
  Established Take();

 private:
  Step Fail(const char* why);
  UniqueFd socket_;
  Mapping segment_;
  Geometry geometry_;
  LocalEnd local_;
  pid_t peer_pid_ = 0;
  uid_t peer_uid_ = 0;
  Established established_;
  Reject reject_;
  bool done_ = false;
};

class PassiveHandshake {
 public:
  enum class Step : std::uint8_t { kPending, kRequest, kFailed };

  // `socket`: a connection the rendezvous listener accepted.
  explicit PassiveHandshake(UniqueFd socket) : socket_(std::move(socket)) {}
  int fd() const { return socket_.get(); }
  // Reads the Request (kRequest once it is in and checked: the consumer decides).
  Step OnReadable();
  const Request& request() const { return request_; }
  // The consumer accepted: sends the Accept. True: established (Take); the peer's Ready comes to
  // the Connection, which reads that socket from now on (Established::await_ready).
  bool AcceptWith(std::span<const std::uint8_t> private_data, const LocalEnd& local);
  // The consumer (by_consumer) or the provider refused; the socket closes with the object.
  void RejectWith(bool by_consumer, std::span<const std::uint8_t> private_data);
  Established Take();

 private:
  Step Fail(const char* why);
  enum class Phase : std::uint8_t { kAwaitRequest, kDeciding, kDone };
  UniqueFd socket_;
  Phase phase_ = Phase::kAwaitRequest;
  Request request_;
  Established established_;
};

}  // namespace softdat::transport::shm
