// DtoLedger.
#include "testing/ledger/dto_ledger.h"

#include <cstdio>

namespace softdat::testing {

DAT_DTO_COOKIE DtoLedger::Post(DtoKind kind, std::uint64_t) {
  std::lock_guard lock(mu_);
  entries_.push_back(Entry{kind, State::kOutstanding});
  ++counts_.posted;
  ++counts_.outstanding;
  if (kind == DtoKind::kSrqRecv) ++counts_.srq_posted;
  DAT_DTO_COOKIE cookie;
  cookie.as_64 = entries_.size();
  return cookie;
}

void DtoLedger::Unpost(DAT_DTO_COOKIE cookie) {
  std::lock_guard lock(mu_);
  if (cookie.as_64 == 0 || cookie.as_64 > entries_.size()) return;
  Entry& entry = entries_[cookie.as_64 - 1];
  if (entry.state != State::kOutstanding) return;
  entry.state = State::kFree;
  --counts_.posted;
  --counts_.outstanding;
  if (entry.kind == DtoKind::kSrqRecv) --counts_.srq_posted;
}

bool DtoLedger::Complete(const DAT_DTO_COMPLETION_EVENT_DATA& completion, DtoKind* kind) {
  std::lock_guard lock(mu_);
  const std::uint64_t cookie = completion.user_cookie.as_64;
  if (cookie == 0 || cookie > entries_.size() || entries_[cookie - 1].state == State::kFree) {
    violations_.push_back("completion for cookie " + std::to_string(cookie) + " that was never posted");
    return false;
  }
  Entry& entry = entries_[cookie - 1];
  if (kind != nullptr) *kind = entry.kind;
  if (entry.state == State::kCompleted) {
    violations_.push_back(std::string("second completion of ") + Describe(entry.kind) + " cookie " +
                          std::to_string(cookie) + " (status " + std::to_string(completion.status) + ")");
    return false;
  }
  entry.state = State::kCompleted;
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
    for (std::size_t i = 0; i < entries_.size() && listed < 8; ++i) {
      if (entries_[i].state != State::kOutstanding || entries_[i].kind == DtoKind::kSrqRecv) continue;
      kinds += std::string(" ") + Describe(entries_[i].kind) + "#" + std::to_string(i + 1);
      ++listed;
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
