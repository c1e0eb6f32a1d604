// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What an IA reports through dat_ia_query: IA and provider attributes. Every value is what this
// build and the IA's transport really do, so a consumer that sizes itself from them never meets a
// surprise.
//
// DAT types three provider attributes as counts without naming their values; softdat reports
// them as bit sets (documented in docs/CONFORMANCE.md), nonzero meaning "supported":
//   srq_watermarks_supported  bit 0: SRQ low watermark; bit 1: EP soft high watermark;
//                             bit 2: EP hard high watermark
//   srq_info_supported        bit 0: available_dto_count; bit 1: outstanding_dto_count
//   ep_recv_info_supported    bit 0: nbufs_allocated; bit 1: bufs_alloc_span, of an EP that takes
//                             its receives from an SRQ (an EP with its own queue reports both)
// A device transport (verbs) reports 0x1 and 0: the NIC hands SRQ buffers to an EP unseen.
#pragma once

#include <dat2/udat.h>

#include <deque>
#include <string>
#include <vector>

#include "base/version.h"
#include "transport/ia_params.h"
#include "transport/transport.h"

namespace softdat::core {

class Ia;

// The name and version softdat reports as its provider (provider_name, provider_version_*).
inline constexpr const char kProviderName[] = "softdat";
inline constexpr DAT_UINT32 kProviderVersionMajor = kVersionMajor;
inline constexpr DAT_UINT32 kProviderVersionMinor = kVersionMinor;

// One IA's provider-specific attributes (provider_specific_attr): what its device can do and the
// transport options in force (dat.conf params over the environment's defaults), so a consumer
// or datinfo can tell what it runs on. Owned by the IA: the pointers dat_ia_query hands out live
// as long as the IA, like ia_address_ptr. Built whole at IA creation; never moved (the list
// points into `texts`).
//   DAT_IB_RDMA_READ=TRUE    stock consumers look for it (dtest runs its RDMA Read and Send
//                            ping-pong phases only when it finds it); present when true
//   DAT_IB_TRANSPORT_MTU     the payload of one wire unit in bytes (Capabilities::transport_mtu):
//                            stock dtestsrq sizes its buffers from it unless given -b
//   SOFTDAT_SRQ_RESIZE       dat_srq_resize can grow an SRQ (siw cannot: DAT_MODEL_NOT_SUPPORTED)
//   SOFTDAT_RNR_WAITS        a Send that finds no receive buffer waits for one (tcp, InfiniBand
//                            and RoCE RNR retry); FALSE on iWARP devices, where it breaks the
//                            connection
//   SOFTDAT_TRANSPORT        tcp or verbs
//   SOFTDAT_DEVICE           tcp: the address or interface as dat.conf wrote it; verbs: "DEVICE PORT"
//   SOFTDAT_PROGRESS, ...    every IA option the transport reads, in force (dat.conf over the
//                            environment over the default), named by its environment variable
//                            (transport/ia_params.h IaOptionSpecs: tcp-only options on tcp IAs)
class ProviderSpecificAttributes {
 public:
  ProviderSpecificAttributes(const IaParams& params, const transport::Capabilities& caps);
  ProviderSpecificAttributes(const ProviderSpecificAttributes&) = delete;
  ProviderSpecificAttributes& operator=(const ProviderSpecificAttributes&) = delete;

  DAT_NAMED_ATTR* list() const { return const_cast<DAT_NAMED_ATTR*>(list_.data()); }
  DAT_COUNT count() const { return static_cast<DAT_COUNT>(list_.size()); }

 private:
  void Add(std::string name, std::string value);

  std::deque<std::string> texts_;  // a deque: adding never moves the strings already there
  std::vector<DAT_NAMED_ATTR> list_;
};

inline constexpr DAT_COUNT kSrqWatermarksSupported = 0x7;
inline constexpr DAT_COUNT kSrqLowWatermarkOnly = 0x1;
inline constexpr DAT_COUNT kSrqInfoSupported = 0x3;
inline constexpr DAT_COUNT kEpRecvInfoSupported = 0x3;

// How many EVDs, PZs and SRQs an IA may have (handles are cheap; these bound a runaway loop).
inline constexpr DAT_COUNT kMaxEvds = 1 << 16;
inline constexpr DAT_COUNT kMaxPzs = 1 << 16;
inline constexpr DAT_COUNT kMaxSrqs = 1 << 12;

void FillIaAttr(const Ia& ia, DAT_IA_ATTR& attr);
void FillProviderAttr(const Ia& ia, DAT_PROVIDER_ATTR& attr);

}  // namespace softdat::core
