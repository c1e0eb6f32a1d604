// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Local I/O vector checks against the IA's memory table.
#include "core/local_iov.h"

#include "base/log.h"
#include "core/memory_table.h"

namespace softdat::core {

namespace {

// What `key` grants, from `cache` while the table has not been written since it was filled.
WindowView FindLmr(const MemoryTable& memory, std::uint32_t key, LocalIovCache* cache) {
  if (cache == nullptr) return memory.Find(key);
  const std::uint64_t writes = memory.writes();  // before the read: a write after it misses next time
  if (key != 0 && cache->key == key && cache->writes == writes) return cache->view;
  const WindowView view = memory.Find(key);
  if (view.is_lmr) *cache = LocalIovCache{writes, key, view};
  return view;
}

}  // namespace

Status CheckLocalIov(const MemoryTable& memory, const Pz* pz, std::span<const DAT_LMR_TRIPLET> iov,
                     LocalUse use, Detail iov_argument, std::span<Segment> out, CheckedIov& checked,
                     LocalIovCache* cache) {
  const bool receive = use == LocalUse::kReceive;
  // Local read is always granted, as on every RNIC (ibv_reg_mr has no local-read bit and the
  // reference provider drops DAT_MEM_PRIV_LOCAL_READ_FLAG): stock consumers such as dtest
  // register send buffers with only LOCAL_WRITE or REMOTE_* privileges and post sends from them.
  CheckedIov result;
  for (const DAT_LMR_TRIPLET& triplet : iov) {
    if (triplet.segment_length == 0) continue;
    const WindowView lmr = FindLmr(memory, triplet.lmr_context, cache);
    if (!lmr.is_lmr || (receive && !lmr.Allows(DAT_MEM_PRIV_LOCAL_WRITE_FLAG)))
      return Status(Code::kPrivilegesViolation, receive ? Detail::kPrivilegesWrite : Detail::kPrivilegesRead);
    if (lmr.pz != pz)
      return Status(Code::kProtectionViolation, receive ? Detail::kProtectionWrite : Detail::kProtectionRead);
    if (!lmr.Contains(triplet.virtual_address, triplet.segment_length)) {
      SOFTDAT_LOG(kWarn, "local iov: segment [%#llx, +%llu) lies outside LMR %#x [%#llx, +%llu)",
                  static_cast<unsigned long long>(triplet.virtual_address),
                  static_cast<unsigned long long>(triplet.segment_length), triplet.lmr_context,
                  static_cast<unsigned long long>(lmr.address), static_cast<unsigned long long>(lmr.length));
      return Status(Code::kInvalidParameter, iov_argument);
    }
    out[result.count++] = Segment{triplet.virtual_address, triplet.segment_length, triplet.lmr_context};
    result.length += triplet.segment_length;
  }
  checked = result;
  return Status::Ok();
}

}  // namespace softdat::core
