// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// IA and provider attribute values, from the IA's transport capabilities and softdat's own limits.
#include "core/ia_attributes.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "core/dat_ib.h"
#include "core/ia.h"
#include "core/request_queue.h"
#include "core/srq.h"
#include "evd/event_queue.h"
#include "srq/ep_recv_queue.h"

namespace softdat::core {
namespace {

void CopyName(char (&to)[DAT_NAME_MAX_LENGTH], const char* from) {
  std::strncpy(to, from, DAT_NAME_MAX_LENGTH - 1);
  to[DAT_NAME_MAX_LENGTH - 1] = '\0';
}

DAT_COUNT Count(std::uint32_t value) {
  return static_cast<DAT_COUNT>(std::min<std::uint32_t>(value, 0x7FFFFFFF));
}

const char* Boolean(bool value) { return value ? "TRUE" : "FALSE"; }

}  // namespace

ProviderSpecificAttributes::ProviderSpecificAttributes(const IaParams& params,
                                                       const transport::Capabilities& caps) {
  if (caps.rdma_read) Add("DAT_IB_RDMA_READ", "TRUE");
  Add("DAT_IB_TRANSPORT_MTU", std::to_string(caps.transport_mtu));
  // The IB extension's operations, by the names consumers test before they use one (stock dtestx
  // does): TRUE where the transport carries it, FALSE (and DAT_MODEL_NOT_SUPPORTED) where not.
  // DAT_COUNTERS is there when counters are, as OFED DAPL built with counters says.
  Add(DAT_IB_ATTR_FETCH_AND_ADD, Boolean(caps.atomics));
  Add(DAT_IB_ATTR_CMP_AND_SWAP, Boolean(caps.atomics));
  Add(DAT_IB_ATTR_IMMED_DATA, Boolean(caps.immediate_data));
  Add(DAT_IB_ATTR_UD, Boolean(caps.datagrams));
  Add(DAT_IB_ATTR_COUNTERS, "TRUE");
  if (caps.datagrams) Add("SOFTDAT_UD_MTU", std::to_string(caps.max_datagram));
  Add("SOFTDAT_SRQ_RESIZE", Boolean(caps.srq_resize));
  Add("SOFTDAT_RNR_WAITS", Boolean(caps.rnr_waits));
  const bool tcp = params.kind == TransportKind::kTcp;
  Add("SOFTDAT_TRANSPORT", tcp ? "tcp" : "verbs");
  Add("SOFTDAT_DEVICE", tcp ? params.address : params.device + " " + std::to_string(params.port));
  // What moves data between the consumer's calls (softdat(7), PROGRESS): datinfo -v shows it.
  Add("SOFTDAT_PROGRESS_BOUND",
      !tcp ? "the device places arrivals and transmits posted Work; the consumer's calls reap completions"
      : params.options.progress == ProgressMode::kPoll
          ? "only the consumer's calls: a post writes at once; arrivals are placed inside dat_evd_wait, "
            "dat_evd_dequeue and dat_cno_wait on the IA (an RDMA Write into memory the consumer spins on waits "
            "for its next call)"
          : "a progress thread: arrivals are placed and posted Work written within handoff_us of the "
            "consumer's last call, whatever it does next");
  // Every IA option the transport reads, in force, under its environment variable's name.
  for (const IaOptionSpec& spec : IaOptionSpecs())
    if (tcp || !spec.tcp_only) Add(spec.variable, spec.show(params.options));
  list_.reserve(texts_.size() / 2);
  for (std::size_t i = 0; i + 1 < texts_.size(); i += 2)
    list_.push_back({texts_[i].c_str(), texts_[i + 1].c_str()});
}

void ProviderSpecificAttributes::Add(std::string name, std::string value) {
  texts_.push_back(std::move(name));
  texts_.push_back(std::move(value));
}

void FillIaAttr(const Ia& ia, DAT_IA_ATTR& attr) {
  const transport::Capabilities& caps = ia.capabilities();
  const std::uint32_t iov = std::min({caps.max_segments, RequestQueue::kMaxIov, srq::EpRecvQueue::kMaxRecvIov});
  const SrqLimits srq = ia.srq_limits();
  std::memset(&attr, 0, sizeof attr);
  CopyName(attr.adapter_name, ia.name().c_str());
  CopyName(attr.vendor_name, kProviderName);
  attr.hardware_version_major = kProviderVersionMajor;
  attr.hardware_version_minor = kProviderVersionMinor;
  attr.ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(const_cast<sockaddr_in*>(&ia.address()));
  attr.max_eps = Count(caps.max_endpoints);
  attr.max_dto_per_ep = Count(std::min(caps.max_send_work, RequestQueue::kMaxRequests));
  attr.max_rdma_read_per_ep_in = Count(caps.max_rdma_read_in);
  attr.max_rdma_read_per_ep_out = Count(caps.max_rdma_read_out);
  attr.max_evds = kMaxEvds;
  attr.max_evd_qlen = evd::EventQueue::kMaxQueueLength;
  attr.max_iov_segments_per_dto = Count(iov);
  attr.max_lmrs = Count(Ia::kMaxMemoryKeys);
  attr.max_lmr_block_size = ~DAT_SEG_LENGTH{0};
  attr.max_lmr_virtual_address = ~DAT_VADDR{0};
  attr.max_pzs = kMaxPzs;
  attr.max_message_size = caps.max_message_size;
  attr.max_rdma_size = caps.max_rdma_size;
  attr.max_rmrs = caps.device_memory_keys ? 0 : Count(Ia::kMaxMemoryKeys);  // no windows on a device (rmr.h)
  attr.max_rmr_target_address = ~DAT_VADDR{0};
  attr.max_srqs = caps.srq ? kMaxSrqs : 0;
  attr.max_ep_per_srq = caps.srq ? Count(caps.max_endpoints) : 0;  // an SRQ serves any number of its IA's EPs
  attr.max_recv_per_srq = Count(srq.max_recv_dtos);
  attr.max_iov_segments_per_rdma_read = Count(iov);
  attr.max_iov_segments_per_rdma_write = Count(iov);
  attr.max_rdma_read_in = Count(caps.max_rdma_read_in);
  attr.max_rdma_read_out = Count(caps.max_rdma_read_out);
  attr.max_rdma_read_per_ep_in_guaranteed = DAT_TRUE;
  attr.max_rdma_read_per_ep_out_guaranteed = DAT_TRUE;
  attr.zb_supported = DAT_FALSE;
  // The IB extension set (dat_ib_extensions.h 2.0.9) on every transport: counters and the query
  // calls everywhere, each operation where the provider attributes say TRUE.
  attr.extension_supported = DAT_EXTENSION_IB;
  attr.extension_version = DAT_IB_EXTENSION_VERSION;
}

void FillProviderAttr(const Ia& ia, DAT_PROVIDER_ATTR& attr) {
  const transport::Capabilities& caps = ia.capabilities();
  // evd_stream_merging_supported is a const member: build the value, then copy it in whole.
  DAT_PROVIDER_ATTR value{};  // value-initialized: every field zero
  CopyName(value.provider_name, kProviderName);
  value.provider_version_major = kProviderVersionMajor;
  value.provider_version_minor = kProviderVersionMinor;
  value.dapl_version_major = DAT_VERSION_MAJOR;
  value.dapl_version_minor = DAT_VERSION_MINOR;
  value.lmr_mem_types_supported = DAT_MEM_TYPE_VIRTUAL;
  value.iov_ownership_on_return = DAT_IOV_CONSUMER;
  value.dat_qos_supported = DAT_QOS_BEST_EFFORT;
  // A device cannot tell a solicited receive completion from another (see Ep::DeliverReady).
  const bool knows_solicited = caps.recv_solicited_known;
  value.completion_flags_supported = static_cast<DAT_COMPLETION_FLAGS>(
      DAT_COMPLETION_SUPPRESS_FLAG | (knows_solicited ? DAT_COMPLETION_SOLICITED_WAIT_FLAG : 0) |
      DAT_COMPLETION_UNSIGNALLED_FLAG | DAT_COMPLETION_BARRIER_FENCE_FLAG | DAT_COMPLETION_EVD_THRESHOLD_FLAG);
  // Every call is MT-safe as its man page says, but the stock registry uses this field as part
  // of the provider's key: dat_ia_close looks the provider up by (name, version, is_thread_safe)
  // and fails with DAT_PROVIDER_NOT_FOUND unless it equals the dat.conf registration, which is
  // "nonthreadsafe" in every stock dat.conf line (and ours). Report what we registered as.
  value.is_thread_safe = DAT_FALSE;
  value.max_private_data_size = Count(caps.max_private_data);
  value.supports_multipath = DAT_FALSE;
  value.ep_creator = DAT_PSP_CREATES_EP_NEVER;
  value.pz_support = DAT_PZ_UNIQUE;
  value.optimal_buffer_alignment = 64;
  // Any EVD can take any mix of event streams: evd/ has one generic event ring.
  DAT_BOOLEAN merging[6][6];
  for (auto& row : merging)
    for (DAT_BOOLEAN& cell : row) cell = DAT_TRUE;
  std::memcpy(const_cast<DAT_BOOLEAN*>(&value.evd_stream_merging_supported[0][0]), merging, sizeof merging);
  value.srq_supported = caps.srq ? DAT_TRUE : DAT_FALSE;
  // A device takes SRQ buffers for an EP without telling which until they complete: the EP high
  // watermarks (bits 1, 2) and an SRQ EP's receive counts need the software receive model.
  const bool software = caps.receive_model == transport::ReceiveModel::kSoftware;
  value.srq_watermarks_supported =
      !caps.srq || !caps.srq_limit ? 0 : software ? kSrqWatermarksSupported : kSrqLowWatermarkOnly;
  // A device checks a receive buffer's key against the QP's PD, not the SRQ's (rxe does).
  value.srq_ep_pz_difference_supported = caps.srq && software ? DAT_TRUE : DAT_FALSE;
  value.srq_info_supported = caps.srq ? kSrqInfoSupported : 0;
  value.ep_recv_info_supported = software ? kEpRecvInfoSupported : 0;
  value.lmr_sync_req = DAT_FALSE;
  value.dto_async_return_guaranteed = DAT_FALSE;
  value.rdma_write_for_rdma_read_req = DAT_FALSE;
  value.rdma_read_lmr_rmr_context_exposure = DAT_FALSE;
  value.rmr_scope_supported = DAT_RMR_SCOPE_EP;
  value.is_signal_safe = DAT_FALSE;
  value.ha_supported = DAT_FALSE;
  value.ha_loadbalancing = DAT_HA_LB_NONE;
  value.provider_specific_attr = ia.provider_specific().list();
  value.num_provider_specific_attr = ia.provider_specific().count();
  std::memcpy(static_cast<void*>(&attr), &value, sizeof attr);
}

}  // namespace softdat::core
