// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Private data over rdma_cm, the way every other rdma_cm consumer sends and sees it: the consumer's
// bytes and nothing else, so that a DAT peer on the other side (OFED DAPL on a NIC, softdat-tcp on
// a host without RDMA) reads exactly what our consumer wrote. What softdat needs to know on top
// (did the peer's consumer reject, or did nobody answer?) comes from what rdma_cm and the wire
// already report: the IB CM reject reason, and on iWARP whether the MPA reject carried data.
//
// What the consumer sees on the receiving side is what rdma_cm delivers: on iWARP the sender's
// exact bytes (MPA private data after the RFC 6581 block, which siw hides); on IB/RoCE the CM
// message's whole private-data field, the sender's bytes followed by zeros (56 bytes for a
// connect request, 196 for an accept, 148 for a reject), as OFED's consumers see it.
#pragma once

#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace softdat::transport::verbs {

// The most a consumer may send, for connect, accept and reject alike (DAT has one limit).
// IB/RoCE: a CM REQ carries 92 bytes, of which rdma_cm takes 36 for its own header (REP and REJ
// allow more; the REQ is the smallest). iWARP: MPA private data is at most 256 bytes in Linux
// (RDMA_MAX_PRIVATE_DATA, checked by siw on receipt), of which the RFC 6581 block takes 4; and
// siw (6.1) adds the block's 4 bytes to the consumer's length in an 8-bit variable, so 252 bytes
// go out with PD_Length 0 and the peer drops the connection: 251 is the most that works.
inline constexpr std::uint32_t kMaxPrivateDataIb = 56;
inline constexpr std::uint32_t kMaxPrivateDataIwarp = 251;
std::uint32_t MaxPrivateData(ibv_transport_type transport);

// The IB CM reject reasons user space may send through rdma_cm (the kernel's ucma refuses others):
// rdma_reject sends kRejectConsumer, rdma_reject_ece kRejectNoAnswer.
inline constexpr int kRejectConsumer = 28;  // IB_CM_REJ_CONSUMER_DEFINED
inline constexpr int kRejectNoAnswer = 35;  // IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED

// How the active side reads RDMA_CM_EVENT_REJECTED (`status` and the private data length of the
// event). IB/RoCE: the reason tells, consumer-defined is the peer's consumer (OFED DAPL reads it
// the same way); anything else (our kRejectNoAnswer, no such service, ...) is the provider or the
// CM. iWARP: the wire has only the MPA Reply's Reject bit, and siw reports a Reject and a TCP
// connection closed before any Reply alike (ECONNRESET), so a reject that carries private data is
// the peer's consumer and one without is taken as nobody answering. The one case this misreads is
// a consumer that rejects with no private data, over iWARP: it is reported as non-peer.
enum class RejectedBy : std::uint8_t { kPeerConsumer, kNonPeer };
RejectedBy ClassifyReject(ibv_transport_type transport, int status, std::size_t private_data_length);

// A copy of the consumer's private data held until the progress sends it.
struct PrivateData {
  std::uint8_t bytes[kMaxPrivateDataIwarp] = {};  // the larger limit
  std::uint8_t length = 0;
  // Copies `data` (at most the buffer; callers check the transport's limit first).
  void Assign(std::span<const std::uint8_t> data);
};

}  // namespace softdat::transport::verbs
