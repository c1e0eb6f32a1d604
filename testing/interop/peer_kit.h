// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The DAT plumbing of interop_peer: one IA opened through the stock registry (whatever provider
// the dat.conf maps the name to: softdat-tcp, softdat-verbs, OFED DAPL), registered regions,
// endpoints, bounded waits and the small control messages the two processes exchange. Nothing
// here is specific to a provider: it is the DAT 2.0 API as any consumer calls it.
#pragma once

#include <dat2/udat.h>

#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <string>
#include <vector>

namespace softdat::testing::interop {

// Every wait is bounded: a TCG guest is slow, a hung peer must not hang the suite.
inline constexpr DAT_TIMEOUT kWaitUs = 30'000'000;

// Prints "interop_peer <role>: " + the message to stderr.
void Say(const char* format, ...) __attribute__((format(printf, 1, 2)));
// Prints a failure and returns false: `return Fail("...")` in a case.
bool Fail(const char* format, ...) __attribute__((format(printf, 1, 2)));
void SetRole(const char* role);

std::string DatText(DAT_RETURN status);
const char* EventName(DAT_EVENT_NUMBER number);

// A registered buffer (page aligned; siw and rxe pin it).
struct Region {
  std::uint8_t* bytes = nullptr;
  std::size_t length = 0;
  DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT lmr_context = 0;
  DAT_RMR_CONTEXT rmr_context = 0;
  DAT_LMR_TRIPLET Iov(std::size_t offset, std::size_t length) const;
};

// What one side tells the other in a Send: a region to read or write, or "done".
struct Control {
  static constexpr std::uint32_t kMagic = 0x1d0a7e57;
  enum Kind : std::uint32_t { kRegion = 1, kDone = 2, kStop = 3, kHello = 4 };
  std::uint32_t magic = kMagic;
  std::uint32_t kind = kDone;
  std::uint64_t address = 0;
  std::uint32_t rmr_context = 0;
  std::uint32_t length = 0;
  std::uint32_t seed = 0;
  std::uint32_t pad = 0;
};

class Peer {
 public:
  // Opens `ia_name` with an async EVD, a PZ, a DTO EVD and a connection EVD (and a CR EVD).
  bool Open(const std::string& ia_name);
  void Close();

  bool Register(std::size_t length, Region& out);
  void Deregister(Region& region);

  // An RC endpoint (on `srq` when given) with room for `recvs` receives and `requests` requests
  // of at most `max_message` bytes, and `reads` RDMA Reads each way.
  bool CreateEp(DAT_EP_HANDLE& ep, DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL, DAT_COUNT recvs = 16,
                DAT_COUNT requests = 16, DAT_SEG_LENGTH max_message = 1 << 20, DAT_COUNT reads = 4);
  void FreeEp(DAT_EP_HANDLE& ep);

  // Waits for one event on `evd`; false (with a message) on timeout or error.
  bool Wait(DAT_EVD_HANDLE evd, DAT_EVENT& event, DAT_TIMEOUT timeout_us = kWaitUs);
  // Cookies: the case's generation in the high half, a tag in the low half; receives use tags
  // below kFirstRequestTag, requests from it on. A new case (NewCase) ignores completions of the
  // old ones (flushed receives of a connection that ended, say).
  static constexpr std::uint32_t kFirstRequestTag = 0x1000;
  void NewCase() {
    ++generation_;
    stash_.clear();
  }
  std::uint32_t generation() const { return generation_; }
  std::uint64_t Cookie(std::uint32_t tag) const { return std::uint64_t{generation_} << 32 | tag; }
  static std::uint32_t Tag(std::uint64_t cookie) { return static_cast<std::uint32_t>(cookie); }
  static bool IsReceive(const DAT_DTO_COMPLETION_EVENT_DATA& d) { return Tag(d.user_cookie.as_64) < kFirstRequestTag; }

  // Waits for a connection event of one of the given numbers; false (with what came) otherwise.
  bool WaitConnection(DAT_EVENT& event, std::initializer_list<DAT_EVENT_NUMBER> expected,
                      DAT_TIMEOUT timeout_us = kWaitUs);
  // The next DTO completion of this case that `match` takes (others of this case are kept for
  // later calls, older cases' dropped); false on timeout.
  bool WaitDtoFor(const std::function<bool(const DAT_DTO_COMPLETION_EVENT_DATA&)>& match,
                  DAT_DTO_COMPLETION_EVENT_DATA& out, DAT_TIMEOUT timeout_us = kWaitUs);
  bool WaitDto(DAT_DTO_COMPLETION_EVENT_DATA& out, DAT_TIMEOUT timeout_us = kWaitUs) {
    return WaitDtoFor([](const DAT_DTO_COMPLETION_EVENT_DATA&) { return true; }, out, timeout_us);
  }
  // The completion of the request posted with `tag`.
  bool WaitRequestDone(std::uint32_t tag, DAT_DTO_COMPLETION_EVENT_DATA& out, DAT_TIMEOUT timeout_us = kWaitUs) {
    return WaitDtoFor([&](const DAT_DTO_COMPLETION_EVENT_DATA& d) { return Tag(d.user_cookie.as_64) == tag; }, out,
                      timeout_us);
  }

  bool PostRecv(DAT_EP_HANDLE ep, const Region& region, std::size_t offset, std::size_t length, std::uint32_t tag);
  // Waits (bounded) until every receive posted with PostRecv has completed, flushed or not. Done
  // before an endpoint is freed: OFED DAPL shares one CQ among its EVD's endpoints, and a flushed
  // completion it reaps after dat_ep_free reads the freed endpoint's cookie memory, which a new
  // endpoint may have taken: the new endpoint then sees a stranger's completion under its own
  // cookie (seen on siw: a Send reported FLUSHED that went out fine).
  void Quiesce(DAT_TIMEOUT timeout_us = 5'000'000);
  bool PostSend(DAT_EP_HANDLE ep, const Region& region, std::size_t offset, std::size_t length, std::uint32_t tag);
  // Sends a Control from `scratch` (at `offset`) and waits for its completion.
  bool SendControl(DAT_EP_HANDLE ep, const Control& control, Region& scratch, std::size_t offset);
  // Waits for a receive completion and reads it as a Control from `region` at the receive's tag
  // times `slot_size`.
  bool ReceiveControl(Control& out, const Region& region, std::size_t slot_size, std::uint32_t* tag = nullptr);

  // Server: listen on `port`; wait for a request.
  bool Listen(DAT_CONN_QUAL port);
  void StopListening();
  bool WaitRequest(DAT_CR_HANDLE& cr, std::vector<std::uint8_t>& private_data);
  // Client: connect `ep` to host:port with private data; the outcome is left to WaitConnection.
  bool Connect(DAT_EP_HANDLE ep, const std::string& host, DAT_CONN_QUAL port, const std::vector<std::uint8_t>& data);
  // Disconnects (graceful or abrupt) and waits for DISCONNECTED.
  bool Disconnect(DAT_EP_HANDLE ep, bool graceful);

  DAT_IA_HANDLE ia() const { return ia_; }
  DAT_PZ_HANDLE pz() const { return pz_; }
  DAT_EVD_HANDLE async_evd() const { return async_evd_; }
  DAT_EVD_HANDLE dto_evd() const { return dto_evd_; }
  DAT_EVD_HANDLE conn_evd() const { return conn_evd_; }
  // The most private data the IA allows (dat_ia_query).
  DAT_COUNT max_private_data() const { return max_private_data_; }

 private:
  DAT_IA_HANDLE ia_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd_ = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE pz_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE dto_evd_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE conn_evd_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE cr_evd_ = DAT_HANDLE_NULL;
  DAT_PSP_HANDLE psp_ = DAT_HANDLE_NULL;
  DAT_COUNT max_private_data_ = 0;
  std::uint32_t generation_ = 1;
  std::deque<DAT_DTO_COMPLETION_EVENT_DATA> stash_;  // completions of this case not yet taken
  std::vector<std::uint64_t> posted_receives_;      // cookies of receives not yet completed
  void Completed(const DAT_DTO_COMPLETION_EVENT_DATA& d);
};

// Fills `bytes` with a pattern that differs by `seed` and position.
void Fill(std::uint8_t* bytes, std::size_t length, std::uint32_t seed);
// The first offset where `bytes` differs from Fill's pattern, or `length` when it does not.
std::size_t FirstMismatch(const std::uint8_t* bytes, std::size_t length, std::uint32_t seed);

}  // namespace softdat::testing::interop
