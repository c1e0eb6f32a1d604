// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The same-host path (local_path.h): the live shared-memory connections of an IA and how they are
// polled beside the sockets, and one connection's life: the handshake in the io_context, then the
// engine in the poll set.
#include "transport/tcp/local_path.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <thread>

#include "base/log.h"
#include "transport/tcp/kick_queue.h"
#include "transport/tcp/poll_set.h"

namespace softdat::transport::tcp {
namespace {

namespace asio = boost::asio;

// Each direction's ring. 64 KiB holds a pipeline of small Sends and Writes; a large Send goes by
// cross-memory attach (its pull record is small) or through the ring in pieces.
constexpr std::uint32_t kRingBytes = 64 * 1024;
// Below this many live connections a poll looks at each; from it on, at those their peers marked
// in the activity table and at kInTurn more in turn (deadlines, and bits a hostile peer cleared,
// are seen within live / kInTurn polls).
constexpr std::size_t kLookAtAllBelow = 16;
constexpr std::size_t kInTurn = 4;
// The active side's port numbers (dat_cr_query), from Linux's default ephemeral range.
constexpr std::uint32_t kFirstPort = 32768;
constexpr std::uint32_t kPorts = 60999 - 32768 + 1;

std::uint64_t NowNs() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

std::uint32_t PzNumber(const ProtectionDomain* pd) {
  // Every protection domain of this transport is one (TcpTransport::CreateProtectionDomain).
  return pd != nullptr ? static_cast<const TcpProtectionDomain*>(pd)->number() : 0;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// LocalPaths

std::unique_ptr<LocalPaths> LocalPaths::Create(asio::io_context& io, KickQueue& kicks, PollSet& poll_set,
                                               const Options& options) {
  std::unique_ptr<shm::KeyTable> keys;
  if (Status status = shm::KeyTable::Create(kMaxMemoryKeys, options.progress_thread, keys); !status.ok()) {
    char ip[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &options.address.sin_addr, ip, sizeof ip);
    SOFTDAT_LOG(kWarn, "tcp IA %s: cannot make the shared-memory key table (%s): connections to this host's IAs go "
                "over TCP", ip, CodeName(status.code()));
    return nullptr;
  }
  return std::unique_ptr<LocalPaths>(new LocalPaths(io, kicks, poll_set, options, std::move(keys)));
}

LocalPaths::LocalPaths(asio::io_context& io, KickQueue& kicks, PollSet& poll_set, const Options& options,
                       std::unique_ptr<shm::KeyTable> keys)
    : io_(io),
      kicks_(kicks),
      poll_set_(poll_set),
      options_(options),
      keys_(std::move(keys)),
      in_turn_(kInTurn),
      deadline_timer_(io) {
  connection_options_.rnr_timeout_ms = options.rnr_timeout_ms;
  geometry_.ring_bytes[0] = geometry_.ring_bytes[1] = kRingBytes;
  // Without it every connection is looked at on every poll: slower with many, never wrong.
  if (Status status = shm::ActivityTable::Create(activity_); !status.ok()) {
    SOFTDAT_LOG(kInfo, "tcp: no shared-memory activity table (%s): each poll looks at every same-host connection",
                CodeName(status.code()));
  } else {
    slots_ = std::make_shared<ActivitySlots>();
  }
}

LocalPaths::~LocalPaths() = default;

void LocalPaths::Publish(const PublishedKey& key) {
  shm::KeyGrant grant;
  grant.key = key.key;
  grant.address = key.address;
  grant.length = key.length;
  grant.access = (key.remote_read ? shm::kRemoteRead : 0u) | (key.remote_write ? shm::kRemoteWrite : 0u);
  grant.pz = PzNumber(key.pd);
  grant.endpoint = key.endpoint;
  // Core's keys fit its table, which is this one's size: a key outside is none of core's.
  if (!keys_->Publish(grant)) SOFTDAT_LOG(kError, "tcp: key %#x lies outside the shared-memory key table", key.key);
}

void LocalPaths::Revoke(std::uint32_t key) { (void)keys_->Revoke(key); }

bool LocalPaths::Poll(bool progress_thread) {
  if (progress_thread) keys_->EndSleep();  // awake and polling: peers need not ring
  if (live_count_.load(std::memory_order_relaxed) == 0) return false;
  ReadyConnections ready;
  bool by_bits = false;
  {
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock()) return false;  // another poller looks now
    by_bits = activity_ != nullptr && live_.size() >= kLookAtAllBelow;
    if (by_bits) {
      TakeMarkedLocked(ready);
      ScanLocked(ready, in_turn_);
    } else {
      ScanLocked(ready, live_.size());
    }
  }
  bool moved = false;
  for (const std::shared_ptr<LocalConnection>& held : ready) {
    LocalConnection& connection = *held;
    moved |= connection.Poll();
    // Work left (a budget used up, a note left meanwhile): its bit again, for the next poll.
    if (by_bits && connection.HasWork() && connection.activity_slot() != shm::kNoActivitySlot) {
      const std::uint32_t slot = connection.activity_slot();
      activity_->Give(slot / 64, std::uint64_t{1} << (slot % 64));
    }
  }
  return moved;
}

void LocalPaths::ScanLocked(ReadyConnections& ready, std::size_t limit) {
  const std::size_t count = live_.size();
  limit = std::min(limit, count);
  // No division per connection looked at: this runs in every poll of a spinning consumer.
  std::size_t at = cursor_ < count ? cursor_ : 0;
  for (std::size_t looked = 0; looked < limit && ready.size() < kReadyPerScan; ++looked) {
    if (live_[at]->HasWork()) ready.push_back(live_[at]);
    if (++at == count) at = 0;
  }
  // The next scan starts after the last one looked at: a bounded scan treats all alike.
  cursor_ = at;
}

void LocalPaths::TakeMarkedLocked(ReadyConnections& ready) {
  const std::size_t words = std::min((by_slot_.size() + 63) / 64, shm::kActivityWords);
  for (std::size_t i = 0; i < words && ready.size() < kReadyPerScan; ++i) {
    const std::size_t word = (word_cursor_ + i) % words;
    if (activity_->Peek(word) == 0) continue;
    std::uint64_t bits = activity_->Take(word);
    while (bits != 0) {
      const std::size_t slot = word * 64 + static_cast<std::size_t>(std::countr_zero(bits));
      bits &= bits - 1;
      // A bit of no live connection (one that ended, or a peer's stray mark) is dropped.
      if (slot < by_slot_.size() && by_slot_[slot] != nullptr) ready.push_back(by_slot_[slot]);
      if (ready.size() == kReadyPerScan) {
        if (bits != 0) activity_->Give(word, bits);  // the rest, for the next poll
        word_cursor_ = (word + 1) % words;          // which starts after this word: all alike
        return;
      }
    }
  }
}

bool LocalPaths::Scan(std::uint64_t* earliest, bool completions) {
  if (earliest != nullptr) *earliest = 0;
  if (live_count_.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard lock(mutex_);
  for (const std::shared_ptr<LocalConnection>& connection : live_) {
    if (connection->HasWork(completions)) return true;
    if (earliest == nullptr) continue;
    const std::uint64_t deadline = connection->deadline_ns();
    if (deadline != 0 && (*earliest == 0 || deadline < *earliest)) *earliest = deadline;
  }
  return false;
}

bool LocalPaths::PrepareSleep() {
  keys_->BeginSleep();
  std::uint64_t earliest = 0;
  // Completions a consumer's Posts left while nobody waited keep this thread awake only once
  // somebody does (LocalConnection::Defer). Otherwise it would chase them: a consumer that posts
  // an RDMA Write every few microseconds and spins on memory left a new one for every look, and
  // this thread never slept, taking a CPU from the spinners. A waiter that counts itself after
  // this look brings another (TcpTransport::Pause).
  if (!Scan(&earliest, kicks_.MayBeWaitedOn())) {
    // Nothing to do: sleep, but not past a connection's deadline.
    if (earliest != 0 && earliest != deadline_armed_ns_) {
      deadline_armed_ns_ = earliest;
      const std::uint64_t now = NowNs();
      deadline_timer_.expires_after(std::chrono::nanoseconds(earliest > now ? earliest - now : 0));
      deadline_timer_.async_wait([this](const boost::system::error_code& error) {
        if (!error) deadline_armed_ns_ = 0;  // the wake-up itself: the loop scans again
      });
    }
    return false;
  }
  keys_->EndSleep();
  // Something has work: no sleep, whether this poll moves it or not. When another thread holds
  // what has work (a consumer in Post holds the connection's io lock and reads no records; a
  // consumer's scan holds the list and may have passed the connection already), nobody is bound
  // to move it: the peer published it while this side was awake and rings no doorbell for it.
  // The loop looks again until the holder lets go.
  (void)Poll(true);
  return true;
}

void LocalPaths::EndSleep() { keys_->EndSleep(); }

std::uint32_t ActivitySlots::Allocate() {
  std::lock_guard lock(mutex_);
  if (!free_.empty()) {
    const std::uint32_t slot = free_.back();
    free_.pop_back();
    return slot;
  }
  return next_ < shm::kActivitySlots ? next_++ : shm::kNoActivitySlot;
}

void ActivitySlots::Free(std::uint32_t slot) {
  if (slot == shm::kNoActivitySlot) return;
  std::lock_guard lock(mutex_);
  free_.push_back(slot);
}

void LocalPaths::Add(const std::shared_ptr<LocalConnection>& connection) {
  std::lock_guard lock(mutex_);
  if (const std::uint32_t slot = connection->activity_slot(); slot != shm::kNoActivitySlot) {
    if (slot >= by_slot_.size()) by_slot_.resize(slot + 1);
    by_slot_[slot] = connection;
  }
  live_.push_back(connection);
  live_count_.store(live_.size(), std::memory_order_relaxed);
}

void LocalPaths::Remove(const LocalConnection* connection) {
  std::shared_ptr<LocalConnection> last;  // released after the lock: its destructor may run here
  {
    std::lock_guard lock(mutex_);
    const auto found = std::find_if(live_.begin(), live_.end(),
                                    [connection](const std::shared_ptr<LocalConnection>& c) { return c.get() == connection; });
    if (found == live_.end()) return;
    last = std::move(*found);
    if (const std::uint32_t slot = last->activity_slot(); slot < by_slot_.size() && by_slot_[slot] == last)
      by_slot_[slot].reset();
    *found = std::move(live_.back());
    live_.pop_back();
    live_count_.store(live_.size(), std::memory_order_relaxed);
    if (cursor_ >= live_.size()) cursor_ = 0;
  }
}

std::uint16_t LocalPaths::NextPort() {
  return static_cast<std::uint16_t>(kFirstPort + next_port_.fetch_add(1, std::memory_order_relaxed) % kPorts);
}

// ---------------------------------------------------------------------------------------------
// LocalConnection

class LocalConnection::Locked {
 public:
  explicit Locked(LocalConnection& connection) : connection_(connection) { connection_.mutex_.lock(); }
  ~Locked() { connection_.UnlockAndDeliver(); }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;

 private:
  LocalConnection& connection_;
};

LocalConnection::LocalConnection(LocalPaths& paths, const EndpointConfig& config, EndpointEvents* events)
    : paths_(paths),
      config_(config),
      slots_(paths.slots()),
      activity_slot_(slots_ != nullptr ? slots_->Allocate() : shm::kNoActivitySlot),
      events_(events),
      wait_(paths.io()),
      timer_(paths.io()) {}

// Not paths_: the IA's LocalPaths may be gone (a handler the io_context drops at its end held us).
LocalConnection::~LocalConnection() {
  if (slots_ != nullptr) slots_->Free(activity_slot_);
}

void LocalConnection::UnlockAndDeliver() {
  EndpointEvents* deliver = nullptr;
  if (report_pending_ && events_ != nullptr) {
    deliver = events_;
    delivering_.fetch_add(1, std::memory_order_relaxed);  // under mutex_: Detach waits for it
  }
  report_pending_ = false;
  mutex_.unlock();
  if (deliver == nullptr) return;
  deliver->Deliver();
  delivering_.fetch_sub(1, std::memory_order_release);
}

shm::LocalEnd LocalConnection::LocalEndOf() const {
  shm::LocalEnd local;
  local.table = &paths_.keys();
  local.binding.pz = PzNumber(config_.pd);
  local.binding.endpoint = config_.owner;
  local.ird = config_.max_rdma_read_in;
  local.ord = config_.max_rdma_read_out;
  local.activity = paths_.activity();
  local.activity_slot = activity_slot_;
  local.attach = true;
  // PR_SET_PTRACER would let the peer trace this process, not only attach to it: never asked for
  // on the consumer's behalf. Where the kernel refuses attach, the rings carry everything.
  local.allow_attach = false;
  return local;
}

std::array<char, 64> LocalConnection::Describe() const {
  const sockaddr_in local = local_address();
  const sockaddr_in remote = remote_address();
  char local_text[INET_ADDRSTRLEN] = "?";
  char remote_text[INET_ADDRSTRLEN] = "?";
  inet_ntop(AF_INET, &local.sin_addr, local_text, sizeof local_text);
  inet_ntop(AF_INET, &remote.sin_addr, remote_text, sizeof remote_text);
  std::array<char, 64> text{};
  std::snprintf(text.data(), text.size(), "%s:%u -> %s:%u", local_text, ntohs(local.sin_port), remote_text,
                ntohs(remote.sin_port));
  return text;
}

sockaddr_in LocalConnection::local_address() const {
  std::lock_guard lock(address_mutex_);
  return local_;
}

sockaddr_in LocalConnection::remote_address() const {
  std::lock_guard lock(address_mutex_);
  return remote_;
}

LocalConnection::Dialed LocalConnection::Dial(const sockaddr_in& remote, std::uint16_t port,
                                              std::span<const std::uint8_t> private_data, std::uint64_t timeout_us) {
  sockaddr_in local = paths_.options().address;
  local.sin_family = AF_INET;
  local.sin_port = htons(paths_.NextPort());
  sockaddr_in to = remote;
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  auto handshake = std::make_unique<shm::ActiveHandshake>();
  const shm::Dial dial = handshake->Start(remote.sin_addr, port, paths_.geometry(), local, private_data, LocalEndOf());
  bool queues_made = false;
  if (dial == shm::Dial::kConnected) {
    // Here, in the consumer's call, not when the Accept comes: the peer counts the connection
    // established from its Accept on (shm::Connection::Queues). After Start, so that a connect
    // to a peer with no rendezvous (another host, siw, OFED DAPL) makes none. The Accept is read
    // only once the wait below is armed, after this.
    try {
      queues_ = shm::Connection::MakeQueues(config_);
      queues_made = true;
    } catch (const std::bad_alloc&) {
      // The handshake goes with its socket: the peer sees its Request end unanswered.
      SOFTDAT_LOG(kWarn, "tcp -> port %u: no memory for a shared-memory connection's queues: over TCP", port);
    }
  }
  if (!queues_made) {
    if (dial == shm::Dial::kFailed) {
      char ip[INET_ADDRSTRLEN] = "?";
      inet_ntop(AF_INET, &to.sin_addr, ip, sizeof ip);
      SOFTDAT_LOG(kInfo, "tcp -> %s:%u: the shared-memory path cannot be set up (descriptors or memory): over TCP",
                  ip, port);
    }
    return Dialed::kNobody;
  }
  {
    std::lock_guard lock(address_mutex_);
    local_ = local;
    remote_ = to;
  }
  {
    std::lock_guard lock(mutex_);
    active_ = std::move(handshake);
    phase_ = Phase::kDialed;
  }
  // The timer and the wait are the io_context's: armed there, as every Asio object is used.
  asio::post(paths_.io(), [self = shared_from_this(), timeout_us] {
    Locked lock(*self);
    if (self->phase_ != Phase::kDialed) return;
    if (timeout_us != std::numeric_limits<std::uint64_t>::max()) {
      // Asio's clock arithmetic overflows near the top of the range: a year is forever enough.
      const std::uint64_t capped = std::min<std::uint64_t>(timeout_us, 365ull * 24 * 3600 * 1000000);
      self->timer_.expires_after(std::chrono::microseconds(capped));
      self->timer_.async_wait([self](const boost::system::error_code& error) {
        if (!error) self->OnTimeout();
      });
    }
    self->WaitReadable();
  });
  return Dialed::kStarted;
}

void LocalConnection::Accept(std::unique_ptr<shm::PassiveHandshake> handshake,
                             std::span<const std::uint8_t> private_data, const sockaddr_in& local,
                             const sockaddr_in& remote) {
  try {
    queues_ = shm::Connection::MakeQueues(config_);
  } catch (const std::bad_alloc&) {
    // Left empty: the engine tries again as it is made, and says so if that fails too.
  }
  {
    std::lock_guard lock(address_mutex_);
    local_ = local;
    remote_ = remote;
  }
  {
    std::lock_guard lock(mutex_);
    passive_ = std::move(handshake);
    phase_ = Phase::kAccepting;
  }
  asio::post(paths_.io(), [self = shared_from_this(), data = std::vector<std::uint8_t>(private_data.begin(),
                                                                                        private_data.end())]() mutable {
    self->StartAccept(std::move(data));
  });
}

void LocalConnection::StartAccept(std::vector<std::uint8_t> private_data) {
  // ESTABLISHED reaches the consumer before the Accept goes out, as a TCP responder reports it
  // before its MPA Reply: whatever the peer does once it learns of the acceptance comes after it.
  // Reported after the Accept, another thread could post the DISCONNECTEDs of this peer's earlier
  // connections first (it closed them all as soon as this, its last, was up), and stock dtestcm's
  // server, which counts one event per connection, took a DISCONNECTED for this ESTABLISHED and
  // then waited for ever (CI, under ThreadSanitizer). A Post that comes before the engine is
  // queued for it (PostEarly).
  {
    Locked lock(*this);
    if (phase_ != Phase::kAccepting) return;  // detached meanwhile
    accept_report_.store(AcceptReport::kReported, std::memory_order_release);
    if (events_ != nullptr) {
      events_->OnEstablished({});
      report_pending_ = true;
    }
  }  // delivered here, with no lock of ours held
  shm::Connection* start = nullptr;
  {
    Locked lock(*this);
    if (phase_ != Phase::kAccepting) return;  // detached meanwhile
    if (!passive_->AcceptWith(private_data, LocalEndOf())) {
      SOFTDAT_LOG(kWarn, "tcp %s: the connection broke as it was accepted: the shared-memory Accept could not be sent",
                  Describe().data());
      EndHandshake(ConnectionEnd::kBroken);
      return;
    }
    shm::Established established = passive_->Take();
    established.reported = true;
    start = Establish(std::move(established));
  }
  // Its first poll moves what came meanwhile (with no lock of ours held).
  if (start != nullptr) (void)AfterPoll(start->Poll());
}

Status LocalConnection::PostEarly(const Work& work) {
  shm::Connection* engine = nullptr;
  {
    std::lock_guard lock(early_mutex_);
    engine = engine_ready_.load(std::memory_order_acquire);  // published under this lock
    if (engine == nullptr) {
      // The Accept failed and the end, on its way, flushes the Work, as core promises.
      if (accept_report_.load(std::memory_order_acquire) == AcceptReport::kFailed) return Status::Ok();
      try {
        // Allocates, but only here: in a connection's first microseconds, if its consumer posts then.
        early_.push_back(work);
      } catch (const std::bad_alloc&) {
        return Status(Code::kInsufficientResources);
      }
      return Status::Ok();
    }
  }
  return engine->Post(work);  // published meanwhile: it took the early ones first
}

void LocalConnection::Publish(shm::Connection& engine) {
  std::lock_guard lock(early_mutex_);
  for (const Work& work : early_) {
    // The engine's queue holds max_send_work, which core never exceeds: a refusal is a bug.
    if (Status status = engine.Post(work); !status.ok()) {
      SOFTDAT_LOG(kError, "tcp %s: a Work posted as the connection was accepted was refused (%s): closing it",
                  Describe().data(), CodeName(status.code()));
      engine.Disconnect(false);
      break;
    }
  }
  early_ = {};
  engine_ready_.store(&engine, std::memory_order_release);
}

void LocalConnection::EndEarly() {
  std::lock_guard lock(early_mutex_);
  AcceptReport reported = AcceptReport::kReported;
  (void)accept_report_.compare_exchange_strong(reported, AcceptReport::kFailed, std::memory_order_acq_rel);
  early_ = {};  // core flushes them at the end
}

void LocalConnection::WaitReadable() {
  const int fd = active_ != nullptr ? active_->fd() : -1;  // the passive side waits for nothing
  if (!wait_.is_open()) {
    // A duplicate: the handshake closes its own descriptor when it fails, which must not pull
    // the socket out from under a wait Asio still has on it.
    const int copy = fd >= 0 ? ::fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    boost::system::error_code error;
    if (copy >= 0) wait_.assign(copy, error);
    if (copy < 0 || error) {
      if (copy >= 0) ::close(copy);
      SOFTDAT_LOG(kWarn, "tcp %s: cannot wait for the shared-memory handshake (%s)", Describe().data(),
                  copy < 0 ? std::strerror(errno) : error.message().c_str());
      EndHandshake(phase_ == Phase::kDialed ? ConnectionEnd::kNonPeerRejected : ConnectionEnd::kAcceptFailed);
      return;
    }
  }
  wait_.async_wait(asio::posix::stream_descriptor::wait_read,
                   [self = shared_from_this()](const boost::system::error_code& error) {
                     if (!error) self->OnHandshakeReadable();
                   });
}

void LocalConnection::OnHandshakeReadable() {
  shm::Connection* start = nullptr;
  {
    Locked lock(*this);
    if (phase_ == Phase::kDialed) {
      switch (active_->OnReadable()) {
        case shm::ActiveHandshake::Step::kPending:
          WaitReadable();
          return;
        case shm::ActiveHandshake::Step::kEstablished:
          start = Establish(active_->Take());
          break;
        case shm::ActiveHandshake::Step::kRejected: {
          const shm::Reject& reject = active_->rejected();
          SOFTDAT_LOG(kInfo, "tcp %s: the peer %s the connection", Describe().data(),
                      reject.by_consumer ? "rejected" : "refused");
          EndHandshake(reject.by_consumer ? ConnectionEnd::kPeerRejected : ConnectionEnd::kNonPeerRejected,
                       reject.private_data.view());
          break;
        }
        case shm::ActiveHandshake::Step::kFailed:
          EndHandshake(ConnectionEnd::kNonPeerRejected);
          break;
      }
    }
  }
  // Its first poll reports OnEstablished (with no lock of ours held).
  if (start != nullptr) (void)AfterPoll(start->Poll());
}

void LocalConnection::OnTimeout() {
  Locked lock(*this);
  if (phase_ == Phase::kDialed) {
    SOFTDAT_LOG(kInfo, "tcp %s: connect timed out", Describe().data());
    EndHandshake(ConnectionEnd::kTimedOut);
  }
}

shm::Connection* LocalConnection::Establish(shm::Established&& established) {
  const pid_t peer = established.peer_pid;
  try {
    engine_ = std::make_unique<shm::Connection>(std::move(established), config_, paths_.connection_options(),
                                                paths_.keys(), events_, this, std::move(queues_));
  } catch (const std::bad_alloc&) {
    SOFTDAT_LOG(kWarn, "tcp %s: no memory for the shared-memory connection", Describe().data());
    EndHandshake(phase_ == Phase::kDialed ? ConnectionEnd::kNonPeerRejected : ConnectionEnd::kAcceptFailed);
    return nullptr;
  }
  StopWaiting();
  active_.reset();
  passive_.reset();
  phase_ = Phase::kEstablished;
  // The socket now only wakes the connection and says when the peer ends: into the poll set, not
  // read by a spinning poller (PollSet::Add's direct).
  if (!paths_.poll_set().Add(engine_->socket_fd(), shared_from_this(), poll_token_, /*direct=*/false)) {
    SOFTDAT_LOG(kError, "tcp %s: cannot poll the shared-memory connection's socket: closing it", Describe().data());
    engine_->Disconnect(false);
  }
  paths_.Add(shared_from_this());
  registered_.store(true, std::memory_order_release);
  Publish(*engine_);
  SOFTDAT_LOG(kInfo, "tcp %s: shared memory (process %d; RDMA and large Sends by %s)", Describe().data(),
              static_cast<int>(peer), engine_->attaches() ? "cross-memory attach" : "the rings");
  return engine_.get();
}

void LocalConnection::EndHandshake(ConnectionEnd why, std::span<const std::uint8_t> private_data) {
  if (phase_ == Phase::kEnded || phase_ == Phase::kEstablished) return;
  phase_ = Phase::kEnded;
  if (accept_report_.load(std::memory_order_relaxed) == AcceptReport::kReported) {
    why = ConnectionEnd::kBroken;  // the consumer has its ESTABLISHED: this is a break
    EndEarly();
  }
  if (events_ != nullptr) {
    events_->OnEnded(why, private_data);  // before the handshake goes: a reject's data lies in it
    report_pending_ = true;
  }
  StopWaiting();
  active_.reset();
  passive_.reset();
}

void LocalConnection::StopWaiting() {
  timer_.cancel();
  if (!wait_.is_open()) return;
  boost::system::error_code ignored;
  wait_.cancel(ignored);
  wait_.close(ignored);
}

bool LocalConnection::AfterPoll(bool moved) {
  shm::Connection* engine = engine_ready_.load(std::memory_order_acquire);
  if (engine == nullptr) return moved;
  if (!engine->ended()) {
    if (!engine->socket_done()) return moved;
    // The peer's EOF was read while its last Sends wait for buffers: the socket would be reported
    // readable for ever; the engine's deadline ends the wait.
    std::lock_guard lock(registration_mutex_);
    if (registered_.load(std::memory_order_acquire) && !socket_out_) {
      socket_out_ = true;
      paths_.poll_set().Remove(engine->socket_fd(), poll_token_);
    }
    return moved;
  }
  // Ended: its socket stays readable (EOF), and it has nothing more to report. Under the lock
  // that Detach closes the socket under: the removal names the socket by its number.
  std::lock_guard lock(registration_mutex_);
  if (!registered_.exchange(false, std::memory_order_acq_rel)) return moved;
  if (!socket_out_) paths_.poll_set().Remove(engine->socket_fd(), poll_token_);
  socket_out_ = true;
  paths_.Remove(this);
  return true;
}

bool LocalConnection::Poll() {
  shm::Connection* engine = engine_ready_.load(std::memory_order_acquire);
  return engine != nullptr && AfterPoll(engine->Poll());
}

bool LocalConnection::PollIo(bool) {
  shm::Connection* engine = engine_ready_.load(std::memory_order_acquire);
  return engine != nullptr && AfterPoll(engine->OnSocketReadable());
}

bool LocalConnection::OnKick(bool, std::uint64_t) {
  if (shm::Connection* engine = engine_ready_.load(std::memory_order_acquire)) (void)AfterPoll(engine->PollForKick());
  return true;
}

void LocalConnection::Kick(shm::Connection&) {
  // While a consumer polls (always, in busy-poll mode), a kick wakes nobody: it waits in the ring
  // for the consumer's next poll, which looks at the live connections right after the ring
  // (LocalPaths::Poll: each of them below kLookAtAllBelow, the marked ones from then on) and finds
  // the engine's note there anyway. So the note marks this connection's bit instead: the ring's
  // push and drain (a lock each, a reference taken and dropped, the engine polled twice) were
  // about 150 instructions of a same-host 8 B round trip (shm_profile). Should the consumer stop
  // polling, the progress thread looks at every live connection before it sleeps
  // (PrepareSleep), as it drains the ring at the spell's end: the same bound as a queued kick.
  // The fence orders the note before the look at the consumers (a Dekker pair with the spell's
  // end: TcpTransport::EndConsumerSpell). A connection with no bit, or not yet or no longer in
  // the live list, is kicked.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (activity_slot_ != shm::kNoActivitySlot && registered_.load(std::memory_order_acquire) &&
      !paths_.kicks().NeedsWake()) {
    // The table's order (shm/activity.h): the note, the fence above, then the bit if clear; a
    // poll takes the word (seq_cst) before it looks at the connection.
    paths_.activity()->Mark(activity_slot_);
    return;
  }
  paths_.kicks().Push(shared_from_this());
}

bool LocalConnection::Defer(shm::Connection&) {
  // A completion of a consumer's Post, with no consumer asleep in a wait and no CNO (the waits
  // core reports: Transport::ReportWaits): nobody learns of it without calling in, and every call
  // that could (a dequeue, a wait's spin) polls, so it waits for that poll, or for the look the
  // progress thread takes before it sleeps, as a completion waits in a device's CQ. Waking the
  // thread for it, as a kick does once no consumer polled within handoff_us, cost an eventfd write
  // and a wake-up per signaled RDMA Write where consumers spin on memory, on a two-CPU machine
  // preempting one of them (PERFORMANCE.md, "Same host"). The order is Kick's: the note, a fence,
  // the count (a waiter counts itself, then brings a look: TcpTransport::Pause).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (activity_slot_ == shm::kNoActivitySlot || !registered_.load(std::memory_order_acquire) ||
      paths_.kicks().MayBeWaitedOn())
    return false;
  paths_.activity()->Mark(activity_slot_);
  return true;
}

Status LocalConnection::Post(const Work& work) {
  shm::Connection* engine = engine_ready_.load(std::memory_order_acquire);
  if (engine == nullptr) {
    // Core posts only once OnEstablished came: on the passive side that is before the engine.
    if (accept_report_.load(std::memory_order_acquire) == AcceptReport::kNone)
      return Status(Code::kInvalidState, Detail::kEpUnconnected);
    return PostEarly(work);
  }
  return engine->Post(work);
}

void LocalConnection::RecvBuffersAvailable() {
  if (shm::Connection* engine = engine_ready_.load(std::memory_order_acquire)) engine->RecvBuffersAvailable();
}

void LocalConnection::Disconnect(bool graceful) {
  if (shm::Connection* engine = engine_ready_.load(std::memory_order_acquire)) return engine->Disconnect(graceful);
  // Still in its handshake: the attempt ends (as a TCP connect that has not finished does).
  asio::post(paths_.io(), [self = shared_from_this(), graceful] {
    Locked lock(*self);
    if (self->phase_ == Phase::kEstablished) {
      self->engine_->Disconnect(graceful);  // established meanwhile
      return;
    }
    if (self->phase_ != Phase::kIdle) self->EndHandshake(ConnectionEnd::kDisconnected);
  });
}

void LocalConnection::Detach() {
  shm::Connection* engine = nullptr;
  {
    std::lock_guard lock(mutex_);
    events_ = nullptr;
    report_pending_ = false;
    if (phase_ != Phase::kEstablished) phase_ = Phase::kEnded;
    if (phase_ != Phase::kEstablished) EndEarly();  // no engine comes now
    engine = engine_.get();
  }
  // A delivery that began before is the last event of this endpoint: wait for it.
  while (delivering_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  if (engine != nullptr) {
    engine->Detach();  // ends it (the peer is told) and waits for its deliveries
    (void)AfterPoll(false);  // out of the poll set and the live list (it ended)
    // The descriptor goes with the endpoint, not with the last reference to this connection (the
    // handler posted below, a kick queued): dat_ep_free returns with it closed.
    std::lock_guard lock(registration_mutex_);
    engine->CloseSocket();
  }
  // The handshake's socket and wait go in the io_context, where Asio objects are used.
  asio::post(paths_.io(), [self = shared_from_this()] {
    std::lock_guard lock(self->mutex_);
    self->StopWaiting();
    self->active_.reset();
    self->passive_.reset();
  });
}

}  // namespace softdat::transport::tcp
