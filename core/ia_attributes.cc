// IA and provider attribute values. Until a transport's data path is built, the data-path limits
// are reported as zero (no EPs, no SRQs) rather than promised.
#include "core/ia_attributes.h"

#include <cstring>

#include "core/ia.h"

namespace softdat::core {
namespace {

void CopyName(char (&to)[DAT_NAME_MAX_LENGTH], const char* from) {
  std::strncpy(to, from, DAT_NAME_MAX_LENGTH - 1);
  to[DAT_NAME_MAX_LENGTH - 1] = '\0';
}

}  // namespace

void FillIaAttr(const Ia& ia, DAT_IA_ATTR& attr) {
  std::memset(&attr, 0, sizeof attr);
  CopyName(attr.adapter_name, ia.name().c_str());
  CopyName(attr.vendor_name, kProviderName);
  attr.hardware_version_major = kProviderVersionMajor;
  attr.hardware_version_minor = kProviderVersionMinor;
  attr.ia_address_ptr = reinterpret_cast<DAT_IA_ADDRESS_PTR>(const_cast<sockaddr_in*>(&ia.address()));
  attr.max_evds = 0;
  attr.max_evd_qlen = 0;
  attr.max_pzs = 1 << 20;
  attr.max_lmrs = Ia::kMaxLmrs;
  attr.max_lmr_block_size = ~DAT_SEG_LENGTH{0};
  attr.max_lmr_virtual_address = ~DAT_VADDR{0};
  attr.max_eps = 0;
  attr.max_srqs = 0;
  attr.extension_version = 0;
  attr.num_transport_attr = 0;
  attr.transport_attr = nullptr;
  attr.num_vendor_attr = 0;
  attr.vendor_attr = nullptr;
  attr.extension_supported = DAT_EXTENSION_NONE;
}

void FillProviderAttr(const Ia& ia, DAT_PROVIDER_ATTR& attr) {
  (void)ia;
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
  value.completion_flags_supported = DAT_COMPLETION_DEFAULT_FLAG;
  value.is_thread_safe = DAT_FALSE;
  value.max_private_data_size = 0;
  value.supports_multipath = DAT_FALSE;
  value.ep_creator = DAT_PSP_CREATES_EP_NEVER;
  value.pz_support = DAT_PZ_UNIQUE;
  value.optimal_buffer_alignment = 64;
  value.srq_supported = DAT_FALSE;
  value.srq_watermarks_supported = 0;
  value.srq_ep_pz_difference_supported = DAT_FALSE;
  value.srq_info_supported = 0;
  value.ep_recv_info_supported = 0;
  value.lmr_sync_req = DAT_FALSE;
  value.dto_async_return_guaranteed = DAT_FALSE;
  value.rdma_write_for_rdma_read_req = DAT_FALSE;
  value.rdma_read_lmr_rmr_context_exposure = DAT_FALSE;
  value.rmr_scope_supported = DAT_RMR_SCOPE_EP;
  value.is_signal_safe = DAT_FALSE;
  value.ha_supported = DAT_FALSE;
  value.num_provider_specific_attr = 0;
  value.provider_specific_attr = nullptr;
  std::memcpy(static_cast<void*>(&attr), &value, sizeof attr);
}

}  // namespace softdat::core
