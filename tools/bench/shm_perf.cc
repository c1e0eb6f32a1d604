// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// shm_perf: the shared-memory engine (transport/shm's Connection) between two processes, with
// the least a consumer of it does (buffers always ready, completions counted) and no DAT layer:
// what softdat's shm path costs beyond the bare rings (shm_pingpong) and before core and the
// EVDs. This process serves; a child it forks connects through the rendezvous, measures and
// prints one line:
//   lat SIZE ITERS       Send ping-pong, half a round trip (p50, p99 µs)
//   rate COUNT           8-byte Sends streamed, 64 outstanding (M msg/s at the receiver)
//   send SIZE COUNT      SIZE-byte Sends streamed (MB/s; pulled when large and attach works)
//   write SIZE COUNT     one-sided RDMA Writes streamed, 16 outstanding; the target never polls (MB/s)
//   read SIZE COUNT      RDMA Reads streamed, 16 outstanding (MB/s)
//   put_lat ITERS        8-byte RDMA Write ping-pong, each side spinning on its own memory (p50 µs)
// Options: --ring BYTES (each ring; default 65536), --no-attach (the ring path throughout, as
// across users), --sleep (lat only: each side sleeps on its socket between messages, woken by
// the peer's doorbell: the default-mode path). Every wait is bounded (10 s without progress).
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "transport/shm/handshake.h"
#include "transport/shm/shm_connection.h"

namespace shm = softdat::transport::shm;
using softdat::Segment;
using softdat::transport::ConnectionEnd;
using softdat::transport::EndpointConfig;
using softdat::transport::EndpointEvents;
using softdat::transport::RecvAcquire;
using softdat::transport::RecvInfo;
using softdat::transport::RecvTarget;
using softdat::transport::RemoteAccess;
using softdat::transport::RemoteCheck;
using softdat::transport::RemoteResolution;
using softdat::transport::Work;
using softdat::transport::WorkKind;
using softdat::transport::WorkStatus;

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kIdleBound = std::chrono::seconds(10);
constexpr long kWarmUp = 1000;
constexpr std::uint32_t kKey = (1u << 8) | 1;
constexpr int kBuffers = 128;

[[noreturn]] void Die(const char* why) {
  std::fprintf(stderr, "shm_perf: %s\n", why);
  std::exit(2);
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Buffers always ready, completions counted; one thread.
class Counter final : public EndpointEvents {
 public:
  explicit Counter(std::uint32_t size) : buffers_(kBuffers, std::vector<std::uint8_t>(std::max<std::uint32_t>(size, 8))) {
    for (auto& b : buffers_) segments_.push_back(Segment{reinterpret_cast<std::uint64_t>(b.data()), static_cast<std::uint32_t>(b.size()), 1});
  }
  void OnEstablished(std::span<const std::uint8_t>) override { established = true; }
  void OnEnded(ConnectionEnd, std::span<const std::uint8_t>) override { ended = true; }
  RecvAcquire AcquireRecv(std::uint32_t msn, RecvTarget& target) override {
    const Segment& s = segments_[msn % kBuffers];
    target = RecvTarget{{&s, 1}, s.length};
    return RecvAcquire::kTaken;
  }
  void OnRecvDone(std::uint32_t, WorkStatus status, const RecvInfo&) override {
    if (status != WorkStatus::kSuccess) Die("a receive failed");
    ++recvs;
  }
  void OnDeviceRecvDone(std::uint64_t, WorkStatus, const RecvInfo&) override {}
  void OnWorkDone(std::uint64_t, WorkStatus status, std::uint32_t) override {
    if (status != WorkStatus::kSuccess) Die("a Work failed");
    ++done;
  }
  RemoteResolution ResolveRemote(std::uint32_t key, std::uint64_t address, std::uint64_t length, RemoteAccess) override {
    const auto base = reinterpret_cast<std::uint64_t>(region.data());
    if (key != kKey || address < base || length > region.size() || address - base > region.size() - length)
      return {RemoteCheck::kBounds, nullptr};
    return {RemoteCheck::kOk, region.data() + (address - base)};
  }

  bool established = false;
  bool ended = false;
  long recvs = 0;
  long done = 0;
  std::vector<std::uint8_t> region;

 private:
  std::vector<std::vector<std::uint8_t>> buffers_;
  std::vector<Segment> segments_;
};

struct Options {
  const char* mode = "";
  std::uint32_t size = 8;
  long count = 100000;
  std::uint32_t ring = 65536;
  bool attach = true;
  bool sleep = false;
};

// One side: its table, its events and its connection, with ways to wait.
struct Side {
  std::unique_ptr<shm::KeyTable> table;
  std::unique_ptr<Counter> events;
  std::unique_ptr<shm::Connection> connection;
  bool sleep = false;

  // Polls (or sleeps on the socket between polls) until `done`.
  template <typename Done>
  void Until(Done done) {
    // The clock is read every 1024 spins only (a read costs about 50 ns here, as much as the
    // engine's work on a small message): the bound is on 10 s without progress.
    auto deadline = Clock::now() + kIdleBound;
    bool moved_lately = false;
    for (long spins = 0; !done(); ++spins) {
      bool moved = connection->Poll();
      if (sleep && !moved) {
        table->BeginSleep();
        if (!connection->HasWork()) {
          pollfd p{connection->socket_fd(), POLLIN, 0};
          ::poll(&p, 1, 100);
        }
        table->EndSleep();
        moved = connection->OnSocketReadable();
      } else if ((spins & 4095) == 4095) {
        pollfd p{connection->socket_fd(), POLLIN, 0};
        if (::poll(&p, 1, 0) == 1) moved = connection->OnSocketReadable();
      }
      moved_lately |= moved;
      if ((spins & 1023) == 1023) {
        const auto now = Clock::now();
        if (moved_lately) deadline = now + kIdleBound;
        else if (now > deadline) Die("no progress for 10 s");
        moved_lately = false;
      }
    }
  }
};

Work MakeWork(WorkKind kind, const Segment& local, std::uint64_t remote = 0) {
  Work w;
  w.kind = kind;
  w.local = {&local, 1};
  w.length = local.length;
  w.remote_address = remote;
  w.remote_key = kKey;
  return w;
}

void Post(shm::Connection& connection, const Work& work) {
  if (!connection.Post(work).ok()) Die("Post refused");
}

EndpointConfig Config() {
  EndpointConfig config;
  config.max_send_work = 64;
  config.max_recv_work = 64;
  config.max_send_segments = 4;
  config.max_recv_segments = 4;
  config.max_rdma_read_in = 16;
  config.max_rdma_read_out = 16;
  config.max_message_size = 1u << 30;
  return config;
}

void Publish(Side& side, std::size_t bytes, const shm::Binding& binding) {
  side.events->region.assign(bytes, 0);
  shm::KeyGrant grant;
  grant.key = kKey;
  grant.address = reinterpret_cast<std::uint64_t>(side.events->region.data());
  grant.length = bytes;
  grant.access = shm::kRemoteRead | shm::kRemoteWrite;
  grant.pz = binding.pz;
  side.table->Publish(grant);
}

std::vector<std::uint8_t> AddressBytes(const void* p) {
  std::vector<std::uint8_t> bytes(8);
  const auto address = reinterpret_cast<std::uint64_t>(p);
  std::memcpy(bytes.data(), &address, 8);
  return bytes;
}

void PrintLatency(std::vector<double>& samples, const char* what) {
  std::sort(samples.begin(), samples.end());
  std::printf("%s: p50 %.3f us p99 %.3f us\n", what, samples[samples.size() / 2], samples[samples.size() * 99 / 100]);
}

// The measurements. `client` posts and measures; the server answers.
void Run(const Options& o, Side& me, bool client, std::uint64_t peer_region) {
  shm::Connection& c = *me.connection;
  Counter& ev = *me.events;
  me.Until([&] { return ev.established; });
  std::vector<std::uint8_t> source(std::max<std::uint32_t>(o.size, 8), 1);
  const Segment out{reinterpret_cast<std::uint64_t>(source.data()), o.size, 1};
  const Segment token{reinterpret_cast<std::uint64_t>(source.data()), 8, 1};
  const std::string mode = o.mode;
  if (mode == "lat") {
    std::vector<double> samples;
    for (long i = 0; i < o.count + kWarmUp; ++i) {
      if (client) {
        const auto start = Clock::now();
        Post(c, MakeWork(WorkKind::kSend, out));
        me.Until([&] { return ev.recvs > i; });
        if (i >= kWarmUp) samples.push_back(Seconds(Clock::now() - start) / 2 * 1e6);
      } else {
        me.Until([&] { return ev.recvs > i; });
        Post(c, MakeWork(WorkKind::kSend, out));
      }
    }
    if (client) PrintLatency(samples, o.sleep ? "lat (sleeping)" : "lat");
  } else if (mode == "rate" || mode == "send") {
    // The client streams; the server answers with one Send when it has them all.
    if (client) {
      const auto start = Clock::now();
      for (long posted = 0; posted < o.count;) {
        if (posted - ev.done < 64) {
          Post(c, MakeWork(WorkKind::kSend, out));
          ++posted;
        } else {
          me.Until([&] { return posted - ev.done < 64; });
        }
      }
      me.Until([&] { return ev.recvs == 1; });
      const double seconds = Seconds(Clock::now() - start);
      if (mode == "rate") {
        std::printf("rate %u B: %.3f Mmsg/s\n", o.size, static_cast<double>(o.count) / seconds / 1e6);
      } else {
        std::printf("send %u B: %.0f MB/s\n", o.size, static_cast<double>(o.size) * static_cast<double>(o.count) / seconds / 1e6);
      }
    } else {
      me.Until([&] { return ev.recvs == o.count; });
      Post(c, MakeWork(WorkKind::kSend, token));
    }
  } else if (mode == "write" || mode == "read") {
    if (client) {
      const WorkKind kind = mode == "write" ? WorkKind::kRdmaWrite : WorkKind::kRdmaRead;
      const auto start = Clock::now();
      for (long posted = 0; posted < o.count;) {
        if (posted - ev.done < 16) {
          Post(c, MakeWork(kind, out, peer_region));
          ++posted;
        } else {
          me.Until([&] { return posted - ev.done < 16; });
        }
      }
      me.Until([&] { return ev.done == o.count; });
      const double seconds = Seconds(Clock::now() - start);
      std::printf("%s %u B: %.0f MB/s\n", o.mode, o.size, static_cast<double>(o.size) * static_cast<double>(o.count) / seconds / 1e6);
      Post(c, MakeWork(WorkKind::kSend, token));
      me.Until([&] { return ev.done == o.count + 1; });
    } else {
      me.Until([&] { return ev.recvs == 1; });  // the target polls only for the end
    }
  } else if (mode == "put_lat") {
    // Each side spins on the first word of its own region; the peer's one-sided Write sets it.
    auto* mine = reinterpret_cast<volatile std::uint64_t*>(ev.region.data());
    std::uint64_t value = 0;
    const Segment word{reinterpret_cast<std::uint64_t>(&value), 8, 1};
    std::vector<double> samples;
    for (long i = 1; i <= o.count + kWarmUp; ++i) {
      const auto start = Clock::now();
      if (client) {
        value = static_cast<std::uint64_t>(i);
        Post(c, MakeWork(WorkKind::kRdmaWrite, word, peer_region));
      }
      auto deadline = Clock::now() + kIdleBound;
      for (long spins = 0; *mine != static_cast<std::uint64_t>(i); ++spins)
        if ((spins & 65535) == 65535 && Clock::now() > deadline) Die("no Write landed for 10 s");
      if (client) {
        if (i > kWarmUp) samples.push_back(Seconds(Clock::now() - start) / 2 * 1e6);
      } else {
        value = static_cast<std::uint64_t>(i);
        Post(c, MakeWork(WorkKind::kRdmaWrite, word, peer_region));
      }
      c.Poll();  // completions
    }
    if (client) PrintLatency(samples, "put_lat");
    me.Until([&] { return ev.done == o.count + kWarmUp; });
  } else {
    Die("unknown mode");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) Die("usage: shm_perf lat SIZE ITERS | rate COUNT | send|write|read SIZE COUNT | put_lat ITERS [--ring B] [--no-attach] [--sleep]");
  Options o;
  o.mode = argv[1];
  std::vector<const char*> numbers;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--ring") == 0 && i + 1 < argc) {
      o.ring = static_cast<std::uint32_t>(std::atol(argv[++i]));
    } else if (std::strcmp(argv[i], "--no-attach") == 0) {
      o.attach = false;
    } else if (std::strcmp(argv[i], "--sleep") == 0) {
      o.sleep = true;
    } else {
      numbers.push_back(argv[i]);
    }
  }
  const std::string mode = o.mode;
  if (mode == "rate" || mode == "put_lat") {
    if (numbers.size() != 1) Die("one number: COUNT");
    o.count = std::atol(numbers[0]);
  } else {
    if (numbers.size() != 2) Die("two numbers: SIZE COUNT");
    o.size = static_cast<std::uint32_t>(std::atol(numbers[0]));
    o.count = std::atol(numbers[1]);
  }
  const shm::Geometry geometry{{o.ring, o.ring}};
  if (!shm::ValidGeometry(geometry)) Die("--ring: a power of two from 4096 to 16 MiB");
  const std::uint16_t port = static_cast<std::uint16_t>(40000 + ::getpid() % 20000);
  in_addr loopback;
  loopback.s_addr = htonl(INADDR_LOOPBACK);
  shm::UniqueFd listener;
  if (!shm::ListenRendezvous(loopback, port, listener).ok()) Die("cannot listen at the rendezvous");
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) Die("fork failed");
  const bool client = child == 0;
  const shm::Binding binding{1, client ? 11u : 22u};
  const std::size_t region_bytes = std::max<std::size_t>(o.size, 64);

  Side me;
  me.sleep = o.sleep;
  if (!shm::KeyTable::Create(16, false, me.table).ok()) Die("no key table");
  me.events = std::make_unique<Counter>(o.size);
  Publish(me, region_bytes, binding);
  shm::LocalEnd local;
  local.table = me.table.get();
  local.binding = binding;
  local.ird = local.ord = 16;
  local.attach = o.attach;
  shm::Established established;
  pollfd wait{};
  if (client) {
    listener.Reset();
    shm::ActiveHandshake handshake;
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr = loopback;
    if (handshake.Start(loopback, port, geometry, address, AddressBytes(me.events->region.data()), local) != shm::Dial::kConnected)
      Die("cannot dial the rendezvous");
    wait = pollfd{handshake.fd(), POLLIN, 0};
    if (::poll(&wait, 1, 10000) != 1 || handshake.OnReadable() != shm::ActiveHandshake::Step::kEstablished)
      Die("the handshake failed");
    established = handshake.Take();
  } else {
    wait = pollfd{listener.get(), POLLIN, 0};
    if (::poll(&wait, 1, 10000) != 1) Die("nobody dialed");
    shm::PassiveHandshake handshake(shm::AcceptRendezvous(listener.get()));
    wait = pollfd{handshake.fd(), POLLIN, 0};
    if (::poll(&wait, 1, 10000) != 1 || handshake.OnReadable() != shm::PassiveHandshake::Step::kRequest)
      Die("no Request");
    if (!handshake.AcceptWith(AddressBytes(me.events->region.data()), local)) Die("the Accept failed");
    established = handshake.Take();
  }
  std::uint64_t peer_region = 0;
  std::memcpy(&peer_region, established.peer_private_data.bytes.data(), 8);
  me.connection = std::make_unique<shm::Connection>(std::move(established), Config(), shm::ConnectionOptions(), *me.table,
                                                    me.events.get(), nullptr);
  if (!client) {
    // The client's Ready (whether it pulls our large Sends) before anything is measured.
    wait = pollfd{me.connection->socket_fd(), POLLIN, 0};
    if (::poll(&wait, 1, 10000) != 1) Die("no Ready");
    me.connection->OnSocketReadable();
  }
  Run(o, me, client, peer_region);
  if (client) {
    me.connection->Disconnect(true);
    me.Until([&] { return me.events->ended; });
    me.connection.reset();
    std::fflush(nullptr);
    ::_exit(0);
  }
  me.Until([&] { return me.events->ended; });
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
