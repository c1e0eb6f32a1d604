// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// VerbsEndpoint: an RC QP driven by rdma_cm (or, with EndpointConfig::datagram, a UD QP: the UD
// parts are in verbs_ud.cc). Its completions go to the CQs of its EVDs
// (EndpointConfig::send_cq and recv_cq, shared with the other endpoints naming those EVDs; the
// transport's own CQ where it has no EVD), so it has no CQ of its own: it registers its QP in
// those CQs' tables, and a completion polled there comes back through OnCompletion, on the
// polling thread. wr_id says what completed, even for a flushed completion, whose opcode is
// undefined: a send (ring entry with the core's Work id and length), a receive of its own queue
// (ring entry with the core's recv_id), or an SRQ slot; the tag carries this endpoint's
// generation, so a completion left from an older QP of the same number is not taken for ours.
//
// Posting runs on the consumer's thread straight to ibv_post_send/ibv_post_recv, under the
// endpoint's mutex (the QP's state and the preallocated SGE arrays); small Sends and Writes go
// inline where the QP allows; a request whose success the consumer suppressed goes unsignalled
// (send_ring.h). Receives posted before the QP exists wait in a preallocated ring.
//
// Setup and teardown run in the progress context: Connect, Accept and Disconnect record a request
// and wake the progress. Teardown moves the QP to ERR and waits until every signalled send (and,
// without an SRQ, every posted receive) has been reported or a bound passes, drains its CQs,
// destroys the QP, drains them again, reports the unsignalled sends the flush left as done,
// leaves their tables and only then calls OnEnded: after it nothing touches consumer memory.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "base/mutex.h"
#include "transport/endpoint.h"
#include "transport/verbs/private_data.h"
#include "transport/verbs/send_ring.h"
#include "transport/verbs/verbs_device.h"
#include "transport/verbs/verbs_transport.h"

namespace softdat::transport::verbs {

class UdResolution;
class VerbsCq;
class VerbsPd;
class VerbsSrq;

class VerbsEndpoint final : public Endpoint, public CmOwner, public AsyncTarget {
 public:
  using Clock = std::chrono::steady_clock;

  static Status Create(VerbsTransport& transport, const EndpointConfig& config, EndpointEvents* events,
                       std::unique_ptr<Endpoint>& out);
  ~VerbsEndpoint() override;

  Status Connect(const sockaddr_in& remote, std::uint16_t port, std::span<const std::uint8_t> private_data,
                 std::uint64_t timeout_us) override;
  Status Post(const Work& work) override;
  Status Resolve(const sockaddr_in& remote, std::uint16_t port, std::span<const std::uint8_t> private_data,
                 std::uint64_t timeout_us, std::uint64_t request) override;  // UD (verbs_ud.cc)
  Status PostRecv(std::uint64_t recv_id, std::span<const Segment> segments) override;
  void RecvBuffersAvailable() override {}
  void SetCompletionQueues(CompletionQueue* send_cq, CompletionQueue* recv_cq) override;
  void Disconnect(bool graceful) override;
  sockaddr_in local_address() const override;
  sockaddr_in remote_address() const override;

  // From a VerbsCq's poll (its turn held): one completion of this endpoint's QP.
  void OnCompletion(const ibv_wc& wc);

  // Progress context (the transport's turn held).
  void OnCmEvent(const CmEvent& event) override;
  void OnAsyncEvent(ibv_event_type type) override;  // QP errors, communication established
  void ShortenRnrTimer();
  // Requests, deadlines and teardown; true when something happened. `timers` is set when this
  // endpoint waits for a deadline (or for a CQ another thread was polling).
  bool Service(Clock::time_point now, bool& timers);

  // From PendingConnection::Accept, any thread: the request's cm_id becomes this endpoint's.
  Status TakeAccept(rdma_cm_id* id, std::span<const std::uint8_t> private_data, std::uint8_t peer_ird,
                    std::uint8_t peer_ord);
  VerbsTransport& transport() const { return transport_; }
  // UD endpoints (verbs_ud.cc): whether this is one, its PD and QP number (for AcceptDatagram),
  // and one of its resolutions' rdma_cm events (progress context).
  bool datagram() const { return datagram_; }
  ibv_pd* ibv_protection_domain() const;
  std::uint32_t qp_num() const { return qp_num_; }
  void OnResolutionEvent(UdResolution& resolution, const CmEvent& event);
  // Under the transport's service mutex: whether the endpoint is on its service list.
  bool& queued_for_service() { return queued_for_service_; }

 private:
  enum class State : std::uint8_t {
    kIdle, kConnectRequested, kResolving, kConnecting, kAcceptRequested, kAccepting, kConnected, kDraining, kEnded,
  };
  // What a ring entry remembers of a posted request until it completes.
  struct Posted {
    std::uint64_t id;
    std::uint32_t length;
    std::uint64_t first = 0;  // a UD receive's first byte: its GRH, which names the sender
  };
  // A ring of Posted in posting order: RC completes the receives of its own queue in posting
  // order. Pushed under mutex_ (posting), popped by the polling thread of one CQ.
  class PostedRing {
   public:
    void Allocate(std::uint32_t entries) {
      size_ = entries + 1;
      slots_.reset(new Posted[size_]);
    }
    // Under mutex_. The sequence number, or false when full.
    bool Push(const Posted& posted, std::uint64_t& seq) {
      seq = head_.load(std::memory_order_relaxed);
      if (seq - tail_.load(std::memory_order_acquire) >= size_ - 1) return false;
      slots_[seq % size_] = posted;
      head_.store(seq + 1, std::memory_order_release);  // before the post: its completion may beat us back
      return true;
    }
    void Unpush() { head_.store(head_.load(std::memory_order_relaxed) - 1, std::memory_order_release); }
    // The polling thread: the oldest entry, if `seq` names it.
    bool Pop(std::uint64_t seq_low32, Posted& out) {
      const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
      if (tail == head_.load(std::memory_order_acquire) || (tail & 0xFFFFFFFFu) != seq_low32) return false;
      out = slots_[tail % size_];
      tail_.store(tail + 1, std::memory_order_release);
      return true;
    }
    bool empty() const { return head_.load(std::memory_order_acquire) == tail_.load(std::memory_order_acquire); }

   private:
    std::unique_ptr<Posted[]> slots_;
    std::uint32_t size_ = 1;
    std::atomic<std::uint64_t> head_{0};
    std::atomic<std::uint64_t> tail_{0};
  };

  VerbsEndpoint(VerbsTransport& transport, const EndpointConfig& config, EndpointEvents* events);
  Status Init();
  Status InitDatagram();  // a UD QP, ready at once (verbs_ud.cc)
  // Starts new resolutions, ends those past their deadline, frees those done (progress context).
  bool ServiceResolutions(Clock::time_point now, bool& timers);
  void FailResolution(UdResolution& resolution, ConnectionEnd why, std::span<const std::uint8_t> private_data = {});
  void StartConnect();
  void StartAccept();
  bool CreateQp();
  ibv_qp* CreateQpWithInline(std::uint32_t max_inline);
  rdma_conn_param ConnParam(std::uint8_t peer_ird, std::uint8_t peer_ord);
  Status PostRecvLocked(std::uint64_t recv_id, std::span<const Segment> segments);
  void OnSendCompletion(const ibv_wc& wc);
  void OnRecvCompletion(const ibv_wc& wc);
  void Break();
  void BreakNow();
  void OnCommEstablished();
  void BeginEnd(ConnectionEnd why, std::span<const std::uint8_t> private_data = {});
  // Teardown's last steps; false when a CQ was being polled by another thread (look again soon).
  bool Finish();
  bool DrainCqs();
  void LeaveCqs();
  void RecordAddresses();
  State state() const;
  VerbsCq* send_cq() const;
  VerbsCq* recv_cq() const;

  VerbsTransport& transport_;
  const EndpointConfig config_;
  const bool datagram_;
  EndpointEvents* const events_;
  VerbsPd* const pd_;
  VerbsSrq* const srq_;
  // wr_id tags: which ring a completion belongs to, and this endpoint's generation.
  const std::uint64_t generation_;
  std::uint32_t send_segments_;
  std::uint32_t recv_segments_;

  // Written only in the progress context; read by Post/PostRecv under mutex_ (qp_).
  rdma_cm_id* id_ = nullptr;
  rdma_cm_id* pending_id_ = nullptr;  // an accepted request's cm_id until the progress takes it
  std::uint32_t qp_num_ = 0;
  bool in_cqs_ = false;         // qp_num_ is in the CQs' tables
  bool qp_destroyed_ = false;   // teardown destroyed the QP; its CQs still to drain once more
  bool established_ = false;
  ConnectionEnd end_why_ = ConnectionEnd::kDisconnected;
  std::uint8_t end_data_[256] = {};
  std::uint8_t end_data_length_ = 0;
  Clock::time_point drain_deadline_{};
  bool queued_for_service_ = false;  // under the transport's service mutex

  // Once OnEnded ran, completions are dropped. Set in the progress context with every CQ drained
  // and the QP gone from their tables, so no poll reads it unsynchronized after that.
  std::atomic<bool> ended_reported_{false};
  // A completion with an error (on a polling thread): the progress breaks the connection.
  std::atomic<bool> break_requested_{false};

  mutable softdat::Mutex mutex_;  // guards what follows; never held while an event runs
  State state_ = State::kIdle;
  ibv_qp* qp_ = nullptr;
  VerbsCq* send_cq_ = nullptr;  // null: the transport's own
  VerbsCq* recv_cq_ = nullptr;
  std::uint32_t max_inline_ = 0;  // what the QP was created with
  bool disconnect_requested_ = false;
  bool graceful_ = false;
  Clock::time_point graceful_deadline_{};
  sockaddr_in remote_{};
  sockaddr_in local_{};
  PrivateData private_data_;
  std::uint8_t peer_ird_ = 0;
  std::uint8_t peer_ord_ = 0;
  Clock::time_point connect_deadline_ = Clock::time_point::max();
  // Preallocated posting state.
  std::unique_ptr<ibv_sge[]> send_sge_;
  std::unique_ptr<ibv_sge[]> recv_sge_;
  // Receives posted before the QP exists: ids and segments, max_recv_work of them.
  std::unique_ptr<std::uint64_t[]> early_ids_;
  std::unique_ptr<std::uint32_t[]> early_counts_;
  std::unique_ptr<Segment[]> early_segments_;
  std::uint32_t early_count_ = 0;

  SendRing sends_;
  PostedRing recvs_;  // own queue only
  // A UD endpoint's Resolves: added by consumer threads under mutex_, started, answered and freed
  // in the progress context.
  std::vector<std::unique_ptr<UdResolution>> resolutions_;
};

}  // namespace softdat::transport::verbs
