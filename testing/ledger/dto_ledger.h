// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The exact account of a DAT workload under faults: every DTO posted (its cookie comes from the
// ledger), every completion that names one, and every payload checked on delivery. At the end it
// says what went wrong, if anything:
//  - a completion for a cookie never posted, or a second completion for one (exactly once);
//  - a DTO still outstanding when the connection is over (every posted DTO completes or is
//    flushed);
//  - a corrupt payload delivered with a successful completion (the transport must break the
//    connection instead);
//  - an SRQ whose counts do not add up: posted = on the SRQ + held by EPs + completed.
// Thread-safe (one mutex): a workload may post from one thread and reap from another. Memory stays
// flat over a long run: only outstanding DTOs are kept (cookies are handed out in sequence, so a
// completion naming an earlier cookie that is not outstanding is a second one).
#pragma once

#include <dat2/udat.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace softdat::testing {

enum class DtoKind : std::uint8_t { kSend, kRecv, kSrqRecv, kRdmaWrite, kRdmaRead };

struct LedgerCounts {
  std::uint64_t posted = 0;
  std::uint64_t completed = 0;    // every completion, whatever its status
  std::uint64_t succeeded = 0;    // DAT_DTO_SUCCESS
  std::uint64_t flushed = 0;      // DAT_DTO_ERR_FLUSHED
  std::uint64_t flushed_reads = 0;  // ... of them RDMA Reads
  std::uint64_t failed = 0;       // any other status
  std::uint64_t outstanding = 0;  // posted, not completed
  std::uint64_t delivered_intact = 0;   // payloads checked after a successful completion
  std::uint64_t delivered_corrupt = 0;  // ... that failed the check (always a violation)
  std::uint64_t srq_posted = 0;         // DtoKind::kSrqRecv posted
  std::uint64_t srq_completed = 0;      // ... and completed
};

class DtoLedger {
 public:
  // Records a DTO about to be posted and returns the cookie to post it with. `tag` is the
  // caller's (which buffer, which Read), given back with the completion.
  DAT_DTO_COOKIE Post(DtoKind kind, std::uint64_t length, std::uint32_t tag = 0);
  // The post call refused it (DAT_RETURN not success): it never happened.
  void Unpost(DAT_DTO_COOKIE cookie);
  // A DTO completion event. Returns false (and records a violation) for an unknown cookie or a
  // second completion. `kind` and `tag` are what the cookie was posted with, for the caller.
  bool Complete(const DAT_DTO_COMPLETION_EVENT_DATA& completion, DtoKind* kind = nullptr,
                std::uint32_t* tag = nullptr);
  // A successful completion's payload was checked: intact or not. A corrupt one is a violation.
  void Delivered(bool intact, const std::string& what = "");

  // Checks an SRQ at a quiet point (no completion left unreaped): posted = available (on the
  // SRQ) + held (by its EPs, the sum of dat_ep_recv_query's nbufs_allocated) + completed, and the
  // SRQ's outstanding count = posted - completed. Records a violation when they disagree.
  void CheckSrq(DAT_SRQ_HANDLE srq, std::uint64_t held_by_eps);

  // A violation found by the caller (an unexpected event, a DAT_RETURN that should not be).
  void Violation(const std::string& what);

  LedgerCounts counts() const;
  // What is wrong. With `connection_over`, every posted DTO must have completed, except SRQ
  // receives still on the SRQ (CheckSrq accounts for those).
  std::vector<std::string> Violations(bool connection_over) const;
  // "posted 1200, succeeded 1100, flushed 100, flushed_reads 4, failed 0, outstanding 0, intact 550,
  // corrupt 0"
  std::string Summary() const;

 private:
  struct Entry {
    DtoKind kind;
    std::uint32_t tag;
  };

  mutable std::mutex mu_;
  std::map<std::uint64_t, Entry> outstanding_;  // by cookie
  std::set<std::uint64_t> unposted_;            // cookies whose post was refused
  std::uint64_t next_cookie_ = 1;
  LedgerCounts counts_;
  std::vector<std::string> violations_;
};

const char* Describe(DtoKind kind);

}  // namespace softdat::testing
