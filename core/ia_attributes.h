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

namespace softdat::core {

class Ia;

// The name and version softdat reports as its provider (provider_name, provider_version_*).
inline constexpr const char kProviderName[] = "softdat";
inline constexpr DAT_UINT32 kProviderVersionMajor = 0;
inline constexpr DAT_UINT32 kProviderVersionMinor = 2;

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
