// The EP handle object: one DAT endpoint, the transport endpoint under it, and every rule DAT puts
// on it — states, posting checks, completions in posting (requests) and MSN (receives) order,
// completion flags, connection events, flushes, watermarks. Receives come from the EP's own
// queue (srq::EpRecvQueue) or, for an EP created with an SRQ, from the SRQ (srq::SrqPool with
// this EP's srq::EndpointRecvAccount), through the same Take / Place / PopCompletion steps.
//
// On a device transport (Capabilities::receive_model kDevice) receives are also posted down, and
// the device, not srq/, picks the buffer a message lands in: the EP's own buffers are posted to
// its transport endpoint as recv_id = their posting number (1, 2, ... for the EP's life), SRQ
// buffers to the SRQ's DeviceSrq as recv_id = their pool slot. A completion names its recv_id;
// core takes exactly that buffer (EpRecvQueue position, or SrqPool::TakePosted) and places it,
// so srq/ still orders, counts and flushes what the device completed.
//
// Threads. Consumer calls may come from any thread (DAT marks most of them MT-unsafe per EP;
// softdat makes them safe anyway). The transport calls the EndpointEvents from its progress
// context. Three locks, always taken in this order and never held while calling into the
// transport's blocking paths or into an EVD:
//   post_mutex_   serializes posts of requests (the request queue's tail has one writer)
//   mutex_        state, connection bookkeeping, watermarks
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

#include "base/status.h"
#include "core/delivery_turn.h"
#include "core/handle.h"
#include "core/request_queue.h"
#include "srq/endpoint_recv_account.h"
#include "srq/ep_recv_queue.h"
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

  Status Query(DAT_EP_PARAM_MASK mask, DAT_EP_PARAM* param) const;
  Status Modify(DAT_EP_PARAM_MASK mask, const DAT_EP_PARAM* param);
  Status GetStatus(DAT_EP_STATE* state, DAT_BOOLEAN* recv_idle, DAT_BOOLEAN* request_idle) const;

  // Active side. `remote` is the peer IA address (AF_INET); conn_qual its PSP/RSP port.
  Status Connect(const sockaddr* remote, DAT_CONN_QUAL conn_qual, DAT_TIMEOUT timeout,
                 DAT_COUNT private_data_size, const void* private_data);
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

  Status RecvQuery(DAT_COUNT* nbufs_allocated, DAT_COUNT* bufs_alloc_span) const;
  Status SetWatermark(DAT_COUNT soft_high_watermark, DAT_COUNT hard_high_watermark);

  // Passive side, for Cr and Rsp. BeginAccept moves the EP to PASSIVE_CONNECTION_PENDING and
  // hands `pending` its transport endpoint; kInvalidState unless UNCONNECTED (or, for the EP of
  // `rsp`, TENTATIVE_CONNECTION_PENDING).
  Status Accept(transport::PendingConnection& pending, Rsp* rsp, DAT_COUNT private_data_size,
                const void* private_data);
  // dat_rsp_create / dat_rsp_free and a connection request arriving at the RSP.
  Status Reserve(Rsp* rsp);
  void Unreserve(Rsp* rsp);
  void ReservedRequestArrived(Rsp* rsp);
  void ReservedRequestRejected(Rsp* rsp);

  // An SRQ this EP waits on got buffers.
  void OnSrqBuffersPosted();

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

   private:
    Ep& ep_;
  };

  // A connection event waiting for delivery (after the completions it must follow).
  struct PendingConnectionEvent {
    DAT_EVENT_NUMBER number{};
    bool pending = false;
  };

  Status AllocateResources();
  Status NewTransportEndpoint();
  Status BeginConnectionLocked();  // fresh receive accounting for a new connection
  Status CheckAttributes(const DAT_EP_ATTR& attr) const;
  void CheckHighWatermarks(std::uint32_t held);
  Status PostRequest(DAT_DTOS operation, std::span<const DAT_LMR_TRIPLET> local_iov,
                     DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET* remote, DAT_COMPLETION_FLAGS flags,
                     bool invalidate, DAT_RMR_CONTEXT invalidate_key);
  Status PostRequestLocked(DAT_DTOS operation, std::span<const DAT_LMR_TRIPLET> local_iov,
                           DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET* remote, DAT_COMPLETION_FLAGS flags,
                           bool invalidate, DAT_RMR_CONTEXT invalidate_key, bool& flushed);
  // Device receive model: posts a receive of this EP's own queue down (under mutex_).
  Status PostDeviceRecvLocked(DAT_DTO_COOKIE cookie, std::span<const Segment> segments,
                              DAT_COMPLETION_FLAGS flags);
  // Receive side, whichever queue this EP has.
  void CloseReceives();
  std::uint32_t ReceivesHeld() const;

  // Delivers everything ready, in the order DAT wants: the established event, receive
  // completions, request completions, the end-of-connection event, then EP_BROKEN for an SRQ EP.
  void Deliver();
  void DeliverReady();
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
  std::unique_ptr<transport::Endpoint> endpoint_;
  std::unique_ptr<RequestQueue> requests_;
  std::unique_ptr<srq::EpRecvQueue> recv_queue_;           // EPs without SRQ
  std::unique_ptr<srq::EndpointRecvAccount> srq_account_;  // EPs with SRQ, one per connection

  std::mutex post_mutex_;
  mutable std::mutex mutex_;
  std::atomic<DAT_EP_STATE> state_{DAT_EP_STATE_UNCONNECTED};
  bool connection_live_ = false;   // Connect/Accept called, OnEnded not yet
  bool local_disconnect_ = false;  // this side asked for the end (dat_ep_disconnect)
  Rsp* rsp_ = nullptr;             // the RSP this EP is reserved by
  sockaddr_in remote_address_{};
  DAT_CONN_QUAL remote_port_ = 0;
  sockaddr_in local_address_{};

  // Device receive model (mutex_ guards them; completions of one endpoint never run at once).
  std::uint64_t device_recv_posted_ = 0;    // recv_id of the latest buffer posted to this EP
  std::uint64_t device_recv_base_ = 0;      // recv_id before this connection's MSN 1
  std::uint64_t device_recv_expected_ = 1;  // recv_id the next completion should name
  std::uint32_t device_srq_msn_ = 0;        // SRQ EP: messages of this connection completed

  // Watermarks (dat_ep_set_watermark); DAT_WATERMARK_INFINITE disarms.
  DAT_COUNT soft_high_watermark_ = DAT_WATERMARK_INFINITE;
  DAT_COUNT hard_high_watermark_ = DAT_WATERMARK_INFINITE;
  bool soft_armed_ = false;
  bool hard_tripped_ = false;

  // Delivery state (mutex_ guards the flags; the turn serializes delivery).
  DeliveryTurn turn_;
  bool established_pending_ = false;
  PendingConnectionEvent end_event_;
  bool broken_async_pending_ = false;
  bool soft_watermark_pending_ = false;
  // Private data of the last connection event; an event points into it.
  static constexpr std::size_t kMaxPrivateData = 512;
  std::array<std::uint8_t, kMaxPrivateData> private_data_{};
  std::size_t private_data_size_ = 0;
};

}  // namespace softdat::core
