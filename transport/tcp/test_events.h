// Test doubles for the transport's two callback interfaces: Events records everything an
// endpoint reports, hands out receive buffers the test queues and resolves one exposed region;
// Requests collects connection requests. Every wait is bounded.
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
#include <vector>

#include "transport/endpoint.h"
#include "transport/listener.h"

namespace softdat::transport::tcp {

inline constexpr auto kBound = std::chrono::seconds(10);

inline std::vector<std::uint8_t> Bytes(std::size_t n, std::uint8_t seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(seed + i * 31 + (i >> 8));
  return v;
}

inline Segment SegmentOf(std::vector<std::uint8_t>& v, std::size_t offset = 0, std::size_t length = SIZE_MAX) {
  return Segment{reinterpret_cast<std::uint64_t>(v.data() + offset),
                 static_cast<std::uint32_t>(std::min(length, v.size() - offset)), 1};
}

class Events final : public EndpointEvents {
 public:
  struct Recv {
    std::uint32_t msn;
    WorkStatus status;
    RecvInfo info;
  };

  void OnEstablished(std::span<const std::uint8_t> private_data) override {
    std::lock_guard lock(mutex_);
    established = true;
    peer_data.assign(private_data.begin(), private_data.end());
    changed_.notify_all();
  }
  void OnEnded(ConnectionEnd why, std::span<const std::uint8_t> private_data) override {
    std::lock_guard lock(mutex_);
    ++ended_count;
    ended = why;
    peer_data.assign(private_data.begin(), private_data.end());
    changed_.notify_all();
  }
  RecvAcquire AcquireRecv(std::uint32_t msn, RecvTarget& target) override {
    std::lock_guard lock(mutex_);
    acquired_msns.push_back(msn);
    if (buffers_.empty()) {
      ++not_ready;
      changed_.notify_all();
      return RecvAcquire::kNotReady;
    }
    target = buffers_.front();
    buffers_.pop_front();
    return RecvAcquire::kTaken;
  }
  void OnRecvDone(std::uint32_t msn, WorkStatus status, const RecvInfo& info) override {
    std::lock_guard lock(mutex_);
    recvs.push_back({msn, status, info});
    changed_.notify_all();
  }
  void OnDeviceRecvDone(std::uint64_t, WorkStatus, const RecvInfo&) override { ADD_FAILURE() << "device model"; }
  void OnWorkDone(std::uint64_t id, WorkStatus status, std::uint32_t length) override {
    std::lock_guard lock(mutex_);
    work_done.push_back({id, status, length});
    changed_.notify_all();
  }
  RemoteResolution ResolveRemote(std::uint32_t key, std::uint64_t address, std::uint64_t length,
                                 RemoteAccess access) override {
    std::lock_guard lock(mutex_);
    if (region_ == nullptr || key != region_key_) return {RemoteCheck::kInvalidKey, nullptr};
    if (access == RemoteAccess::kWrite && !region_writable_) return {RemoteCheck::kAccessRights, nullptr};
    const auto base = reinterpret_cast<std::uint64_t>(region_->data());
    if (address < base || length > region_->size() || address - base > region_->size() - length)
      return {RemoteCheck::kBounds, nullptr};
    return {RemoteCheck::kOk, region_->data() + (address - base)};
  }

  void AddBuffer(std::span<const Segment> segments) {
    std::lock_guard lock(mutex_);
    std::uint64_t capacity = 0;
    for (const Segment& s : segments) capacity += s.length;
    buffers_.push_back(RecvTarget{segments, capacity});
  }
  void Expose(std::vector<std::uint8_t>& region, std::uint32_t key, bool writable) {
    std::lock_guard lock(mutex_);
    region_ = &region;
    region_key_ = key;
    region_writable_ = writable;
  }
  bool WaitFor(const std::function<bool()>& done) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, kBound, done);
  }

  struct WorkDone {
    std::uint64_t id;
    WorkStatus status;
    std::uint32_t length;
  };
  bool established = false;
  int ended_count = 0;
  std::optional<ConnectionEnd> ended;
  std::vector<std::uint8_t> peer_data;
  std::vector<std::uint32_t> acquired_msns;
  int not_ready = 0;
  std::vector<Recv> recvs;
  std::vector<WorkDone> work_done;

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<RecvTarget> buffers_;
  std::vector<std::uint8_t>* region_ = nullptr;
  std::uint32_t region_key_ = 0;
  bool region_writable_ = false;
};

class Requests final : public ListenEvents {
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

}  // namespace softdat::transport::tcp
