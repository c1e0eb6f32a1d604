// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// EndReports: a FIFO of EPs whose connection ended, posted by one thread at a time.
#include "core/end_reports.h"

#include <thread>

namespace softdat::core {

void EndReports::Report(EndReport& report) {
  {
    std::lock_guard lock(mutex_);
    report.pending_ = true;
    report.next_ = nullptr;
    if (tail_ == nullptr) {
      head_ = &report;
    } else {
      tail_->next_ = &report;
    }
    tail_ = &report;
  }
  if (!turn_.Request()) return;  // the thread posting now posts this one too
  do {
    while (EndReport* next = Pop()) {
      next->Post();
      Posted(*next);
    }
  } while (!turn_.Done());
}

EndReport* EndReports::Pop() {
  std::lock_guard lock(mutex_);
  EndReport* report = head_;
  if (report == nullptr) return nullptr;
  head_ = report->next_;
  if (head_ == nullptr) tail_ = nullptr;
  report->next_ = nullptr;
  return report;
}

void EndReports::Posted(EndReport& report) {
  std::lock_guard lock(mutex_);
  report.pending_ = false;
}

void EndReports::Await(EndReport& report) {
  // A post takes no lock and runs no consumer code (CNO agents are deferred), so the poster
  // finishes without help from this thread.
  while (true) {
    {
      std::lock_guard lock(mutex_);
      if (!report.pending_) return;
    }
    std::this_thread::yield();
  }
}

}  // namespace softdat::core
