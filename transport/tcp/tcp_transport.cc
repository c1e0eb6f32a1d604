// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// TcpTransport: capabilities, who drives progress (consumer polls, the progress thread), the
// io_context, endpoints and listeners.
#include "transport/tcp/tcp_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <exception>
#include <new>
#include <system_error>
#include <thread>

#include "base/deferred_calls.h"
#include "base/log.h"
#include "transport/tcp/mono_clock.h"
#include "transport/tcp/tcp_endpoint.h"
#include "transport/tcp/socket_fd.h"
#include "transport/tcp/tcp_listener.h"
#include "transport/tcp/ud_endpoint.h"
#include "transport/tcp/ud_listener.h"

namespace softdat::transport::tcp {
namespace {

constexpr std::uint32_t kMaxBytes = 1u << 30;

// Queue depths come from memory, as an RNIC's come from the queue memory it has, not from small
// constants: an EP preallocates what its consumer asks for at create (core's request and
// receive rings, this transport's posted-work ring and completion bookkeeping), and what one
// queue may ask for is a share of physical memory. kBytesPerDto rounds up the cost of one DTO
// slot with 16 segments (measured near 450 bytes; rings are rounded up to a power of two).
// The ceiling is rxe's max_qp_wr, about a million; the floor keeps a machine that will not
// say its memory usable.
constexpr std::uint64_t kBytesPerDto = 1024;
constexpr std::uint64_t kMemoryShare = 16;  // one queue may take 1/16 of physical memory
constexpr std::uint32_t kMinWork = 4096;
constexpr std::uint32_t kMaxWork = 1u << 20;

std::uint32_t WorkLimitFromMemory() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return kMinWork;
  const std::uint64_t slots =
      static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page_size) / kMemoryShare / kBytesPerDto;
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>(slots, kMinWork, kMaxWork));
}
// MPA allows 512 bytes of private data; the RFC 6581 block takes 4 and DAT consumers expect
// the InfiniBand-sized limits (dapltest uses up to 196 bytes).
constexpr std::uint32_t kMaxPrivateData = 252;

// A consumer spins on the sockets when it polls this many times in a row, each within
// kStreakGapNs of the last (a dequeue or wait loop: a pass is a syscall or two, ~1 us); then the
// progress thread parks. Polls further apart (one dequeue per round trip, as ib_write_lat and
// dtest's RDMA Write ping-pong reap) leave it watching the sockets: it takes the arrivals the
// consumer, spinning on memory meanwhile, would not.
constexpr std::uint32_t kStreakToPark = 32;
constexpr std::uint64_t kStreakGapNs = 5'000;
// Calls per time stamp of a consumer's poll once the park is armed (Progress); a power of two.
constexpr std::uint32_t kCallsPerPollStamp = 8;
// With only same-host connections, a spinning consumer's polls look at what needs a syscall but
// rarely carries anything (the io_context's ready handlers: timers, accepts, handshakes;
// same-host sockets: doorbells and ends) at most once per this long. Counted in polls alone
// (every 8th idle one before), a consumer spinning on same-host rings made about 12 epoll_waits
// per 8 B round trip, more time than the rings themselves; a handler or an end waits this long
// (and 64 polls) at most. The clock is read every 64th poll: each read is a fair part of a poll.
constexpr std::uint64_t kIdleLookNs = 25'000;
// progress=poll's watchdog (Watch): how often it looks, and how long input waits before it warns.
constexpr std::uint64_t kWatchPeriodNs = 250'000'000;
constexpr std::uint64_t kStallWarnNs = 1'000'000'000;
// Connections read in one progress call: a bound, so one call never runs away.
constexpr std::size_t kReadyPerCall = 16;
// The kick ring's first size; it grows with the endpoints (KickQueue::Reserve).
constexpr std::size_t kInitialKickRing = 64;

std::uint64_t NowNs() { return MonotonicNs(); }

// "IA 127.0.0.1", for the log lines about the IA as a whole.
std::array<char, 32> IaText(const sockaddr_in& address) {
  char ip[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &address.sin_addr, ip, sizeof ip);
  std::array<char, 32> text{};
  std::snprintf(text.data(), text.size(), "IA %s", ip);
  return text;
}

// Below this many descriptors a server of many connections runs out early: said at the default
// level at each IA open.
constexpr std::uint64_t kFewDescriptors = 1024;

// Each connected endpoint is one socket, so the process's descriptor limit is the EP limit;
// memory is not the bound (an idle endpoint costs ~13 KiB). The soft limit (often 1024) is raised
// to the hard one here, as servers of many connections do: max_eps promises that many.
std::uint32_t EndpointLimit() {
  constexpr std::uint64_t kCeiling = 1u << 20;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 4096;
  const std::uint64_t hard = limit.rlim_max == RLIM_INFINITY ? kCeiling : limit.rlim_max;
  const std::uint64_t want = std::min<std::uint64_t>(hard, kCeiling);
  if (limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur < want) {
    const rlim_t was = limit.rlim_cur;
    limit.rlim_cur = static_cast<rlim_t>(want);
    if (setrlimit(RLIMIT_NOFILE, &limit) == 0) {
      SOFTDAT_LOG(kInfo, "tcp: raised the descriptor limit (RLIMIT_NOFILE) from %llu to %llu: one per connection",
                  static_cast<unsigned long long>(was), static_cast<unsigned long long>(want));
    } else {
      SOFTDAT_LOG(kWarn, "tcp: cannot raise the descriptor limit from %llu to %llu (%s): at most about %llu connections",
                  static_cast<unsigned long long>(was), static_cast<unsigned long long>(want), std::strerror(errno),
                  static_cast<unsigned long long>(was));
      return static_cast<std::uint32_t>(std::min<std::uint64_t>(was, kCeiling));
    }
  }
  if (want < kFewDescriptors)
    SOFTDAT_LOG(kWarn, "tcp: the descriptor limit is %llu (RLIMIT_NOFILE's hard limit): at most about that many "
                "connections; raise it (ulimit -Hn, LimitNOFILE=) for more",
                static_cast<unsigned long long>(want));
  return static_cast<std::uint32_t>(want);
}

Capabilities TcpCapabilities(const IaOptions& options) {
  Capabilities c;
  c.receive_model = ReceiveModel::kSoftware;
  c.rdma_read = true;
  c.busy_poll = options.progress == ProgressMode::kPoll;
  c.srq = true;
  c.srq_resize = true;
  c.srq_limit = true;
  c.max_endpoints = EndpointLimit();
  const std::uint32_t work = WorkLimitFromMemory();
  c.max_send_work = work;
  c.max_recv_work = work;
  c.max_segments = 16;
  c.max_message_size = kMaxBytes;
  c.max_rdma_size = kMaxBytes;
  c.max_private_data = kMaxPrivateData;
  c.max_rdma_read_in = 128;
  c.max_rdma_read_out = 128;
  c.max_srq_work = work;
  c.max_srq_segments = 16;
  // RFC 7306 (rdmap_extensions.cc). A peer without it (Linux siw) terminates the connection on
  // the first such message: docs/WIRE.md.
  c.immediate_data = true;
  c.atomics = true;
  // UD over UDP (ud_endpoint.h): a datagram Post is done once sent.
  c.datagrams = true;
  c.datagram_done_at_post = true;
  c.max_datagram = ud::kMaxPayload;
  return c;
}

}  // namespace

TcpTransport::TcpTransport(const sockaddr_in& address, const IaOptions& options)
    : address_(address),
      capabilities_(TcpCapabilities(options)),
      busy_poll_(options.progress == ProgressMode::kPoll),
      work_(asio::make_work_guard(io_)),
      poll_descriptor_(io_),
      handoff_ns_(std::uint64_t{options.handoff_us} * 1000),
      thread_spin_ns_(std::uint64_t{options.thread_spin_us} * 1000),
      // A kick wakes the progress thread unless a consumer polled lately: it drains the ring at
      // its next poll, or the consumer watch does handoff_us after its last (KickWakes).
      kicks_(io_, kInitialKickRing, [this] { return KickWakes(); }),
      consumer_watch_(io_) {
  kicks_.Start();
  if (!busy_poll_ && poll_set_.fd() >= 0) {
    // The progress thread's io_context learns of readable sockets through the epoll fd itself.
    boost::system::error_code error;
    poll_descriptor_.assign(::fcntl(poll_set_.fd(), F_DUPFD_CLOEXEC, 0), error);
    if (!error) ArmPollSet();
  }
  connection_options_.buffers = std::make_shared<ConnectionBuffers>();
  connection_options_.kicks = &kicks_;
  connection_options_.poll_set = &poll_set_;
  connection_options_.local = address;
  connection_options_.rnr_timeout_ms = options.rnr_timeout_ms;
  connection_options_.mpa_crc = options.mpa_crc;
  connection_options_.timeout_ms = options.timeout_ms;
  // progress=poll writes at post (ConnectionOptions::post_writes_all): nothing to coalesce.
  connection_options_.coalesce_ns = busy_poll_ ? 0 : std::uint64_t{options.coalesce_us} * 1000;
  connection_options_.post_writes_all = busy_poll_;
  connection_options_.congestion = options.congestion;
  connection_options_.max_private_data = kMaxPrivateData;
  if (options.shm == ShmMode::kAuto) {
    LocalPaths::Options local;
    local.address = address;
    local.rnr_timeout_ms = options.rnr_timeout_ms;
    local.max_private_data = kMaxPrivateData;
    local.progress_thread = !busy_poll_;
    local_ = LocalPaths::Create(io_, kicks_, poll_set_, local);
  }
  // Signals stay with the consumer's threads. progress=poll has no progress thread, only the
  // watchdog, which moves nothing.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  thread_ = busy_poll_ ? std::thread([this] { Watch(); }) : std::thread([this] { Run(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

TcpTransport::~TcpTransport() {
  {
    std::lock_guard lock(park_mutex_);
    stopping_.store(true);
  }
  park_cv_.notify_all();
  park_timer_.Wake();
  work_.reset();
  io_.stop();
  if (thread_.joinable()) thread_.join();
}

void TcpTransport::ArmPollSet() {
  // Not open: no epoll set, or progress=poll (RunOne's call must not spin on a failing wait).
  if (poll_armed_ || !poll_descriptor_.is_open()) return;
  poll_armed_ = true;
  poll_descriptor_.async_wait(asio::posix::stream_descriptor::wait_read, [this](const boost::system::error_code& error) {
    poll_armed_ = false;
    if (!error) OnPollSetReady();
  });
}

// A socket is readable. While consumers spin on the sockets, they are theirs (they read them on
// the CPU that waits anyway) and the progress thread must not be woken by every arrival: it is
// parked, and watches the PollSet again when it takes over (Park). A consumer that runs this
// handler meanwhile (RunAsio) leaves it at that.
void TcpTransport::OnPollSetReady() {
  if (std::this_thread::get_id() != thread_.get_id()) return;
  PollReady(true);
  SpinAfterTraffic();
  ArmPollSet();
}

// NAPI-style busy polling: an arrival right after traffic is taken within microseconds instead of
// after a wake-up (about 30 us on a small VM), for a bounded CPU cost (thread_spin_us after the
// last traffic). Only on a CPU nobody else waits for (SpareCpu): where every CPU is taken (two
// processes that spin on memory on 2 CPUs), a spinning thread makes the spinner that must answer
// wait for its time slice, while a sleeping one is run at once by the arrival's wake-up. It
// stops as soon as consumers spin on the sockets themselves.
void TcpTransport::SpinAfterTraffic() {
  if (thread_spin_ns_ == 0) return;
  std::uint64_t quiet_since = NowNs();
  while (!stopping_.load(std::memory_order_relaxed) && spare_cpu_.Available(quiet_since)) {
    bool any = kicks_.Drain();
    any |= PollReady(true);
    RunDeferredCalls();  // between two passes: a safe point
    const std::uint64_t now = NowNs();
    if (any) {
      quiet_since = now;
    } else if (now - quiet_since >= thread_spin_ns_ || now - last_poll_ns_.load(std::memory_order_relaxed) < kStreakGapNs ||
               !spare_cpu_.Available(now)) {
      return;
    }
  }
}

// Consumer thread, from Progress: the consumers poll now, so the progress thread parks until they
// stop; ask it to unless it already is (one wake-up per polling spell).
void TcpTransport::ArmParkFromConsumer() {
  if (park_armed_.exchange(true, std::memory_order_acq_rel)) return;
  asio::post(io_, [this] { Park(); });
}

// Consumer thread, from Progress: a consumer polls, so its kicks need not wake the progress thread
// (it drains them at its next poll, with the Work posted meanwhile: a stream's Sends go out
// together). The thread is not told: it watches for the spell's end only once a kick was left
// for the consumers (KickWakes).
void TcpTransport::BeginConsumerSpell() {
  if (!consumers_active_.load(std::memory_order_relaxed)) consumers_active_.store(true, std::memory_order_seq_cst);
}

// Any thread, as a kick is queued or a note left: while consumers poll, it waits for their next
// poll, and the spell's watch bounds the wait by handoff_us should they stop without a word. The
// watch is started then, not as the spell begins: a consumer that polls now and then (one dequeue
// per RDMA Write ping-pong round, or per 16) kept the watch's timer waking the progress thread
// every handoff_us, each wake-up, on a two-CPU machine, preempting a consumer that spins on memory.
bool TcpTransport::KickWakes() noexcept {
  if (busy_poll_) return false;
  if (!consumers_active_.load(std::memory_order_seq_cst)) return true;
  WatchSpell();
  return false;
}

void TcpTransport::WatchSpell() noexcept {
  if (spell_watched_.load(std::memory_order_relaxed)) return;
  if (spell_watched_.exchange(true, std::memory_order_acq_rel)) return;
  asio::post(io_, [this] { WatchConsumers(); });
}

// io_context handler (the progress thread, or a consumer running handlers while it is parked):
// wakes handoff_us after the consumers' last poll; while they still poll it looks again then, and
// when they stopped without a word it ends the spell and drains what they left. While the thread
// is parked this watch stops: Park watches instead, and ends the spell as it leaves.
void TcpTransport::WatchConsumers() {
  if (watching_consumers_ || stopping_.load()) return;
  // The parked thread watches them itself (Park, through its ParkTimer) and ends the spell as it
  // leaves; a timer here too would have a polling consumer re-arm it (system calls in the middle
  // of its spin) every handoff_us. The next spell, after the park, starts a watch again.
  if (parked_.load(std::memory_order_acquire)) return;
  const std::uint64_t last = last_poll_ns_.load(std::memory_order_relaxed);
  const std::uint64_t now = NowNs();
  if (now - last >= handoff_ns_) {
    EndConsumerSpell();
    return;
  }
  watching_consumers_ = true;
  consumer_watch_.expires_after(std::chrono::nanoseconds(last + handoff_ns_ - now));
  consumer_watch_.async_wait([this](const boost::system::error_code& error) {
    watching_consumers_ = false;
    if (!error) WatchConsumers();
  });
}

void TcpTransport::EndConsumerSpell() {
  // Store, fence, then look at the ring; a Push writes the ring, then reads the flag (seq_cst):
  // either this drain sees its connection or its push wakes the thread. A same-host connection's
  // note, which marks the connection instead of pushing while consumers poll
  // (LocalConnection::Kick: note, fence, flag), is found by the look this thread takes at every
  // live same-host connection before it sleeps (LocalPaths::PrepareSleep).
  // The watch's flag first: a kick left after it starts a new watch (at worst one more look).
  spell_watched_.store(false, std::memory_order_seq_cst);
  consumers_active_.store(false, std::memory_order_seq_cst);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  kicks_.Drain();
}

// Progress thread, while consumers poll. It waits on its ParkTimer, not in the
// io_context: Asio keeps every connected socket in its epoll set, edge-triggered, so a progress
// thread in io_context::run() would be woken by every arrival only to find nothing to do, and on
// a small machine each wake-up preempts a spinning consumer (PERFORMANCE.md, "Progress").
// Meanwhile the consumers run the io_context's handlers (Progress). It sleeps
// until handoff_us after the consumers' last poll and takes the sockets back then, or at once
// when a consumer about to sleep says so (Pause): a consumer that stops polling without a word
// (its dequeue loop ended, it spins on memory now) leaves arrivals and posted Work handoff_us at
// most. While consumers poll, their polls put the timer off (Progress): no wake-up at all, where a
// timed wait on a condition variable woke once per handoff_us to look, preempting a spinner.
void TcpTransport::Park() {
  if (std::this_thread::get_id() != thread_.get_id()) {
    park_armed_.store(false, std::memory_order_release);  // a consumer ran it: ask again later
    return;
  }
  // Parked is not asleep: the consumers read the same-host rings, and this thread takes them back
  // within handoff_us. This handler may run inside the io_context's wait, after PrepareSleep made
  // the sleep word odd; left odd, peers would ring doorbells nobody needs and send their short
  // RDMA Writes the slow way, one-sided (KeyTableView::ReadsRingsNow).
  if (local_ != nullptr) local_->EndSleep();
  {
    std::unique_lock lock(park_mutex_);
    parked_.store(true, std::memory_order_release);
    while (!stopping_.load()) {
      const std::uint64_t last = last_poll_ns_.load(std::memory_order_relaxed);
      const std::uint64_t now = NowNs();
      if (now - last >= handoff_ns_) break;
      if (park_timer_.usable()) {
        // The consumers' polls postpone this wake-up while they poll (Progress): it comes
        // handoff_us after the last poll that moved it, never later than handoff_us after the
        // last poll at all, and when it comes early the loop sleeps on to the last poll's.
        lock.unlock();
        park_timer_.SleepUntil(last + handoff_ns_);
        lock.lock();
      } else {
        park_cv_.wait_for(lock, std::chrono::nanoseconds(last + handoff_ns_ - now));
      }
      park_wakeups_.fetch_add(1, std::memory_order_relaxed);
    }
    park_timer_.Leave();
    parked_.store(false, std::memory_order_seq_cst);
  }
  // A consumer may be running handlers (RunAsio) that it began while this thread was parked:
  // let it finish before this thread runs any (they share handler state, e.g. poll_armed_). A
  // Dekker pair with RunAsio's turn and its look at parked_, so both sides are sequentially
  // consistent: with a release store and an acquire load, the store could still sit in this
  // CPU's store buffer as the load found no turn taken, a consumer could then take the turn and
  // find parked_ still true, and both threads would run handlers at once (a consumer running the
  // poll set's handler behind this thread's ArmPollSet leaves the poll set unwatched).
  while (asio_turn_.load(std::memory_order_seq_cst)) std::this_thread::yield();
  if (stopping_.load()) return;
  poll_streak_.store(0, std::memory_order_relaxed);
  park_armed_.store(false, std::memory_order_release);  // consumers that poll on park it again
  EndConsumerSpell();
  PollReady(true);
  ArmPollSet();
}

bool TcpTransport::PollReady(bool wait) noexcept {
  // Same-host connections first: what they carry is in memory (a few loads each, no syscall).
  bool any = local_ != nullptr && local_->Poll(wait);
  if (!wait) {
    // A consumer's poll with one connection reads it straight away (PollSet::Sole).
    if (std::shared_ptr<ProgressTarget> sole = poll_set_.Sole()) return sole->PollIo(false) || any;
    // Same-host sockets only: they carry doorbells for a sleeping thread and the peer's end, never
    // data, so a spinning consumer looks at them by the clock (kIdleLookNs), not with a syscall
    // each time.
    if (local_ != nullptr && poll_set_.direct_count() == 0 &&
        ((CountCall(indirect_polls_) & 63) != 0 || !LookDue(last_indirect_look_ns_, NowNs())))
      return any;
  }
  std::shared_ptr<ProgressTarget> ready[kReadyPerCall];
  // Level-triggered: a connection still readable after its turn is reported again, after the
  // others had theirs. Bounded, so the io_context's own work is not starved.
  for (int round = 0; round < 64; ++round) {
    const std::size_t n = poll_set_.Wait(ready, kReadyPerCall, 0);
    if (n == 0) break;
    for (std::size_t i = 0; i < n; ++i) {
      any |= ready[i]->PollIo(wait);
      ready[i].reset();
    }
    if (!wait) break;
  }
  return any;
}

bool TcpTransport::RunAsio() noexcept {
  // A turn, not a lock: the handlers deliver events, which no softdat lock may be held across.
  if (asio_turn_.exchange(true, std::memory_order_seq_cst)) return false;
  bool ran = false;
  // With a progress thread, only while it is parked (it waits for the turn before it runs
  // handlers again: the Dekker pair at the end of Park).
  if (busy_poll_ || parked_.load(std::memory_order_seq_cst)) {
    try {
      ran = io_.poll() > 0;
    } catch (const std::exception& e) {
      SOFTDAT_LOG(kError, "tcp: progress caught an exception: %s", e.what());
      ran = true;
    }
  }
  asio_turn_.store(false, std::memory_order_release);
  return ran;
}

bool TcpTransport::RunOne() {
  // The poll set is watched whenever this thread may sleep. Its handler does not watch it again
  // when a consumer runs it (RunAsio, while this thread is parked), and Park's end does; should
  // anything else ever leave it unwatched, a socket's arrival or a same-host peer's doorbell
  // would wait for an unrelated wake-up, for ever in the worst case. Only this thread touches
  // poll_armed_ while it is not parked.
  ArmPollSet();
  if (local_ == nullptr) return io_.run_one() > 0;
  if (io_.poll_one() > 0) return true;
  // The PollSet is level-triggered, but the io_context watches its descriptor edge-triggered: an
  // edge taken while nobody read the set (a consumer ran the handler, a bounded PollReady left
  // some) would not come again, and a same-host connection's end (EOF on its socket, no data
  // behind it) would wait for ever. One look before sleeping takes what is ready.
  if (PollReady(true)) return true;
  // About to sleep: same-host peers are told first (they ring a doorbell on the socket for what
  // they publish from now on), and their rings are looked at once more for what came before.
  if (local_->PrepareSleep()) return true;
  const bool ran = io_.run_one() > 0;
  local_->EndSleep();
  return ran;
}

void TcpTransport::Run() noexcept {
  pthread_setname_np(pthread_self(), "softdat-tcp");
  while (!stopping_.load()) {
    try {
      // One handler at a time: between two is this thread's safe point (base/deferred_calls.h),
      // where CNO agents that its deliveries triggered run with no lock held.
      while (RunOne()) RunDeferredCalls();
    } catch (const std::exception& e) {
      SOFTDAT_LOG(kError, "tcp: progress thread caught an exception: %s", e.what());
    }
    if (io_.stopped()) break;
  }
}

// progress=poll's watchdog. Nothing moves between the consumer's DAT calls, so a consumer that
// spins on memory for an RDMA Write, or sleeps, waits forever with the data at hand: a stock
// consumer written for an RNIC must not hang silently. Every kWatchPeriodNs it looks whether a
// consumer called Progress since its last look and, if not, whether input waits; after
// kStallWarnNs of that it says so, once per stall.
void TcpTransport::Watch() noexcept {
  pthread_setname_np(pthread_self(), "softdat-watch");
  std::uint32_t calls_seen = progress_calls_.load(std::memory_order_relaxed);
  std::uint64_t stalled_since = 0;
  bool warned = false;
  std::unique_lock lock(park_mutex_);
  while (!stopping_.load()) {
    park_cv_.wait_for(lock, std::chrono::nanoseconds(kWatchPeriodNs));
    if (stopping_.load()) break;
    const std::uint32_t calls = progress_calls_.load(std::memory_order_relaxed);
    epoll_event ready;
    // Input only: a Post writes what the socket takes (ConnectionOptions::post_writes_all), and
    // what waits after it (a completion to report) waits for the consumer's call by design.
    const bool waiting = (poll_set_.fd() >= 0 && ::epoll_wait(poll_set_.fd(), &ready, 1, 0) > 0) ||
                         (local_ != nullptr && local_->HasWork());
    if (calls != calls_seen || !waiting) {
      if (warned && calls != calls_seen)
        SOFTDAT_LOG(kInfo, "tcp %s: progress=poll: the consumer called in again after %.1f s",
                    IaText(address_).data(), static_cast<double>(NowNs() - stalled_since) / 1e9);
      calls_seen = calls;
      stalled_since = 0;
      warned = false;
      continue;
    }
    const std::uint64_t now = NowNs();
    if (stalled_since == 0) stalled_since = now - kWatchPeriodNs;
    if (warned || now - stalled_since < kStallWarnNs) continue;
    warned = true;
    SOFTDAT_LOG(kWarn,
                "tcp %s: progress=poll: input has waited %.1f s for a DAT call on this IA; in poll mode arrivals "
                "are placed (an RDMA Write lands) only inside the consumer's calls (dat_evd_wait, dat_evd_dequeue, "
                "dat_cno_wait): a consumer that spins on memory or sleeps needs progress=thread (softdat(7), "
                "PROGRESS)",
                IaText(address_).data(), static_cast<double>(now - stalled_since) / 1e9);
  }
}

bool TcpTransport::Progress() noexcept {
  // What consumer threads queued first (coalesced writes go out), then arrivals: a Send written
  // here is in its peer's socket before the read, so two endpoints of one IA (loopback pairs)
  // see it arrive in the same poll that completes it.
  // One look at the IA's last write for the whole drain: the writes it makes do not hold back
  // the connections after them.
  // A deep queue is written whole, coalescing window or not: its Work was posted while the
  // consumer reaped events (ProgressDue), and holding it longer only lets it go cold.
  const bool deep = ProgressDue();
  bool any = kicks_.Drain(!deep, connection_options_.buffers->last_write_ns.load(std::memory_order_relaxed));
  any |= PollReady(false);
  if (!busy_poll_) {
    // The progress thread runs the io_context (setup, timers, waits for socket room). A consumer
    // that spins on the sockets (polls kStreakToPark times, each within kStreakGapNs of the last)
    // parks it, and keeps it parked while it polls (the time is what the parked thread looks at);
    // a consumer that polls now and then (one dequeue per round trip) leaves it watching.
    const std::uint32_t calls = CountCall(progress_calls_);
    const bool active = consumers_active_.load(std::memory_order_relaxed);
    const bool armed = park_armed_.load(std::memory_order_relaxed);
    // Once the park is armed, the time only tells the parked thread (and the spell's watch) that
    // consumers still poll: every kCallsPerPollStamp-th call stamps it, not every call. A clock
    // read was a quarter of a default-mode waiter's samples (perf; PERFORMANCE.md, "Progress").
    // A stamp a few calls old hands the rings back sooner, never later; a consumer whose calls
    // come handoff_us / kCallsPerPollStamp apart or more leaves the thread watching, as one that
    // polls now and then always did.
    if (!armed || !active || (calls & (kCallsPerPollStamp - 1)) == 0) {
      const std::uint64_t now = NowNs();
      const std::uint64_t previous = last_poll_ns_.load(std::memory_order_relaxed);
      last_poll_ns_.store(now, std::memory_order_relaxed);
      // The parked thread sleeps on while this poll is recent (ParkTimer): no wake-up per
      // handoff_us to see whether consumers still poll.
      if (armed) park_timer_.Postpone(now, handoff_ns_);
      if (!armed) {
        if (now - previous >= kStreakGapNs) {
          poll_streak_.store(0, std::memory_order_relaxed);
        } else if (poll_streak_.fetch_add(1, std::memory_order_relaxed) + 1 >= kStreakToPark) {
          ArmParkFromConsumer();
        }
      }
    }
    if (!active) BeginConsumerSpell();
    // The parked thread runs no handler (timers, accepts, waits for socket room): the consumers
    // do, as in busy-poll.
    if (parked_.load(std::memory_order_relaxed) && AsioDue(calls, any)) any |= RunAsio();
    return any;
  }
  // Busy-poll: nobody else runs the io_context. Its ready handlers now and then (every call
  // would add a syscall to every spin).
  const std::uint32_t calls = CountCall(progress_calls_);
  if (AsioDue(calls, any)) any |= RunAsio();
  return any;
}

bool TcpTransport::AsioDue(std::uint32_t calls, bool any) noexcept {
  // Same-host connections alone poll without a syscall: the io_context by the clock. Otherwise
  // every 8th idle poll (every 64th busy one) as ever: with TCP connections every poll makes a
  // syscall already and their waits for socket room are handlers, and datagram endpoints are
  // read by handlers only (an IA with those and same-host connections both waits the clock).
  if (local_ == nullptr || local_->live() == 0 || poll_set_.direct_count() != 0)
    return (calls & 63) == 0 || (!any && (calls & 7) == 0);
  return (calls & 63) == 0 && LookDue(last_asio_ns_, NowNs());
}

std::uint32_t TcpTransport::CountCall(std::atomic<std::uint32_t>& calls) noexcept {
  // A load and a store, not a locked read-modify-write on every poll: two consumers polling at
  // once may count one call, which only moves when "every Nth call" comes, and the watchdog sees
  // a change all the same.
  const std::uint32_t before = calls.load(std::memory_order_relaxed);
  calls.store(before + 1, std::memory_order_relaxed);
  return before;
}

bool TcpTransport::LookDue(std::atomic<std::uint64_t>& last, std::uint64_t now) noexcept {
  // Racing pollers may both look once: harmless.
  if (now - last.load(std::memory_order_relaxed) < kIdleLookNs) return false;
  last.store(now, std::memory_order_relaxed);
  return true;
}

bool TcpTransport::ProgressDue() const noexcept { return kicks_.depth() >= kDueDepth; }

void TcpTransport::Pause() noexcept {
  // Counted first: a completion a consumer's Post leaves from now on wakes the progress thread;
  // one left before, for the next poll (LocalConnection::Defer), is found by the look the thread
  // takes before it sleeps, which what follows brings about.
  kicks_.AddWaiters(1);
  if (busy_poll_) return;
  // The consumer stops polling: the progress thread takes the sockets back now, not a hand-off
  // period later. A parked thread sees the poll time gone (and the notify wakes it); one about to
  // park sees it at once; an unparked one is told through the io_context, for the same.
  bool parked;
  {
    std::lock_guard lock(park_mutex_);
    last_poll_ns_.store(0, std::memory_order_relaxed);
    parked = parked_.load(std::memory_order_relaxed);
  }
  consumers_active_.store(false, std::memory_order_seq_cst);  // kicks wake the thread again
  if (parked) {
    park_cv_.notify_one();
    park_timer_.Wake();
    return;
  }
  asio::post(io_, [this] {
    kicks_.Drain();
    ArmPollSet();
  });
}

void TcpTransport::Resume() noexcept { kicks_.AddWaiters(-1); }

Status TcpTransport::CreateProtectionDomain(std::unique_ptr<ProtectionDomain>& out) {
  out = std::make_unique<TcpProtectionDomain>(pd_numbers_.fetch_add(1, std::memory_order_relaxed) + 1);
  return Status::Ok();
}

void TcpTransport::PublishKey(const PublishedKey& key) {
  if (local_ != nullptr) local_->Publish(key);
}

void TcpTransport::RevokeKey(std::uint32_t key) {
  if (local_ != nullptr) local_->Revoke(key);
}

Status TcpTransport::RegisterMemory(ProtectionDomain&, void*, std::uint64_t, MemoryAccess,
                                    std::unique_ptr<MemoryRegion>& out) {
  out.reset();  // core issues the keys and checks every access
  return Status::Ok();
}

Status TcpTransport::CreateDeviceSrq(ProtectionDomain&, std::uint32_t, std::uint32_t, DeviceSrqEvents*,
                                     std::unique_ptr<DeviceSrq>&) {
  return Status(Code::kModelNotSupported);
}

Status TcpTransport::CreateEndpoint(const EndpointConfig& config, EndpointEvents* events,
                                    std::unique_ptr<Endpoint>& out) {
  if (config.datagram) return CreateDatagramEndpoint(io_, address_, events, out);
  ConnectionBuffers& shared = *connection_options_.buffers;
  const std::uint32_t live = shared.live_connections.load(std::memory_order_relaxed) +
                             shared.live_endpoints.load(std::memory_order_relaxed) + 1;
  try {
    // Room in the kick ring for every connection alive, so a kick never falls back to an
    // allocation (KickQueue::RunLater).
    if (!kicks_.Reserve(live)) throw std::bad_alloc();
    out = std::make_unique<TcpEndpoint>(io_, connection_options_, local_.get(), config, events, kMaxPrivateData);
  } catch (const std::bad_alloc&) {
    SOFTDAT_LOG(kWarn, "tcp: no memory for endpoint %u of this IA", live);
    return Status(Code::kInsufficientResources, Detail::kMemory);
  }
  return Status::Ok();
}

Status TcpTransport::Listen(std::uint16_t port, ListenEvents* events, std::unique_ptr<Listener>& out) {
  asio::ip::tcp::acceptor acceptor(io_);
  const asio::ip::tcp::endpoint at(asio::ip::address_v4(ntohl(address_.sin_addr.s_addr)), port);
  boost::system::error_code error;
  const int fd = OpenCloseOnExecSocket();
  if (fd < 0) {
    error = boost::system::error_code(errno, boost::system::system_category());
  } else {
    acceptor.assign(at.protocol(), fd, error);
    if (error) ::close(fd);
  }
  if (!error) acceptor.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) acceptor.bind(at, error);
  if (!error) acceptor.listen(asio::socket_base::max_listen_connections, error);
  if (error == asio::error::address_in_use) {
    SOFTDAT_LOG(kInfo, "tcp listener %s:%u: cannot listen: the port is already in use", at.address().to_string().c_str(),
                port);
    return Status(Code::kConnQualInUse);
  }
  if (error) {
    SOFTDAT_LOG(kError, "tcp listener %s:%u: cannot listen: %s", at.address().to_string().c_str(), port,
                error.message().c_str());
    return Status(Code::kConnQualUnavailable);
  }
  const std::uint16_t bound = acceptor.local_endpoint(error).port();
  auto core = std::make_shared<ListenerCore>(io_, std::move(acceptor), events);
  if (local_ != nullptr) core->StartLocal(address_.sin_addr, bound);
  core->Start();
  out = std::make_unique<TcpListener>(std::move(core), bound);
  return Status::Ok();
}

Status TcpTransport::ListenDatagram(std::uint16_t port, ListenEvents* events, std::unique_ptr<Listener>& out) {
  return CreateDatagramListener(io_, address_, port, events, out);
}

Status CreateTcpTransport(const IaParams& params, std::string& why, std::unique_ptr<Transport>& out) {
  sockaddr_in address{};
  if (Status status = ResolveIpv4(params.address, address, why); !status.ok()) return status;
  try {
    out = std::make_unique<TcpTransport>(address, params.options);
  } catch (const boost::system::system_error& e) {
    // The io_context's epoll and eventfd, the progress thread: what a process out of descriptors
    // or memory cannot make. The consumer's limits, said as such (core logs `why`).
    why = std::string(e.what()) + " (the process's descriptor limit? ulimit -n)";
    return Status(Code::kInsufficientResources);
  } catch (const std::system_error& e) {
    why = e.what();
    return Status(Code::kInsufficientResources);
  }
  return Status::Ok();
}

}  // namespace softdat::transport::tcp
