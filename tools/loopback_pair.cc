// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// LoopbackPair: both ends of one softdat connection, built only from dat_* calls.
#include "tools/loopback_pair.h"

#include <cstdlib>
#include <cstring>

namespace softdat::tools {
namespace {

constexpr std::size_t kPage = 4096;

// A DTO completion event that succeeded, into `out`; else why not, into `error`.
bool SuccessfulDto(const DAT_EVENT& event, DAT_DTO_COMPLETION_EVENT_DATA& out, std::string& error) {
  if (event.event_number != DAT_DTO_COMPLETION_EVENT) {
    error = "unexpected event 0x" + std::to_string(event.event_number) + " on a DTO EVD";
    return false;
  }
  out = event.event_data.dto_completion_event_data;
  if (out.status != DAT_DTO_SUCCESS) {
    error = "DTO completed with status " + std::to_string(out.status);
    return false;
  }
  return true;
}

}  // namespace

DAT_LMR_TRIPLET Region::Local(std::size_t offset, std::size_t length) const {
  DAT_LMR_TRIPLET iov{};
  iov.virtual_address = reinterpret_cast<DAT_VADDR>(data + offset);
  iov.segment_length = static_cast<DAT_SEG_LENGTH>(length);
  iov.lmr_context = lmr_context;
  return iov;
}

DAT_RMR_TRIPLET Region::Remote(std::size_t offset, std::size_t length) const {
  DAT_RMR_TRIPLET iov{};
  iov.virtual_address = reinterpret_cast<DAT_VADDR>(data + offset);
  iov.segment_length = static_cast<DAT_SEG_LENGTH>(length);
  iov.rmr_context = rmr_context;
  return iov;
}

bool LoopbackPair::CreateEvd(DAT_EVD_FLAGS flags, DAT_EVD_HANDLE& out, std::string& error) {
  const DAT_RETURN status = dat_evd_create(ia, config_.evd_qlen, DAT_HANDLE_NULL, flags, &out);
  if (status != DAT_SUCCESS) error = DatError("dat_evd_create", status);
  return status == DAT_SUCCESS;
}

bool LoopbackPair::Open(const PairConfig& config, std::string& error) {
  config_ = config;
  DAT_RETURN status = dat_ia_open(const_cast<char*>(config_.ia_name.c_str()), 8, &async_evd_, &ia);
  if (status != DAT_SUCCESS) {
    ia = DAT_HANDLE_NULL;
    error = DatError(("dat_ia_open " + config_.ia_name).c_str(), status);
    return false;
  }
  if ((status = dat_pz_create(ia, &pz)) != DAT_SUCCESS) {
    error = DatError("dat_pz_create", status);
    return false;
  }
  if (!CreateEvd(DAT_EVD_DTO_FLAG, server_recv_evd, error) ||
      !CreateEvd(DAT_EVD_DTO_FLAG, server_request_evd, error) ||
      !CreateEvd(DAT_EVD_DTO_FLAG, client_recv_evd, error) ||
      !CreateEvd(DAT_EVD_DTO_FLAG, client_request_evd, error) ||
      !CreateEvd(DAT_EVD_CR_FLAG, cr_evd_, error) ||
      !CreateEvd(DAT_EVD_CONNECTION_FLAG, server_connect_evd_, error) ||
      !CreateEvd(DAT_EVD_CONNECTION_FLAG, client_connect_evd_, error))
    return false;

  DAT_SRQ_ATTR srq_attr{};
  srq_attr.max_recv_dtos = config_.srq_buffers;
  srq_attr.max_recv_iov = 1;
  srq_attr.low_watermark = DAT_SRQ_LW_DEFAULT;
  if ((status = dat_srq_create(ia, pz, &srq_attr, &srq)) != DAT_SUCCESS) {
    error = DatError("dat_srq_create", status);
    return false;
  }

  DAT_EP_ATTR attr{};
  attr.service_type = DAT_SERVICE_TYPE_RC;
  attr.qos = DAT_QOS_BEST_EFFORT;
  attr.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  attr.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  attr.max_request_dtos = config_.request_dtos;
  attr.max_recv_iov = 1;
  attr.max_request_iov = 1;
  attr.max_rdma_read_in = config_.rdma_reads;
  attr.max_rdma_read_out = config_.rdma_reads;
  attr.max_rdma_read_iov = 1;
  attr.max_rdma_write_iov = 1;
  attr.srq_soft_hw = DAT_HW_DEFAULT;
  // max_message_size and max_rdma_size 0: the provider fills in its own limits.
  status = dat_ep_create_with_srq(ia, pz, server_recv_evd, server_request_evd, server_connect_evd_, srq,
                                  &attr, &server_ep);
  if (status != DAT_SUCCESS) {
    error = DatError("dat_ep_create_with_srq", status);
    return false;
  }
  attr.max_recv_dtos = config_.client_recv_dtos;
  status = dat_ep_create(ia, pz, client_recv_evd, client_request_evd, client_connect_evd_, &attr, &client_ep);
  if (status != DAT_SUCCESS) {
    error = DatError("dat_ep_create", status);
    return false;
  }

  ConnectEnds ends;
  ends.server_ia = ia;
  ends.server_ep = server_ep;
  ends.server_connect_evd = server_connect_evd_;
  ends.cr_evd = cr_evd_;
  ends.client_ep = client_ep;
  ends.client_connect_evd = client_connect_evd_;
  if (!ConnectPair(ends, config_.wait_us, error, &port)) return false;
  connected_ = true;
  return true;
}

bool LoopbackPair::Register(std::size_t size, Region& out, std::string& error) {
  if (regions_ == kMaxRegions) {
    error = "too many regions";
    return false;
  }
  const std::size_t rounded = (size + kPage - 1) / kPage * kPage;
  void* memory = std::aligned_alloc(kPage, rounded);
  if (memory == nullptr) {
    error = "out of memory";
    return false;
  }
  std::memset(memory, 0, rounded);
  memory_[regions_++] = memory;
  DAT_REGION_DESCRIPTION region;
  region.for_va = memory;
  DAT_VLEN registered_length = 0;
  DAT_VADDR registered_address = 0;
  const DAT_RETURN status =
      dat_lmr_create(ia, DAT_MEM_TYPE_VIRTUAL, region, rounded, pz, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA,
                     &out.lmr, &out.lmr_context, &out.rmr_context, &registered_length, &registered_address);
  if (status != DAT_SUCCESS) {
    error = DatError("dat_lmr_create", status);
    return false;
  }
  out.data = static_cast<char*>(memory);
  out.size = size;
  return true;
}

bool LoopbackPair::WaitDto(DAT_EVD_HANDLE evd, DAT_DTO_COMPLETION_EVENT_DATA& out, std::string& error) {
  DAT_EVENT event;
  DAT_COUNT more = 0;
  const DAT_RETURN status = dat_evd_wait(evd, config_.wait_us, 1, &event, &more);
  if (status != DAT_SUCCESS) {
    error = DatError("dat_evd_wait", status);
    return false;
  }
  return SuccessfulDto(event, out, error);
}

bool LoopbackPair::TryDto(DAT_EVD_HANDLE evd, DAT_DTO_COMPLETION_EVENT_DATA& out, bool& failed,
                          std::string& error) {
  failed = false;
  DAT_EVENT event;
  const DAT_RETURN status = dat_evd_dequeue(evd, &event);
  if (DAT_GET_TYPE(status) == DAT_QUEUE_EMPTY) return false;
  failed = true;
  if (status != DAT_SUCCESS) {
    error = DatError("dat_evd_dequeue", status);
    return false;
  }
  if (!SuccessfulDto(event, out, error)) return false;
  failed = false;
  return true;
}

void LoopbackPair::Disconnect() {
  if (!connected_) return;
  connected_ = false;
  if (dat_ep_disconnect(client_ep, DAT_CLOSE_GRACEFUL_FLAG) != DAT_SUCCESS) return;
  // Both ends report the end; each wait is bounded, and anything else left on these EVDs is
  // dropped with the IA.
  for (DAT_EVD_HANDLE evd : {client_connect_evd_, server_connect_evd_}) {
    for (int i = 0; i < 4; ++i) {
      DAT_EVENT event;
      DAT_COUNT more = 0;
      if (dat_evd_wait(evd, 1'000'000, 1, &event, &more) != DAT_SUCCESS) break;
      if (event.event_number == DAT_CONNECTION_EVENT_DISCONNECTED) break;
    }
  }
}

LoopbackPair::~LoopbackPair() {
  if (ia != DAT_HANDLE_NULL) {
    Disconnect();
    dat_ia_close(ia, DAT_CLOSE_ABRUPT_FLAG);
  }
  for (int i = 0; i < regions_; ++i) std::free(memory_[i]);
}

}  // namespace softdat::tools
