// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What core/ hands a transport to move and what the transport reports back: segments of
// registered memory, posted operations (Send, RDMA Write, RDMA Read, and the DAT IB extensions:
// RDMA Write with immediate data, 64-bit atomics, UD Sends) and how each one ended.
// Plain data: the transport copies nothing it does not need and keeps no pointer past completion.
#pragma once

#include <cstdint>
#include <span>

#include "base/receive_extension.h"
#include "base/segment.h"

namespace softdat::transport {

// One piece of the consumer's registered memory, already checked by core (LMR bounds, PZ,
// privileges).
using Segment = softdat::Segment;

// How a posted operation or a received message ended, in transport terms; core maps each one to
// a DAT_DTO_COMPLETION_STATUS.
enum class WorkStatus : std::uint8_t {
  kSuccess,
  kFlushed,           // the connection ended before the operation completed
  kLocalLength,       // a received message did not fit its receive buffer
  kLocalProtection,   // the device refused a local key (device transports)
  kRemoteAccess,      // the peer refused an RDMA access: bad STag, bounds, PZ or privilege
  kRemoteResponder,   // the peer failed the operation for another reason
  kBadResponse,       // the peer's answer made no sense (a Read Response of the wrong size)
  kTransport,         // the connection broke under the operation (reset, protocol error)
  kReceiverNotReady,  // the peer had no receive buffer for longer than its RNR timeout
};

enum class WorkKind : std::uint8_t {
  kSend,
  kRdmaWrite,
  kRdmaRead,
  // The DAT IB extensions, posted only where Capabilities says the transport carries them.
  kRdmaWriteImmediate,  // an RDMA Write, then `immediate` completes the peer's next receive
  kFetchAdd,            // adds `compare_add` to the 8 bytes at the remote address
  kCompareSwap,         // stores `swap` there if they equal `compare_add`
  kSendDatagram,        // a UD Send to `destination` (a datagram endpoint's Post only)
};

class AddressHandle;

// A posted operation. `local` stays valid (core owns it) until OnWorkDone for `id`, or until
// OnEnded if the connection ends first.
struct Work {
  std::uint64_t id = 0;  // core's name for the completion
  WorkKind kind = WorkKind::kSend;
  std::span<const Segment> local;  // gathered for Send and Write, scattered for Read
  std::uint64_t length = 0;        // the sum of local lengths (core keeps it below 2^32)
  bool solicited = false;          // Send: Send with Solicited Event
  bool fence = false;              // wait for earlier RDMA Reads to complete before starting
  // Posted with completion suppressed: no event tells the consumer when `local` is free again,
  // and stock consumers (dtest -w) rewrite it while it is in flight, which an RNIC survives (it
  // checksums what it reads). A software transport that checksums in place copies it instead.
  bool unsignaled = false;
  bool invalidate = false;         // Send: Send with Invalidate of `invalidate_key` at the peer
  std::uint32_t invalidate_key = 0;
  std::uint64_t remote_address = 0;  // Write, Read, atomics: the peer's address (tagged offset)
  std::uint32_t remote_key = 0;      // Write, Read, atomics: the peer's rmr_context (STag)
  std::uint32_t immediate = 0;       // kRdmaWriteImmediate: the 32-bit immediate data
  // Atomics: `local` is the 8 bytes the original remote value lands in (host order), `length` 8.
  std::uint64_t compare_add = 0;  // kFetchAdd: the addend; kCompareSwap: the value compared
  std::uint64_t swap = 0;         // kCompareSwap: the value stored on a match
  const AddressHandle* destination = nullptr;  // kSendDatagram: where to (kept until it completes)
  // The consumer wants no event if it succeeds (DAT_COMPLETION_SUPPRESS_FLAG): a device transport
  // may post it unsignalled. Its OnWorkDone still comes, in posting order, but may wait for a
  // later request's completion or the connection's end.
  bool quiet_success = false;
};

// What the transport learned about a received message besides its bytes.
struct RecvInfo {
  std::uint32_t length = 0;  // bytes placed
  bool solicited = false;    // Send with Solicited Event
  bool invalidated = false;  // Send with Invalidate: core invalidates `invalidate_key` locally
  std::uint32_t invalidate_key = 0;
  ReceiveExtension extension;  // immediate data, a datagram's source
};

// The access the peer wants to the memory an STag names, for the target side of RDMA. kAtomic
// is 8 naturally aligned bytes read and written in one step (DAT_IB_MEM_PRIV_REMOTE_ATOMIC).
enum class RemoteAccess : std::uint8_t { kRead, kWrite, kAtomic };

// core's answer to such a request; the transport turns a refusal into the matching Terminate.
enum class RemoteCheck : std::uint8_t {
  kOk,
  kInvalidKey,     // no region or window has this STag
  kBounds,         // the range lies outside it (or an atomic's address is not 8-byte aligned)
  kAccessRights,   // it lacks REMOTE_READ / REMOTE_WRITE / REMOTE_ATOMIC
  kNotAssociated,  // it belongs to another PZ, or a window bound to another EP
};

struct RemoteResolution {
  RemoteCheck check = RemoteCheck::kInvalidKey;
  std::uint8_t* address = nullptr;  // where the requested range starts, when check is kOk
};

}  // namespace softdat::transport
