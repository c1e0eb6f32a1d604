// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Test doubles for the transport interface's callbacks, shared by every transport's tests:
// RecordingEvents records everything an endpoint reports (and, in the software receive model,
// hands out the receive buffers the test queues and resolves one exposed region), failing the
// test on a report the endpoint's receive model never makes or on any report after OnEnded;
// RecordingRequests collects connection requests; RecordingSrqEvents counts device SRQ limit
// events. Every wait is bounded (a bound, never a timing: slow TCG guests included).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "transport/device_resources.h"
#include "transport/endpoint.h"
#include "transport/listener.h"
#include "transport/transport.h"

namespace softdat::transport::testing {

inline constexpr auto kBound = std::chrono::seconds(30);

// The endpoint limits most transport tests use: 64 Works each way, 4 segments, 4 Reads.
inline EndpointConfig SmallEndpointConfig() {
  EndpointConfig config;
  config.max_send_work = 64;
  config.max_recv_work = 64;
  config.max_send_segments = 4;
  config.max_recv_segments = 4;
  config.max_rdma_read_in = 4;
  config.max_rdma_read_out = 4;
  config.max_message_size = 1u << 30;
  return config;
}

// `n` bytes of a pattern that differs with `seed`, so a test can tell whose bytes arrived.
inline std::vector<std::uint8_t> Bytes(std::size_t n, std::uint8_t seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(seed + i * 31 + (i >> 8));
  return v;
}

// A segment over `v` (software transports ignore the key).
inline Segment SegmentOf(std::vector<std::uint8_t>& v, std::size_t offset = 0, std::size_t length = SIZE_MAX) {
  return Segment{reinterpret_cast<std::uint64_t>(v.data() + offset),
                 static_cast<std::uint32_t>(std::min(length, v.size() - offset)), 1};
}

class RecordingEvents final : public EndpointEvents {
 public:
  // A receive reported: the MSN (software model) or the recv_id (device model).
  struct Recv {
    std::uint64_t id;
    WorkStatus status;
    RecvInfo info;
  };
  struct WorkDone {
    std::uint64_t id;
    WorkStatus status;
    std::uint32_t length;
  };

  explicit RecordingEvents(ReceiveModel model = ReceiveModel::kSoftware) : model_(model) {}

  void OnEstablished(std::span<const std::uint8_t> private_data) override {
    std::lock_guard lock(mutex_);
    ++established;
    peer_data.assign(private_data.begin(), private_data.end());
    changed_.notify_all();
  }
  void OnEnded(ConnectionEnd why, std::span<const std::uint8_t> private_data) override {
    // What a consumer thread does at this moment, as a test scripts it (before core has seen the
    // end: a post racing it, say).
    if (on_ended) on_ended();
    std::lock_guard lock(mutex_);
    ++ended_count;
    ended = why;
    peer_data.assign(private_data.begin(), private_data.end());
    changed_.notify_all();
  }
  std::function<void()> on_ended;
  // What the consumer's EVDs get: core posts what was reported at Deliver (endpoint.h).
  void Deliver() override {
    if (on_deliver) on_deliver();
  }
  std::function<void()> on_deliver;
  RecvAcquire AcquireRecv(std::uint32_t msn, RecvTarget& target) override {
    std::lock_guard lock(mutex_);
    if (model_ != ReceiveModel::kSoftware) ADD_FAILURE() << "AcquireRecv in the device receive model";
    if (ended_count > 0) ADD_FAILURE() << "AcquireRecv after OnEnded";
    acquired_msns.push_back(msn);
    if (buffers_.empty()) {
      ++not_ready;
      changed_.notify_all();
      return RecvAcquire::kNotReady;
    }
    target = buffers_.front();
    buffers_.pop_front();
    changed_.notify_all();  // a waiter may wait for the take itself
    return RecvAcquire::kTaken;
  }
  void OnRecvDone(std::uint32_t msn, WorkStatus status, const RecvInfo& info) override {
    if (model_ != ReceiveModel::kSoftware) ADD_FAILURE() << "OnRecvDone in the device receive model";
    Record(msn, status, info);
  }
  // The interface's own three steps (AcquireRecv, the copy, OnRecvDone), counted.
  WholeReceive ReceiveWhole(std::uint32_t msn, std::span<const std::uint8_t> bytes, const RecvInfo& info) override {
    {
      std::lock_guard lock(mutex_);
      whole_msns.push_back(msn);
    }
    return EndpointEvents::ReceiveWhole(msn, bytes, info);
  }
  void OnDeviceRecvDone(std::uint64_t recv_id, WorkStatus status, const RecvInfo& info) override {
    if (model_ != ReceiveModel::kDevice) ADD_FAILURE() << "OnDeviceRecvDone in the software receive model";
    Record(recv_id, status, info);
  }
  void OnWorkDone(std::uint64_t id, WorkStatus status, std::uint32_t length) override {
    std::lock_guard lock(mutex_);
    if (ended_count > 0) ADD_FAILURE() << "work completion after OnEnded";
    work_done.push_back({id, status, length});
    order += 'w';
    changed_.notify_all();
  }
  RemoteResolution ResolveRemote(std::uint32_t key, std::uint64_t address, std::uint64_t length,
                                 RemoteAccess access) override {
    std::lock_guard lock(mutex_);
    if (model_ != ReceiveModel::kSoftware) {
      ADD_FAILURE() << "the device resolves remote access itself";
      return {};
    }
    if (region_ == nullptr || key != region_key_) return {RemoteCheck::kInvalidKey, nullptr};
    // Writes and atomics (8 aligned bytes) need a writable region.
    if (access != RemoteAccess::kRead && !region_writable_) return {RemoteCheck::kAccessRights, nullptr};
    if (access == RemoteAccess::kAtomic && address % 8 != 0) return {RemoteCheck::kBounds, nullptr};
    const auto base = reinterpret_cast<std::uint64_t>(region_->data());
    if (address < base || length > region_->size() || address - base > region_->size() - length)
      return {RemoteCheck::kBounds, nullptr};
    return {RemoteCheck::kOk, region_->data() + (address - base)};
  }

  void OnResolved(std::uint64_t request, std::unique_ptr<AddressHandle> peer,
                  std::span<const std::uint8_t> private_data) override {
    std::lock_guard lock(mutex_);
    resolutions.push_back({request, std::nullopt, std::move(peer), {private_data.begin(), private_data.end()}});
    changed_.notify_all();
  }
  void OnResolveFailed(std::uint64_t request, ConnectionEnd why, std::span<const std::uint8_t> private_data) override {
    std::lock_guard lock(mutex_);
    resolutions.push_back({request, why, nullptr, {private_data.begin(), private_data.end()}});
    changed_.notify_all();
  }

  // Software model: the next message that asks for a buffer gets these segments.
  void AddBuffer(std::span<const Segment> segments) {
    std::lock_guard lock(mutex_);
    std::uint64_t capacity = 0;
    for (const Segment& s : segments) capacity += s.length;
    buffers_.push_back(RecvTarget{segments, capacity});
  }
  // Software model: RDMA may reach `region` under `key` (writes only if `writable`).
  void Expose(std::vector<std::uint8_t>& region, std::uint32_t key, bool writable) {
    std::lock_guard lock(mutex_);
    region_ = &region;
    region_key_ = key;
    region_writable_ = writable;
  }
  // Waits (bounded) until `done`, evaluated under the recorder's lock, holds.
  bool WaitFor(const std::function<bool()>& done) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kBound, done);
  }
  // A copy of one recorded field, taken under the lock.
  template <typename T>
  T Get(const T& field) {
    std::lock_guard lock(mutex_);
    return field;
  }

  int established = 0;
  int ended_count = 0;
  std::optional<ConnectionEnd> ended;
  std::vector<std::uint8_t> peer_data;
  std::vector<std::uint32_t> acquired_msns;
  std::vector<std::uint32_t> whole_msns;  // the messages handed over whole (ReceiveWhole), each try
  int not_ready = 0;
  std::vector<Recv> recvs;
  std::vector<WorkDone> work_done;
  // Datagram endpoints: each Resolve's outcome (a peer, or why it failed), in order.
  struct Resolution {
    std::uint64_t request;
    std::optional<ConnectionEnd> failed;
    std::shared_ptr<AddressHandle> peer;
    std::vector<std::uint8_t> private_data;
  };
  std::vector<Resolution> resolutions;
  std::string order;  // one letter per completion as reported: 'w' work done, 'r' receive

 private:
  void Record(std::uint64_t id, WorkStatus status, const RecvInfo& info) {
    std::lock_guard lock(mutex_);
    if (ended_count > 0) ADD_FAILURE() << "receive completion after OnEnded";
    recvs.push_back({id, status, info});
    order += 'r';
    changed_.notify_all();
  }

  const ReceiveModel model_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<RecvTarget> buffers_;
  std::vector<std::uint8_t>* region_ = nullptr;
  std::uint32_t region_key_ = 0;
  bool region_writable_ = false;
};

// Holds the first delivery an endpoint makes once it has recorded an ESTABLISHED (its transport
// thread waits in RecordingEvents::Deliver) until Release, so a test can look at what the peer
// sees meanwhile. A 60 s backstop, longer than any wait of a test's, frees a test that failed
// before it released; the gate outlives the test, since the transport may deliver again later.
class EstablishedDeliveryHold {
 public:
  explicit EstablishedDeliveryHold(RecordingEvents& events) : gate_(std::make_shared<Gate>()) {
    events.on_deliver = [gate = gate_, events = &events] {
      if (events->Get(events->established) == 0) return;
      std::unique_lock lock(gate->mutex);
      if (gate->held) return;  // the first delivery of the ESTABLISHED only
      gate->held = true;
      gate->changed.notify_all();
      gate->changed.wait_for(lock, std::chrono::seconds(60), [&] { return gate->released; });
    };
  }
  ~EstablishedDeliveryHold() { Release(); }
  EstablishedDeliveryHold(const EstablishedDeliveryHold&) = delete;
  EstablishedDeliveryHold& operator=(const EstablishedDeliveryHold&) = delete;

  // True once the delivery is held (false: none came within `bound`).
  bool WaitHeld(std::chrono::seconds bound = std::chrono::seconds(10)) {
    std::unique_lock lock(gate_->mutex);
    return gate_->changed.wait_for(lock, bound, [&] { return gate_->held; });
  }
  void Release() {
    std::lock_guard lock(gate_->mutex);
    gate_->released = true;
    gate_->changed.notify_all();
  }

 private:
  struct Gate {
    std::mutex mutex;
    std::condition_variable changed;
    bool held = false, released = false;
  };
  std::shared_ptr<Gate> gate_;
};

class RecordingRequests final : public ListenEvents {
 public:
  void OnConnectRequest(std::unique_ptr<PendingConnection> request) override {
    std::lock_guard lock(mutex_);
    requests_.push_back(std::move(request));
    changed_.notify_all();
  }
  std::unique_ptr<PendingConnection> TryNext() {
    std::lock_guard lock(mutex_);
    if (requests_.empty()) return nullptr;
    auto request = std::move(requests_.front());
    requests_.pop_front();
    return request;
  }
  // The next request, waiting (bounded) for one; null if none came.
  std::unique_ptr<PendingConnection> Next() {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, kBound, [&] { return !requests_.empty(); })) return nullptr;
    auto request = std::move(requests_.front());
    requests_.pop_front();
    return request;
  }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::unique_ptr<PendingConnection>> requests_;
};

class RecordingSrqEvents final : public DeviceSrqEvents {
 public:
  void OnLimitReached() override {
    std::lock_guard lock(mutex_);
    ++fired_;
    changed_.notify_all();
  }
  bool WaitFor(const std::function<bool()>& done) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kBound, done);
  }
  int Fired() {
    std::lock_guard lock(mutex_);
    return fired_;
  }
  // For WaitFor's condition, which runs under the lock.
  int FiredLocked() const { return fired_; }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  int fired_ = 0;
};

}  // namespace softdat::transport::testing
