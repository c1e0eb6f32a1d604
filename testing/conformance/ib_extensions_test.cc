// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The DAT IB extensions (dat_ib_extensions.h 2.0.9) through the public API: an RDMA Write with
// immediate data takes the receiver's SRQ buffers like Sends (in order, one each, the watermark
// crossed once, a Write with no buffer waiting for one); atomics are atomic under concurrent
// initiators on several connections; protection failures are remote-access errors that touch
// nothing; a UD datagram with no receive buffer is lost while one with a buffer arrives whole
// behind its GRH; the counters match a ledger of what was done. Each operation is tested where
// the IA's provider attributes say it is offered, and its absence is tested where they say not.
#include <netinet/in.h>

// clang-format off
#include <dat2/udat.h>
#include <dat2/dat_ib_extensions.h>
// clang-format on

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "testing/conformance/fixture.h"

namespace softdat::conformance {
namespace {

constexpr DAT_MEM_PRIV_FLAGS kTargetPrivileges = static_cast<DAT_MEM_PRIV_FLAGS>(
    DAT_MEM_PRIV_LOCAL_WRITE_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG | DAT_MEM_PRIV_REMOTE_READ_FLAG |
    DAT_IB_MEM_PRIV_REMOTE_ATOMIC);

DAT_DTO_COOKIE Cookie(DAT_UINT64 value) {
  DAT_DTO_COOKIE cookie;
  cookie.as_64 = value;
  return cookie;
}

const DAT_IB_EXTENSION_EVENT_DATA& Extension(const DAT_EVENT& event) {
  return *reinterpret_cast<const DAT_IB_EXTENSION_EVENT_DATA*>(event.event_extension_data);
}

// An atomic load, as the target's executor writes the word atomically (transport/remote_atomic.h):
// with both IAs in this process over shared memory, what orders the executor's write before the
// initiator's completion is the ring, mapped twice, which ThreadSanitizer cannot follow; a plain
// read was reported as a race when the target's progress thread executed the atomic.
std::uint64_t Word(const Region& region, std::size_t offset) {
  return __atomic_load_n(reinterpret_cast<const std::uint64_t*>(region.bytes.data() + offset), __ATOMIC_ACQUIRE);
}

class IbExtensions : public ConformanceTest {
 protected:
  void SetUp() override {
    ConformanceTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    ASSERT_EQ(ia_attr_.extension_supported, DAT_EXTENSION_IB);
    ASSERT_EQ(ia_attr_.extension_version, 209);
  }
  // Waits for one extended DTO completion (DAT_IB_DTO_EVENT).
  static void WaitIbDto(DAT_EVD_HANDLE evd, DAT_EVENT& event) {
    const DAT_RETURN waited = Wait(evd, event);
    ASSERT_EQ(waited, DAT_SUCCESS) << "no completion in time: " << DatReturnName(waited);
    ASSERT_EQ(static_cast<int>(event.event_number), DAT_IB_DTO_EVENT);
  }
  // A pair whose receiver takes its buffers from a new SRQ (none posted), a region of the
  // receiver's that allows every remote access (atomics too) and one of the sender's.
  void Setup(Pair& pair, DAT_SRQ_HANDLE& srq, Region& target, Region& local, std::size_t size,
             DAT_MEM_PRIV_FLAGS local_privileges) {
    ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
    ASSERT_EQ(Register(target, size, kTargetPrivileges), DAT_SUCCESS);
    ASSERT_EQ(Register(local, size, local_privileges, pair.sender_pz, pair.sender_ia), DAT_SUCCESS);
  }
  // One connection per entry of `sender_ias` (null: the suite's IA), each sending 200 Fetch and
  // Adds of 1 (4 in flight) to one word of the receiver's: every add sees a value no other saw,
  // and the word ends at their count.
  void ConcurrentFetchAdds(const std::vector<const char*>& sender_ias) {
    const int kConnections = static_cast<int>(sender_ias.size());
    constexpr int kEach = 200, kWindow = 4;
    Region target;
    ASSERT_EQ(Register(target, 64, kTargetPrivileges), DAT_SUCCESS);
    std::vector<Pair> pairs(kConnections);
    std::vector<Region> results(kConnections);
    DAT_SRQ_HANDLE srq;
    ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
    for (int c = 0; c < kConnections; ++c) {
      ReceiverOptions options;
      options.sender_ia_name = sender_ias[c];
      ASSERT_NO_FATAL_FAILURE(Connect(srq, pairs[c], options));
      ASSERT_EQ(Register(results[c], kEach * 8, DAT_MEM_PRIV_LOCAL_WRITE_FLAG, pairs[c].sender_pz, pairs[c].sender_ia),
                DAT_SUCCESS);
    }
    std::vector<int> failures(kConnections, 0);
    std::atomic<int> finished{0};
    std::vector<std::thread> initiators;
    for (int c = 0; c < kConnections; ++c) {
      initiators.emplace_back([&, c] {
        int in_flight = 0;
        auto reap = [&] {
          DAT_EVENT event{};
          if (Wait(pairs[c].sender_request_evd, event) != DAT_SUCCESS ||
              static_cast<int>(event.event_number) != DAT_IB_DTO_EVENT ||
              event.event_data.dto_completion_event_data.status != DAT_DTO_SUCCESS ||
              Extension(event).type != DAT_IB_FETCH_AND_ADD)
            ++failures[c];
          --in_flight;
        };
        for (int i = 0; i < kEach; ++i) {
          if (in_flight == kWindow) reap();
          DAT_LMR_TRIPLET local = results[c].Triplet(i * 8, 8);
          DAT_RMR_TRIPLET remote = target.Remote(16, 8);
          if (dat_ib_post_fetch_and_add(pairs[c].sender, 1, &local, Cookie(i), &remote, DAT_COMPLETION_DEFAULT_FLAG) !=
              DAT_SUCCESS) {
            ++failures[c];
            break;
          }
          ++in_flight;
        }
        while (in_flight > 0) reap();
        // With progress=poll an IA moves only while its EVDs are waited on or dequeued: go on
        // dequeuing (nothing more comes) until every initiator is done, so the target IA, which
        // may be this one, keeps answering the others (bounded: 20 s).
        finished.fetch_add(1);
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (finished.load() < kConnections && std::chrono::steady_clock::now() < until) {
          DAT_EVENT event{};
          (void)dat_evd_dequeue(pairs[c].sender_request_evd, &event);
          std::this_thread::yield();
        }
      });
    }
    for (std::thread& t : initiators) t.join();
    for (int c = 0; c < kConnections; ++c) EXPECT_EQ(failures[c], 0) << "connection " << c;
    std::vector<std::uint64_t> originals;
    for (const Region& r : results)
      for (int i = 0; i < kEach; ++i) originals.push_back(Word(r, i * 8));
    std::sort(originals.begin(), originals.end());
    std::vector<std::uint64_t> expected(kConnections * kEach);
    std::iota(expected.begin(), expected.end(), 0);
    EXPECT_EQ(originals, expected) << "each add saw a value no other add saw";
    EXPECT_EQ(Word(target, 16), static_cast<std::uint64_t>(kConnections * kEach));
    EXPECT_EQ(Word(target, 8), 0u);
    EXPECT_EQ(Word(target, 24), 0u);
  }
  void PostSlots(DAT_SRQ_HANDLE srq, SlotBuffers& slots, int count) {
    slots.slot_size = 64;
    ASSERT_EQ(Register(slots.region, 64 * count, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
    for (int i = 0; i < count; ++i) {
      DAT_LMR_TRIPLET iov = slots.Slot(i);
      ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, Cookie(i)), DAT_SUCCESS);
    }
  }
};

// Like a Send, each RDMA Write with immediate data completes the receiver's next SRQ buffer,
// placing nothing in it; the receive reports the immediate and the Write's length.
TEST_F(IbExtensions, WriteWithImmediateTakesSrqBuffersInOrderWithExactCountsAndTheWatermark) {
  if (!ProviderSays("DAT_IB_IMMED_DATA")) GTEST_SKIP() << "the IA reports DAT_IB_IMMED_DATA=FALSE";
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(16, 1, &srq), DAT_SUCCESS);
  SlotBuffers slots;
  ASSERT_NO_FATAL_FAILURE(PostSlots(srq, slots, 8));
  const bool watermarks = provider_attr_.srq_watermarks_supported != 0;
  if (watermarks) {
    ASSERT_EQ(dat_srq_set_lw(srq, 4), DAT_SUCCESS);
  }
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  Region target, source;
  ASSERT_EQ(Register(target, 4096, kTargetPrivileges), DAT_SUCCESS);
  ASSERT_EQ(Register(source, 4096, DAT_MEM_PRIV_LOCAL_READ_FLAG, pair.sender_pz, pair.sender_ia), DAT_SUCCESS);
  std::iota(source.bytes.begin(), source.bytes.end(), 0);
  constexpr int kWrites = 5;
  for (int i = 0; i < kWrites; ++i) {
    DAT_LMR_TRIPLET local = source.Triplet(i * 100, 100);
    DAT_RMR_TRIPLET remote = target.Remote(i * 100, 100);
    ASSERT_EQ(dat_ib_post_rdma_write_immed(pair.sender, 1, &local, Cookie(100 + i), &remote, 0xA000 + i,
                                           DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
  }
  for (int i = 0; i < kWrites; ++i) {
    DAT_EVENT event{};
    ASSERT_NO_FATAL_FAILURE(WaitIbDto(pair.sender_request_evd, event));
    const DAT_DTO_COMPLETION_EVENT_DATA& dto = event.event_data.dto_completion_event_data;
    EXPECT_EQ(dto.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(dto.user_cookie.as_64, 100u + i);
    EXPECT_EQ(dto.transfered_length, 100u);
    EXPECT_EQ(Extension(event).type, DAT_IB_RDMA_WRITE_IMMED);
  }
  for (int i = 0; i < kWrites; ++i) {
    DAT_EVENT event{};
    ASSERT_NO_FATAL_FAILURE(WaitIbDto(pair.receiver_recv_evd, event));
    const DAT_DTO_COMPLETION_EVENT_DATA& dto = event.event_data.dto_completion_event_data;
    EXPECT_EQ(dto.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(dto.user_cookie.as_64, static_cast<DAT_UINT64>(i)) << "the SRQ's buffers in posted order";
    EXPECT_EQ(dto.transfered_length, 100u) << "the Write's length";
    EXPECT_EQ(Extension(event).type, DAT_IB_RDMA_WRITE_IMMED_DATA);
    EXPECT_EQ(Extension(event).val.immed.data, 0xA000u + i);
  }
  EXPECT_EQ(std::memcmp(target.bytes.data(), source.bytes.data(), kWrites * 100), 0);
  EXPECT_EQ(std::count(slots.region.bytes.begin(), slots.region.bytes.end(), '\0'),
            static_cast<long>(slots.region.bytes.size()))
      << "nothing is placed in a buffer an immediate takes";
  EXPECT_EQ(QuerySrq(srq).available_dto_count, 8 - kWrites);
  if (watermarks) {
    EXPECT_TRUE(WaitWatermarkEvent(srq, DAT_SRQ_LOW_WATERMARK_EVENT)) << "3 left: below 4";
  }
}

// With the SRQ empty the immediate waits (back-pressure, as a Send does) and completes once a
// buffer comes.
TEST_F(IbExtensions, WriteWithImmediateWaitsForAnSrqBuffer) {
  if (!ProviderSays("DAT_IB_IMMED_DATA")) GTEST_SKIP() << "the IA reports DAT_IB_IMMED_DATA=FALSE";
  if (!ProviderSays("SOFTDAT_RNR_WAITS")) GTEST_SKIP() << "the transport breaks a connection without a buffer";
  DAT_SRQ_HANDLE srq;
  Pair pair;
  Region target, source;
  ASSERT_NO_FATAL_FAILURE(Setup(pair, srq, target, source, 64, DAT_MEM_PRIV_LOCAL_READ_FLAG));
  DAT_LMR_TRIPLET local = source.Triplet(0, 16);
  DAT_RMR_TRIPLET remote = target.Remote(0, 16);
  ASSERT_EQ(dat_ib_post_rdma_write_immed(pair.sender, 1, &local, Cookie(1), &remote, 77, DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  DAT_EVENT event{};
  EXPECT_EQ(DAT_GET_TYPE(Wait(pair.receiver_recv_evd, event, kQuietUs)), DAT_TIMEOUT_EXPIRED) << "no buffer yet";
  SlotBuffers slots;
  ASSERT_NO_FATAL_FAILURE(PostSlots(srq, slots, 1));
  ASSERT_NO_FATAL_FAILURE(WaitIbDto(pair.receiver_recv_evd, event));
  EXPECT_EQ(Extension(event).val.immed.data, 77u);
  EXPECT_EQ(event.event_data.dto_completion_event_data.transfered_length, 16u);
}

// Fetch and Add of 1 from four connections at once, each many times: every original value is
// distinct and the word ends at the total, as the CPU sees it.
TEST_F(IbExtensions, AtomicsAreAtomicUnderConcurrentInitiatorsOnSeveralConnections) {
  if (!ProviderSays("DAT_IB_FETCH_AND_ADD")) GTEST_SKIP() << "the IA reports DAT_IB_FETCH_AND_ADD=FALSE";
  ConcurrentFetchAdds({nullptr, nullptr, nullptr, nullptr});
}

// The same memory under atomics from a connection over TCP (an IA with shm=off) and one from the
// suite's IA, which in the _shm variants takes the same-host shared-memory path: the target
// executes both the same way, so they are atomic with respect to each other too.
TEST_F(IbExtensions, AtomicsOverTcpAndSharedMemoryOnOneRegionAreAtomicTogether) {
  if (!SuiteIsTcp()) GTEST_SKIP() << "softdat-tcp-noshm is a softdat-tcp IA";
  if (!ProviderSays("DAT_IB_FETCH_AND_ADD")) GTEST_SKIP() << "the IA reports DAT_IB_FETCH_AND_ADD=FALSE";
  ConcurrentFetchAdds({"softdat-tcp-noshm", nullptr, "softdat-tcp-noshm", nullptr});
}

TEST_F(IbExtensions, CompareAndSwapSwapsOnlyOnAMatch) {
  if (!ProviderSays("DAT_IB_CMP_AND_SWAP")) GTEST_SKIP() << "the IA reports DAT_IB_CMP_AND_SWAP=FALSE";
  DAT_SRQ_HANDLE srq;
  Pair pair;
  Region target, result;
  ASSERT_NO_FATAL_FAILURE(Setup(pair, srq, target, result, 64, DAT_MEM_PRIV_LOCAL_WRITE_FLAG));
  const std::uint64_t start = 0x12345;
  std::memcpy(target.bytes.data() + 8, &start, 8);
  DAT_RMR_TRIPLET remote = target.Remote(8, 8);
  DAT_LMR_TRIPLET first = result.Triplet(0, 8), second = result.Triplet(8, 8);
  ASSERT_EQ(dat_ib_post_cmp_and_swap(pair.sender, 0x99, 0x1, &first, Cookie(1), &remote, DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  ASSERT_EQ(dat_ib_post_cmp_and_swap(pair.sender, start, 0x98765, &second, Cookie(2), &remote,
                                     DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  for (int i = 0; i < 2; ++i) {
    DAT_EVENT event{};
    ASSERT_NO_FATAL_FAILURE(WaitIbDto(pair.sender_request_evd, event));
    EXPECT_EQ(event.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(Extension(event).type, DAT_IB_CMP_AND_SWAP);
  }
  EXPECT_EQ(Word(result, 0), start) << "no match: the original, unchanged";
  EXPECT_EQ(Word(result, 8), start) << "a match: the original, then swapped";
  EXPECT_EQ(Word(target, 8), 0x98765u);
}

// An atomic the target's memory does not allow (a misaligned one is refused at its post), and an
// RDMA Write with immediate data under a key the peer never gave: the initiator sees a remote error
// (for the Write, where the transport acknowledges Writes), the connection ends, and the target's
// memory and the receiver's buffers are untouched.
TEST_F(IbExtensions, ProtectionFailuresAreRemoteErrorsThatTouchNothing) {
  if (!ProviderSays("DAT_IB_FETCH_AND_ADD")) GTEST_SKIP() << "the IA reports DAT_IB_FETCH_AND_ADD=FALSE";
  Region plain, aligned;
  ASSERT_EQ(Register(plain, 64, static_cast<DAT_MEM_PRIV_FLAGS>(DAT_MEM_PRIV_LOCAL_WRITE_FLAG |
                                                                DAT_MEM_PRIV_REMOTE_WRITE_FLAG)),
            DAT_SUCCESS);
  ASSERT_EQ(Register(aligned, 64, kTargetPrivileges), DAT_SUCCESS);
  struct Case {
    const char* what;
    DAT_RMR_TRIPLET remote;
    std::vector<DAT_DTO_COMPLETION_STATUS> allowed;
  };
  const Case cases[] = {
      {"no REMOTE_ATOMIC privilege", plain.Remote(8, 8), {DAT_DTO_ERR_REMOTE_ACCESS}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    DAT_SRQ_HANDLE srq;
    ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
    Pair pair;
    ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
    Region result;
    ASSERT_EQ(Register(result, 8, DAT_MEM_PRIV_LOCAL_WRITE_FLAG, pair.sender_pz, pair.sender_ia), DAT_SUCCESS);
    std::fill(result.bytes.begin(), result.bytes.end(), '\x5A');
    DAT_LMR_TRIPLET local = result.Triplet(0, 8);
    DAT_RMR_TRIPLET remote = c.remote;
    ASSERT_EQ(dat_ib_post_fetch_and_add(pair.sender, 1, &local, Cookie(9), &remote, DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
    DAT_EVENT event{};
    ASSERT_EQ(Wait(pair.sender_request_evd, event), DAT_SUCCESS);
    const DAT_DTO_COMPLETION_STATUS status = event.event_data.dto_completion_event_data.status;
    EXPECT_NE(std::find(c.allowed.begin(), c.allowed.end(), status), c.allowed.end()) << "status " << status;
    EXPECT_EQ(std::count(result.bytes.begin(), result.bytes.end(), '\x5A'), 8) << "no original value came back";
  }
  {
    // A misaligned target is refused at the post (as a device refuses the work request).
    DAT_SRQ_HANDLE srq;
    Pair pair;
    Region target, result;
    ASSERT_NO_FATAL_FAILURE(Setup(pair, srq, target, result, 64, DAT_MEM_PRIV_LOCAL_WRITE_FLAG));
    DAT_LMR_TRIPLET local = result.Triplet(0, 8);
    DAT_RMR_TRIPLET remote = aligned.Remote(12, 8);
    EXPECT_EQ(DAT_GET_TYPE(dat_ib_post_fetch_and_add(pair.sender, 1, &local, Cookie(10), &remote,
                                                     DAT_COMPLETION_DEFAULT_FLAG)),
              DAT_INVALID_PARAMETER);
    DAT_EVENT event{};
    EXPECT_EQ(DAT_GET_TYPE(Wait(pair.sender_request_evd, event, kQuietUs)), DAT_TIMEOUT_EXPIRED);
  }
  EXPECT_EQ(std::count(plain.bytes.begin(), plain.bytes.end(), '\0'), 64);
  EXPECT_EQ(std::count(aligned.bytes.begin(), aligned.bytes.end(), '\0'), 64);

  if (!ProviderSays("DAT_IB_IMMED_DATA")) return;
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
  SlotBuffers slots;
  ASSERT_NO_FATAL_FAILURE(PostSlots(srq, slots, 2));
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  Region source;
  ASSERT_EQ(Register(source, 16, DAT_MEM_PRIV_LOCAL_READ_FLAG, pair.sender_pz, pair.sender_ia), DAT_SUCCESS);
  DAT_LMR_TRIPLET local = source.Triplet(0, 16);
  DAT_RMR_TRIPLET remote = aligned.Remote(0, 16);
  remote.rmr_context ^= 0x5500;  // a key nobody gave
  ASSERT_EQ(dat_ib_post_rdma_write_immed(pair.sender, 1, &local, Cookie(3), &remote, 1, DAT_COMPLETION_DEFAULT_FLAG),
            DAT_SUCCESS);
  DAT_EVENT event{};
  ASSERT_EQ(Wait(pair.sender_request_evd, event), DAT_SUCCESS);
  // An RDMA Write completes at its initiator once sent on iWARP (softdat-tcp, as siw), after the
  // responder's acknowledgement on InfiniBand (rxe): there the refusal is its status; here it is
  // the connection's end.
  const DAT_DTO_COMPLETION_STATUS status = event.event_data.dto_completion_event_data.status;
  EXPECT_TRUE(status == DAT_DTO_ERR_REMOTE_ACCESS || (status == DAT_DTO_SUCCESS && SuiteIsTcp())) << status;
  EXPECT_TRUE(WaitConnectionEvent(pair.sender_connect_evd, DAT_CONNECTION_EVENT_BROKEN)) << "the connection ends";
  // softdat-tcp checks the key before it takes a buffer. An InfiniBand responder (rxe) has taken
  // the receive for the immediate when it finds the key bad, and completes it in error: a buffer
  // may go, never as a success.
  int taken = 0;
  for (int i = 0; i < 3 && Wait(pair.receiver_recv_evd, event, kQuietUs) == DAT_SUCCESS; ++i) {
    EXPECT_NE(event.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS)
        << "event " << event.event_number << ": nothing arrived";
    ++taken;
  }
  if (SuiteIsTcp()) {
    EXPECT_EQ(taken, 0) << "no buffer was taken";
  }
  EXPECT_LE(taken, 1);
  EXPECT_EQ(QuerySrq(srq).available_dto_count, 2 - taken);
}

// What an IA does not offer is refused, with DAT_MODEL_NOT_SUPPORTED, and never half done.
TEST_F(IbExtensions, WhatTheIaDoesNotOfferIsRefused) {
  const bool immediate = ProviderSays("DAT_IB_IMMED_DATA"), atomics = ProviderSays("DAT_IB_FETCH_AND_ADD");
  if (immediate && atomics) GTEST_SKIP() << "the IA offers both";
  DAT_SRQ_HANDLE srq;
  Pair pair;
  Region target, local_region;
  ASSERT_NO_FATAL_FAILURE(Setup(pair, srq, target, local_region, 64, DAT_MEM_PRIV_LOCAL_WRITE_FLAG));
  DAT_LMR_TRIPLET local = local_region.Triplet(0, 8);
  DAT_RMR_TRIPLET remote = target.Remote(0, 8);
  if (!immediate) {
    EXPECT_EQ(DAT_GET_TYPE(dat_ib_post_rdma_write_immed(pair.sender, 1, &local, Cookie(1), &remote, 1,
                                                        DAT_COMPLETION_DEFAULT_FLAG)),
              DAT_MODEL_NOT_SUPPORTED);
  }
  if (!atomics) {
    EXPECT_EQ(DAT_GET_TYPE(dat_ib_post_fetch_and_add(pair.sender, 1, &local, Cookie(2), &remote,
                                                     DAT_COMPLETION_DEFAULT_FLAG)),
              DAT_MODEL_NOT_SUPPORTED);
  }
  DAT_EVENT event{};
  EXPECT_EQ(DAT_GET_TYPE(Wait(pair.sender_request_evd, event, kQuietUs)), DAT_TIMEOUT_EXPIRED);
}

// Two UD endpoints of the test's IA resolve each other through a PSP; datagrams sent while the
// receiver has no buffer are lost (the service allows it), the next one with a buffer arrives
// whole behind its 40-byte GRH, naming its sender.
TEST_F(IbExtensions, UdDatagramsWithoutABufferAreLostAndOneWithABufferArrivesWhole) {
  if (!ProviderSays("DAT_IB_UD")) GTEST_SKIP() << "the IA reports DAT_IB_UD=FALSE";
  DAT_EP_ATTR attr{};
  attr.service_type = static_cast<DAT_SERVICE_TYPE>(DAT_IB_SERVICE_TYPE_UD);
  attr.max_message_size = 256;
  attr.max_recv_dtos = attr.max_request_dtos = 8;
  attr.max_recv_iov = attr.max_request_iov = 1;
  attr.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  const DAT_EVD_HANDLE evds[] = {MakeEvd(DAT_EVD_DTO_FLAG), MakeEvd(DAT_EVD_DTO_FLAG), MakeEvd(DAT_EVD_CONNECTION_FLAG),
                                 MakeEvd(DAT_EVD_DTO_FLAG), MakeEvd(DAT_EVD_DTO_FLAG), MakeEvd(DAT_EVD_CONNECTION_FLAG)};
  const DAT_EVD_HANDLE cr_evd = MakeEvd(DAT_EVD_CR_FLAG);
  DAT_EP_HANDLE a = DAT_HANDLE_NULL, b = DAT_HANDLE_NULL;
  ASSERT_EQ(dat_ep_create(ia_, pz_, evds[0], evds[1], evds[2], &attr, &a), DAT_SUCCESS);
  ASSERT_EQ(dat_ep_create(ia_, pz_, evds[3], evds[4], evds[5], &attr, &b), DAT_SUCCESS);
  DAT_PSP_HANDLE psp = DAT_HANDLE_NULL;
  DAT_CONN_QUAL qual = 0;
  ASSERT_EQ(dat_psp_create_any(ia_, &qual, cr_evd, DAT_PSP_CONSUMER_FLAG, &psp), DAT_SUCCESS);
  int hello = 42;
  ASSERT_EQ(dat_ep_connect(a, ia_attr_.ia_address_ptr, qual, kEventTimeoutUs, sizeof hello, &hello, DAT_QOS_BEST_EFFORT,
                           DAT_CONNECT_DEFAULT_FLAG),
            DAT_SUCCESS);
  DAT_EVENT event{};
  ASSERT_EQ(Wait(cr_evd, event), DAT_SUCCESS);
  ASSERT_EQ(static_cast<int>(event.event_number), DAT_IB_UD_CONNECTION_REQUEST_EVENT);
  ASSERT_EQ(dat_cr_accept(event.event_data.cr_arrival_event_data.cr_handle, b, 0, nullptr), DAT_SUCCESS);
  ASSERT_EQ(Wait(evds[5], event), DAT_SUCCESS);
  ASSERT_EQ(static_cast<int>(event.event_number), DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED);
  EXPECT_EQ(Extension(event).type, DAT_IB_UD_PASSIVE_REMOTE_AH);
  const DAT_UINT32 a_qpn = Extension(event).remote_ah.qpn;
  ASSERT_EQ(Wait(evds[2], event), DAT_SUCCESS);
  ASSERT_EQ(static_cast<int>(event.event_number), DAT_IB_UD_CONNECTION_EVENT_ESTABLISHED);
  ASSERT_EQ(Extension(event).type, DAT_IB_UD_REMOTE_AH);
  DAT_IB_ADDR_HANDLE to_b = Extension(event).remote_ah;

  Region source, sink;
  ASSERT_EQ(Register(source, 64, DAT_MEM_PRIV_LOCAL_READ_FLAG), DAT_SUCCESS);
  ASSERT_EQ(Register(sink, 40 + 64, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  std::iota(source.bytes.begin(), source.bytes.end(), 1);
  auto send = [&](DAT_UINT64 cookie) {
    DAT_LMR_TRIPLET iov = source.Triplet(0, 64);
    ASSERT_EQ(dat_ib_post_send_ud(a, 1, &iov, &to_b, Cookie(cookie), DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
    DAT_EVENT done{};
    ASSERT_EQ(Wait(evds[1], done), DAT_SUCCESS);
    EXPECT_EQ(done.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
  };
  for (int i = 0; i < 3; ++i) ASSERT_NO_FATAL_FAILURE(send(i));
  EXPECT_EQ(DAT_GET_TYPE(Wait(evds[3], event, kQuietUs)), DAT_TIMEOUT_EXPIRED) << "no buffer: lost";
  DAT_LMR_TRIPLET recv = sink.Triplet(0, sink.bytes.size());
  ASSERT_EQ(dat_ep_post_recv(b, 1, &recv, Cookie(7), DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(send(3));
  ASSERT_NO_FATAL_FAILURE(WaitIbDto(evds[3], event));
  const DAT_DTO_COMPLETION_EVENT_DATA& dto = event.event_data.dto_completion_event_data;
  EXPECT_EQ(dto.status, DAT_DTO_SUCCESS);
  EXPECT_EQ(dto.user_cookie.as_64, 7u);
  EXPECT_EQ(dto.transfered_length, 40u + 64u) << "the GRH, then the datagram";
  EXPECT_EQ(Extension(event).type, DAT_IB_UD_RECV);
  EXPECT_EQ(Extension(event).remote_ah.qpn, a_qpn) << "the sender, as the resolution named it";
  EXPECT_EQ(std::memcmp(sink.bytes.data() + 40, source.bytes.data(), 64), 0);
  EXPECT_EQ(DAT_GET_TYPE(Wait(evds[3], event, kQuietUs)), DAT_TIMEOUT_EXPIRED) << "the lost ones stay lost";
  if (SuiteIsTcp()) {
    DAT_UINT64 dropped = 0;
    ASSERT_EQ(dat_ib_query_counters(ia_, DCNT_IA_DIAG_ERR_RQ_UDSDPRD, &dropped, DAT_FALSE), DAT_SUCCESS);
    EXPECT_EQ(dropped, 3u) << "softdat-tcp counts the datagrams it dropped";
  }
  EXPECT_EQ(dat_ib_ud_ah_free(a, &to_b), DAT_SUCCESS);
  EXPECT_EQ(dat_psp_free(psp), DAT_SUCCESS);
  EXPECT_EQ(dat_ep_free(a), DAT_SUCCESS);
  EXPECT_EQ(dat_ep_free(b), DAT_SUCCESS);
}

// The EP counters against a ledger of the operations done, on both ends; reset clears them.
TEST_F(IbExtensions, EpCountersMatchALedgerAndReset) {
  if (!ProviderSays("DAT_COUNTERS")) GTEST_SKIP() << "the IA reports DAT_COUNTERS=FALSE";
  const bool immediate = ProviderSays("DAT_IB_IMMED_DATA"), atomics = ProviderSays("DAT_IB_FETCH_AND_ADD");
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(16, 1, &srq), DAT_SUCCESS);
  SlotBuffers slots;
  ASSERT_NO_FATAL_FAILURE(PostSlots(srq, slots, 8));
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  std::vector<DAT_UINT64> before(DCNT_EP_ALL_COUNTERS);
  ASSERT_EQ(dat_ib_query_counters(pair.sender, DCNT_EP_ALL_COUNTERS, before.data(), DAT_TRUE), DAT_SUCCESS);
  ASSERT_EQ(dat_ib_query_counters(pair.receiver, DCNT_EP_ALL_COUNTERS, before.data(), DAT_TRUE), DAT_SUCCESS);
  Region target, source, result;
  ASSERT_EQ(Register(target, 4096, kTargetPrivileges), DAT_SUCCESS);
  ASSERT_EQ(Register(source, 4096, DAT_MEM_PRIV_LOCAL_WRITE_FLAG, pair.sender_pz, pair.sender_ia), DAT_SUCCESS);
  int completions = 0;
  for (int i = 0; i < 3; ++i, ++completions) ASSERT_NO_FATAL_FAILURE(Send(pair, 40, static_cast<char>('a' + i)));
  for (int i = 0; i < 2; ++i, ++completions) {
    DAT_LMR_TRIPLET local = source.Triplet(0, 1000);
    DAT_RMR_TRIPLET remote = target.Remote(0, 1000);
    ASSERT_EQ(dat_ep_post_rdma_write(pair.sender, 1, &local, Cookie(i), &remote, DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
  }
  {
    DAT_LMR_TRIPLET local = source.Triplet(1024, 500);
    DAT_RMR_TRIPLET remote = target.Remote(0, 500);
    ASSERT_EQ(dat_ep_post_rdma_read(pair.sender, 1, &local, Cookie(5), &remote, DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
    ++completions;
  }
  if (immediate) {
    DAT_LMR_TRIPLET local = source.Triplet(0, 64);
    DAT_RMR_TRIPLET remote = target.Remote(2048, 64);
    ASSERT_EQ(dat_ib_post_rdma_write_immed(pair.sender, 1, &local, Cookie(6), &remote, 5, DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
    ++completions;
  }
  if (atomics) {
    DAT_LMR_TRIPLET local = source.Triplet(2048, 8);
    DAT_RMR_TRIPLET remote = target.Remote(3072, 8);
    ASSERT_EQ(dat_ib_post_fetch_and_add(pair.sender, 1, &local, Cookie(7), &remote, DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
    ASSERT_EQ(dat_ib_post_cmp_and_swap(pair.sender, 1, 2, &local, Cookie(8), &remote, DAT_COMPLETION_DEFAULT_FLAG),
              DAT_SUCCESS);
    completions += 2;
  }
  for (int i = 0; i < completions; ++i) {
    DAT_EVENT event{};
    ASSERT_EQ(Wait(pair.sender_request_evd, event), DAT_SUCCESS);
    ASSERT_EQ(event.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
  }
  const int receives = 3 + (immediate ? 1 : 0);
  for (int i = 0; i < receives; ++i) {
    DAT_EVENT event{};
    ASSERT_EQ(Wait(pair.receiver_recv_evd, event), DAT_SUCCESS);
  }
  std::vector<DAT_UINT64> sent(DCNT_EP_ALL_COUNTERS), received(DCNT_EP_ALL_COUNTERS);
  ASSERT_EQ(dat_ib_query_counters(pair.sender, DCNT_EP_ALL_COUNTERS, sent.data(), DAT_TRUE), DAT_SUCCESS);
  ASSERT_EQ(dat_ib_query_counters(pair.receiver, DCNT_EP_ALL_COUNTERS, received.data(), DAT_FALSE), DAT_SUCCESS);
  EXPECT_EQ(sent[DCNT_EP_POST_SEND], 3u);
  EXPECT_EQ(sent[DCNT_EP_POST_SEND_DATA], 120u);
  EXPECT_EQ(sent[DCNT_EP_POST_WRITE], 2u);
  EXPECT_EQ(sent[DCNT_EP_POST_WRITE_DATA], 2000u);
  EXPECT_EQ(sent[DCNT_EP_POST_READ], 1u);
  EXPECT_EQ(sent[DCNT_EP_POST_READ_DATA], 500u);
  EXPECT_EQ(sent[DCNT_EP_POST_WRITE_IMM], immediate ? 1u : 0u);
  EXPECT_EQ(sent[DCNT_EP_POST_WRITE_IMM_DATA], immediate ? 64u : 0u);
  EXPECT_EQ(sent[DCNT_EP_POST_FETCH_ADD], atomics ? 1u : 0u);
  EXPECT_EQ(sent[DCNT_EP_POST_CMP_SWAP], atomics ? 1u : 0u);
  EXPECT_EQ(sent[DCNT_EP_RECV], 0u);
  EXPECT_EQ(received[DCNT_EP_RECV], 3u);
  EXPECT_EQ(received[DCNT_EP_RECV_DATA], 120u);
  EXPECT_EQ(received[DCNT_EP_RECV_RDMA_IMM], immediate ? 1u : 0u);
  EXPECT_EQ(received[DCNT_EP_RECV_RDMA_IMM_DATA], immediate ? 64u : 0u);
  EXPECT_EQ(received[DCNT_EP_POST_SEND], 0u);
  std::vector<DAT_UINT64> after(DCNT_EP_ALL_COUNTERS, 1);
  ASSERT_EQ(dat_ib_query_counters(pair.sender, DCNT_EP_ALL_COUNTERS, after.data(), DAT_FALSE), DAT_SUCCESS);
  EXPECT_EQ(after, std::vector<DAT_UINT64>(DCNT_EP_ALL_COUNTERS, 0)) << "the query with reset cleared them";
}

}  // namespace
}  // namespace softdat::conformance
