// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// PollSet: epoll registration and the slot table that turns an event into a live connection.
#include "transport/tcp/poll_set.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "base/log.h"

namespace softdat::transport::tcp {
namespace {

std::uint64_t Token(std::uint32_t slot, std::uint32_t generation) {
  return std::uint64_t{generation} << 32 | slot;
}

}  // namespace

PollSet::PollSet() : epfd_(::epoll_create1(EPOLL_CLOEXEC)) {
  if (epfd_ < 0) SOFTDAT_LOG(kError, "tcp: epoll_create1 failed: %s", std::strerror(errno));
}

PollSet::~PollSet() {
  if (epfd_ >= 0) ::close(epfd_);
}

bool PollSet::Add(int socket, const std::shared_ptr<ProgressTarget>& connection, std::uint64_t& token, bool direct) {
  std::uint32_t slot;
  {
    std::lock_guard lock(mutex_);
    if (free_.empty()) {
      slot = static_cast<std::uint32_t>(slots_.size());
      slots_.emplace_back();
    } else {
      slot = free_.back();
      free_.pop_back();
    }
    Slot& s = slots_[slot];
    s.connection = connection;
    s.reading = true;
    s.direct = direct;
    token = Token(slot, ++s.generation);
  }
  epoll_event event{};
  event.events = EPOLLIN | EPOLLRDHUP;
  event.data.u64 = token;
  if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, socket, &event) == 0) {
    std::lock_guard lock(mutex_);
    CountLocked(+1, direct);
    return true;
  }
  SOFTDAT_LOG(kError, "tcp: cannot poll a socket: %s", std::strerror(errno));
  std::lock_guard lock(mutex_);
  slots_[slot].connection.reset();
  free_.push_back(slot);
  return false;
}

void PollSet::CountLocked(int change, bool direct) {
  count_.store(count_.load(std::memory_order_relaxed) + change, std::memory_order_relaxed);
  if (direct) direct_count_.store(direct_count_.load(std::memory_order_relaxed) + change, std::memory_order_relaxed);
  sole_.reset();
  if (count_.load(std::memory_order_relaxed) != 1) return;
  for (const Slot& s : slots_)  // control path: a scan is fine
    if (!s.connection.expired() && s.reading && s.direct) sole_ = s.connection;
}

std::shared_ptr<ProgressTarget> PollSet::Sole() {
  // Only a direct target is ever the sole one: a set of one same-host socket takes no lock here.
  if (count_.load(std::memory_order_relaxed) != 1 || direct_count_.load(std::memory_order_relaxed) != 1) return nullptr;
  std::lock_guard lock(mutex_);
  return sole_.lock();
}

void PollSet::SetWatch(int socket, std::uint64_t token, Watch watch) {
  const bool reading = watch == Watch::kData;
  epoll_event event{};
  std::uint32_t events = 0;  // kFailure: EPOLLERR and EPOLLHUP, which epoll always reports
  if (watch != Watch::kFailure) events |= EPOLLRDHUP;
  if (reading) events |= EPOLLIN;
  event.events = events;
  event.data.u64 = token;
  (void)::epoll_ctl(epfd_, EPOLL_CTL_MOD, socket, &event);
  const auto slot = static_cast<std::uint32_t>(token);
  std::lock_guard lock(mutex_);
  if (slot >= slots_.size() || slots_[slot].generation != static_cast<std::uint32_t>(token >> 32)) return;
  slots_[slot].reading = reading;
  CountLocked(0, false);
}

void PollSet::Remove(int socket, std::uint64_t token) {
  (void)::epoll_ctl(epfd_, EPOLL_CTL_DEL, socket, nullptr);
  const auto slot = static_cast<std::uint32_t>(token);
  std::lock_guard lock(mutex_);
  if (slot >= slots_.size() || slots_[slot].generation != static_cast<std::uint32_t>(token >> 32)) return;
  slots_[slot].connection.reset();
  ++slots_[slot].generation;  // an event already returned for the old socket finds nothing
  free_.push_back(slot);
  CountLocked(-1, slots_[slot].direct);
}

std::size_t PollSet::Wait(std::shared_ptr<ProgressTarget>* out, std::size_t max, int timeout_ms) {
  std::array<epoll_event, 32> events;
  const int n = ::epoll_wait(epfd_, events.data(), static_cast<int>(std::min(max, events.size())), timeout_ms);
  if (n <= 0) return 0;
  std::size_t found = 0;
  std::lock_guard lock(mutex_);
  for (int i = 0; i < n; ++i) {
    const auto slot = static_cast<std::uint32_t>(events[i].data.u64);
    if (slot >= slots_.size() || slots_[slot].generation != static_cast<std::uint32_t>(events[i].data.u64 >> 32))
      continue;
    if (std::shared_ptr<ProgressTarget> connection = slots_[slot].connection.lock()) out[found++] = std::move(connection);
  }
  return found;
}

}  // namespace softdat::transport::tcp
