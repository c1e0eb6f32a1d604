// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DtoLedger.
#include "testing/ledger/dto_ledger.h"

#include <cstdio>

namespace softdat::testing {

DAT_DTO_COOKIE DtoLedger::Post(DtoKind kind, std::uint64_t, std::uint32_t tag) {
  std::lock_guard lock(mu_);
  DAT_DTO_COOKIE cookie;
  cookie.as_64 = next_cookie_++;
  outstanding_.emplace_hint(outstanding_.end(), cookie.as_64, Entry{kind, tag});
  ++counts_.posted;
  ++counts_.outstanding;
  if (kind == DtoKind::kSrqRecv) ++counts_.srq_posted;
  return cookie;
}

void DtoLedger::Unpost(DAT_DTO_COOKIE cookie) {
  std::lock_guard lock(mu_);
  const auto it = outstanding_.find(cookie.as_64);
  if (it == outstanding_.end()) return;
  --counts_.posted;
  --counts_.outstanding;
  if (it->second.kind == DtoKind::kSrqRecv) --counts_.srq_posted;
  outstanding_.erase(it);
  // The cookie goes back to be handed out again (a refused post is always the last one made), so
  // nothing accumulates when posts are refused over and over (an SRQ at its size).
  if (cookie.as_64 + 1 == next_cookie_) {
    --next_cookie_;
  } else {
    unposted_.insert(cookie.as_64);
  }
}

bool DtoLedger::Complete(const DAT_DTO_COMPLETION_EVENT_DATA& completion, DtoKind* kind, std::uint32_t* tag) {
  std::lock_guard lock(mu_);
  const std::uint64_t cookie = completion.user_cookie.as_64;
  const auto it = outstanding_.find(cookie);
  if (it == outstanding_.end()) {
    const bool posted = cookie != 0 && cookie < next_cookie_ && unposted_.count(cookie) == 0;
    violations_.push_back((posted ? "second completion of cookie " : "completion for a cookie never posted: ") +
                          std::to_string(cookie) + " (status " + std::to_string(completion.status) + ")");
    return false;
  }
  const Entry entry = it->second;
  outstanding_.erase(it);
  if (kind != nullptr) *kind = entry.kind;
  if (tag != nullptr) *tag = entry.tag;
  ++counts_.completed;
  --counts_.outstanding;
  if (entry.kind == DtoKind::kSrqRecv) ++counts_.srq_completed;
  if (completion.status == DAT_DTO_SUCCESS) {
    ++counts_.succeeded;
  } else if (completion.status == DAT_DTO_ERR_FLUSHED) {
    ++counts_.flushed;
    if (entry.kind == DtoKind::kRdmaRead) ++counts_.flushed_reads;
  } else {
    ++counts_.failed;
  }
  return true;
}

void DtoLedger::Delivered(bool intact, const std::string& what) {
  std::lock_guard lock(mu_);
  if (intact) {
    ++counts_.delivered_intact;
  } else {
    ++counts_.delivered_corrupt;
    violations_.push_back("corrupt payload delivered with a successful completion: " + what);
  }
}

void DtoLedger::CheckSrq(DAT_SRQ_HANDLE srq, std::uint64_t held_by_eps) {
  DAT_SRQ_PARAM param{};
  const DAT_RETURN status = dat_srq_query(srq, DAT_SRQ_FIELD_ALL, &param);
  std::lock_guard lock(mu_);
  if (status != DAT_SUCCESS) {
    violations_.push_back("dat_srq_query failed: " + std::to_string(status));
    return;
  }
  const std::uint64_t not_completed = counts_.srq_posted - counts_.srq_completed;
  char text[256];
  if (static_cast<std::uint64_t>(param.available_dto_count) + held_by_eps != not_completed) {
    std::snprintf(text, sizeof text,
                  "SRQ counts do not add up: posted %llu != available %d + held by EPs %llu + completed %llu",
                  static_cast<unsigned long long>(counts_.srq_posted), param.available_dto_count,
                  static_cast<unsigned long long>(held_by_eps), static_cast<unsigned long long>(counts_.srq_completed));
    violations_.push_back(text);
  }
  if (static_cast<std::uint64_t>(param.outstanding_dto_count) != not_completed) {
    std::snprintf(text, sizeof text, "SRQ outstanding_dto_count %d, but posted - completed is %llu",
                  param.outstanding_dto_count, static_cast<unsigned long long>(not_completed));
    violations_.push_back(text);
  }
}

void DtoLedger::Violation(const std::string& what) {
  std::lock_guard lock(mu_);
  violations_.push_back(what);
}

LedgerCounts DtoLedger::counts() const {
  std::lock_guard lock(mu_);
  return counts_;
}

std::vector<std::string> DtoLedger::Violations(bool connection_over) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> found = violations_;
  // SRQ buffers still on the SRQ are not the connection's: CheckSrq accounts for them.
  const std::uint64_t own = counts_.outstanding - (counts_.srq_posted - counts_.srq_completed);
  if (connection_over && own != 0) {
    std::string kinds;
    std::uint64_t listed = 0;
    for (const auto& [cookie, entry] : outstanding_) {
      if (entry.kind == DtoKind::kSrqRecv) continue;
      kinds += std::string(" ") + Describe(entry.kind) + "#" + std::to_string(cookie);
      if (++listed == 8) break;
    }
    found.push_back(std::to_string(own) + " DTOs never completed nor flushed:" + kinds);
  }
  return found;
}

std::string DtoLedger::Summary() const {
  const LedgerCounts c = counts();
  char text[256];
  std::snprintf(text, sizeof text,
                "posted %llu, succeeded %llu, flushed %llu, flushed_reads %llu, failed %llu, outstanding %llu, "
                "intact %llu, corrupt %llu",
                static_cast<unsigned long long>(c.posted), static_cast<unsigned long long>(c.succeeded),
                static_cast<unsigned long long>(c.flushed), static_cast<unsigned long long>(c.flushed_reads),
                static_cast<unsigned long long>(c.failed),
                static_cast<unsigned long long>(c.outstanding), static_cast<unsigned long long>(c.delivered_intact),
                static_cast<unsigned long long>(c.delivered_corrupt));
  return text;
}

const char* Describe(DtoKind kind) {
  switch (kind) {
    case DtoKind::kSend: return "send";
    case DtoKind::kRecv: return "recv";
    case DtoKind::kSrqRecv: return "srq-recv";
    case DtoKind::kRdmaWrite: return "rdma-write";
    case DtoKind::kRdmaRead: return "rdma-read";
  }
  return "?";
}

}  // namespace softdat::testing
