// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The passive side of connection setup: a listener on a port (a PSP's or RSP's connection
// qualifier) and the connection requests it receives, each waiting for the consumer's answer.
// Threads as in endpoint.h: ListenEvents come from the progress context; destructors may run on
// any thread but inside the object's own events, and no event runs after they return.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <memory>
#include <span>

#include "base/status.h"
#include "transport/datagram.h"

namespace softdat::transport {

class Endpoint;

// A connection request that arrived at a listener. Destroying it without Accept or Reject
// refuses it (the active side sees kNonPeerRejected); destroying it after Accept or Reject has
// no effect on the connection. It may outlive its Listener.
class PendingConnection {
 public:
  virtual ~PendingConnection() = default;
  virtual std::span<const std::uint8_t> private_data() const = 0;
  virtual sockaddr_in remote_address() const = 0;
  virtual sockaddr_in local_address() const = 0;
  // Accepts onto `endpoint` (unconnected, of the same transport): its events report
  // OnEstablished or OnEnded(kAcceptFailed ...) from now on. At most one Accept or Reject.
  virtual Status Accept(Endpoint& endpoint, std::span<const std::uint8_t> private_data) = 0;
  // The active side sees kPeerRejected with this private data.
  virtual void Reject(std::span<const std::uint8_t> private_data) = 0;

  // A datagram endpoint's Resolve (it arrived at a Transport::ListenDatagram listener), answered
  // by AcceptDatagram instead of Accept.
  virtual bool datagram() const { return false; }
  // Answers with datagram endpoint `endpoint` of this transport, which the requester's
  // OnResolved will name; `requester` is the address handle of the requesting endpoint. At most
  // one AcceptDatagram or Reject.
  virtual Status AcceptDatagram(Endpoint& endpoint, std::span<const std::uint8_t> private_data,
                                std::unique_ptr<AddressHandle>& requester) {
    (void)endpoint, (void)private_data, (void)requester;
    return Status(Code::kModelNotSupported);
  }
};

class ListenEvents {
 public:
  virtual void OnConnectRequest(std::unique_ptr<PendingConnection> request) = 0;

 protected:
  ~ListenEvents() = default;
};

class Listener {
 public:
  virtual ~Listener() = default;  // stops listening; requests not yet reported are refused
  virtual std::uint16_t port() const = 0;
};

}  // namespace softdat::transport
