// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// dat_srq_post_recv(3DAT): the refusals (and that a refused post changes nothing), zero-size
// receives, cookies, the scatter rule, and what the receive completion of an SRQ buffer says:
// which EP took it, per-connection order, and the completion flags of the EP that took it.
#include <cstring>
#include <map>

#include "testing/conformance/fixture.h"

namespace softdat::conformance {
namespace {

using SrqPostRecv = ConformanceTest;

TEST_F(SrqPostRecv, LmrOfAnotherPzIsProtectionViolation) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 2, &srq), DAT_SUCCESS);
  DAT_PZ_HANDLE other_pz;
  ASSERT_EQ(dat_pz_create(ia_, &other_pz), DAT_SUCCESS);
  Region region;
  ASSERT_EQ(Register(region, 64, DAT_MEM_PRIV_LOCAL_WRITE_FLAG, other_pz), DAT_SUCCESS);
  DAT_LMR_TRIPLET iov = region.Triplet(0, 64);
  const DAT_RETURN result = dat_srq_post_recv(srq, 1, &iov, Cookie(1));
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_PROTECTION_VIOLATION) << DatReturnName(result);
  EXPECT_EQ(QuerySrq(srq).available_dto_count, 0);
}

TEST_F(SrqPostRecv, LmrWithoutLocalWriteIsPrivilegesViolation) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 2, &srq), DAT_SUCCESS);
  Region region;
  ASSERT_EQ(Register(region, 64, DAT_MEM_PRIV_LOCAL_READ_FLAG), DAT_SUCCESS);
  DAT_LMR_TRIPLET iov = region.Triplet(0, 64);
  const DAT_RETURN result = dat_srq_post_recv(srq, 1, &iov, Cookie(1));
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_PRIVILEGES_VIOLATION) << DatReturnName(result);
  EXPECT_EQ(QuerySrq(srq).available_dto_count, 0);
}

TEST_F(SrqPostRecv, SegmentOutsideLmrOrTooManySegmentsIsInvalidParameter) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 2, &srq), DAT_SUCCESS);
  const DAT_COUNT max_iov = QuerySrq(srq).max_recv_iov;
  Region region;
  ASSERT_EQ(Register(region, 64 * (max_iov + 1), DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  DAT_LMR_TRIPLET beyond = region.Triplet(64 * max_iov, 65);  // one byte past the LMR's end
  DAT_RETURN result = dat_srq_post_recv(srq, 1, &beyond, Cookie(1));
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_PARAMETER) << DatReturnName(result);
  DAT_LMR_TRIPLET before = region.Triplet(0, 16);
  before.virtual_address -= 1;  // one byte before its start
  result = dat_srq_post_recv(srq, 1, &before, Cookie(1));
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_PARAMETER) << DatReturnName(result);
  std::vector<DAT_LMR_TRIPLET> iov;
  for (DAT_COUNT i = 0; i <= max_iov; ++i) iov.push_back(region.Triplet(64 * i, 64));
  result = dat_srq_post_recv(srq, max_iov + 1, iov.data(), Cookie(1));
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_PARAMETER) << DatReturnName(result);
  result = dat_srq_post_recv(srq, -1, iov.data(), Cookie(1));
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INVALID_PARAMETER) << DatReturnName(result);
  EXPECT_EQ(QuerySrq(srq).available_dto_count, 0);
}

TEST_F(SrqPostRecv, QueueFullIsInsufficientResources) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(3, 1, &srq), DAT_SUCCESS);
  const DAT_COUNT size = QuerySrq(srq).max_recv_dtos;
  Region region;
  ASSERT_EQ(Register(region, 64, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  DAT_LMR_TRIPLET iov = region.Triplet(0, 64);
  for (DAT_COUNT i = 0; i < size; ++i) ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, Cookie(i)), DAT_SUCCESS);
  const DAT_RETURN result = dat_srq_post_recv(srq, 1, &iov, Cookie(99));
  EXPECT_EQ(DAT_GET_TYPE(result), DAT_INSUFFICIENT_RESOURCES) << DatReturnName(result);
  EXPECT_EQ(QuerySrq(srq).available_dto_count, size);
}

TEST_F(SrqPostRecv, RefusedPostChangesNothing) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
  Region good;
  ASSERT_EQ(Register(good, 64, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  Region read_only;
  ASSERT_EQ(Register(read_only, 64, DAT_MEM_PRIV_LOCAL_READ_FLAG), DAT_SUCCESS);
  DAT_LMR_TRIPLET iov = good.Triplet(0, 64);
  ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, Cookie(7)), DAT_SUCCESS);
  const DAT_SRQ_PARAM before = QuerySrq(srq);
  DAT_LMR_TRIPLET bad = read_only.Triplet(0, 64);
  EXPECT_NE(dat_srq_post_recv(srq, 1, &bad, Cookie(8)), DAT_SUCCESS);
  DAT_LMR_TRIPLET outside = good.Triplet(0, 65);
  EXPECT_NE(dat_srq_post_recv(srq, 1, &outside, Cookie(9)), DAT_SUCCESS);
  const DAT_SRQ_PARAM after = QuerySrq(srq);
  EXPECT_EQ(after.available_dto_count, before.available_dto_count);
  EXPECT_EQ(after.outstanding_dto_count, before.outstanding_dto_count);
  EXPECT_EQ(after.max_recv_dtos, before.max_recv_dtos);
  // The only buffer an arriving message can take is the one accepted post.
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  ASSERT_NO_FATAL_FAILURE(Send(pair, 8, 'a'));
  DAT_DTO_COMPLETION_EVENT_DATA dto{};
  ASSERT_NO_FATAL_FAILURE(WaitDto(pair.receiver_recv_evd, dto));
  EXPECT_EQ(dto.status, DAT_DTO_SUCCESS);
  EXPECT_EQ(dto.user_cookie.as_64, 7u);
  EXPECT_EQ(QuerySrq(srq).available_dto_count, 0);
}

TEST_F(SrqPostRecv, ZeroSegmentsWithNullIovReceivesZeroSizeMessage) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
  ASSERT_EQ(dat_srq_post_recv(srq, 0, nullptr, Cookie(42)), DAT_SUCCESS);
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  ASSERT_NO_FATAL_FAILURE(Send(pair, 0, 'z'));
  DAT_DTO_COMPLETION_EVENT_DATA dto{};
  ASSERT_NO_FATAL_FAILURE(WaitDto(pair.receiver_recv_evd, dto));
  EXPECT_EQ(dto.status, DAT_DTO_SUCCESS);
  EXPECT_EQ(dto.transfered_length, 0u);
  EXPECT_EQ(dto.user_cookie.as_64, 42u);
  EXPECT_EQ(dto.operation, DAT_DTO_RECEIVE);
}

TEST_F(SrqPostRecv, ValidInEverySrqState) {
  // Through the API an SRQ is only ever OPERATIONAL (softdat never moves it to ERROR or
  // SHUTDOWN); posting must work with no EP, with a connected EP, and after that EP disconnected.
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(8, 1, &srq), DAT_SUCCESS);
  Region region;
  ASSERT_EQ(Register(region, 64, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  DAT_LMR_TRIPLET iov = region.Triplet(0, 64);
  EXPECT_EQ(QuerySrq(srq).srq_state, DAT_SRQ_STATE_OPERATIONAL);
  EXPECT_EQ(dat_srq_post_recv(srq, 1, &iov, Cookie(1)), DAT_SUCCESS);
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  EXPECT_EQ(dat_srq_post_recv(srq, 1, &iov, Cookie(2)), DAT_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(Disconnect(pair));
  EXPECT_EQ(dat_srq_post_recv(srq, 1, &iov, Cookie(3)), DAT_SUCCESS);
  EXPECT_EQ(QuerySrq(srq).available_dto_count, 3);
}

TEST_F(SrqPostRecv, CookieComesBackInTheCompletion) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(8, 1, &srq), DAT_SUCCESS);
  SlotBuffers slots;
  slots.slot_size = 64;
  ASSERT_EQ(Register(slots.region, 64 * 4, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  const std::uint64_t cookies[4] = {0xdeadbeef00000001ull, 0, 0xffffffffffffffffull, 12345};
  for (int i = 0; i < 4; ++i) {
    DAT_LMR_TRIPLET iov = slots.Slot(i);
    ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, Cookie(cookies[i])), DAT_SUCCESS);
  }
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  for (int i = 0; i < 4; ++i) ASSERT_NO_FATAL_FAILURE(Send(pair, 16, static_cast<char>('a' + i)));
  std::map<std::uint64_t, int> seen;
  for (int i = 0; i < 4; ++i) {
    DAT_DTO_COMPLETION_EVENT_DATA dto{};
    ASSERT_NO_FATAL_FAILURE(WaitDto(pair.receiver_recv_evd, dto));
    ASSERT_EQ(dto.status, DAT_DTO_SUCCESS);
    ++seen[dto.user_cookie.as_64];
    // The cookie names the buffer that holds this message.
    int slot = -1;
    for (int j = 0; j < 4; ++j)
      if (cookies[j] == dto.user_cookie.as_64) slot = j;
    ASSERT_GE(slot, 0) << "unknown cookie " << dto.user_cookie.as_64;
    EXPECT_EQ(slots.region.bytes[slot * 64], static_cast<char>('a' + i)) << "completion " << i;
  }
  for (std::uint64_t cookie : cookies) EXPECT_EQ(seen[cookie], 1) << cookie;
}

TEST_F(SrqPostRecv, OnlyConnectedEpsTakeBuffers) {
  // USAGE: only an EP in Connected or Disconnect Pending state dequeues buffers from the SRQ.
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
  Region region;
  ASSERT_EQ(Register(region, 64 * 2, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  for (int i = 0; i < 2; ++i) {
    DAT_LMR_TRIPLET iov = region.Triplet(64 * i, 64);
    ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, Cookie(i)), DAT_SUCCESS);
  }
  const DAT_EVD_HANDLE idle_evd = MakeEvd(DAT_EVD_DTO_FLAG);
  DAT_EP_HANDLE idle;
  ASSERT_EQ(dat_ep_create_with_srq(ia_, pz_, idle_evd, DAT_HANDLE_NULL, DAT_HANDLE_NULL, srq, nullptr, &idle),
            DAT_SUCCESS);
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  for (int i = 0; i < 2; ++i) {
    ASSERT_NO_FATAL_FAILURE(Send(pair, 8, 'c'));
    DAT_DTO_COMPLETION_EVENT_DATA dto{};
    ASSERT_NO_FATAL_FAILURE(WaitDto(pair.receiver_recv_evd, dto));
    EXPECT_EQ(dto.ep_handle, pair.receiver);
  }
  DAT_COUNT n = -1, span = -1;
  ASSERT_EQ(dat_ep_recv_query(idle, &n, &span), DAT_SUCCESS);
  EXPECT_EQ(n, 0);
  DAT_EVENT event{};
  EXPECT_EQ(DAT_GET_TYPE(dat_evd_dequeue(idle_evd, &event)), DAT_QUEUE_EMPTY);
}

TEST_F(SrqPostRecv, MessageLargerThanTheBufferCompletesWithLocalLengthError) {
  // "The completion of the Receive posted to the SRQ is equivalent to what happened to the
  // Receive posted to the Endpoint": a message that does not fit is a local length error.
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 1, &srq), DAT_SUCCESS);
  Region region;
  ASSERT_EQ(Register(region, 16, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  DAT_LMR_TRIPLET iov = region.Triplet(0, 16);
  ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, Cookie(5)), DAT_SUCCESS);
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  ASSERT_NO_FATAL_FAILURE(Send(pair, 17, 'o'));
  DAT_DTO_COMPLETION_EVENT_DATA dto{};
  ASSERT_NO_FATAL_FAILURE(WaitDto(pair.receiver_recv_evd, dto));
  EXPECT_EQ(dto.status, DAT_DTO_ERR_LOCAL_LENGTH);
  EXPECT_EQ(dto.user_cookie.as_64, 5u);
  EXPECT_EQ(dto.ep_handle, pair.receiver);
}

using Scatter = ConformanceTest;

TEST_F(Scatter, SegmentsFilledInIovOrderFrontFullAtMostOnePartialRestUntouched) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(4, 4, &srq), DAT_SUCCESS);
  ASSERT_GE(QuerySrq(srq).max_recv_iov, 4);
  Region region;
  ASSERT_EQ(Register(region, 4 * 16, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  std::fill(region.bytes.begin(), region.bytes.end(), '.');
  // Segments out of address order, so "IOV order" and "address order" differ.
  DAT_LMR_TRIPLET iov[4] = {region.Triplet(48, 16), region.Triplet(0, 16), region.Triplet(32, 16),
                            region.Triplet(16, 16)};
  ASSERT_EQ(dat_srq_post_recv(srq, 4, iov, Cookie(1)), DAT_SUCCESS);
  Pair pair;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, pair));
  // 21 bytes with distinct values, so the position of each byte is checked.
  auto region_out = std::make_unique<Region>();
  ASSERT_EQ(Register(*region_out, 21, DAT_MEM_PRIV_LOCAL_READ_FLAG), DAT_SUCCESS);
  for (int i = 0; i < 21; ++i) region_out->bytes[i] = static_cast<char>('A' + i);
  DAT_LMR_TRIPLET out = region_out->Triplet(0, 21);
  ASSERT_EQ(dat_ep_post_send(pair.sender, 1, &out, Cookie(0), DAT_COMPLETION_DEFAULT_FLAG), DAT_SUCCESS);
  DAT_DTO_COMPLETION_EVENT_DATA dto{};
  ASSERT_NO_FATAL_FAILURE(WaitDto(pair.receiver_recv_evd, dto));
  ASSERT_EQ(dto.status, DAT_DTO_SUCCESS);
  EXPECT_EQ(dto.transfered_length, 21u);
  const std::string bytes(region.bytes.begin(), region.bytes.end());
  EXPECT_EQ(bytes.substr(48, 16), "ABCDEFGHIJKLMNOP") << "first segment full";
  EXPECT_EQ(bytes.substr(0, 16), "QRSTU...........") << "second segment partial";
  EXPECT_EQ(bytes.substr(32, 16), "................") << "third untouched";
  EXPECT_EQ(bytes.substr(16, 16), "................") << "fourth untouched";
}

using Completion = ConformanceTest;

TEST_F(Completion, NamesTheEpThatTookTheBufferNotTheSrq) {
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(8, 1, &srq), DAT_SUCCESS);
  SlotBuffers slots;
  slots.slot_size = 64;
  ASSERT_EQ(Register(slots.region, 64 * 4, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  for (int i = 0; i < 4; ++i) {
    DAT_LMR_TRIPLET iov = slots.Slot(i);
    ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, Cookie(i)), DAT_SUCCESS);
  }
  const DAT_EVD_HANDLE shared_evd = MakeEvd(DAT_EVD_DTO_FLAG, 64);
  Pair first, second;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, first, {.recv_evd = shared_evd}));
  ASSERT_NO_FATAL_FAILURE(Connect(srq, second, {.recv_evd = shared_evd}));
  for (Pair* pair : {&first, &second, &second, &first}) {
    ASSERT_NO_FATAL_FAILURE(Send(*pair, 8, pair == &first ? '1' : '2'));
    DAT_DTO_COMPLETION_EVENT_DATA dto{};
    ASSERT_NO_FATAL_FAILURE(WaitDto(shared_evd, dto));
    ASSERT_EQ(dto.status, DAT_DTO_SUCCESS);
    EXPECT_EQ(dto.ep_handle, pair->receiver);
    EXPECT_NE(dto.ep_handle, reinterpret_cast<DAT_EP_HANDLE>(srq));
    EXPECT_EQ(slots.region.bytes[dto.user_cookie.as_64 * 64], pair == &first ? '1' : '2');
  }
}

TEST_F(Completion, PerConnectionFollowsThePeersSendOrder) {
  constexpr int kMessages = 24;
  DAT_SRQ_HANDLE srq;
  ASSERT_EQ(CreateSrq(2 * kMessages, 1, &srq), DAT_SUCCESS);
  SlotBuffers slots;
  slots.slot_size = 32;
  ASSERT_EQ(Register(slots.region, 32 * 2 * kMessages, DAT_MEM_PRIV_LOCAL_WRITE_FLAG), DAT_SUCCESS);
  for (int i = 0; i < 2 * kMessages; ++i) {
    DAT_LMR_TRIPLET iov = slots.Slot(i);
    ASSERT_EQ(dat_srq_post_recv(srq, 1, &iov, Cookie(i)), DAT_SUCCESS);
  }
  const DAT_EVD_HANDLE shared_evd = MakeEvd(DAT_EVD_DTO_FLAG, 256);
  Pair first, second;
  ASSERT_NO_FATAL_FAILURE(Connect(srq, first, {.recv_evd = shared_evd}));
  ASSERT_NO_FATAL_FAILURE(Connect(srq, second, {.recv_evd = shared_evd}));
  // Interleaved sends on both connections; each message's first byte is its rank on its connection.
  for (int i = 0; i < kMessages; ++i) {
    ASSERT_NO_FATAL_FAILURE(Send(first, 20, static_cast<char>(i)));
    ASSERT_NO_FATAL_FAILURE(Send(second, 20, static_cast<char>(100 + i)));
  }
  std::map<DAT_EP_HANDLE, std::vector<int>> order;
  for (int i = 0; i < 2 * kMessages; ++i) {
    DAT_DTO_COMPLETION_EVENT_DATA dto{};
    ASSERT_NO_FATAL_FAILURE(WaitDto(shared_evd, dto));
    ASSERT_EQ(dto.status, DAT_DTO_SUCCESS);
    order[dto.ep_handle].push_back(slots.region.bytes[dto.user_cookie.as_64 * 32]);
  }
  std::vector<int> expect_first, expect_second;
  for (int i = 0; i < kMessages; ++i) {
    expect_first.push_back(i);
    expect_second.push_back(100 + i);
  }
  EXPECT_EQ(order[first.receiver], expect_first);
  EXPECT_EQ(order[second.receiver], expect_second);
}

// Whether the receive completions of an SRQ EP with the given receive completion flags are
// signalled is seen on a CNO attached to its recv EVD: only a signalled event triggers it.
class CompletionFlags : public ConformanceTest {
 protected:
  void SetUpFlags(DAT_COMPLETION_FLAGS flags) {
    ASSERT_EQ(dat_cno_create(ia_, DAT_OS_WAIT_PROXY_AGENT_NULL, &cno_), DAT_SUCCESS);
    ASSERT_EQ(dat_evd_create(ia_, 64, cno_, DAT_EVD_DTO_FLAG, &recv_evd_), DAT_SUCCESS);
    ASSERT_EQ(CreateSrq(8, 1, &srq_), DAT_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(PostSlots(srq_, slots_, 8, 64));
    ReceiverOptions options;
    options.recv_evd = recv_evd_;
    if (flags != DAT_COMPLETION_DEFAULT_FLAG) {
      options.set_recv_flags = true;
      options.recv_completion_flags = flags;
    }
    ASSERT_NO_FATAL_FAILURE(Connect(srq_, pair_, options));
  }
  // The next receive completion, and whether it triggered the CNO.
  bool NextCompletionWasSignalled(DAT_DTO_COMPLETION_EVENT_DATA& dto) {
    return ConformanceTest::NextCompletionWasSignalled(recv_evd_, cno_, dto);
  }

  DAT_CNO_HANDLE cno_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE recv_evd_ = DAT_HANDLE_NULL;
  DAT_SRQ_HANDLE srq_ = DAT_HANDLE_NULL;
  SlotBuffers slots_;
  Pair pair_;
};

TEST_F(CompletionFlags, SrqEpDefaultIsUnsignalledFlagAndEveryRecvCompletesWithSignal) {
  ASSERT_NO_FATAL_FAILURE(SetUpFlags(DAT_COMPLETION_DEFAULT_FLAG));
  DAT_EP_PARAM param{};
  ASSERT_EQ(dat_ep_query(pair_.receiver, DAT_EP_FIELD_ALL, &param), DAT_SUCCESS);
  EXPECT_EQ(param.ep_attr.recv_completion_flags, DAT_COMPLETION_UNSIGNALLED_FLAG)
      << "the default receive completion flag of an SRQ EP";
  ASSERT_NO_FATAL_FAILURE(Send(pair_, 8, 'a'));
  DAT_DTO_COMPLETION_EVENT_DATA dto{};
  EXPECT_TRUE(NextCompletionWasSignalled(dto));
  EXPECT_EQ(dto.status, DAT_DTO_SUCCESS);
}

TEST_F(CompletionFlags, SolicitedWaitSignalsOnlySolicitedSends) {
  if ((provider_attr_.completion_flags_supported & DAT_COMPLETION_SOLICITED_WAIT_FLAG) == 0)
    GTEST_SKIP() << "provider attribute completion_flags_supported lacks SOLICITED_WAIT";
  ASSERT_NO_FATAL_FAILURE(SetUpFlags(DAT_COMPLETION_SOLICITED_WAIT_FLAG));
  ASSERT_NO_FATAL_FAILURE(Send(pair_, 8, 'u'));
  DAT_DTO_COMPLETION_EVENT_DATA dto{};
  EXPECT_FALSE(NextCompletionWasSignalled(dto)) << "an unsolicited Send must complete without signal";
  EXPECT_EQ(dto.status, DAT_DTO_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(Send(pair_, 8, 's', DAT_COMPLETION_SOLICITED_WAIT_FLAG));
  EXPECT_TRUE(NextCompletionWasSignalled(dto)) << "a solicited Send must complete with signal";
  EXPECT_EQ(dto.status, DAT_DTO_SUCCESS);
}

TEST_F(CompletionFlags, EvdThresholdSignalsAndTheWaitThresholdDecidesTheWakeup) {
  ASSERT_NO_FATAL_FAILURE(SetUpFlags(DAT_COMPLETION_EVD_THRESHOLD_FLAG));
  ASSERT_NO_FATAL_FAILURE(Send(pair_, 8, 'a'));
  DAT_DTO_COMPLETION_EVENT_DATA dto{};
  EXPECT_TRUE(NextCompletionWasSignalled(dto));
  // Two more messages: a waiter with threshold 2 is unblocked only once both are queued.
  ASSERT_NO_FATAL_FAILURE(Send(pair_, 8, 'b'));
  ASSERT_NO_FATAL_FAILURE(Send(pair_, 8, 'c'));
  DAT_EVENT event{};
  DAT_COUNT more = -1;
  ASSERT_EQ(dat_evd_wait(recv_evd_, kEventTimeoutUs, 2, &event, &more), DAT_SUCCESS);
  EXPECT_EQ(more, 1);
  EXPECT_EQ(slots_.region.bytes[event.event_data.dto_completion_event_data.user_cookie.as_64 * 64], 'b');
}

}  // namespace
}  // namespace softdat::conformance
