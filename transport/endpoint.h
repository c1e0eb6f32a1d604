// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// One endpoint of a transport (an RC QP in verbs terms) and what it reports to the core/ EP that
// owns it. core/ owns every DAT rule; an Endpoint only moves bytes, sets up and tears down.
//
// Lifetime and threads:
//  - Created unconnected by Transport::CreateEndpoint; then either Connect (active side) or
//    PendingConnection::Accept (passive side), at most once. A new connection needs a new Endpoint.
//  - EndpointEvents calls come from the transport's progress context (its progress thread, or a
//    consumer thread inside Transport::Progress), never two at once for one endpoint. The
//    reports (OnEstablished ... OnWorkDone, AcquireRecv) only record: they may come while the
//    transport holds its own locks, and never call back into the transport but for
//    RecvBuffersAvailable and Disconnect, which only leave a note. What they made ready reaches
//    the consumer's EVDs when the transport calls Deliver, which it does with no softdat lock
//    held (an EVD post may wake a waiter and trigger a CNO), before its poll or handler ends.
//  - The destructor may be called from any thread except from inside this endpoint's own events;
//    when it returns, no event of this endpoint is running and none will run. Callers must not
//    hold a lock that the events take.
//  - Calls into an Endpoint are safe from any thread, concurrently with its events. Post calls
//    on one endpoint never overlap one another: core makes them under the EP's post lock, so a
//    transport needs no lock of its own to order them.
//  - Post, PostRecv and RecvBuffersAvailable never allocate and never block.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <memory>
#include <span>

#include "base/segment.h"
#include "base/status.h"
#include "transport/datagram.h"
#include "transport/work.h"

namespace softdat::transport {

class CompletionQueue;
class ProtectionDomain;
class DeviceSrq;

// Why a connection attempt failed or a connection ended.
enum class ConnectionEnd : std::uint8_t {
  kDisconnected,     // graceful close, by either side
  kBroken,           // reset, protocol error, Terminate, RNR timeout, hostile peer
  kTimedOut,         // Connect's timeout expired
  kUnreachable,      // nobody listens at the address and port, or no route
  kPeerRejected,     // the peer's consumer rejected (dat_cr_reject), maybe with private data
  kNonPeerRejected,  // the peer's provider refused: no such service, no resources, bad request
  kAcceptFailed,     // passive side: the active side went away before the accept completed
};

// What a software-receive transport gets when a new message starts arriving.
enum class RecvAcquire : std::uint8_t {
  kTaken,     // `target` is the receive buffer for this message
  kNotReady,  // no receive buffer: hold the message (back-pressure on this connection only) and
              // ask again after RecvBuffersAvailable, or break the connection after the RNR
              // timeout with kReceiverNotReady
  kRefused,   // the message may not take a buffer (MSN outside the window, account closed): a
              // protocol violation, terminate the connection
};

// What became of a message handed over whole (EndpointEvents::ReceiveWhole).
enum class WholeReceive : std::uint8_t {
  kPlaced,    // in its buffer and complete (OnRecvDone is not called for it)
  kTooLong,   // longer than its buffer, which completed with a local length error: terminate the
              // connection, as after OnRecvDone(kLocalLength)
  kNotReady,  // as RecvAcquire::kNotReady: nothing changed; hold the message and ask again
  kRefused,   // as RecvAcquire::kRefused: nothing changed; terminate the connection
};

// The receive buffer chosen for a message (software receive model). The segments stay valid
// until OnRecvDone for that MSN, or until OnEnded.
struct RecvTarget {
  std::span<const Segment> segments;
  std::uint64_t capacity = 0;  // the sum of the segment lengths
};

// Implemented by core/'s EP.
class EndpointEvents {
 public:
  // Connect or Accept completed: the connection carries traffic. `private_data` is the peer's
  // reply on the active side, empty on the passive side.
  virtual void OnEstablished(std::span<const std::uint8_t> private_data) = 0;

  // The attempt failed or the connection ended, exactly once per Connect/Accept. Afterwards the
  // transport touches none of the memory of outstanding Work or receive targets and reports no
  // more completions: core flushes whatever is still outstanding, once. `private_data`: the
  // peer's reject data for kPeerRejected, else empty.
  virtual void OnEnded(ConnectionEnd why, std::span<const std::uint8_t> private_data) = 0;

  // Software receive model. The first bytes of message `msn` (the DDP MSN of the Send, counted
  // from 1 per connection) arrived: core picks its buffer.
  virtual RecvAcquire AcquireRecv(std::uint32_t msn, RecvTarget& target) = 0;
  // Message `msn` is placed (or failed with `status`).
  virtual void OnRecvDone(std::uint32_t msn, WorkStatus status, const RecvInfo& info) = 0;
  // Message `msn` arrived whole (`bytes`, all of it; a small Send in one piece, `info.length` its
  // size): AcquireRecv, the copy into the buffer and OnRecvDone(kSuccess) as one step, which core
  // takes under one lock where it can (three on every small message otherwise). The transport
  // keeps `bytes` small: the copy may be made under the lock dat_ep_post_recv takes. This
  // default takes the three steps.
  virtual WholeReceive ReceiveWhole(std::uint32_t msn, std::span<const std::uint8_t> bytes, const RecvInfo& info) {
    RecvTarget target;
    switch (AcquireRecv(msn, target)) {
      case RecvAcquire::kTaken: break;
      case RecvAcquire::kNotReady: return WholeReceive::kNotReady;
      case RecvAcquire::kRefused: return WholeReceive::kRefused;
    }
    RecvInfo done = info;
    if (bytes.size() > target.capacity) {
      done.length = 0;
      OnRecvDone(msn, WorkStatus::kLocalLength, done);
      return WholeReceive::kTooLong;
    }
    CopyIntoSegments(target.segments, bytes.data(), bytes.size());
    done.length = static_cast<std::uint32_t>(bytes.size());
    OnRecvDone(msn, WorkStatus::kSuccess, done);
    return WholeReceive::kPlaced;
  }

  // Device receive model: the receive posted as `recv_id` (to the endpoint or to its DeviceSrq)
  // completed. Device completions of one endpoint come in the peer's send order.
  virtual void OnDeviceRecvDone(std::uint64_t recv_id, WorkStatus status, const RecvInfo& info) = 0;

  // A posted Work ended. `length` is the bytes transferred (a Read's bytes placed locally).
  virtual void OnWorkDone(std::uint64_t id, WorkStatus status, std::uint32_t length) = 0;

  // OnDeviceRecvDone or OnWorkDone, then Deliver, as one step, for a transport that holds no
  // lock when it reports (a device's completion, polled on the thread that reaps it): core turns
  // the completion into its event at once when nothing else of the endpoint waits. These
  // defaults take the two steps.
  virtual void DeliverDeviceRecv(std::uint64_t recv_id, WorkStatus status, const RecvInfo& info) {
    OnDeviceRecvDone(recv_id, status, info);
    Deliver();
  }
  virtual void DeliverWorkDone(std::uint64_t id, WorkStatus status, std::uint32_t length) {
    OnWorkDone(id, status, length);
    Deliver();
  }

  // Software RDMA target side: may the peer access `length` bytes at `address` of STag `key`?
  virtual RemoteResolution ResolveRemote(std::uint32_t key, std::uint64_t address,
                                         std::uint64_t length, RemoteAccess access) = 0;
  // Datagram endpoints: the Resolve named `request` found its peer (`peer` is its address handle,
  // `private_data` what the accepting side answered), or failed (kPeerRejected with the peer's
  // private data, kTimedOut, kUnreachable, kNonPeerRejected).
  virtual void OnResolved(std::uint64_t request, std::unique_ptr<AddressHandle> peer,
                          std::span<const std::uint8_t> private_data) {
    (void)request, (void)peer, (void)private_data;
  }
  virtual void OnResolveFailed(std::uint64_t request, ConnectionEnd why, std::span<const std::uint8_t> private_data) {
    (void)request, (void)why, (void)private_data;
  }

  // Reports what the calls above made ready (completions, connection events) to the consumer's
  // EVDs. The transport calls it after any of them, with no lock held, at the latest before its
  // current poll or handler returns; never after the endpoint's destructor returned.
  virtual void Deliver() {}

 protected:
  ~EndpointEvents() = default;
};

// Sizes core asks for when it creates an endpoint (from the DAT EP attributes).
struct EndpointConfig {
  ProtectionDomain* pd = nullptr;  // from Transport::CreateProtectionDomain
  // Who owns the endpoint (core's EP), the same across the endpoints dat_ep_modify and reset
  // replace: an RMR bound to it names it (PublishedKey::endpoint in transport.h).
  std::uint64_t owner = 0;
  DeviceSrq* srq = nullptr;        // device receive model with an SRQ; else null
  // Where the endpoint's completions go (Transport::CreateCompletionQueue): the queue of its
  // request EVD and of its receive EVD (the same one when they are). Null: no EVD, or a transport
  // without completion queues; the transport then reports them from its own progress.
  CompletionQueue* send_cq = nullptr;
  CompletionQueue* recv_cq = nullptr;
  std::uint32_t max_send_work = 0;
  std::uint32_t max_recv_work = 0;
  std::uint32_t max_send_segments = 0;
  std::uint32_t max_recv_segments = 0;
  std::uint32_t max_rdma_read_in = 0;   // Reads the peer may have outstanding at us (IRD)
  std::uint32_t max_rdma_read_out = 0;  // Reads we may have outstanding at the peer (ORD)
  std::uint32_t max_message_size = 0;
  // An unreliable datagram endpoint (DAT_IB_SERVICE_TYPE_UD): no connection; Resolve finds peers,
  // Post takes kSendDatagram, and each arriving datagram takes the next receive buffer or is
  // dropped (the service allows loss). Only where Capabilities::datagrams.
  bool datagram = false;
};

class Endpoint {
 public:
  virtual ~Endpoint() = default;

  // Starts connecting to `port` at `remote`; the outcome arrives as OnEstablished or OnEnded
  // (kTimedOut when `timeout_us` passes first; UINT64_MAX waits forever). kInvalidState if this
  // endpoint was connected or accepted before.
  virtual Status Connect(const sockaddr_in& remote, std::uint16_t port,
                         std::span<const std::uint8_t> private_data, std::uint64_t timeout_us) = 0;

  // Starts a Send, RDMA Write or RDMA Read (or an extension Work the capabilities name). Only
  // after OnEstablished and before OnEnded (a datagram endpoint: any time before Disconnect);
  // core checks the state and never has more than max_send_work outstanding.
  virtual Status Post(const Work& work) = 0;

  // Datagram endpoints: asks the listener on `port` at `remote` for the endpoint that will take
  // this one's datagrams, sending `private_data`; OnResolved or OnResolveFailed names `request`
  // (kTimedOut when `timeout_us` passes first). Any number, concurrently, before or after others
  // answered. kModelNotSupported on a connected endpoint.
  virtual Status Resolve(const sockaddr_in& remote, std::uint16_t port, std::span<const std::uint8_t> private_data,
                         std::uint64_t timeout_us, std::uint64_t request) {
    (void)remote, (void)port, (void)private_data, (void)timeout_us, (void)request;
    return Status(Code::kModelNotSupported);
  }

  // Device receive model: posts a receive buffer to this endpoint (allowed before Connect).
  virtual Status PostRecv(std::uint64_t recv_id, std::span<const Segment> segments) = 0;

  // Software receive model: a receive buffer was posted where this endpoint takes them from;
  // a message held for want of one may go on. Cheap when nothing is held.
  virtual void RecvBuffersAvailable() = 0;

  // The EP's EVDs changed before any connection (dat_ep_modify): completions go to these queues
  // (EndpointConfig::send_cq, recv_cq) from the next Connect or Accept on. Nothing by default.
  virtual void SetCompletionQueues(CompletionQueue* send_cq, CompletionQueue* recv_cq) {
    (void)send_cq;
    (void)recv_cq;
  }

  // Graceful: finish what is in flight, then close; abrupt: close now. OnEnded follows once (if
  // a connection or an attempt exists). Idempotent.
  virtual void Disconnect(bool graceful) = 0;

  // Addresses of the connection (zero before one exists).
  virtual sockaddr_in local_address() const = 0;
  virtual sockaddr_in remote_address() const = 0;
};

}  // namespace softdat::transport
