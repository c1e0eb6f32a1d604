// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The TCP connection's three state machines, as data: its setup (how far the connection and its
// MPA exchange got, how it closes), its receive stream and its transmit stream (the models:
// siw's rx/tx states, UCX's table of tcp_ep states). Each state is an enum; every change goes
// through one transition function, Next(state, event), which returns the new state or nothing
// when the state does not allow the event. The connection asserts a refused transition in debug
// builds; connection_state_test drives each function through every state and event.
#pragma once

#include <cstdint>
#include <optional>

namespace softdat::transport::tcp {

// Setup: owned by the progress context (Connection, under its IoLock).
enum class SetupState : std::uint8_t {
  kIdle,         // neither Connect nor Accept yet
  kConnecting,   // active: the TCP connect is in progress
  kAwaitReply,   // active: MPA Request sent, waiting for the Reply
  kAwaitRtr,     // passive: MPA Reply sent, waiting for the peer's ready-to-receive FPDU
  kEstablished,  // carries traffic
  kClosing,      // graceful disconnect: what is queued drains, then FIN
  kFinSent,      // graceful disconnect: FIN sent, waiting for the peer's
  kEnded,        // OnEnded reported: nothing more is read, written or reported
};

enum class SetupEvent : std::uint8_t {
  kConnect,        // Idle -> Connecting
  kAcceptAwaitRtr, // Idle -> AwaitRtr: the Reply is sent, the peer sends a ready-to-receive FPDU
  kAccepted,       // Idle -> Established: the Reply is sent, nothing to wait for
  kTcpConnected,   // Connecting -> AwaitReply: the Request is sent
  kReplyAccepted,  // AwaitReply -> Established
  kRtrArrived,     // AwaitRtr -> Established
  kClose,          // Established -> Closing
  kFinSent,        // Closing -> FinSent
  kEnd,            // any but Ended -> Ended
};

std::optional<SetupState> Next(SetupState from, SetupEvent event);
// Established, Closing or FinSent: the connection carries (or drains) traffic.
inline bool Carries(SetupState state) {
  return state == SetupState::kEstablished || state == SetupState::kClosing || state == SetupState::kFinSent;
}
const char* Name(SetupState state);

// Receive stream: owned by the progress context (RxStream, under the connection's IoLock).
enum class RxState : std::uint8_t {
  kReading,        // reads the socket into its receive block and takes whole FPDUs from it
  kDirectPayload,  // a large FPDU's payload is read straight into its destination
  kDirectTrailer,  // that payload is placed: its pad and CRC come next, through the block
  kHeld,           // a Send waits for a receive buffer: the socket is watched only for its end
  kEnded,          // the connection ended: nothing more is read
};

enum class RxEvent : std::uint8_t {
  kLargePayload,    // Reading -> DirectPayload
  kPayloadPlaced,   // DirectPayload -> DirectTrailer
  kTrailerChecked,  // DirectTrailer -> Reading
  kNoBuffer,        // Reading -> Held
  kBufferPosted,    // Held -> Reading
  kEnd,             // any but Ended -> Ended
};

std::optional<RxState> Next(RxState from, RxEvent event);
const char* Name(RxState state);

// Transmit stream: owned by the progress context (TxStream, under the connection's IoLock),
// which Post joins only with try_lock.
enum class TxState : std::uint8_t {
  kOpen,     // writes whatever it has to write
  kHeld,     // a responder's MPA Reply, held until its ESTABLISHED is delivered (nothing is written)
  kGated,    // a responder that may send nothing before the initiator's first FPDU (RFC 5044
             // §7.1.2, rule 4: Linux siw drops a Reply that arrives with FPDU bytes behind it)
  kBlocked,  // the socket is full: a wait for room is armed
  kFailed,   // a write made from Post failed: the next poll ends the connection (Post reports
             // nothing)
  kShut,     // nothing more is sent (the FIN went out, or the connection ended)
};

enum class TxEvent : std::uint8_t {
  kHoldReply,      // Open -> Held (a responder's Reply is ready, its ESTABLISHED not yet delivered)
  kReleaseReply,   // Held -> Gated (delivered: the Reply goes, and nothing after it until the
                   // initiator's first FPDU)
  kFirstFpduSeen,  // Gated -> Open
  kSocketFull,     // Open -> Blocked
  kRoom,           // Blocked -> Open
  kWriteFailed,    // Open, Gated or Blocked -> Failed
  kShut,           // any -> Shut
};

std::optional<TxState> Next(TxState from, TxEvent event);
const char* Name(TxState state);

}  // namespace softdat::transport::tcp
