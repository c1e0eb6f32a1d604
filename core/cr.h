// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The CR handle object: one pending connection request, from its arrival at a PSP or RSP until
// the consumer accepts (onto an EP) or rejects it, each with private data. The private data and
// addresses dat_cr_query reports stay valid until then.
#pragma once

#include <netinet/in.h>

#include <memory>

#include "base/status.h"
#include "core/handle.h"
#include "transport/listener.h"

namespace softdat::core {

class Ia;
class Ep;
class Rsp;

class Cr : public HandleHeader {
 public:
  static constexpr HandleKind kKind = HandleKind::kCr;

  // Creates and tracks the CR of a request that arrived at `sp` (a PSP, or an RSP with its EP).
  static Cr* Make(Ia* ia, std::unique_ptr<transport::PendingConnection> pending, HandleHeader* sp,
                  DAT_CONN_QUAL conn_qual, Ep* local_ep, Rsp* rsp);

  // dat_cr_accept: `ep` may be null for an RSP's request (its reserved EP takes it). On success
  // the CR is gone. A refusal of the arguments or of the EP's state leaves the CR valid.
  static Status Accept(Cr* cr, Ep* ep, DAT_COUNT private_data_size, const void* private_data);
  // dat_cr_reject: the CR is gone.
  static Status Reject(Cr* cr, DAT_COUNT private_data_size, const void* private_data);
  // dat_cr_handoff: reports the request again at this IA's PSP of `conn_qual`.
  static Status Handoff(Cr* cr, DAT_CONN_QUAL conn_qual);
  static void Destroy(Cr* cr);

  void Query(DAT_CR_PARAM_MASK mask, DAT_CR_PARAM& param) const;
  DAT_EVENT ArrivalEvent(DAT_EVD_HANDLE evd, DAT_HANDLE sp) const;

  Cr(Ia* ia, std::unique_ptr<transport::PendingConnection> pending, DAT_CONN_QUAL conn_qual, Ep* local_ep,
     Rsp* rsp);

 private:
  Ia* ia_;
  std::unique_ptr<transport::PendingConnection> pending_;
  DAT_CONN_QUAL conn_qual_;
  Ep* local_ep_;
  Rsp* rsp_;
  sockaddr_in remote_address_;
};

}  // namespace softdat::core
