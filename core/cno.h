// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The CNO handle object: binds an evd::Cno (notification semantics) to a DAT handle and its IA.
#pragma once

#include <memory>

#include "base/status.h"
#include "core/handle.h"
#include "evd/cno.h"

namespace softdat::core {

class Ia;

class Cno : public HandleHeader {
 public:
  static constexpr HandleKind kKind = HandleKind::kCno;

  static Status Create(Ia* ia, const DAT_OS_WAIT_PROXY_AGENT& agent, Cno** out);
  // dat_cno_fd_create: a CNO whose triggers also make `fd` readable.
  static Status CreateWithFd(Ia* ia, DAT_FD& fd, Cno** out);
  // kInvalidState/kCnoInUse while an EVD is attached or a thread waits.
  static Status Free(Cno* cno);
  void Query(DAT_CNO_PARAM_MASK mask, DAT_CNO_PARAM& param) const;

  // dat_cno_wait: the EVD that triggered it, or DAT_HANDLE_NULL (on a timeout too).
  Status Wait(DAT_TIMEOUT timeout, DAT_EVD_HANDLE& evd);
  // dat_cno_trigger: the EVD that triggered the CNO since the last wait, or DAT_HANDLE_NULL.
  DAT_EVD_HANDLE Trigger();
  // dat_cno_modify_agent.
  void ModifyAgent(const DAT_OS_WAIT_PROXY_AGENT& agent) { cno_.ModifyAgent(agent); }

  Ia* ia() const { return ia_; }
  evd::Cno& cno() { return cno_; }

  Cno(Ia* ia, const DAT_OS_WAIT_PROXY_AGENT& agent) : ia_(ia), cno_(agent) {}

 private:
  Ia* ia_;
  evd::Cno cno_;
  int fd_ = -1;  // dat_cno_fd_create's descriptor (owned by cno_)
};

}  // namespace softdat::core
