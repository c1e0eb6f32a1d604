// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The connection's state machines (connection_state.h), driven through their transition
// functions: the paths a connection takes, and every transition a state does not allow.
#include "transport/tcp/connection_state.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <set>
#include <utility>

namespace softdat::transport::tcp {
namespace {

template <class State, class Event>
State Walk(State state, std::initializer_list<Event> events) {
  for (Event event : events) {
    const std::optional<State> next = Next(state, event);
    EXPECT_TRUE(next.has_value()) << Name(state) << ": event " << static_cast<int>(event) << " refused";
    if (!next) return state;
    state = *next;
  }
  return state;
}

// Every (state, event) pair the function allows, checked against `allowed`; all others refused.
template <class State, class Event>
void ExpectExactly(int states, int events, const std::set<std::pair<State, Event>>& allowed) {
  for (int s = 0; s < states; ++s) {
    for (int e = 0; e < events; ++e) {
      const auto state = static_cast<State>(s);
      const auto event = static_cast<Event>(e);
      EXPECT_EQ(Next(state, event).has_value(), allowed.count({state, event}) == 1)
          << Name(state) << ", event " << e;
    }
  }
}

TEST(SetupState, ActiveAndPassivePathsAndTheirCloses) {
  using E = SetupEvent;
  EXPECT_EQ(Walk(SetupState::kIdle, {E::kConnect, E::kTcpConnected, E::kReplyAccepted}), SetupState::kEstablished);
  EXPECT_EQ(Walk(SetupState::kIdle, {E::kAcceptAwaitRtr, E::kRtrArrived}), SetupState::kEstablished);
  EXPECT_EQ(Walk(SetupState::kIdle, {E::kAccepted, E::kClose, E::kFinSent, E::kEnd}), SetupState::kEnded);
  EXPECT_EQ(Walk(SetupState::kIdle, {E::kConnect, E::kEnd}), SetupState::kEnded);  // refused, timed out
  EXPECT_TRUE(Carries(SetupState::kFinSent));
  EXPECT_FALSE(Carries(SetupState::kAwaitRtr));
}

TEST(SetupState, AllowsNothingElse) {
  using S = SetupState;
  using E = SetupEvent;
  std::set<std::pair<S, E>> allowed = {
      {S::kIdle, E::kConnect},          {S::kIdle, E::kAcceptAwaitRtr},        {S::kIdle, E::kAccepted},
      {S::kConnecting, E::kTcpConnected}, {S::kAwaitReply, E::kReplyAccepted}, {S::kAwaitRtr, E::kRtrArrived},
      {S::kEstablished, E::kClose},     {S::kClosing, E::kFinSent},
  };
  for (int s = 0; s < static_cast<int>(S::kEnded); ++s) allowed.insert({static_cast<S>(s), E::kEnd});
  ExpectExactly<S, E>(static_cast<int>(S::kEnded) + 1, static_cast<int>(E::kEnd) + 1, allowed);
}

TEST(RxState, DirectPlacementHoldingAndTheEnd) {
  using E = RxEvent;
  EXPECT_EQ(Walk(RxState::kReading, {E::kLargePayload, E::kPayloadPlaced, E::kTrailerChecked}), RxState::kReading);
  EXPECT_EQ(Walk(RxState::kReading, {E::kNoBuffer, E::kBufferPosted, E::kNoBuffer, E::kEnd}), RxState::kEnded);
}

TEST(RxState, AllowsNothingElse) {
  using S = RxState;
  using E = RxEvent;
  std::set<std::pair<S, E>> allowed = {
      {S::kReading, E::kLargePayload},  {S::kReading, E::kNoBuffer},    {S::kDirectPayload, E::kPayloadPlaced},
      {S::kDirectTrailer, E::kTrailerChecked}, {S::kHeld, E::kBufferPosted},
  };
  for (int s = 0; s < static_cast<int>(S::kEnded); ++s) allowed.insert({static_cast<S>(s), E::kEnd});
  ExpectExactly<S, E>(static_cast<int>(S::kEnded) + 1, static_cast<int>(E::kEnd) + 1, allowed);
}

TEST(TxState, HeldReplyGateRoomFailureAndShut) {
  using E = TxEvent;
  EXPECT_EQ(Walk(TxState::kOpen, {E::kHoldReply, E::kReleaseReply, E::kFirstFpduSeen, E::kSocketFull, E::kRoom}),
            TxState::kOpen);
  EXPECT_EQ(Walk(TxState::kOpen, {E::kSocketFull, E::kWriteFailed, E::kShut}), TxState::kShut);
  EXPECT_EQ(Walk(TxState::kOpen, {E::kHoldReply, E::kShut}), TxState::kShut);
}

TEST(TxState, AllowsNothingElse) {
  using S = TxState;
  using E = TxEvent;
  std::set<std::pair<S, E>> allowed = {
      {S::kOpen, E::kHoldReply},      {S::kOpen, E::kSocketFull},    {S::kOpen, E::kWriteFailed},
      {S::kHeld, E::kReleaseReply},   {S::kGated, E::kFirstFpduSeen}, {S::kGated, E::kWriteFailed},
      {S::kBlocked, E::kRoom},        {S::kBlocked, E::kWriteFailed},
  };
  for (int s = 0; s < static_cast<int>(S::kShut); ++s) allowed.insert({static_cast<S>(s), E::kShut});
  ExpectExactly<S, E>(static_cast<int>(S::kShut) + 1, static_cast<int>(E::kShut) + 1, allowed);
}

}  // namespace
}  // namespace softdat::transport::tcp
