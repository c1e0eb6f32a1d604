// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The EP handle object: one DAT endpoint, the transport endpoint under it, and the rules DAT puts
// on the EP itself — states, posting checks, requests completed in posting order, completion
// flags, connection events, flushes. Every receive rule (which buffer a message takes, MSN order,
// flush, what is held, high watermarks, waiting for SRQ buffers) belongs to its one
// srq::ReceiveSource: its own queue or its account on an SRQ, chosen at creation; the EP never
// asks which.
//
// On a device transport (Capabilities::receive_model kDevice) receives are also posted down and
// the device picks the buffer a message lands in: the EP's own buffers are posted to its
// transport endpoint under the recv_id the source gives them, SRQ buffers by the SRQ itself. A
// device completion names its recv_id and the source takes exactly that buffer
// (TakeDeviceChosen), so srq/ still orders, counts and flushes what the device completed.
//
// Threads. Consumer calls may come from any thread (DAT marks most of them MT-unsafe per EP;
// softdat makes them safe anyway). The transport calls the EndpointEvents from its progress
// context. Four locks, always taken in this order and never held while calling into the
// transport's blocking paths or into an EVD:
//   resources_mutex_  the transport endpoint, the receive source and the attributes, which
//                     dat_ep_modify and dat_ep_reset replace (exclusive) while every other consumer
//                     call that uses them holds it shared; posts of requests hold post_mutex_
//                     instead, which the replacement also takes
//   post_mutex_       serializes posts of requests (the request queue's tail has one writer)
//   mutex_            state, connection bookkeeping, watermarks
//   (queues' own internal mutexes)
// Events reach EVDs only through Deliver(), run by one thread at a time (DeliveryTurn) with no
// lock held, because an EVD may call a CNO proxy agent — consumer code that may call back in.
#pragma once

#include <dat2/udat.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>

#include "base/mutex.h"
#include "base/status.h"
#include "core/delivery_turn.h"
#include "core/end_reports.h"
#include "core/handle.h"
#include "core/request_queue.h"
#include "srq/buffer_waiter.h"
#include "srq/receive_source.h"
#include "transport/transport.h"

namespace softdat::core {

class Ia;
class Pz;
class Evd;
class Srq;
class Rmr;
class Rsp;

class Ep : public HandleHeader {
 public:
  static constexpr HandleKind kKind = HandleKind::kEp;

  // dat_ep_create / dat_ep_create_with_srq (srq non-null). `attr` null: provider defaults. EVDs
  // may be null ("not interested"); a non-null one must carry the stream's EVD flag.
  static Status Create(Ia* ia, Pz* pz, Evd* recv_evd, Evd* request_evd, Evd* connect_evd, Srq* srq,
                       const DAT_EP_ATTR* attr, Ep** out);
  // dat_ep_free: kInvalidState in RESERVED, PASSIVE_CONNECTION_PENDING and
  // TENTATIVE_CONNECTION_PENDING. Aborts any connection, completes what was outstanding, frees.
  static Status Free(Ep* ep);
  // Abrupt IA close: the same, in any state.
  static void Destroy(Ep* ep);

  void Query(DAT_EP_PARAM_MASK mask, DAT_EP_PARAM& param) const;
  Status Modify(DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM& param);
  // recv_idle and request_idle may be null (not asked for).
  void GetStatus(DAT_EP_STATE& state, DAT_BOOLEAN* recv_idle, DAT_BOOLEAN* request_idle) const;

  // Active side. `remote` is the peer IA address (AF_INET); conn_qual its PSP/RSP port.
  Status Connect(const sockaddr* remote, DAT_CONN_QUAL conn_qual, DAT_TIMEOUT timeout,
                 DAT_COUNT private_data_size, const void* private_data);
  // dat_ep_dup_connect: connects to where `dup` is connected (kInvalidState unless it is).
  Status DupConnect(const Ep& dup, DAT_TIMEOUT timeout, DAT_COUNT private_data_size, const void* private_data);
  Status Disconnect(DAT_CLOSE_FLAGS flags);
  Status Reset();

  Status PostRecv(DAT_COUNT num_segments, const DAT_LMR_TRIPLET* local_iov, DAT_DTO_COOKIE cookie,
                  DAT_COMPLETION_FLAGS flags);
  Status PostSend(DAT_COUNT num_segments, const DAT_LMR_TRIPLET* local_iov, DAT_DTO_COOKIE cookie,
                  DAT_COMPLETION_FLAGS flags, bool invalidate, DAT_RMR_CONTEXT invalidate_key);
  Status PostRdma(DAT_DTOS operation, DAT_COUNT num_segments, const DAT_LMR_TRIPLET* local_iov,
                  DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET* remote_iov, DAT_COMPLETION_FLAGS flags);
  // dat_rmr_bind's completion, queued behind earlier requests and completed in posting order:
  // PostBind queues it (kInvalidState unless CONNECTED or DISCONNECTED; `connected` false means
  // it will be flushed), the RMR changes its window, then FinishBind completes it.
  Status PostBind(Rmr* rmr, DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags, std::uint64_t& request,
                  bool& connected);
  void FinishBind(std::uint64_t request, bool bound);
  // Delivers what FinishBind (or anything else) made ready; the caller holds no lock.
  void DeliverPending() { Deliver(0); }

  Status RecvQuery(DAT_COUNT* nbufs_allocated, DAT_COUNT* bufs_alloc_span) const;
  Status SetWatermark(DAT_COUNT soft_high_watermark, DAT_COUNT hard_high_watermark);

  // Passive side, for Cr and Rsp. Accept moves the EP to PASSIVE_CONNECTION_PENDING and
  // hands `pending` its transport endpoint; kInvalidState unless UNCONNECTED (or, for the EP of
  // `rsp`, TENTATIVE_CONNECTION_PENDING).
  Status Accept(transport::PendingConnection& pending, Rsp* rsp, DAT_COUNT private_data_size,
                const void* private_data);
  // dat_rsp_create / dat_rsp_free and a connection request arriving at the RSP.
  Status Reserve(Rsp* rsp);
  void Unreserve(Rsp* rsp);
  void ReservedRequestArrived(Rsp* rsp);
  void ReservedRequestRejected(Rsp* rsp);

  Ia* ia() const { return ia_; }
  Pz* pz() const { return pz_; }
  Srq* srq() const { return srq_; }
  DAT_EP_STATE state() const { return state_.load(std::memory_order_acquire); }

  // Public for NewHandle; use Create.
  Ep(Ia* ia, Pz* pz, Evd* recv_evd, Evd* request_evd, Evd* connect_evd, Srq* srq,
     const DAT_EP_ATTR& attr);
  ~Ep();

 private:
  // What the transport reports (through TransportEvents, below).
  void OnEstablished(std::span<const std::uint8_t> private_data);
  void OnEnded(transport::ConnectionEnd why, std::span<const std::uint8_t> private_data);
  transport::RecvAcquire AcquireRecv(std::uint32_t msn, transport::RecvTarget& target);
  void OnRecvDone(std::uint32_t msn, transport::WorkStatus status, const transport::RecvInfo& info);
  void OnDeviceRecvDone(std::uint64_t recv_id, transport::WorkStatus status, const transport::RecvInfo& info);
  // What a received message's completion carries; a Send with Invalidate revokes the window.
  srq::RecvNotes NotesOf(transport::WorkStatus status, const transport::RecvInfo& info);
  void OnWorkDone(std::uint64_t id, transport::WorkStatus status, std::uint32_t length);
  transport::RemoteResolution ResolveRemote(std::uint32_t key, std::uint64_t address, std::uint64_t length,
                                            transport::RemoteAccess access);

  // A handle object may have no vtable (its first word is the DAT_PROVIDER*), so the transport's
  // interface is implemented by this member, which forwards to the EP.
  class TransportEvents final : public transport::EndpointEvents {
   public:
    explicit TransportEvents(Ep& ep) : ep_(ep) {}
    void OnEstablished(std::span<const std::uint8_t> private_data) override { ep_.OnEstablished(private_data); }
    void OnEnded(transport::ConnectionEnd why, std::span<const std::uint8_t> private_data) override {
      ep_.OnEnded(why, private_data);
    }
    transport::RecvAcquire AcquireRecv(std::uint32_t msn, transport::RecvTarget& target) override {
      return ep_.AcquireRecv(msn, target);
    }
    void OnRecvDone(std::uint32_t msn, transport::WorkStatus status, const transport::RecvInfo& info) override {
      ep_.OnRecvDone(msn, status, info);
    }
    void OnDeviceRecvDone(std::uint64_t recv_id, transport::WorkStatus status,
                          const transport::RecvInfo& info) override {
      ep_.OnDeviceRecvDone(recv_id, status, info);
    }
    void OnWorkDone(std::uint64_t id, transport::WorkStatus status, std::uint32_t length) override {
      ep_.OnWorkDone(id, status, length);
    }
    transport::RemoteResolution ResolveRemote(std::uint32_t key, std::uint64_t address, std::uint64_t length,
                                              transport::RemoteAccess access) override {
      return ep_.ResolveRemote(key, address, length, access);
    }
    void Deliver() override { ep_.Deliver(0); }

   private:
    Ep& ep_;
  };

  // The end of an SRQ connection, posted through the IA's EndReports.
  class EndReportPoster final : public EndReport {
   public:
    explicit EndReportPoster(Ep& ep) : ep_(ep) {}
    void Post() override { ep_.PostEndReport(); }

   private:
    Ep& ep_;
  };

  // The SRQ this EP takes buffers from posted some while a message of it waited for one.
  class SrqWaiter final : public srq::BufferWaiter {
   public:
    explicit SrqWaiter(Ep& ep) : ep_(ep) {}
    void OnBuffersPosted() override { ep_.OnSrqBuffersPosted(); }

   private:
    Ep& ep_;
  };

  // A connection event waiting for delivery (after the completions it must follow).
  struct PendingConnectionEvent {
    DAT_EVENT_NUMBER number{};
    bool pending = false;
  };

  // What an EP's attributes make: its request queue, receive source and transport endpoint.
  struct Resources {
    std::unique_ptr<RequestQueue> requests;
    std::unique_ptr<srq::ReceiveSource> receive;
    std::unique_ptr<transport::Endpoint> endpoint;
  };
  Status MakeResources(const DAT_EP_ATTR& attr, Resources& out);
  Status NewTransportEndpoint(const DAT_EP_ATTR& attr, const RequestQueue& requests,
                              std::unique_ptr<transport::Endpoint>& out);
  Status CheckAttributes(const DAT_EP_ATTR& attr);
  const char* RefusedAttribute(const DAT_EP_ATTR& attr);
  // The receive source the attributes ask for: the SRQ's account, or an own queue.
  srq::ReceiveSourceConfig ReceiveConfig(const DAT_EP_ATTR& attr);
  void OnSrqBuffersPosted();
  // Acts on what the receive source says the held buffers now cross: the soft event is queued,
  // a hard crossing breaks the connection.
  void ActOnWatermarks(srq::ReceiveSource::Crossing crossed);
  bool ConnectedForWatermarks() const;  // under mutex_
  // The checks of a request post and the post, under post_mutex_ (which dat_ep_modify takes to
  // change the attributes); delivers a flush after releasing it.
  Status PostRequest(DAT_DTOS operation, DAT_COUNT num_segments, const DAT_LMR_TRIPLET* local_iov,
                     DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET* remote, DAT_COMPLETION_FLAGS flags,
                     bool invalidate, DAT_RMR_CONTEXT invalidate_key);
  // Under post_mutex_.
  Status PostRequestLocked(DAT_DTOS operation, std::span<const DAT_LMR_TRIPLET> local_iov,
                           DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET* remote, DAT_COMPLETION_FLAGS flags,
                           bool invalidate, DAT_RMR_CONTEXT invalidate_key, bool& flushed);
  // Device receive model: posts a receive just queued in the source down (under mutex_).
  Status PostDeviceRecvLocked(std::uint64_t recv_id, std::span<const Segment> segments);

  // Delivers everything ready, in the order DAT wants: the established event, receive
  // completions, request completions, the end-of-connection event, then EP_BROKEN for an SRQ EP
  // and the soft high-watermark event. `kinds` says what the caller made ready (kDeliverAll unless a
  // completion path knows): a pass looks only where some caller since the last one said, so a
  // receive completion does not take the locks of the request queue and the connection state,
  // which are on an 8 B ping-pong's critical path (docs/PERFORMANCE.md, "Small messages").
  enum DeliverKind : std::uint8_t {
    kDeliverReceives = 1,
    kDeliverRequests = 2,
    kDeliverControl = 4,
    kDeliverAll = 7,
    kDeliverSrq = 8,  // the SRQ's low-watermark event (a buffer this EP took crossed it)
  };
  void Deliver(std::uint8_t kinds = kDeliverAll);
  // What a transport report made ready: delivered by the next Deliver (the transport's, after it
  // released its locks).
  void MarkReady(std::uint8_t kinds) { deliver_kinds_.fetch_or(kinds, std::memory_order_acq_rel); }
  void DeliverReady(std::uint8_t kinds);
  void DeliverEstablished();
  void DeliverReceives();
  void DeliverRequests();
  void DeliverEnd();
  void PostEndReport();  // EndReports' turn: the connection event, then EP_BROKEN
  void PostDto(Evd* evd, DAT_EVENT& event, bool signalled);

  Ia* const ia_;
  Pz* const pz_;
  Evd* recv_evd_;
  Evd* request_evd_;
  Evd* connect_evd_;
  Srq* const srq_;
  DAT_EP_ATTR attr_;
  const bool device_receives_;  // the transport's receive model is kDevice

  TransportEvents events_{*this};
  EndReportPoster end_report_{*this};
  SrqWaiter srq_waiter_{*this};
  std::unique_ptr<transport::Endpoint> endpoint_;
  std::unique_ptr<RequestQueue> requests_;
  std::unique_ptr<srq::ReceiveSource> receive_;

  mutable softdat::SharedMutex resources_mutex_;
  softdat::Mutex post_mutex_;
  mutable softdat::Mutex mutex_;
  std::atomic<DAT_EP_STATE> state_{DAT_EP_STATE_UNCONNECTED};
  bool connection_live_ = false;   // Connect/Accept called, OnEnded not yet
  bool local_disconnect_ = false;  // this side asked for the end (dat_ep_disconnect)
  bool local_abrupt_ = false;      // ... and asked for it abruptly at least once
  Rsp* rsp_ = nullptr;             // the RSP this EP is reserved by
  sockaddr_in remote_address_{};
  DAT_CONN_QUAL remote_port_ = 0;
  sockaddr_in local_address_{};

  bool broken_by_watermark_ = false;  // this connection crossed the hard high watermark

  // Delivery state (mutex_ guards the flags; the turn serializes delivery).
  DeliveryTurn turn_;
  std::atomic<std::uint8_t> deliver_kinds_{0};  // what Deliver callers made ready since the last pass
  bool established_pending_ = false;
  PendingConnectionEvent end_event_;
  bool broken_async_pending_ = false;
  // What PostEndReport posts (written before EndReports::Report, which orders it).
  DAT_EVENT_NUMBER end_report_event_{};
  Evd* end_report_connect_evd_ = nullptr;
  std::size_t end_report_private_size_ = 0;
  bool soft_watermark_pending_ = false;
  // Private data of the last connection event; an event points into it.
  static constexpr std::size_t kMaxPrivateData = 512;
  // The most private data this EP sends: what its transport carries and what an event holds.
  std::uint64_t private_data_limit() const;
  std::array<std::uint8_t, kMaxPrivateData> private_data_{};
  std::size_t private_data_size_ = 0;
};

}  // namespace softdat::core
