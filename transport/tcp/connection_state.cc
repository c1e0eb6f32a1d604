// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The transition functions of the connection's state machines (connection_state.h).
#include "transport/tcp/connection_state.h"

namespace softdat::transport::tcp {

std::optional<SetupState> Next(SetupState from, SetupEvent event) {
  using S = SetupState;
  using E = SetupEvent;
  if (event == E::kEnd) return from == S::kEnded ? std::nullopt : std::optional(S::kEnded);
  switch (from) {
    case S::kIdle:
      if (event == E::kConnect) return S::kConnecting;
      if (event == E::kAcceptAwaitRtr) return S::kAwaitRtr;
      if (event == E::kAccepted) return S::kEstablished;
      break;
    case S::kConnecting:
      if (event == E::kTcpConnected) return S::kAwaitReply;
      break;
    case S::kAwaitReply:
      if (event == E::kReplyAccepted) return S::kEstablished;
      break;
    case S::kAwaitRtr:
      if (event == E::kRtrArrived) return S::kEstablished;
      break;
    case S::kEstablished:
      if (event == E::kClose) return S::kClosing;
      break;
    case S::kClosing:
      if (event == E::kFinSent) return S::kFinSent;
      break;
    case S::kFinSent:
    case S::kEnded:
      break;
  }
  return std::nullopt;
}

const char* Name(SetupState state) {
  switch (state) {
    case SetupState::kIdle: return "idle";
    case SetupState::kConnecting: return "connecting";
    case SetupState::kAwaitReply: return "awaiting the MPA Reply";
    case SetupState::kAwaitRtr: return "awaiting the ready-to-receive FPDU";
    case SetupState::kEstablished: return "established";
    case SetupState::kClosing: return "closing";
    case SetupState::kFinSent: return "closing, FIN sent";
    case SetupState::kEnded: return "ended";
  }
  return "?";
}

std::optional<RxState> Next(RxState from, RxEvent event) {
  using S = RxState;
  using E = RxEvent;
  if (event == E::kEnd) return from == S::kEnded ? std::nullopt : std::optional(S::kEnded);
  switch (from) {
    case S::kReading:
      if (event == E::kLargePayload) return S::kDirectPayload;
      if (event == E::kNoBuffer) return S::kHeld;
      break;
    case S::kDirectPayload:
      if (event == E::kPayloadPlaced) return S::kDirectTrailer;
      break;
    case S::kDirectTrailer:
      if (event == E::kTrailerChecked) return S::kReading;
      break;
    case S::kHeld:
      if (event == E::kBufferPosted) return S::kReading;
      break;
    case S::kEnded:
      break;
  }
  return std::nullopt;
}

const char* Name(RxState state) {
  switch (state) {
    case RxState::kReading: return "reading";
    case RxState::kDirectPayload: return "placing a payload in place";
    case RxState::kDirectTrailer: return "reading a placed payload's trailer";
    case RxState::kHeld: return "held for a receive buffer";
    case RxState::kEnded: return "ended";
  }
  return "?";
}

std::optional<TxState> Next(TxState from, TxEvent event) {
  using S = TxState;
  using E = TxEvent;
  if (event == E::kShut) return from == S::kShut ? std::nullopt : std::optional(S::kShut);
  switch (from) {
    case S::kOpen:
      if (event == E::kHoldReply) return S::kHeld;
      if (event == E::kSocketFull) return S::kBlocked;
      if (event == E::kWriteFailed) return S::kFailed;
      break;
    case S::kHeld:
      if (event == E::kReleaseReply) return S::kGated;
      break;
    case S::kGated:
      if (event == E::kFirstFpduSeen) return S::kOpen;
      if (event == E::kWriteFailed) return S::kFailed;
      break;
    case S::kBlocked:
      if (event == E::kRoom) return S::kOpen;
      if (event == E::kWriteFailed) return S::kFailed;
      break;
    case S::kFailed:
    case S::kShut:
      break;
  }
  return std::nullopt;
}

const char* Name(TxState state) {
  switch (state) {
    case TxState::kOpen: return "open";
    case TxState::kHeld: return "holding the Reply until the ESTABLISHED is delivered";
    case TxState::kGated: return "gated until the initiator's first FPDU";
    case TxState::kBlocked: return "blocked for socket room";
    case TxState::kFailed: return "failed";
    case TxState::kShut: return "shut";
  }
  return "?";
}

}  // namespace softdat::transport::tcp
