// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// PeerNode: the workload of peer_node.h over the DAT API.
#include "testing/faults/peer_node.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "testing/ledger/message.h"

namespace softdat::testing::faults {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::uint32_t kPeerDataMagic = 0x50454552;  // "PEER"
constexpr std::uint64_t kDoneBit = 1ull << 63;
constexpr DAT_TIMEOUT kSliceUs = 2000;  // one wait on the DTO EVD
constexpr std::uint64_t kChurnEvery = 50;  // srq_churn: received messages between two churns

// What each side tells the other in its connection private data.
struct PeerData {
  std::uint32_t magic;
  std::uint32_t id;
  std::uint64_t read_address;
  std::uint32_t read_rmr;
  std::uint32_t read_slots;
  std::uint32_t read_size;
  std::uint32_t write_rmr;
  std::uint64_t write_address;
  std::uint32_t write_slots;
  std::uint32_t write_size;
};

std::string EventName(DAT_EVENT_NUMBER number) {
  switch (number) {
    case DAT_CONNECTION_EVENT_ESTABLISHED: return "ESTABLISHED";
    case DAT_CONNECTION_EVENT_PEER_REJECTED: return "PEER_REJECTED";
    case DAT_CONNECTION_EVENT_NON_PEER_REJECTED: return "NON_PEER_REJECTED";
    case DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR: return "ACCEPT_COMPLETION_ERROR";
    case DAT_CONNECTION_EVENT_DISCONNECTED: return "DISCONNECTED";
    case DAT_CONNECTION_EVENT_BROKEN: return "BROKEN";
    case DAT_CONNECTION_EVENT_TIMED_OUT: return "TIMED_OUT";
    case DAT_CONNECTION_EVENT_UNREACHABLE: return "UNREACHABLE";
    case DAT_ASYNC_ERROR_EVD_OVERFLOW: return "EVD_OVERFLOW";
    case DAT_ASYNC_ERROR_EP_BROKEN: return "EP_BROKEN";
    default: return "event 0x" + std::to_string(number);
  }
}

std::string ReturnName(DAT_RETURN status) {
  const char* major = "?";
  const char* minor = "?";
  dat_strerror(status, &major, &minor);
  return std::string(major) + " " + minor;
}

std::uint32_t SendSize(const PeerOptions& o, std::uint64_t sequence) {
  const std::uint32_t low = std::max<std::uint32_t>(o.min_size, kMinMessage);
  const std::uint32_t high = std::max(low, o.max_size);
  return low + static_cast<std::uint32_t>((sequence * 2654435761ull) % (high - low + 1));
}

}  // namespace

struct PeerNode::Region {
  std::vector<std::uint8_t> bytes;
  DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT context = 0;
  DAT_RMR_CONTEXT rmr_context = 0;
  std::uint8_t* At(std::size_t offset) { return bytes.data() + offset; }
  DAT_LMR_TRIPLET Triplet(std::size_t offset, std::size_t length) {
    DAT_LMR_TRIPLET t;
    t.lmr_context = context;
    t.virtual_address = reinterpret_cast<DAT_VADDR>(bytes.data() + offset);
    t.segment_length = static_cast<DAT_SEG_LENGTH>(length);
    return t;
  }
};

// One connection's state.
struct PeerNode::Connection {
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  PeerData peer{};
  bool active = false;
  // Sends: data sequence numbers 1..messages, then the done message.
  std::uint64_t send_seq = 0;        // the last data Send posted
  std::uint64_t sends_posted = 0;    // every Send (the slot ring index)
  std::uint32_t sends_outstanding = 0;
  bool done_posted = false;
  bool done_completed = false;
  // Writes into the peer.
  std::uint64_t write_seq = 0;
  std::uint32_t writes_outstanding = 0;
  std::uint64_t peer_acked_writes = 0;
  // Reads of the peer.
  std::uint64_t reads_posted = 0;
  std::uint32_t reads_outstanding = 0;
  std::uint64_t reads_target = 0;
  // What the peer sent.
  std::uint64_t expected_seq = 1;
  std::uint64_t verified_writes = 0;  // the peer's Writes checked so far (our ack)
  bool peer_done = false;
  // How it ends.
  bool broken = false;
  bool ended = false;                 // a connection event ended it
  bool ep_broken_seen = false;        // DAT_ASYNC_ERROR_EP_BROKEN for this EP
  bool disconnect_asked = false;
  bool disconnected = false;          // DISCONNECTED (not BROKEN) ended it
  Clock::time_point last_event = Clock::now();
  RoundReport report;
};

PeerNode::PeerNode(const PeerOptions& options) : options_(options) {}

PeerNode::~PeerNode() {
  std::string ignored;
  (void)Close(ignored);
}

bool PeerNode::Register(Region& region, std::size_t bytes, DAT_MEM_PRIV_FLAGS privileges, std::string& error) {
  region.bytes.assign(bytes, 0);
  DAT_REGION_DESCRIPTION description;
  description.for_va = region.bytes.data();
  DAT_VLEN registered_length = 0;
  DAT_VADDR registered_address = 0;
  const DAT_RETURN status =
      dat_lmr_create(ia_, DAT_MEM_TYPE_VIRTUAL, description, bytes, pz_, privileges, DAT_VA_TYPE_VA, &region.lmr,
                     &region.context, &region.rmr_context, &registered_length, &registered_address);
  if (status != DAT_SUCCESS) {
    error = "dat_lmr_create(" + std::to_string(bytes) + " bytes): " + ReturnName(status);
    return false;
  }
  return true;
}

bool PeerNode::Open(std::string& error) {
  const PeerOptions& o = options_;
  DAT_RETURN status = dat_ia_open(const_cast<char*>(o.ia_name.c_str()), 64, &async_evd_, &ia_);
  if (status != DAT_SUCCESS) {
    ia_ = DAT_HANDLE_NULL;
    error = "dat_ia_open(" + o.ia_name + "): " + ReturnName(status);
    return false;
  }
  const DAT_COUNT dto_qlen = static_cast<DAT_COUNT>(2 * o.srq_size + 4 * o.window + 2 * o.reads_outstanding + 64);
  if ((status = dat_pz_create(ia_, &pz_)) != DAT_SUCCESS ||
      (status = dat_evd_create(ia_, dto_qlen, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &dto_evd_)) != DAT_SUCCESS ||
      (status = dat_evd_create(ia_, 16, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &connect_evd_)) != DAT_SUCCESS ||
      (status = dat_evd_create(ia_, 16, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &cr_evd_)) != DAT_SUCCESS) {
    error = "creating the PZ and EVDs: " + ReturnName(status);
    return false;
  }
  DAT_SRQ_ATTR attr{};
  attr.max_recv_dtos = static_cast<DAT_COUNT>(o.srq_size);
  attr.max_recv_iov = 1;
  attr.low_watermark = DAT_SRQ_LW_DEFAULT;
  if ((status = dat_srq_create(ia_, pz_, &attr, &srq_)) != DAT_SUCCESS) {
    error = "dat_srq_create: " + ReturnName(status);
    return false;
  }
  srq_capacity_ = o.srq_size;
  for (Region** region : {&recv_, &send_, &write_src_, &read_sink_, &exposed_read_, &exposed_write_}) {
    *region = new Region;
    regions_.push_back(*region);
  }
  const DAT_MEM_PRIV_FLAGS local_rw = static_cast<DAT_MEM_PRIV_FLAGS>(DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG);
  if (!Register(*recv_, std::size_t{o.srq_size} * o.max_size, local_rw, error) ||
      !Register(*send_, std::size_t{o.window} * o.max_size, local_rw, error) ||
      !Register(*write_src_, std::size_t{o.window} * o.write_size, local_rw, error) ||
      !Register(*read_sink_, std::size_t{o.reads_outstanding} * o.read_size, local_rw, error) ||
      !Register(*exposed_read_, std::size_t{o.read_slots} * o.read_size,
                static_cast<DAT_MEM_PRIV_FLAGS>(DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_REMOTE_READ_FLAG |
                                                DAT_MEM_PRIV_LOCAL_WRITE_FLAG),
                error) ||
      !Register(*exposed_write_, std::size_t{o.write_slots} * o.write_size,
                static_cast<DAT_MEM_PRIV_FLAGS>(DAT_MEM_PRIV_WRITE_FLAG | DAT_MEM_PRIV_LOCAL_READ_FLAG), error))
    return false;
  for (std::uint32_t slot = 0; slot < o.read_slots; ++slot)
    FillMessage({exposed_read_->At(std::size_t{slot} * o.read_size), o.read_size}, ReadStream(o.id), slot + 1);
  srq_slot_posted_.assign(o.srq_size, false);
  RefillSrq();
  return true;
}

bool PeerNode::Listen(DAT_CONN_QUAL& port, std::string& error) {
  DAT_RETURN status;
  if (port == 0) {
    status = dat_psp_create_any(ia_, &port, cr_evd_, DAT_PSP_CONSUMER_FLAG, &psp_);
  } else {
    status = dat_psp_create(ia_, port, cr_evd_, DAT_PSP_CONSUMER_FLAG, &psp_);
  }
  if (status != DAT_SUCCESS) {
    error = "dat_psp_create: " + ReturnName(status);
    return false;
  }
  return true;
}

bool PeerNode::PostSrqBuffer(std::uint32_t slot) {
  DAT_LMR_TRIPLET iov = recv_->Triplet(std::size_t{slot} * options_.max_size, options_.max_size);
  const DAT_DTO_COOKIE cookie = ledger_.Post(DtoKind::kSrqRecv, options_.max_size, slot);
  const DAT_RETURN status = dat_srq_post_recv(srq_, 1, &iov, cookie);
  if (status != DAT_SUCCESS) {
    ledger_.Unpost(cookie);
    // A full SRQ (resized below what we hold) is the one refusal expected.
    if (DAT_GET_TYPE(status) != DAT_INSUFFICIENT_RESOURCES)
      ledger_.Violation("dat_srq_post_recv: " + ReturnName(status));
    return false;
  }
  srq_slot_posted_[slot] = true;
  return true;
}

void PeerNode::RefillSrq() {
  std::uint32_t posted = 0;
  for (bool p : srq_slot_posted_) posted += p ? 1 : 0;
  for (std::uint32_t slot = 0; slot < srq_slot_posted_.size() && posted < srq_capacity_; ++slot) {
    if (srq_slot_posted_[slot]) continue;
    if (!PostSrqBuffer(slot)) break;
    ++posted;
  }
}

// Under traffic: resize the SRQ (to twice its buffers, or back down to them: never below what
// it holds) and re-arm its low watermark just below what is posted, so that the next messages
// cross it. The SRQ must keep every buffer through both.
void PeerNode::ChurnSrq(RoundReport&) {
  const std::uint32_t slots = static_cast<std::uint32_t>(srq_slot_posted_.size());
  ++churns_;
  const std::uint32_t target = churns_ % 2 == 1 ? 2 * slots : slots;
  const DAT_RETURN resized = dat_srq_resize(srq_, static_cast<DAT_COUNT>(target));
  if (resized == DAT_SUCCESS) {
    srq_capacity_ = target;
  } else {
    ledger_.Violation("dat_srq_resize(" + std::to_string(target) + "): " + ReturnName(resized));
  }
  RefillSrq();
  low_watermark_ = std::max<std::uint32_t>(1, std::min(srq_capacity_, slots) - 2);
  const DAT_RETURN armed = dat_srq_set_lw(srq_, static_cast<DAT_COUNT>(low_watermark_));
  if (armed != DAT_SUCCESS) ledger_.Violation("dat_srq_set_lw: " + ReturnName(armed));
}

bool PeerNode::CreateEp(DAT_EP_HANDLE& ep, std::string& error) {
  const PeerOptions& o = options_;
  DAT_EP_ATTR attr{};
  attr.service_type = DAT_SERVICE_TYPE_RC;
  attr.max_message_size = std::max({o.max_size, o.read_size, o.write_size});
  attr.max_rdma_size = std::max(o.read_size, o.write_size);
  attr.qos = DAT_QOS_BEST_EFFORT;
  attr.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  attr.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  attr.max_recv_dtos = 0;
  attr.max_request_dtos = static_cast<DAT_COUNT>(2 * o.window + o.reads_outstanding + 2);
  attr.max_recv_iov = 1;
  attr.max_request_iov = 1;
  attr.max_rdma_read_in = static_cast<DAT_COUNT>(o.reads_outstanding);
  attr.max_rdma_read_out = static_cast<DAT_COUNT>(o.reads_outstanding);
  attr.srq_soft_hw = DAT_HW_DEFAULT;
  attr.max_rdma_read_iov = 1;
  attr.max_rdma_write_iov = 1;
  const DAT_RETURN status = dat_ep_create_with_srq(ia_, pz_, dto_evd_, dto_evd_, connect_evd_, srq_, &attr, &ep);
  if (status != DAT_SUCCESS) {
    error = "dat_ep_create_with_srq: " + ReturnName(status);
    return false;
  }
  return true;
}

void PeerNode::FillPrivateData(std::vector<std::uint8_t>& out) const {
  const PeerOptions& o = options_;
  PeerData data{};
  data.magic = kPeerDataMagic;
  data.id = o.id;
  data.read_address = reinterpret_cast<std::uint64_t>(exposed_read_->bytes.data());
  data.read_rmr = exposed_read_->rmr_context;
  data.read_slots = o.read_slots;
  data.read_size = o.read_size;
  data.write_address = reinterpret_cast<std::uint64_t>(exposed_write_->bytes.data());
  data.write_rmr = exposed_write_->rmr_context;
  data.write_slots = o.write_slots;
  data.write_size = o.write_size;
  out.resize(sizeof data);
  std::memcpy(out.data(), &data, sizeof data);
}

RoundReport PeerNode::Accept(DAT_TIMEOUT wait_us) {
  RoundReport failed;
  failed.end = "no connection";
  DAT_EVENT event{};
  DAT_COUNT more = 0;
  DAT_RETURN status = dat_evd_wait(cr_evd_, wait_us, 1, &event, &more);
  if (status != DAT_SUCCESS || event.event_number != DAT_CONNECTION_REQUEST_EVENT) {
    failed.end = "no connection request: " + (status != DAT_SUCCESS ? ReturnName(status) : EventName(event.event_number));
    return failed;
  }
  const DAT_CR_HANDLE cr = event.event_data.cr_arrival_event_data.cr_handle;
  DAT_CR_PARAM param{};
  status = dat_cr_query(cr, DAT_CR_FIELD_ALL, &param);
  PeerData peer{};
  if (status != DAT_SUCCESS || param.private_data_size < static_cast<DAT_COUNT>(sizeof peer)) {
    (void)dat_cr_reject(cr, 0, nullptr);
    failed.end = "a connection request without the peer's data";
    return failed;
  }
  std::memcpy(&peer, param.private_data, sizeof peer);
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  if (!CreateEp(ep, failed.end)) {
    (void)dat_cr_reject(cr, 0, nullptr);
    return failed;
  }
  std::vector<std::uint8_t> ours;
  FillPrivateData(ours);
  status = dat_cr_accept(cr, ep, static_cast<DAT_COUNT>(ours.size()), ours.data());
  if (status != DAT_SUCCESS) {
    failed.end = "dat_cr_accept: " + ReturnName(status);
    (void)dat_ep_free(ep);
    return failed;
  }
  return Run(ep, &peer, sizeof peer, false);
}

RoundReport PeerNode::Connect(const std::string& ipv4, DAT_CONN_QUAL port) {
  RoundReport failed;
  sockaddr_in remote{};
  remote.sin_family = AF_INET;
  if (inet_pton(AF_INET, ipv4.c_str(), &remote.sin_addr) != 1) {
    failed.end = "not an IPv4 address: " + ipv4;
    return failed;
  }
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  if (!CreateEp(ep, failed.end)) return failed;
  std::vector<std::uint8_t> ours;
  FillPrivateData(ours);
  const DAT_RETURN status =
      dat_ep_connect(ep, reinterpret_cast<DAT_IA_ADDRESS_PTR>(&remote), port, options_.connect_timeout_us,
                     static_cast<DAT_COUNT>(ours.size()), ours.data(), DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG);
  if (status != DAT_SUCCESS) {
    failed.end = "dat_ep_connect: " + ReturnName(status);
    (void)dat_ep_free(ep);
    return failed;
  }
  return Run(ep, nullptr, 0, true);
}

std::string PeerNode::Status(const Connection& c) const {
  return "sends_outstanding=" + std::to_string(c.sends_outstanding) +
         " writes_outstanding=" + std::to_string(c.writes_outstanding) +
         " reads_outstanding=" + std::to_string(c.reads_outstanding) + " sent=" + std::to_string(c.report.sent) +
         " received=" + std::to_string(c.report.received) + " broken=" + (c.broken ? "1" : "0") +
         " ended=" + (c.ended ? "1" : "0");
}

RoundReport PeerNode::Run(DAT_EP_HANDLE ep, const void* peer_data, std::size_t peer_data_size, bool active) {
  const PeerOptions& o = options_;
  ++connections_;
  Connection c;
  c.ep = ep;
  c.active = active;
  c.reads_target = o.reads ? o.messages / 2 : 0;
  const std::vector<std::string> before = ledger_.Violations(false);
  RoundReport& report = c.report;
  RefillSrq();

  auto break_with = [&](const std::string& why) {
    if (c.broken) return;
    c.broken = true;
    report.end = why;
  };
  std::uint32_t peer_read_size = 0;  // known once established
  // A completion: the ledger first, then what its payload says. The tag is the SRQ slot of a
  // receive, the index of a Read.
  auto on_dto = [&](const DAT_DTO_COMPLETION_EVENT_DATA& dto) {
    DtoKind kind;
    std::uint32_t tag = 0;
    if (!ledger_.Complete(dto, &kind, &tag)) return;
    const bool ok = dto.status == DAT_DTO_SUCCESS;
    if (!ok && dto.status != DAT_DTO_ERR_FLUSHED) break_with("DTO status " + std::to_string(dto.status));
    if (!ok && !c.broken && !c.ended) break_with("DTO flushed on a live connection");
    // After a clean end only receive buffers an EP held may come back flushed.
    if (!ok && c.disconnected && c.peer_done && kind != DtoKind::kSrqRecv)
      break_with(std::string(Describe(kind)) + " flushed after a graceful disconnect");
    switch (kind) {
      case DtoKind::kSend:
        --c.sends_outstanding;
        if (ok && c.done_posted && c.sends_outstanding == 0) c.done_completed = true;
        break;
      case DtoKind::kRdmaWrite:
        --c.writes_outstanding;
        break;
      case DtoKind::kRdmaRead: {
        --c.reads_outstanding;
        if (!ok) break;
        const std::uint64_t index = tag;
        MessageHeader header;
        const MessageCheck check = CheckMessage(
            {read_sink_->At((index % o.reads_outstanding) * o.read_size), peer_read_size}, dto.transfered_length,
            header);
        const bool intact = check == MessageCheck::kOk && header.stream == ReadStream(c.peer.id) &&
                            header.sequence == index % c.peer.read_slots + 1;
        ledger_.Delivered(intact, "RDMA Read " + std::to_string(index) + ": " + Describe(check));
        if (intact) ++report.reads_verified;
        break;
      }
      case DtoKind::kSrqRecv:
      case DtoKind::kRecv: {
        const std::uint32_t slot = tag;
        srq_slot_posted_[slot] = false;
        if (ok) {
          if (dto.ep_handle != c.ep) ledger_.Violation("a receive completion names another EP");
          MessageHeader header;
          const MessageCheck check =
              CheckMessage({recv_->At(std::size_t{slot} * o.max_size), o.max_size}, dto.transfered_length, header);
          const bool intact = check == MessageCheck::kOk && header.stream == c.peer.id &&
                              header.sequence == c.expected_seq;
          ledger_.Delivered(intact, "message " + std::to_string(c.expected_seq) + ": " + Describe(check) +
                                        (check == MessageCheck::kOk ? " (stream " + std::to_string(header.stream) +
                                                                          ", sequence " +
                                                                          std::to_string(header.sequence) + ")"
                                                                    : ""));
          // A lost, repeated or corrupt message is one finding, not one per message after it:
          // the count goes on from what arrived.
          if (!intact) c.expected_seq = check == MessageCheck::kOk ? header.sequence + 1 : c.expected_seq + 1;
          if (intact) {
            ++c.expected_seq;
            // The Writes this Send announces are placed: check each one not checked yet.
            const std::uint64_t announced = header.extra & 0xFFFFFFFFull;
            for (std::uint64_t w = c.verified_writes + 1; w <= announced && c.peer.write_slots != 0; ++w) {
              const std::uint32_t at = static_cast<std::uint32_t>((w - 1) % o.write_slots);
              MessageHeader written;
              const MessageCheck wcheck = CheckMessage({exposed_write_->At(std::size_t{at} * o.write_size), o.write_size},
                                                       o.write_size, written);
              const bool wintact = wcheck == MessageCheck::kOk && written.stream == WriteStream(c.peer.id) &&
                                   written.sequence == w;
              ledger_.Delivered(wintact, "RDMA Write " + std::to_string(w) + ": " + Describe(wcheck));
              if (wintact) ++report.writes_verified;
            }
            c.verified_writes = std::max(c.verified_writes, announced);
            c.peer_acked_writes = std::max<std::uint64_t>(c.peer_acked_writes, (header.extra >> 32) & 0x7FFFFFFFull);
            if (header.extra & kDoneBit) {
              c.peer_done = true;
            } else {
              ++report.received;
              if (o.progress_every != 0 && report.received % o.progress_every == 0 && on_progress) on_progress(report);
              if (o.srq_churn && report.received % kChurnEvery == kChurnEvery / 2 && !c.broken && !c.ended) {
                RefillSrq();
                ChurnSrq(report);
              }
            }
          }
        }
        if (!c.broken && !c.ended) RefillSrq();
        break;
      }
    }
  };

  // Establishment: the active side waits for it here; the passive side's event comes too.
  const auto established_by = Clock::now() + std::chrono::microseconds(o.connect_timeout_us);
  while (!report.established) {
    DAT_EVENT event{};
    DAT_COUNT more = 0;
    const DAT_RETURN waited = dat_evd_wait(connect_evd_, kSliceUs, 1, &event, &more);
    if (waited == DAT_SUCCESS) {
      if (event.event_number != DAT_CONNECTION_EVENT_ESTABLISHED) {
        report.end = "not established: " + EventName(event.event_number);
        break;
      }
      report.established = true;
      if (active) {
        const DAT_CONNECTION_EVENT_DATA& data = event.event_data.connect_event_data;
        if (data.private_data_size >= static_cast<DAT_COUNT>(sizeof(PeerData))) {
          std::memcpy(&c.peer, data.private_data, sizeof(PeerData));
        }
      }
    } else if (Clock::now() > established_by) {
      report.end = "not established in time";
      break;
    }
  }
  if (!active && peer_data_size >= sizeof(PeerData)) std::memcpy(&c.peer, peer_data, sizeof(PeerData));
  if (report.established && c.peer.magic != kPeerDataMagic) {
    report.end = "the peer's private data is missing";
    report.established = false;
  }
  if (!report.established) {
    (void)dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG);
    c.broken = true;
  }

  peer_read_size = std::min(c.peer.read_size, o.read_size);
  const std::uint32_t peer_write_size = std::min(c.peer.write_size, o.write_size);

  auto post_send = [&](bool done) {
    const std::uint64_t sequence = done ? o.messages + 1 : c.send_seq + 1;
    const std::uint32_t size = done ? kMinMessage : SendSize(o, sequence);
    // A Write first, while the peer's acknowledgements leave a slot free: the Send announces it.
    if (!done && o.writes && c.peer.write_slots != 0 && c.writes_outstanding < o.window &&
        c.write_seq + 1 <= c.peer_acked_writes + c.peer.write_slots) {
      const std::uint64_t w = c.write_seq + 1;
      const std::size_t local = ((w - 1) % o.window) * o.write_size;
      FillMessage({write_src_->At(local), peer_write_size}, WriteStream(o.id), w);
      DAT_LMR_TRIPLET iov = write_src_->Triplet(local, peer_write_size);
      DAT_RMR_TRIPLET remote;
      remote.rmr_context = c.peer.write_rmr;
      remote.virtual_address = c.peer.write_address + ((w - 1) % c.peer.write_slots) * c.peer.write_size;
      remote.segment_length = peer_write_size;
      const DAT_DTO_COOKIE cookie = ledger_.Post(DtoKind::kRdmaWrite, peer_write_size);
      const DAT_RETURN status = dat_ep_post_rdma_write(ep, 1, &iov, cookie, &remote, DAT_COMPLETION_DEFAULT_FLAG);
      if (status == DAT_SUCCESS) {
        c.write_seq = w;
        ++c.writes_outstanding;
      } else {
        ledger_.Unpost(cookie);
        break_with("dat_ep_post_rdma_write: " + ReturnName(status));
        return;
      }
    }
    const std::size_t local = (c.sends_posted % o.window) * o.max_size;
    const std::uint64_t extra = (c.write_seq & 0xFFFFFFFFull) | ((c.verified_writes & 0x7FFFFFFFull) << 32) |
                                (done ? kDoneBit : 0);
    FillMessage({send_->At(local), size}, o.id, sequence, extra);
    DAT_LMR_TRIPLET iov = send_->Triplet(local, size);
    const DAT_DTO_COOKIE cookie = ledger_.Post(DtoKind::kSend, size);
    const DAT_RETURN status = dat_ep_post_send(ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG);
    if (status != DAT_SUCCESS) {
      ledger_.Unpost(cookie);
      break_with("dat_ep_post_send: " + ReturnName(status));
      return;
    }
    ++c.sends_posted;
    ++c.sends_outstanding;
    if (done) {
      c.done_posted = true;
    } else {
      c.send_seq = sequence;
    }
  };
  auto post_read = [&] {
    const std::uint64_t r = c.reads_posted;
    const std::size_t local = (r % o.reads_outstanding) * o.read_size;
    std::memset(read_sink_->At(local), 0, peer_read_size);
    DAT_LMR_TRIPLET iov = read_sink_->Triplet(local, peer_read_size);
    DAT_RMR_TRIPLET remote;
    remote.rmr_context = c.peer.read_rmr;
    remote.virtual_address = c.peer.read_address + (r % c.peer.read_slots) * c.peer.read_size;
    remote.segment_length = peer_read_size;
    const DAT_DTO_COOKIE cookie = ledger_.Post(DtoKind::kRdmaRead, peer_read_size, static_cast<std::uint32_t>(r));
    const DAT_RETURN status = dat_ep_post_rdma_read(ep, 1, &iov, cookie, &remote, DAT_COMPLETION_DEFAULT_FLAG);
    if (status != DAT_SUCCESS) {
      ledger_.Unpost(cookie);
      break_with("dat_ep_post_rdma_read: " + ReturnName(status));
      return;
    }
    ++c.reads_posted;
    ++c.reads_outstanding;
  };
  auto my_part_done = [&] {
    return c.send_seq == o.messages && c.sends_outstanding == 0 && c.writes_outstanding == 0 &&
           c.reads_posted == c.reads_target && c.reads_outstanding == 0;
  };

  // The connection.
  bool finished = !report.established;
  Clock::time_point drain_deadline{};
  std::string pending_command;
  while (!finished) {
    if (!c.broken && !c.ended) {
      while (!c.broken && c.send_seq < o.messages && c.sends_outstanding < o.window) {
        post_send(false);
        while (!c.broken && c.reads_posted < c.reads_target && c.reads_outstanding < o.reads_outstanding &&
               c.reads_posted * o.messages <= c.reads_target * c.send_seq)
          post_read();
      }
      while (!c.broken && c.reads_posted < c.reads_target && c.reads_outstanding < o.reads_outstanding &&
             c.send_seq == o.messages)
        post_read();
      if (!c.broken && !c.done_posted && my_part_done()) post_send(true);
      if (!c.broken && c.done_completed && c.peer_done && c.active && !c.disconnect_asked) {
        c.disconnect_asked = true;
        const DAT_RETURN status = dat_ep_disconnect(ep, DAT_CLOSE_GRACEFUL_FLAG);
        if (status != DAT_SUCCESS) break_with("dat_ep_disconnect: " + ReturnName(status));
      }
    }

    DAT_EVENT event{};
    DAT_COUNT more = 0;
    bool any = false;
    if (dat_evd_wait(dto_evd_, kSliceUs, 1, &event, &more) == DAT_SUCCESS) {
      any = true;
      if (event.event_number == DAT_DTO_COMPLETION_EVENT) {
        on_dto(event.event_data.dto_completion_event_data);
      } else {
        ledger_.Violation("a non-DTO event on the DTO EVD: " + EventName(event.event_number));
      }
    }
    while (dat_evd_dequeue(connect_evd_, &event) == DAT_SUCCESS) {
      any = true;
      const DAT_EVENT_NUMBER n = event.event_number;
      if (n == DAT_CONNECTION_EVENT_DISCONNECTED) {
        // Clean if both done messages went through; the completions that say so may still be on
        // the DTO EVD (another EVD than this event's, so no order between them): judged once
        // every DTO is reaped.
        c.ended = true;
        c.disconnected = true;
      } else if (n == DAT_CONNECTION_EVENT_BROKEN) {
        c.ended = true;
        break_with(EventName(n));
      } else {
        ledger_.Violation("unexpected connection event " + EventName(n));
      }
    }
    while (dat_evd_dequeue(async_evd_, &event) == DAT_SUCCESS) {
      any = true;
      const DAT_ASYNCH_ERROR_EVENT_DATA& data = event.event_data.asynch_error_event_data;
      if (event.event_number == DAT_ASYNC_ERROR_EP_BROKEN && data.dat_handle == ep) {
        c.ep_broken_seen = true;
      } else if (data.dat_handle == srq_ && data.reason == DAT_SRQ_LOW_WATERMARK_EVENT) {
        ++report.low_watermark_events;
      } else {
        ledger_.Violation("unexpected async event " + EventName(event.event_number) + " reason " +
                          std::to_string(data.reason));
      }
    }
    if (poll_command) {
      const std::string command = poll_command();
      if (command == "status" && on_idle) on_idle(Status(c));
    }

    const auto now = Clock::now();
    if (any) c.last_event = now;
    if (c.broken || c.ended) {
      if (drain_deadline == Clock::time_point{}) drain_deadline = now + std::chrono::milliseconds(o.drain_ms);
      const LedgerCounts counts = ledger_.counts();
      DAT_COUNT held = 0;
      DAT_COUNT span = 0;
      (void)dat_ep_recv_query(ep, &held, &span);
      const bool drained = counts.outstanding - (counts.srq_posted - counts.srq_completed) == 0 && held == 0;
      if (c.ended && drained && c.ep_broken_seen) break;
      if (now > drain_deadline) {
        if (!c.ended) ledger_.Violation("the connection never ended after: " + report.end);
        if (!drained) ledger_.Violation("DTOs still outstanding " + std::to_string(o.drain_ms) + " ms after: " + report.end);
        if (!c.ep_broken_seen) ledger_.Violation("no DAT_ASYNC_ERROR_EP_BROKEN for the SRQ EP after: " + report.end);
        break;
      }
    } else if (now - c.last_event > std::chrono::milliseconds(o.idle_ms)) {
      ledger_.Violation("no event for " + std::to_string(o.idle_ms) + " ms: " + Status(c));
      (void)dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG);
      break_with("hang");
    }
  }

  const DAT_RETURN freed = dat_ep_free(ep);
  if (freed != DAT_SUCCESS) ledger_.Violation("dat_ep_free: " + ReturnName(freed));
  // Reap what the free may have completed, then the SRQ must add up with no EP holding anything.
  for (;;) {
    DAT_EVENT event{};
    if (dat_evd_dequeue(dto_evd_, &event) != DAT_SUCCESS) break;
    if (event.event_number == DAT_DTO_COMPLETION_EVENT) on_dto(event.event_data.dto_completion_event_data);
  }
  if (c.disconnected && !c.broken) {
    report.clean = c.done_completed && c.peer_done;
    report.end = report.clean ? "clean"
                              : std::string("DISCONNECTED before ") + (c.peer_done ? "our done Send completed"
                                                                                   : "the peer's done message");
  }
  if (report.established) ledger_.CheckSrq(srq_, 0);
  report.sent = c.send_seq;
  if (report.clean && (report.received != o.messages || c.expected_seq != o.messages + 2))
    ledger_.Violation("a clean end with " + std::to_string(report.received) + " of " + std::to_string(o.messages) +
                      " messages received");
  std::vector<std::string> after = ledger_.Violations(report.established);
  report.violations.assign(after.begin() + static_cast<std::ptrdiff_t>(std::min(before.size(), after.size())),
                           after.end());
  RefillSrq();
  report.resources = SampleProcessResources();
  return report;
}

bool PeerNode::Close(std::string& error) {
  if (ia_ == DAT_HANDLE_NULL) return true;
  DAT_RETURN status = DAT_SUCCESS;
  auto check = [&](DAT_RETURN s, const char* what) {
    if (s != DAT_SUCCESS && status == DAT_SUCCESS) {
      status = s;
      error = std::string(what) + ": " + ReturnName(s);
    }
  };
  if (psp_ != DAT_HANDLE_NULL) check(dat_psp_free(psp_), "dat_psp_free");
  for (Region* region : regions_) {
    if (region->lmr != DAT_HANDLE_NULL) check(dat_lmr_free(region->lmr), "dat_lmr_free");
    delete region;
  }
  regions_.clear();
  if (srq_ != DAT_HANDLE_NULL) check(dat_srq_free(srq_), "dat_srq_free");
  for (DAT_EVD_HANDLE evd : {dto_evd_, connect_evd_, cr_evd_})
    if (evd != DAT_HANDLE_NULL) check(dat_evd_free(evd), "dat_evd_free");
  if (pz_ != DAT_HANDLE_NULL) check(dat_pz_free(pz_), "dat_pz_free");
  check(dat_ia_close(ia_, DAT_CLOSE_GRACEFUL_FLAG), "dat_ia_close");
  ia_ = DAT_HANDLE_NULL;
  return status == DAT_SUCCESS;
}

}  // namespace softdat::testing::faults
