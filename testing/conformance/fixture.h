// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Shared fixture of the conformance suite: every test goes through the public DAT API (the stock
// libdat2 registry loading softdat), over softdat-tcp on loopback. It opens an IA with an async
// EVD, creates PZs, registers LMRs, creates EVDs and SRQs, and connects endpoint pairs whose
// passive side takes its receives from an SRQ, so each test states only the rule it checks.
#pragma once

#include <dat2/udat.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace softdat::conformance {

// Every wait is bounded: long enough for a loaded 2-core machine, short enough to fail a hung test.
inline constexpr DAT_TIMEOUT kEventTimeoutUs = 10'000'000;
// How long a test waits to conclude that an event did not come (never asserted as a duration).
inline constexpr DAT_TIMEOUT kQuietUs = 300'000;

inline DAT_DTO_COOKIE Cookie(std::uint64_t value) {
  DAT_DTO_COOKIE cookie;
  cookie.as_64 = value;
  return cookie;
}

// A registered buffer.
struct Region {
  std::vector<char> bytes;
  DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT context = 0;
  DAT_RMR_CONTEXT rmr_context = 0;  // what a peer names it by (with remote privileges)
  DAT_LMR_TRIPLET Triplet(std::size_t offset, std::size_t length) const {
    DAT_LMR_TRIPLET t;
    t.lmr_context = context;
    t.virtual_address = reinterpret_cast<DAT_VADDR>(bytes.data() + offset);
    t.segment_length = static_cast<DAT_SEG_LENGTH>(length);
    return t;
  }
  // `length` bytes at `offset`, as a peer's RDMA names them.
  DAT_RMR_TRIPLET Remote(std::size_t offset, std::size_t length) const {
    DAT_RMR_TRIPLET t;
    t.rmr_context = rmr_context;
    t.virtual_address = reinterpret_cast<DAT_VADDR>(bytes.data() + offset);
    t.segment_length = static_cast<DAT_SEG_LENGTH>(length);
    return t;
  }
};

// Receive buffers on one LMR: `count` slots of `slot_size` bytes, posted to an SRQ by index
// (cookie = index), so a completion tells which slot was filled.
struct SlotBuffers {
  Region region;
  std::size_t slot_size = 0;
  DAT_LMR_TRIPLET Slot(std::size_t index) const { return region.Triplet(index * slot_size, slot_size); }
};

// One connection: `sender` is a plain EP (its own receive queue, never used), `receiver` takes
// its receives from the SRQ it was created with.
struct Pair {
  DAT_IA_HANDLE sender_ia = DAT_HANDLE_NULL;  // the test's IA unless ReceiverOptions::sender_ia_name
  DAT_PZ_HANDLE sender_pz = DAT_HANDLE_NULL;
  DAT_EP_HANDLE sender = DAT_HANDLE_NULL;
  DAT_EP_HANDLE receiver = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE sender_request_evd = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE sender_connect_evd = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE receiver_connect_evd = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE receiver_recv_evd = DAT_HANDLE_NULL;  // may be shared between pairs
};

// Options of a Pair's receiving EP.
struct ReceiverOptions {
  DAT_COMPLETION_FLAGS recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  bool set_recv_flags = false;
  DAT_EVD_HANDLE recv_evd = DAT_HANDLE_NULL;  // null: a new one
  // Put the sender on an IA of its own, opened by this name (closed at TearDown). In the
  // progress=poll variant each IA then moves only when its own EVDs are waited on, so a test can
  // push part of a large message (Pump the sender) and let the receiver take part of it.
  const char* sender_ia_name = nullptr;
  DAT_PZ_HANDLE receiver_pz = DAT_HANDLE_NULL;  // null: the test's PZ (the SRQ's)
  // The sender's request side: its request EVD (null: a new one) and, with set_request_flags, its
  // request completion flags and request queue size (the provider's defaults otherwise).
  DAT_EVD_HANDLE sender_request_evd = DAT_HANDLE_NULL;
  bool set_request_flags = false;
  DAT_COMPLETION_FLAGS request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  DAT_COUNT max_request_dtos = 0;  // 0: the default
};

// The dat.conf name of the IA the suite runs over: $SOFTDAT_CONFORMANCE_IA (e.g. softdat-verbs-rxe0
// inside the VM, see main.cc) or softdat-tcp.
const char* SuiteIaName();
// True when the suite runs over softdat-tcp (IA options such as rnr_timeout_ms are tcp's).
bool SuiteIsTcp();
// The suite's SRQ precondition, checked at the end of every SetUp. softdat's IAs must support
// SRQs: one whose provider (`provider_name`) is softdat and says srq_supported FALSE fails the test
// (fatally, so its body does not run). Another provider's IA without SRQs skips it: the suite is
// meant for any provider.
void RequireSrqSupport(std::string_view provider_name, DAT_BOOLEAN srq_supported);
// True in the progress=poll variant (SOFTDAT_PROGRESS=poll): every IA then moves only inside the
// test's own waits, so a test can stop a receiver in the middle of a message deterministically.
// Tests that need that run in this variant only (and say so when skipped in the other).
bool ProgressIsPolled();

class ConformanceTest : public ::testing::Test {
 protected:
  // The IA every test opens, unless it overrides ia_name().
  virtual const char* ia_name() const { return SuiteIaName(); }

  void SetUp() override;
  void TearDown() override;

  // A provider-specific attribute the IA reports as "TRUE" (softdat names its device-dependent
  // capabilities this way, e.g. SOFTDAT_SRQ_RESIZE, SOFTDAT_RNR_WAITS; see core/ia_attributes.cc).
  // Or reports as `value` (SOFTDAT_TRANSPORT: "tcp" or "verbs"). An attribute the IA does not
  // report at all fails the test (and gives false): a renamed attribute must not turn the tests
  // that ask for it into skips.
  bool ProviderSays(const char* name, const char* value = "TRUE") const;
  // ep_recv_info_supported bits 0 and 1: dat_ep_recv_query counts the buffers an SRQ EP holds
  // (core/ia_attributes.h); an EP with its own receive queue always reports both.
  bool SrqEpCountsKnown() const { return (provider_attr_.ep_recv_info_supported & 0x3) == 0x3; }

  // Fails the test (ASSERT) on error.
  DAT_EVD_HANDLE MakeEvd(DAT_EVD_FLAGS flags, DAT_COUNT qlen = 64, DAT_IA_HANDLE ia = DAT_HANDLE_NULL);
  // On the test's IA and PZ unless given others (of one IA).
  DAT_RETURN Register(Region& region, std::size_t size, DAT_MEM_PRIV_FLAGS privileges,
                      DAT_PZ_HANDLE pz = DAT_HANDLE_NULL, DAT_IA_HANDLE ia = DAT_HANDLE_NULL);
  DAT_RETURN CreateSrq(DAT_COUNT max_recv_dtos, DAT_COUNT max_recv_iov, DAT_SRQ_HANDLE* srq,
                       DAT_COUNT low_watermark = DAT_SRQ_LW_DEFAULT);
  DAT_SRQ_PARAM QuerySrq(DAT_SRQ_HANDLE srq);

  // Connects a new pair over loopback, the receiver using `srq`. ASSERTs (use ASSERT_NO_FATAL_FAILURE).
  void Connect(DAT_SRQ_HANDLE srq, Pair& pair, const ReceiverOptions& options = {});
  // Disconnects gracefully and waits for both ends' DISCONNECTED events.
  void Disconnect(Pair& pair);

  // Posts a Send of `length` bytes of `fill` from a buffer the fixture owns, with the given
  // completion flags; the send completion is reaped by WaitSends.
  void Send(Pair& pair, std::size_t length, char fill, DAT_COMPLETION_FLAGS flags = DAT_COMPLETION_DEFAULT_FLAG);
  // Waits for `count` successful send completions on the pair's request EVD.
  void WaitSends(Pair& pair, int count);

  // dat_evd_wait with threshold 1 and the bounded timeout; returns its DAT_RETURN. With `pump`,
  // waits in 1 ms slices and moves pump's IA between them (see Pump).
  static DAT_RETURN Wait(DAT_EVD_HANDLE evd, DAT_EVENT& event, DAT_TIMEOUT timeout_us = kEventTimeoutUs,
                         DAT_EVD_HANDLE pump = DAT_HANDLE_NULL);
  // One zero-timeout dat_evd_wait on `evd`: under progress=poll, that is what moves its IA. It
  // dequeues an event if one is there: pump only EVDs whose events the test does not need.
  static void Pump(DAT_EVD_HANDLE evd);
  // Dequeues the next DTO completion of `evd` once it is there (polling, bounded: it needs no
  // notification), then tells whether it had triggered `cno`, the CNO `evd` is attached to (only a
  // signalled event triggers it).
  static bool NextCompletionWasSignalled(DAT_EVD_HANDLE evd, DAT_CNO_HANDLE cno, DAT_DTO_COMPLETION_EVENT_DATA& dto);
  // Registers `count` slots of `slot_size` bytes in `slots` and posts each to `srq` (cookie = index).
  void PostSlots(DAT_SRQ_HANDLE srq, SlotBuffers& slots, int count, std::size_t slot_size);
  // Waits for one DTO completion (ASSERTs it is one).
  static void WaitDto(DAT_EVD_HANDLE evd, DAT_DTO_COMPLETION_EVENT_DATA& dto, DAT_EVD_HANDLE pump = DAT_HANDLE_NULL);
  // Waits for one async event of the watermark kind naming `object` with `reason`; other async
  // events are skipped. Returns false if none comes in time.
  bool WaitWatermarkEvent(DAT_HANDLE object, DAT_COUNT reason, DAT_TIMEOUT timeout_us = kEventTimeoutUs);
  // Waits for a connection event of the given number on `evd`.
  static bool WaitConnectionEvent(DAT_EVD_HANDLE evd, DAT_EVENT_NUMBER number,
                                  DAT_TIMEOUT timeout_us = kEventTimeoutUs, DAT_EVD_HANDLE pump = DAT_HANDLE_NULL);

  DAT_IA_HANDLE ia_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd_ = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE pz_ = DAT_HANDLE_NULL;
  DAT_IA_ATTR ia_attr_{};
  DAT_PROVIDER_ATTR provider_attr_{};
  std::vector<std::unique_ptr<Region>> send_regions_;
  std::vector<DAT_IA_HANDLE> sender_ias_;
};

std::string DatReturnName(DAT_RETURN value);

}  // namespace softdat::conformance
