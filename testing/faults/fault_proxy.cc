// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// FaultProxy: blocking sockets, one thread per direction, faults applied to each chunk before it
// is forwarded.
#include "testing/faults/fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace softdat::testing::faults {
namespace {

constexpr int kPollMs = 50;  // how often a blocked thread looks at Stop()

int Listen127(std::uint16_t& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof at;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0 || ::listen(fd, 16) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&at), &size) != 0)
    throw std::runtime_error(std::string("FaultProxy: cannot listen: ") + std::strerror(errno));
  port = ntohs(at.sin_port);
  return fd;
}

int Connect127(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  to.sin_port = htons(port);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) == 0) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

void NoDelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

bool SendAll(int fd, const std::uint8_t* bytes, std::size_t length, const std::atomic<bool>& stopping) {
  while (length > 0) {
    pollfd p{fd, POLLOUT, 0};
    const int ready = ::poll(&p, 1, kPollMs);
    if (stopping.load()) return false;
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t sent = ::send(fd, bytes, length, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    bytes += sent;
    length -= static_cast<std::size_t>(sent);
  }
  return true;
}

// Sleeps `duration` in slices, returning early on Stop().
void Hold(std::chrono::milliseconds duration, const std::atomic<bool>& stopping) {
  const auto until = std::chrono::steady_clock::now() + duration;
  while (!stopping.load() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<long>(kPollMs, duration.count())));
}

}  // namespace

// Both sockets of one relayed connection. A direction that ends closes nothing of the other
// except by shutdown (FIN); an abort (truncation, an error) closes both.
struct FaultProxy::Relay {
  int active = -1;   // the side that connected to the proxy
  int passive = -1;  // the proxy's connection to the target
  std::atomic<bool> aborted{false};
  std::mutex mutex;
  void Abort() {
    std::lock_guard lock(mutex);
    if (aborted.exchange(true)) return;
    // SO_LINGER 0: a reset, as a path that dies mid-FPDU gives; shutdown wakes the other thread.
    const linger hard{1, 0};
    for (int fd : {active, passive}) {
      ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &hard, sizeof hard);
      ::shutdown(fd, SHUT_RDWR);
    }
  }
  ~Relay() {
    if (active >= 0) ::close(active);
    if (passive >= 0) ::close(passive);
  }
};

FaultProxy::FaultProxy(std::uint16_t target_port, const DirectionFaults& up, const DirectionFaults& down)
    : target_port_(target_port), up_(up), down_(down) {
  listen_fd_ = Listen127(port_);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

FaultProxy::~FaultProxy() { Stop(); }

void FaultProxy::Stop() {
  if (stopping_.exchange(true)) return;
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> pumps;
  {
    std::lock_guard lock(mutex_);
    pumps.swap(pumps_);
  }
  for (std::thread& pump : pumps) pump.join();
  relays_.clear();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

ProxyCounts FaultProxy::counts() const {
  ProxyCounts c;
  c.connections = counters_.connections.load();
  c.bytes_up = counters_.bytes_up.load();
  c.bytes_down = counters_.bytes_down.load();
  c.fpdus_up = counters_.fpdus_up.load();
  c.fpdus_down = counters_.fpdus_down.load();
  c.delays = counters_.delays.load();
  c.stalls = counters_.stalls.load();
  c.cuts = counters_.cuts.load();
  c.flips = counters_.flips.load();
  c.truncations = counters_.truncations.load();
  c.pieces = counters_.pieces.load();
  return c;
}

void FaultProxy::AcceptLoop() {
  while (!stopping_.load()) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) <= 0) continue;
    const int active = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (active < 0) continue;
    auto relay = std::make_shared<Relay>();
    relay->active = active;
    relay->passive = Connect127(target_port_);
    if (relay->passive < 0) continue;  // the relay closes the active side: the peer sees a refusal
    NoDelay(relay->active);
    NoDelay(relay->passive);
    counters_.connections.fetch_add(1);
    std::lock_guard lock(mutex_);
    relays_.push_back(relay);
    pumps_.emplace_back([this, relay] { Pump(relay, true); });
    pumps_.emplace_back([this, relay] { Pump(relay, false); });
  }
}

void FaultProxy::Pump(std::shared_ptr<Relay> relay, bool up) {
  const DirectionFaults& faults = up ? up_ : down_;
  const int from = up ? relay->active : relay->passive;
  const int to = up ? relay->passive : relay->active;
  std::atomic<std::uint64_t>& forwarded = up ? counters_.bytes_up : counters_.bytes_down;
  std::atomic<std::uint64_t>& fpdus = up ? counters_.fpdus_up : counters_.fpdus_down;
  FpduTracker tracker;
  std::uint64_t data_fpdus = 0;  // FPDUs of data seen (flip_data_only counts these)
  std::uint64_t offset = 0;  // stream offset of the next byte read
  std::uint64_t flip_at = DirectionFaults::kNever;
  std::uint64_t truncate_at = DirectionFaults::kNever;
  bool stalled = false;
  bool cut = false;
  std::uint64_t piece_seed = up ? 0x5eed : 0xd0e5;
  std::uint8_t chunk[16384];
  while (!stopping_.load() && !relay->aborted.load()) {
    pollfd p{from, POLLIN, 0};
    const int ready = ::poll(&p, 1, kPollMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t got = ::recv(from, chunk, sizeof chunk, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      // The sender closed (FIN): pass it on. An error (reset) ends both ways.
      if (got == 0 && !cut) {
        ::shutdown(to, SHUT_WR);
        return;
      }
      if (got < 0) relay->Abort();
      return;
    }
    std::size_t length = static_cast<std::size_t>(got);
    tracker.Feed(chunk, length, [&](std::uint64_t number, std::uint64_t start, std::uint64_t payload,
                                    std::uint8_t opcode) {
      fpdus.fetch_add(1);
      if (CarriesData(opcode)) ++data_fpdus;
      const bool counted = !faults.flip_data_only || CarriesData(opcode);
      const std::uint64_t flip_number = faults.flip_data_only ? data_fpdus : number;
      if (counted && flip_number == faults.flip_fpdu) flip_at = start + std::min<std::uint64_t>(faults.flip_offset, payload - 1);
      if (number == faults.truncate_fpdu) truncate_at = start + payload / 2;
    });
    if (cut) {  // after a cut this direction's bytes go nowhere
      offset += length;
      continue;
    }
    if (flip_at >= offset && flip_at < offset + length) {
      chunk[flip_at - offset] ^= faults.flip_mask;
      counters_.flips.fetch_add(1);
    }
    std::size_t forward = length;
    if (truncate_at >= offset && truncate_at < offset + length) forward = static_cast<std::size_t>(truncate_at - offset);
    if (faults.cut_at >= offset && faults.cut_at < offset + length) {
      forward = std::min<std::size_t>(forward, static_cast<std::size_t>(faults.cut_at - offset));
      cut = true;
    }
    if (faults.delay.count() > 0) {
      Hold(faults.delay, stopping_);
      counters_.delays.fetch_add(1);
    }
    if (!stalled && faults.stall_at < offset + length) {
      // The bytes before the stall point go now, the rest after the stall.
      const std::size_t before = faults.stall_at > offset ? static_cast<std::size_t>(faults.stall_at - offset) : 0;
      const std::size_t first = std::min(before, forward);
      if (!SendAll(to, chunk, first, stopping_)) return relay->Abort();
      forwarded.fetch_add(first);
      stalled = true;
      counters_.stalls.fetch_add(1);
      Hold(faults.stall_for, stopping_);
      if (!SendAll(to, chunk + first, forward - first, stopping_)) return relay->Abort();
      forwarded.fetch_add(forward - first);
    } else if (faults.max_piece != 0) {
      // The same bytes in small pieces of pseudo-random sizes: what a path that resegments gives.
      for (std::size_t at = 0; at < forward;) {
        piece_seed = piece_seed * 6364136223846793005ull + 1442695040888963407ull;
        const std::size_t piece = std::min<std::size_t>(forward - at, 1 + (piece_seed >> 33) % faults.max_piece);
        if (!SendAll(to, chunk + at, piece, stopping_)) return relay->Abort();
        at += piece;
        counters_.pieces.fetch_add(1);
        if (faults.piece_gap.count() > 0) std::this_thread::sleep_for(faults.piece_gap);
      }
      forwarded.fetch_add(forward);
    } else {
      if (!SendAll(to, chunk, forward, stopping_)) return relay->Abort();
      forwarded.fetch_add(forward);
    }
    offset += length;
    if (forward < length && !cut) {  // truncated in the middle of an FPDU
      counters_.truncations.fetch_add(1);
      relay->Abort();
      return;
    }
    if (cut) {
      counters_.cuts.fetch_add(1);
      ::shutdown(to, SHUT_WR);
    }
  }
}

}  // namespace softdat::testing::faults
