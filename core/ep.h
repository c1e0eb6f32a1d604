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
// device completion names its recv_id and the source takes and places exactly that buffer
// (CompleteDeviceChosen), so srq/ still orders, counts and flushes what the device completed.
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

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "core/counters.h"
#include "core/dat_ib.h"
#include "core/delivery_turn.h"
#include "core/end_reports.h"
#include "core/handle.h"
#include "core/local_iov.h"
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
class AddressHandle;
class DatagramCm;

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

  // The DAT IB extensions (dat_ib_extensions.h, ep_extension.cc). What the transport lacks is
  // refused with kModelNotSupported and a log line saying so.
  // dat_ib_post_rdma_write_immed: an RDMA Write whose arrival completes the peer's next receive
  // (its SRQ's, with the SRQ's accounting) with `immediate` and the Write's length.
  Status PostWriteImmediate(DAT_COUNT num_segments, const DAT_LMR_TRIPLET* local_iov, DAT_DTO_COOKIE cookie,
                            const DAT_RMR_TRIPLET* remote_iov, DAT_UINT32 immediate, DAT_COMPLETION_FLAGS flags);
  // dat_ib_post_fetch_and_add (kFetchAdd: adds `compare_add`) and dat_ib_post_cmp_and_swap
  // (kCompareSwap: stores `swap` where the value equals `compare_add`): 64 bits at the remote
  // address, which must be 8-byte aligned in memory with DAT_IB_MEM_PRIV_REMOTE_ATOMIC; the
  // original value lands in the first 8 bytes of `local_iov` (one segment).
  Status PostAtomic(transport::WorkKind kind, DAT_UINT64 compare_add, DAT_UINT64 swap,
                    const DAT_LMR_TRIPLET* local_iov, DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET* remote_iov,
                    DAT_COMPLETION_FLAGS flags);
  // dat_ib_post_send_ud on a UD EP: a datagram to the endpoint `ah` names (an address handle of
  // this IA from a UD connection event).
  Status PostSendDatagram(DAT_COUNT num_segments, const DAT_LMR_TRIPLET* local_iov, const DAT_IB_ADDR_HANDLE* ah,
                          DAT_DTO_COOKIE cookie, DAT_COMPLETION_FLAGS flags);
  // dat_ib_ud_ah_free and dat_ib_ud_cm_free of what this EP's UD connection events handed out.
  Status FreeAddressHandle(const DAT_IB_ADDR_HANDLE* ah);
  Status FreeDatagramCm(const void* cm);
  // dat_ib_query_counters / dat_ib_print_counters (which: a DCNT_EP_* or DCNT_EP_ALL_COUNTERS).
  Status QueryCounters(int which, DAT_UINT64* out, bool reset);
  Status PrintCounters(int which, bool reset);
  // A DAT_IB_SERVICE_TYPE_UD endpoint.
  bool datagram() const { return datagram_; }

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
  // AcquireRecv, the copy and OnRecvDone in one step (a Send with nothing to invalidate).
  transport::WholeReceive ReceiveWhole(std::uint32_t msn, std::span<const std::uint8_t> bytes,
                                       const transport::RecvInfo& info);
  // What taking a buffer for a message may set off: the SRQ's low watermark, the EP's high ones.
  void AfterRecvTaken();
  void OnDeviceRecvDone(std::uint64_t recv_id, transport::WorkStatus status, const transport::RecvInfo& info);
  void WarnUnknownDeviceRecv(std::uint64_t recv_id) const;
  // What a received message's completion carries; a Send with Invalidate revokes the window.
  srq::RecvNotes NotesOf(transport::WorkStatus status, const transport::RecvInfo& info);
  void OnWorkDone(std::uint64_t id, transport::WorkStatus status, std::uint32_t length);
  // The request queue's Finish; false (logged) for a request it does not hold.
  bool FinishRequest(std::uint64_t id, transport::WorkStatus status, std::uint32_t length);
  // The report and its delivery as one step (ep.cc says when they fuse).
  void DeliverDeviceRecv(std::uint64_t recv_id, transport::WorkStatus status, const transport::RecvInfo& info);
  void DeliverWorkDone(std::uint64_t id, transport::WorkStatus status, std::uint32_t length);
  transport::RemoteResolution ResolveRemote(std::uint32_t key, std::uint64_t address, std::uint64_t length,
                                            transport::RemoteAccess access);
  // A UD endpoint's Resolve (dat_ep_connect) found its peer or failed (ep_extension.cc).
  void OnResolved(std::uint64_t request, std::unique_ptr<transport::AddressHandle> peer,
                  std::span<const std::uint8_t> private_data);
  void OnResolveFailed(std::uint64_t request, transport::ConnectionEnd why, std::span<const std::uint8_t> private_data);

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
    transport::WholeReceive ReceiveWhole(std::uint32_t msn, std::span<const std::uint8_t> bytes,
                                         const transport::RecvInfo& info) override {
      // A Send with Invalidate revokes its window as it is placed (NotesOf): the three steps.
      if (info.invalidated) return EndpointEvents::ReceiveWhole(msn, bytes, info);
      return ep_.ReceiveWhole(msn, bytes, info);
    }
    void OnDeviceRecvDone(std::uint64_t recv_id, transport::WorkStatus status,
                          const transport::RecvInfo& info) override {
      ep_.OnDeviceRecvDone(recv_id, status, info);
    }
    void OnWorkDone(std::uint64_t id, transport::WorkStatus status, std::uint32_t length) override {
      ep_.OnWorkDone(id, status, length);
    }
    void DeliverDeviceRecv(std::uint64_t recv_id, transport::WorkStatus status,
                           const transport::RecvInfo& info) override {
      ep_.DeliverDeviceRecv(recv_id, status, info);
    }
    void DeliverWorkDone(std::uint64_t id, transport::WorkStatus status, std::uint32_t length) override {
      ep_.DeliverWorkDone(id, status, length);
    }
    transport::RemoteResolution ResolveRemote(std::uint32_t key, std::uint64_t address, std::uint64_t length,
                                              transport::RemoteAccess access) override {
      return ep_.ResolveRemote(key, address, length, access);
    }
    void OnResolved(std::uint64_t request, std::unique_ptr<transport::AddressHandle> peer,
                    std::span<const std::uint8_t> private_data) override {
      ep_.OnResolved(request, std::move(peer), private_data);
    }
    void OnResolveFailed(std::uint64_t request, transport::ConnectionEnd why,
                         std::span<const std::uint8_t> private_data) override {
      ep_.OnResolveFailed(request, why, private_data);
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
  // One posted request: what the consumer asked for and the transport Work it becomes.
  struct RequestSpec {
    DAT_DTOS operation = DAT_DTO_SEND;  // what its completion reports (DAT_IB_DTO_* for extensions)
    transport::WorkKind kind = transport::WorkKind::kSend;
    const DAT_LMR_TRIPLET* local_iov = nullptr;
    DAT_COUNT num_segments = 0;
    DAT_DTO_COOKIE cookie{};
    const DAT_RMR_TRIPLET* remote = nullptr;
    DAT_COMPLETION_FLAGS flags = DAT_COMPLETION_DEFAULT_FLAG;
    bool invalidate = false;
    DAT_RMR_CONTEXT invalidate_key = 0;
    std::uint32_t immediate = 0;
    std::uint64_t compare_add = 0;
    std::uint64_t swap = 0;
    const transport::AddressHandle* destination = nullptr;

    // The fields every post names.
    static RequestSpec Of(DAT_DTOS operation, transport::WorkKind kind, const DAT_LMR_TRIPLET* local_iov,
                          DAT_COUNT num_segments, DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET* remote,
                          DAT_COMPLETION_FLAGS flags) {
      RequestSpec spec;
      spec.operation = operation;
      spec.kind = kind;
      spec.local_iov = local_iov;
      spec.num_segments = num_segments;
      spec.cookie = cookie;
      spec.remote = remote;
      spec.flags = flags;
      return spec;
    }
  };
  // The checks of a request post and the post, under post_mutex_ (which dat_ep_modify takes to
  // change the attributes); delivers a flush (or a datagram that left) after releasing it.
  Status PostRequest(const RequestSpec& spec);
  // Under post_mutex_. `deliver`: the request completed at once (flushed, or a datagram that
  // left): deliver it after the locks are released.
  Status PostRequestLocked(const RequestSpec& spec, bool& deliver);
  // A DAT timeout in microseconds as the transport takes it (UINT64_MAX: forever).
  static std::uint64_t TransportTimeout(DAT_TIMEOUT timeout);
  // The extension an IA's transport lacks, said at the default level: kModelNotSupported.
  Status Unsupported(const char* call, const char* what) const;
  // A UD EP's dat_ep_connect (a Resolve) and dat_cr_accept (AcceptDatagram), resources_mutex_
  // held shared.
  Status ConnectDatagram(const sockaddr_in& remote, DAT_CONN_QUAL conn_qual, DAT_TIMEOUT timeout,
                         std::span<const std::uint8_t> private_data);
  Status AcceptDatagram(transport::PendingConnection& pending, std::span<const std::uint8_t> private_data);
  // Queues a UD connection event (connect EVD), with the address handle and record it hands out.
  void QueueDatagramEvent(DAT_EVENT_NUMBER number, DAT_IB_EXT_TYPE type,
                          std::unique_ptr<transport::AddressHandle> peer, std::span<const std::uint8_t> private_data);
  void DeliverDatagramEvents();
  void FreeDatagramObjects();  // every address handle and record still held (EP free)
  template <class T>
  bool FreeOwned(std::vector<T*>& owned, const void* object);
  // A UD EP at creation: its transport endpoint takes datagrams from now on (no connection).
  void StartDatagrams();
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
  // The turn's protocol for a report that may be delivered in the same step (ep.cc).
  template <typename Report, typename Fuse>
  void ReportAndDeliver(Report&& report, Fuse&& fuse);
  // What a transport report made ready: delivered by the next Deliver (the transport's, after it
  // released its locks).
  void MarkReady(std::uint8_t kinds) { deliver_kinds_.fetch_or(kinds, std::memory_order_acq_rel); }
  void DeliverReady(std::uint8_t kinds);
  void DeliverEstablished();
  void DeliverReceives();
  void PostReceived(const srq::RecvCompletion& received);  // its event, on recv_evd_
  static bool ConnectionPending(DAT_EP_STATE state) {
    return state == DAT_EP_STATE_ACTIVE_CONNECTION_PENDING || state == DAT_EP_STATE_PASSIVE_CONNECTION_PENDING;
  }
  // Receive completions wait for the connection's ESTABLISHED: while it is pending, and until a
  // pass has posted the event. The state first: once it reads CONNECTED, the flag set before it
  // is seen.
  bool ReceivesWait() const {
    return ConnectionPending(state()) || established_pending_.load(std::memory_order_acquire);
  }
  // A receive completion that carries extension data (immediate data, a datagram's source).
  void MakeExtensionReceive(DAT_EVENT& event, const srq::RecvCompletion& received) const;
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
  const bool datagram_;         // DAT_IB_SERVICE_TYPE_UD

  TransportEvents events_{*this};
  EndReportPoster end_report_{*this};
  SrqWaiter srq_waiter_{*this};
  std::unique_ptr<transport::Endpoint> endpoint_;
  std::unique_ptr<RequestQueue> requests_;
  std::unique_ptr<srq::ReceiveSource> receive_;

  mutable softdat::SharedMutex resources_mutex_;
  softdat::Mutex post_mutex_;
  LocalIovCache request_iov_cache_;  // under post_mutex_: the LMR the last request posted from
  SharedLocalIovCache recv_iov_cache_;  // the LMR the last receive posted into
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
  // Set before the state reads CONNECTED and cleared by the pass that posts the ESTABLISHED:
  // receives wait while it is set (ReceivesWait).
  std::atomic<bool> established_pending_{false};
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

  // DAT IB counters (core/counters.h): requests under post_mutex_, receives in the delivery turn.
  EpCounters counters_;

  // UD: connection events waiting for delivery, and what they handed out (under mutex_).
  struct DatagramEvent {
    DAT_EVENT_NUMBER number{};
    DAT_IB_EXT_TYPE type{};
    AddressHandle* ah = nullptr;
    DatagramCm* cm = nullptr;
  };
  // A vector, not a deque: an empty one allocates nothing (a deque takes 504 bytes per EP, UD or not).
  std::vector<DatagramEvent> datagram_events_;
  std::vector<AddressHandle*> address_handles_;
  std::vector<DatagramCm*> datagram_cms_;
  std::uint64_t next_resolve_ = 1;
};

}  // namespace softdat::core
