// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The DAT plumbing of interop_peer (see peer_kit.h).
#include "testing/interop/peer_kit.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdarg>
#include <cstdlib>
#include <algorithm>
#include <chrono>
#include <cstring>

namespace softdat::testing::interop {
namespace {

const char* g_role = "?";
// DAT_IB_DTO_EVENT of <dat2/dat_ib_extensions.h>: the first event of the IB extension range.
constexpr DAT_EVENT_NUMBER kIbExtensionDtoEvent = static_cast<DAT_EVENT_NUMBER>(DAT_IB_EXTENSION_RANGE_BASE);

void VSay(const char* prefix, const char* format, va_list args) {
  std::fprintf(stderr, "interop_peer %s: %s", g_role, prefix);
  std::vfprintf(stderr, format, args);
  std::fputc('\n', stderr);
}

}  // namespace

void SetRole(const char* role) { g_role = role; }

void Say(const char* format, ...) {
  va_list args;
  va_start(args, format);
  VSay("", format, args);
  va_end(args);
}

bool Fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  VSay("FAIL: ", format, args);
  va_end(args);
  return false;
}

std::string DatText(DAT_RETURN status) {
  const char* major = "?";
  const char* minor = "?";
  dat_strerror(status, &major, &minor);
  return std::string(major) + " " + minor;
}

const char* EventName(DAT_EVENT_NUMBER number) {
  switch (number) {
    case DAT_DTO_COMPLETION_EVENT: return "DTO_COMPLETION";
    case DAT_CONNECTION_REQUEST_EVENT: return "CONNECTION_REQUEST";
    case DAT_CONNECTION_EVENT_ESTABLISHED: return "ESTABLISHED";
    case DAT_CONNECTION_EVENT_PEER_REJECTED: return "PEER_REJECTED";
    case DAT_CONNECTION_EVENT_NON_PEER_REJECTED: return "NON_PEER_REJECTED";
    case DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR: return "ACCEPT_COMPLETION_ERROR";
    case DAT_CONNECTION_EVENT_DISCONNECTED: return "DISCONNECTED";
    case DAT_CONNECTION_EVENT_BROKEN: return "BROKEN";
    case DAT_CONNECTION_EVENT_TIMED_OUT: return "TIMED_OUT";
    case DAT_CONNECTION_EVENT_UNREACHABLE: return "UNREACHABLE";
    case DAT_ASYNC_ERROR_EP_BROKEN: return "ASYNC_EP_BROKEN";
    case DAT_ASYNC_ERROR_PROVIDER_INTERNAL_ERROR: return "ASYNC_PROVIDER_INTERNAL (softdat: watermark)";
    default: return "other";
  }
}

DAT_LMR_TRIPLET Region::Iov(std::size_t offset, std::size_t n) const {
  DAT_LMR_TRIPLET iov{};
  iov.lmr_context = lmr_context;
  iov.virtual_address = reinterpret_cast<DAT_VADDR>(bytes + offset);
  iov.segment_length = static_cast<DAT_VLEN>(n);
  return iov;
}

bool Peer::Open(const std::string& ia_name) {
  DAT_RETURN s = dat_ia_open(const_cast<char*>(ia_name.c_str()), 64, &async_evd_, &ia_);
  if (s != DAT_SUCCESS) return Fail("dat_ia_open %s: %s", ia_name.c_str(), DatText(s).c_str());
  if ((s = dat_pz_create(ia_, &pz_)) != DAT_SUCCESS) return Fail("dat_pz_create: %s", DatText(s).c_str());
  if ((s = dat_evd_create(ia_, 256, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd_)) != DAT_SUCCESS ||
      (s = dat_evd_create(ia_, 16, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &conn_evd_)) != DAT_SUCCESS ||
      (s = dat_evd_create(ia_, 16, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd_)) != DAT_SUCCESS)
    return Fail("dat_evd_create: %s", DatText(s).c_str());
  DAT_IA_ATTR ia_attr{};
  DAT_PROVIDER_ATTR provider_attr{};
  if ((s = dat_ia_query(ia_, nullptr, 0, &ia_attr, DAT_PROVIDER_FIELD_MAX_PRIVATE_DATA_SIZE, &provider_attr)) !=
      DAT_SUCCESS)
    return Fail("dat_ia_query: %s", DatText(s).c_str());
  max_private_data_ = provider_attr.max_private_data_size;
  return true;
}

void Peer::Close() {
  StopListening();
  for (DAT_EVD_HANDLE* evd : {&cr_evd_, &conn_evd_, &dto_evd_})
    if (*evd != DAT_HANDLE_NULL) dat_evd_free(*evd);
  if (pz_ != DAT_HANDLE_NULL) dat_pz_free(pz_);
  if (ia_ != DAT_HANDLE_NULL) dat_ia_close(ia_, DAT_CLOSE_ABRUPT_FLAG);
  ia_ = DAT_HANDLE_NULL;
}

bool Peer::Register(std::size_t length, Region& out) {
  void* memory = nullptr;
  if (posix_memalign(&memory, 4096, length) != 0) return Fail("out of memory");
  out.bytes = static_cast<std::uint8_t*>(memory);
  out.length = length;
  std::memset(out.bytes, 0, length);
  DAT_REGION_DESCRIPTION region;
  region.for_va = out.bytes;
  DAT_VLEN registered_length;
  DAT_VADDR registered_address;
  const DAT_RETURN s =
      dat_lmr_create(ia_, DAT_MEM_TYPE_VIRTUAL, region, length, pz_,
                     static_cast<DAT_MEM_PRIV_FLAGS>(DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG |
                                                     DAT_MEM_PRIV_REMOTE_READ_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG),
                     DAT_VA_TYPE_VA, &out.lmr, &out.lmr_context, &out.rmr_context, &registered_length,
                     &registered_address);
  if (s != DAT_SUCCESS) return Fail("dat_lmr_create(%zu): %s", length, DatText(s).c_str());
  return true;
}

void Peer::Deregister(Region& region) {
  if (region.lmr != DAT_HANDLE_NULL) dat_lmr_free(region.lmr);
  std::free(region.bytes);
  region = Region{};
}

bool Peer::CreateEp(DAT_EP_HANDLE& ep, DAT_SRQ_HANDLE srq, DAT_COUNT recvs, DAT_COUNT requests,
                    DAT_SEG_LENGTH max_message, DAT_COUNT reads) {
  DAT_EP_ATTR attr{};
  attr.service_type = DAT_SERVICE_TYPE_RC;
  attr.max_message_size = max_message;
  attr.max_rdma_size = max_message;
  attr.qos = DAT_QOS_BEST_EFFORT;
  attr.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  attr.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  attr.max_recv_dtos = recvs;
  attr.max_request_dtos = requests;
  attr.max_recv_iov = 1;
  attr.max_request_iov = 1;
  attr.max_rdma_read_in = reads;
  attr.max_rdma_read_out = reads;
  attr.srq_soft_hw = DAT_HW_DEFAULT;
  attr.max_rdma_read_iov = 1;
  attr.max_rdma_write_iov = 1;
  const DAT_RETURN s =
      srq == DAT_HANDLE_NULL
          ? dat_ep_create(ia_, pz_, dto_evd_, dto_evd_, conn_evd_, &attr, &ep)
          : dat_ep_create_with_srq(ia_, pz_, dto_evd_, dto_evd_, conn_evd_, srq, &attr, &ep);
  if (s != DAT_SUCCESS) return Fail("dat_ep_create%s: %s", srq ? "_with_srq" : "", DatText(s).c_str());
  return true;
}

void Peer::FreeEp(DAT_EP_HANDLE& ep) {
  if (ep == DAT_HANDLE_NULL) return;
  if (const DAT_RETURN s = dat_ep_free(ep); s != DAT_SUCCESS) Say("dat_ep_free: %s", DatText(s).c_str());
  ep = DAT_HANDLE_NULL;
}

bool Peer::Wait(DAT_EVD_HANDLE evd, DAT_EVENT& event, DAT_TIMEOUT timeout_us) {
  DAT_COUNT more = 0;
  const DAT_RETURN s = dat_evd_wait(evd, timeout_us, 1, &event, &more);
  if (s != DAT_SUCCESS) return Fail("dat_evd_wait: %s", DatText(s).c_str());
  return true;
}

bool Peer::WaitConnection(DAT_EVENT& event, std::initializer_list<DAT_EVENT_NUMBER> expected, DAT_TIMEOUT timeout_us) {
  if (!Wait(conn_evd_, event, timeout_us)) return Fail("no connection event came");
  for (DAT_EVENT_NUMBER n : expected)
    if (event.event_number == n) return true;
  return Fail("unexpected connection event %s (0x%x)", EventName(event.event_number), event.event_number);
}

bool Peer::WaitDtoFor(const std::function<bool(const DAT_DTO_COMPLETION_EVENT_DATA&)>& match,
                      DAT_DTO_COMPLETION_EVENT_DATA& out, DAT_TIMEOUT timeout_us) {
  for (auto it = stash_.begin(); it != stash_.end(); ++it) {
    if (match(*it)) {
      out = *it;
      stash_.erase(it);
      return true;
    }
  }
  for (;;) {
    DAT_EVENT event;
    if (!Wait(dto_evd_, event, timeout_us)) return Fail("no DTO completion came");
    // OFED DAPL on rxe reports flushed receives as IB extension DTO events (their opcode is
    // undefined in the verbs completion); the DTO data is the same.
    if (event.event_number != DAT_DTO_COMPLETION_EVENT && event.event_number != kIbExtensionDtoEvent)
      return Fail("unexpected event 0x%x on the DTO EVD", event.event_number);
    const DAT_DTO_COMPLETION_EVENT_DATA& d = event.event_data.dto_completion_event_data;
    Completed(d);
    if (d.user_cookie.as_64 >> 32 != generation_) continue;  // an earlier case's (flushed) work
    if (match(d)) {
      out = d;
      return true;
    }
    stash_.push_back(d);
  }
}

bool Peer::PostRecv(DAT_EP_HANDLE ep, const Region& region, std::size_t offset, std::size_t length,
                    std::uint32_t tag) {
  DAT_LMR_TRIPLET iov = region.Iov(offset, length);
  DAT_DTO_COOKIE c;
  c.as_64 = Cookie(tag);
  const DAT_RETURN s = dat_ep_post_recv(ep, 1, &iov, c, DAT_COMPLETION_DEFAULT_FLAG);
  if (s != DAT_SUCCESS) return Fail("dat_ep_post_recv: %s", DatText(s).c_str());
  posted_receives_.push_back(c.as_64);
  return true;
}

void Peer::Completed(const DAT_DTO_COMPLETION_EVENT_DATA& d) {
  auto it = std::find(posted_receives_.begin(), posted_receives_.end(), d.user_cookie.as_64);
  if (it != posted_receives_.end()) posted_receives_.erase(it);
}

void Peer::Quiesce(DAT_TIMEOUT timeout_us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(timeout_us);
  while (!posted_receives_.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      Say("%zu posted receive(s) never completed before their endpoint was freed", posted_receives_.size());
      posted_receives_.clear();
      return;
    }
    DAT_EVENT event;
    DAT_COUNT more = 0;
    if (dat_evd_wait(dto_evd_, static_cast<DAT_TIMEOUT>(left.count()), 1, &event, &more) != DAT_SUCCESS) continue;
    const DAT_DTO_COMPLETION_EVENT_DATA& d = event.event_data.dto_completion_event_data;
    Completed(d);
    if (d.user_cookie.as_64 >> 32 == generation_) stash_.push_back(d);
  }
}

bool Peer::PostSend(DAT_EP_HANDLE ep, const Region& region, std::size_t offset, std::size_t length,
                    std::uint32_t tag) {
  DAT_LMR_TRIPLET iov = region.Iov(offset, length);
  DAT_DTO_COOKIE c;
  c.as_64 = Cookie(tag);
  const DAT_RETURN s = dat_ep_post_send(ep, 1, &iov, c, DAT_COMPLETION_DEFAULT_FLAG);
  if (s != DAT_SUCCESS) return Fail("dat_ep_post_send: %s", DatText(s).c_str());
  return true;
}

bool Peer::SendControl(DAT_EP_HANDLE ep, const Control& control, Region& scratch, std::size_t offset) {
  constexpr std::uint32_t kControlTag = kFirstRequestTag + 0xC0;
  std::memcpy(scratch.bytes + offset, &control, sizeof control);
  if (!PostSend(ep, scratch, offset, sizeof control, kControlTag)) return false;
  DAT_DTO_COMPLETION_EVENT_DATA done;
  if (!WaitRequestDone(kControlTag, done)) return false;
  if (done.status != DAT_DTO_SUCCESS) return Fail("control Send completed with status %d", done.status);
  return true;
}

bool Peer::ReceiveControl(Control& out, const Region& region, std::size_t slot_size, std::uint32_t* tag) {
  DAT_DTO_COMPLETION_EVENT_DATA done;
  if (!WaitDtoFor(IsReceive, done)) return false;
  if (done.status != DAT_DTO_SUCCESS) return Fail("receive completed with status %d", done.status);
  if (done.transfered_length != sizeof out)
    return Fail("control message of %u bytes, want %zu", done.transfered_length, sizeof out);
  const std::size_t slot = Tag(done.user_cookie.as_64);
  std::memcpy(&out, region.bytes + slot * slot_size, sizeof out);
  if (tag != nullptr) *tag = static_cast<std::uint32_t>(slot);
  if (out.magic != Control::kMagic) return Fail("control message without its magic");
  return true;
}

bool Peer::Listen(DAT_CONN_QUAL port) {
  const DAT_RETURN s = dat_psp_create(ia_, port, cr_evd_, DAT_PSP_CONSUMER_FLAG, &psp_);
  if (s != DAT_SUCCESS) return Fail("dat_psp_create(%llu): %s", static_cast<unsigned long long>(port), DatText(s).c_str());
  return true;
}

void Peer::StopListening() {
  if (psp_ != DAT_HANDLE_NULL) dat_psp_free(psp_);
  psp_ = DAT_HANDLE_NULL;
}

bool Peer::WaitRequest(DAT_CR_HANDLE& cr, std::vector<std::uint8_t>& private_data) {
  DAT_EVENT event;
  if (!Wait(cr_evd_, event)) return Fail("no connection request came");
  if (event.event_number != DAT_CONNECTION_REQUEST_EVENT)
    return Fail("unexpected event 0x%x on the CR EVD", event.event_number);
  cr = event.event_data.cr_arrival_event_data.cr_handle;
  DAT_CR_PARAM param{};
  const DAT_RETURN s = dat_cr_query(cr, DAT_CR_FIELD_ALL, &param);
  if (s != DAT_SUCCESS) return Fail("dat_cr_query: %s", DatText(s).c_str());
  const auto* p = static_cast<const std::uint8_t*>(param.private_data);
  private_data.assign(p, p + (p != nullptr ? param.private_data_size : 0));
  return true;
}

bool Peer::Connect(DAT_EP_HANDLE ep, const std::string& host, DAT_CONN_QUAL port, const std::vector<std::uint8_t>& data) {
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  if (inet_pton(AF_INET, host.c_str(), &remote.sin_addr) != 1) return Fail("bad address %s", host.c_str());
  const DAT_RETURN s =
      dat_ep_connect(ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&remote), port, kWaitUs, static_cast<DAT_COUNT>(data.size()),
                     data.empty() ? nullptr : const_cast<std::uint8_t*>(data.data()), DAT_QOS_BEST_EFFORT,
                     DAT_CONNECT_DEFAULT_FLAG);
  if (s != DAT_SUCCESS) return Fail("dat_ep_connect: %s", DatText(s).c_str());
  return true;
}

bool Peer::Disconnect(DAT_EP_HANDLE ep, bool graceful) {
  const DAT_RETURN s = dat_ep_disconnect(ep, graceful ? DAT_CLOSE_GRACEFUL_FLAG : DAT_CLOSE_ABRUPT_FLAG);
  if (s != DAT_SUCCESS) return Fail("dat_ep_disconnect: %s", DatText(s).c_str());
  DAT_EVENT event;
  return WaitConnection(event, {DAT_CONNECTION_EVENT_DISCONNECTED});
}

void Fill(std::uint8_t* bytes, std::size_t length, std::uint32_t seed) {
  for (std::size_t i = 0; i < length; ++i) bytes[i] = static_cast<std::uint8_t>(seed * 131 + i * 7 + (i >> 9));
}

std::size_t FirstMismatch(const std::uint8_t* bytes, std::size_t length, std::uint32_t seed) {
  for (std::size_t i = 0; i < length; ++i)
    if (bytes[i] != static_cast<std::uint8_t>(seed * 131 + i * 7 + (i >> 9))) return i;
  return length;
}

}  // namespace softdat::testing::interop
