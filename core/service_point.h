// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The service points that receive connection requests: PSP (public, any number of requests, the
// consumer picks an EP per request) and RSP (reserved for one EP, at most one request). Both
// listen through the transport on the port their connection qualifier names (conn_qual is the
// TCP port for the tcp transport, the rdma_cm port for verbs) and turn each request into a CR
// handle and a DAT_CONNECTION_REQUEST_EVENT on their EVD.
#pragma once

#include <atomic>
#include <memory>

#include "base/mutex.h"
#include "base/status.h"
#include "core/handle.h"
#include "transport/listener.h"

namespace softdat::core {

class Ia;
class Evd;
class Ep;

// No vtable in a handle object: a service point's listener interface is this member, which
// forwards to the owner's OnConnectRequest.
template <class Owner>
class ListenerEvents final : public transport::ListenEvents {
 public:
  explicit ListenerEvents(Owner& owner) : owner_(owner) {}
  void OnConnectRequest(std::unique_ptr<transport::PendingConnection> request) override {
    owner_.OnConnectRequest(std::move(request));
  }

 private:
  Owner& owner_;
};

class Psp : public HandleHeader {
 public:
  friend class ListenerEvents<Psp>;
  static constexpr HandleKind kKind = HandleKind::kPsp;

  // dat_psp_create (conn_qual 1..65535) and dat_psp_create_any (picks a free one). `evd` must
  // be a CR EVD of the same IA. DAT_PSP_PROVIDER_FLAG: kModelNotSupported (softdat reports
  // DAT_PSP_CREATES_EP_NEVER).
  static Status Create(Ia* ia, DAT_CONN_QUAL conn_qual, Evd* evd, DAT_PSP_FLAGS flags, Psp** out);
  static Status CreateAny(Ia* ia, DAT_CONN_QUAL& conn_qual, Evd* evd, DAT_PSP_FLAGS flags, Psp** out);
  // Stops listening; requests already reported stay valid.
  static Status Free(Psp* psp);
  static void Destroy(Psp* psp);
  void Query(DAT_PSP_PARAM_MASK mask, DAT_PSP_PARAM& param) const;

  Ia* ia() const { return ia_; }
  Evd* evd() const { return evd_; }
  DAT_CONN_QUAL conn_qual() const { return conn_qual_.load(std::memory_order_relaxed); }

  // Reports a connection request (its own, or one handed off to it) on this PSP's EVD.
  void Report(HandleHeader* cr);
  // Listens for UD endpoints' requests on the same qualifier too, once (Ia::WantDatagrams).
  void ListenDatagrams();

  Psp(Ia* ia, Evd* evd, DAT_PSP_FLAGS flags) : ia_(ia), evd_(evd), flags_(flags) {}

 private:
  static Status Listen(Ia* ia, std::uint16_t port, Evd* evd, DAT_PSP_FLAGS flags, Psp** out);
  void OnConnectRequest(std::unique_ptr<transport::PendingConnection> request);

  Ia* ia_;
  Evd* evd_;
  DAT_PSP_FLAGS flags_;
  ListenerEvents<Psp> events_{*this};
  // Written before listening starts (and, for dat_psp_create_any, once the port is known): the
  // transport's progress thread reads it for a request that may arrive before Listen returns.
  std::atomic<DAT_CONN_QUAL> conn_qual_{0};
  std::unique_ptr<transport::Listener> listener_;
  // UD endpoints' requests to the same qualifier, once the IA has a UD EP (ListenDatagrams).
  softdat::Mutex datagram_mutex_;
  std::unique_ptr<transport::Listener> datagram_listener_;
};

class Rsp : public HandleHeader {
 public:
  friend class ListenerEvents<Rsp>;
  static constexpr HandleKind kKind = HandleKind::kRsp;

  // dat_rsp_create: reserves `ep` (UNCONNECTED → RESERVED). A null EP (provider-created) is
  // kModelNotSupported.
  static Status Create(Ia* ia, DAT_CONN_QUAL conn_qual, Ep* ep, Evd* evd, Rsp** out);
  // Stops listening and, if its request was not accepted, returns the EP to UNCONNECTED.
  static Status Free(Rsp* rsp);
  static void Destroy(Rsp* rsp);
  void Query(DAT_RSP_PARAM_MASK mask, DAT_RSP_PARAM& param) const;

  Ia* ia() const { return ia_; }
  Ep* ep() const { return ep_; }

  Rsp(Ia* ia, Ep* ep, Evd* evd, DAT_CONN_QUAL conn_qual) : ia_(ia), ep_(ep), evd_(evd), conn_qual_(conn_qual) {}

 private:
  void OnConnectRequest(std::unique_ptr<transport::PendingConnection> request);

  Ia* ia_;
  Ep* ep_;
  Evd* evd_;
  DAT_CONN_QUAL conn_qual_;
  std::atomic<bool> used_{false};  // an RSP generates at most one connection request
  ListenerEvents<Rsp> events_{*this};
  std::unique_ptr<transport::Listener> listener_;
};

}  // namespace softdat::core
