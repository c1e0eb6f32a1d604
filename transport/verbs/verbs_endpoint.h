// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// VerbsEndpoint: an RC QP driven by rdma_cm. Its CQ pair is its own (send and receive apart, so
// that flushed completions, whose opcode is undefined, still say which queue they came from).
//
// Setup and teardown run in the progress context: Connect, Accept and Disconnect record a request
// and wake the progress. Receives posted before the QP exists wait in a preallocated ring.
// Teardown moves the QP to ERR and waits until every posted send (and, without an SRQ, every
// posted receive) has completed or a bound passes, reports those completions, destroys the QP
// and only then calls OnEnded: after it nothing touches consumer memory.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>

#include "base/mutex.h"
#include "transport/endpoint.h"
#include "transport/verbs/private_data.h"
#include "transport/verbs/verbs_device.h"
#include "transport/verbs/verbs_transport.h"

namespace softdat::transport::verbs {

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
  Status PostRecv(std::uint64_t recv_id, std::span<const Segment> segments) override;
  void RecvBuffersAvailable() override {}
  void Disconnect(bool graceful) override;
  sockaddr_in local_address() const override;
  sockaddr_in remote_address() const override;

  // Progress context (dispatch lock held).
  void OnCmEvent(const CmEvent& event) override;
  void OnAsyncEvent(ibv_event_type type) override;  // QP errors, communication established
  void ShortenRnrTimer();
  bool PollCqs();
  // Default mode: the thread took a CQ notification and left it unarmed for a polling consumer;
  // Rearm arms both CQs again and polls what came meanwhile.
  void LeaveUnarmed() { armed_ = false; }
  void Rearm();
  // Requests, deadlines and teardown; true when something happened. `timers` is set when this
  // endpoint waits for a deadline.
  bool Service(Clock::time_point now, bool& timers);

  // From PendingConnection::Accept, any thread: the request's cm_id becomes this endpoint's.
  Status TakeAccept(rdma_cm_id* id, std::span<const std::uint8_t> private_data, std::uint8_t peer_ird,
                    std::uint8_t peer_ord);
  VerbsTransport& transport() const { return transport_; }

 private:
  enum class State : std::uint8_t {
    kIdle, kConnectRequested, kResolving, kConnecting, kAcceptRequested, kAccepting, kConnected, kDraining, kEnded,
  };

  VerbsEndpoint(VerbsTransport& transport, const EndpointConfig& config, EndpointEvents* events);
  Status Init();
  void StartConnect();
  void StartAccept();
  bool CreateQp();
  rdma_conn_param ConnParam(std::uint8_t peer_ird, std::uint8_t peer_ord);
  void Break();
  void OnCommEstablished();
  void BeginEnd(ConnectionEnd why, std::span<const std::uint8_t> private_data = {});
  void Finish();
  void RecordAddresses();
  State state() const;

  VerbsTransport& transport_;
  const EndpointConfig config_;
  EndpointEvents* const events_;
  VerbsPd* const pd_;
  VerbsSrq* const srq_;
  ibv_cq* send_cq_ = nullptr;
  ibv_cq* recv_cq_ = nullptr;
  std::uint32_t send_segments_;
  std::uint32_t recv_segments_;

  // Written only in the progress context; read by Post/PostRecv under mutex_ (qp_).
  rdma_cm_id* id_ = nullptr;
  rdma_cm_id* pending_id_ = nullptr;  // an accepted request's cm_id until the progress takes it
  bool ended_reported_ = false;
  bool armed_ = true;  // both CQs' notifications armed (default mode)
  bool established_ = false;
  ConnectionEnd end_why_ = ConnectionEnd::kDisconnected;
  std::uint8_t end_data_[256] = {};
  std::uint8_t end_data_length_ = 0;
  Clock::time_point drain_deadline_{};

  mutable softdat::Mutex mutex_;  // guards what follows; never held while an event runs
  State state_ = State::kIdle;
  ibv_qp* qp_ = nullptr;
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

  // Send lengths in post order (RC send completions come in that order): pushed under mutex_,
  // popped by the progress.
  std::unique_ptr<std::uint32_t[]> send_lengths_;
  std::uint32_t send_lengths_size_ = 0;
  std::atomic<std::uint64_t> send_head_{0};
  std::atomic<std::uint64_t> send_tail_{0};
  std::atomic<std::uint32_t> recv_outstanding_{0};
};

}  // namespace softdat::transport::verbs
