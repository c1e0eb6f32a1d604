// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// shm_pingpong: the floor under softdat's shared-memory path on this machine. Two processes (this
// one and a child it forks) share one connection segment and move records through
// transport/shm's rings with nothing else: no engine, no completions, no DAT. What it measures is
// the least any provider built on these rings can take:
//   lat SIZE ITERS      half a round trip of SIZE-byte records, ping-pong (p50, p99 in µs)
//   rate COUNT          8-byte records streamed one way, the receiver copying each out (M msg/s)
//   copy SIZE COUNT     SIZE-byte messages streamed one way through the ring, copied in and out
//                       (MB/s): the path when cross-memory attach is refused
//   pull SIZE COUNT     SIZE-byte messages streamed one way as pull records, the receiver copying
//                       each with process_vm_readv and the sender waiting for its consumption
//                       before the next (MB/s): softdat's large-Send path
//   put SIZE COUNT      SIZE-byte process_vm_writev calls into the peer, back to back (MB/s): the
//                       floor of a one-sided RDMA Write into memory the peer did not share
//   put_lat ITERS       8-byte process_vm_writev ping-pong, each side spinning on its own word
//                       (p50, p99 µs): the floor of an RDMA Write ping-pong
//   fanin CONNS COUNT   COUNT 4 KiB messages in all, streamed over CONNS connections (4 in
//                       flight on each, as datperf's SRQ fan-in), into one receiver that looks
//                       at the connections in turn and copies each message into one of 256
//                       buffers, an SRQ's worth (M msg/s): the floor of the SRQ fan-in, where
//                       many rings' payloads come from memory rather than from cache
// Both sides busy-poll. Every wait is bounded (10 s without progress ends the run).
//
//   shm_pingpong MODE ARGS... [--ring BYTES]   (fanin: the rings of 64 KiB by default, as softdat's)
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "transport/shm/layout.h"
#include "transport/shm/ring.h"
#include "transport/shm/shared_memory.h"

namespace shm = softdat::transport::shm;

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kIdleBound = std::chrono::seconds(10);
constexpr long kWarmUp = 1000;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

[[noreturn]] void Die(const char* why) {
  std::fprintf(stderr, "shm_pingpong: %s\n", why);
  std::exit(2);
}

// One side's two rings.
struct End {
  shm::RingWriter out;
  shm::RingReader in;
};

End Attach(std::uint8_t* segment, const shm::Geometry& g, int side) {
  auto* controls = reinterpret_cast<shm::SideControl*>(segment + shm::kControlOffset);
  End end;
  end.out.Attach(segment + shm::RingOffset(g, side), g.ring_bytes[side], &controls[1 - side].consumed);
  end.in.Attach(segment + shm::RingOffset(g, 1 - side), g.ring_bytes[1 - side], &controls[side].consumed);
  return end;
}

// Counts spins and dies when they last longer than the bound; reads the clock only now and then.
class Spin {
 public:
  explicit Spin(const char* what) : what_(what) {}
  void Again() {
    if ((++spins_ & 1023) != 0) return;
    const auto now = Clock::now();
    if (spins_ == 1024) deadline_ = now + kIdleBound;
    else if (now > deadline_) Die(what_);
  }

 private:
  const char* what_;
  long spins_ = 0;
  Clock::time_point deadline_;
};

// Writes one record of `payload` bytes from `from` (spinning until there is room).
void Write(shm::RingWriter& out, shm::Opcode opcode, const std::uint8_t* from, std::uint32_t payload) {
  shm::RecordHeader* header;
  Spin spin("no room in the ring for 10 s");
  while ((header = out.Begin(payload)) == nullptr) spin.Again();
  header->opcode = opcode;
  header->flags = shm::kFlagLast;
  header->msn = 1;
  header->total = payload;
  header->offset = 0;
  if (payload != 0) std::memcpy(shm::RingWriter::Payload(header), from, payload);
  out.Commit(header, payload);
}

// Reads one record into `to` (spinning until one comes); its payload length.
std::uint32_t Read(shm::RingReader& in, std::uint8_t* to, bool publish = true) {
  shm::RecordHeader header;
  const std::uint8_t* payload = nullptr;
  Spin spin("nothing arrived for 10 s");
  for (;;) {
    const shm::RingReader::Next next = in.Peek(header, payload);
    if (next == shm::RingReader::Next::kRecord) break;
    if (next == shm::RingReader::Next::kCorrupt) Die("a corrupt record");
    spin.Again();
  }
  if (header.length != 0 && to != nullptr) std::memcpy(to, payload, header.length);
  in.Consume(header);
  if (publish) in.Publish();
  return header.length;
}

void Latency(End& e, bool client, std::uint32_t size, long iterations) {
  std::vector<std::uint8_t> buffer(std::max<std::uint32_t>(size, 1), 1);
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(iterations));
  for (long i = 0; i < iterations + kWarmUp; ++i) {
    if (client) {
      const auto start = Clock::now();
      Write(e.out, shm::Opcode::kSend, buffer.data(), size);
      Read(e.in, buffer.data());
      if (i >= kWarmUp) samples.push_back(Seconds(Clock::now() - start) / 2 * 1e6);
    } else {
      Read(e.in, buffer.data());
      Write(e.out, shm::Opcode::kSend, buffer.data(), size);
    }
  }
  if (!client) return;
  std::sort(samples.begin(), samples.end());
  std::printf("lat %u B: p50 %.3f us p99 %.3f us\n", size, samples[samples.size() / 2], samples[samples.size() * 99 / 100]);
}

// Streams `count` messages of `size` bytes; the receiver answers with one record at the end.
void Stream(End& e, bool client, const char* mode, std::uint32_t size, long count, pid_t peer) {
  const bool pull = std::strcmp(mode, "pull") == 0;
  const bool rate = std::strcmp(mode, "rate") == 0;
  std::vector<std::uint8_t> source(size, 7), sink(size, 0);
  const std::uint32_t piece = std::min<std::uint32_t>(size, e.out.max_payload());
  if (client) {
    const auto start = Clock::now();
    for (long m = 0; m < count; ++m) {
      if (pull) {
        const shm::PullSegment descriptor{reinterpret_cast<std::uint64_t>(source.data()), size};
        Write(e.out, shm::Opcode::kSendPull, reinterpret_cast<const std::uint8_t*>(&descriptor), sizeof descriptor);
        // As the engine does: nothing follows a pull until it is consumed.
        Spin spin("a pull was not consumed for 10 s");
        while (!e.out.Refresh() || e.out.consumed() != e.out.written()) spin.Again();
      } else {
        for (std::uint32_t at = 0; at < size || (size == 0 && at == 0); at += piece) {
          Write(e.out, shm::Opcode::kSend, source.data() + at, std::min(piece, size - at));
          if (size == 0) break;
        }
      }
    }
    Read(e.in, nullptr);  // the receiver has everything
    const double seconds = Seconds(Clock::now() - start);
    if (rate) {
      std::printf("rate %u B: %.3f Mmsg/s\n", size, static_cast<double>(count) / seconds / 1e6);
    } else {
      std::printf("%s %u B: %.0f MB/s\n", mode, size, static_cast<double>(size) * static_cast<double>(count) / seconds / 1e6);
    }
    return;
  }
  for (long m = 0; m < count; ++m) {
    if (pull) {
      shm::PullSegment descriptor;
      Read(e.in, reinterpret_cast<std::uint8_t*>(&descriptor), false);
      const iovec local{sink.data(), size};
      const iovec remote{reinterpret_cast<void*>(descriptor.address), static_cast<std::size_t>(descriptor.length)};
      if (::process_vm_readv(peer, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(size)) Die("process_vm_readv failed");
      e.in.Publish();
    } else {
      for (std::uint32_t got = 0; got < size || (size == 0 && got == 0);) {
        got += Read(e.in, sink.data() + got);
        if (size == 0) break;
      }
    }
  }
  Write(e.out, shm::Opcode::kSend, nullptr, 0);
}

// Cross-memory attach alone: the two processes learn each other's buffer through the ring.
void Put(End& e, bool client, std::uint32_t size, long count, pid_t peer, bool latency) {
  std::vector<std::uint8_t> mine(std::max<std::uint32_t>(size, 8), 0);
  const std::uint64_t address = reinterpret_cast<std::uint64_t>(mine.data());
  Write(e.out, shm::Opcode::kSend, reinterpret_cast<const std::uint8_t*>(&address), 8);
  std::uint64_t theirs = 0;
  Read(e.in, reinterpret_cast<std::uint8_t*>(&theirs));
  const pid_t other = client ? peer : ::getppid();
  auto put = [&](const void* from, std::size_t n) {
    const iovec local{const_cast<void*>(from), n};
    const iovec remote{reinterpret_cast<void*>(theirs), n};
    if (::process_vm_writev(other, &local, 1, &remote, 1, 0) != static_cast<ssize_t>(n)) Die("process_vm_writev failed");
  };
  if (!latency) {
    if (client) {
      std::vector<std::uint8_t> source(size, 3);
      const auto start = Clock::now();
      for (long i = 0; i < count; ++i) put(source.data(), size);
      const double seconds = Seconds(Clock::now() - start);
      std::printf("put %u B: %.0f MB/s\n", size, static_cast<double>(size) * static_cast<double>(count) / seconds / 1e6);
      Write(e.out, shm::Opcode::kSend, nullptr, 0);
    } else {
      Read(e.in, nullptr);
    }
    return;
  }
  auto* word = reinterpret_cast<volatile std::uint64_t*>(mine.data());
  std::vector<double> samples;
  for (long i = 1; i <= count + kWarmUp; ++i) {
    const std::uint64_t value = static_cast<std::uint64_t>(i);
    const auto start = Clock::now();
    if (client) put(&value, 8);
    Spin spin("no put landed for 10 s");
    while (*word != value) spin.Again();
    if (!client) put(&value, 8);
    if (client && i > kWarmUp) samples.push_back(Seconds(Clock::now() - start) / 2 * 1e6);
  }
  if (!client) return;
  std::sort(samples.begin(), samples.end());
  std::printf("put_lat 8 B: p50 %.3f us p99 %.3f us\n", samples[samples.size() / 2], samples[samples.size() * 99 / 100]);
}

// The fan-in: `ends` are the connections' ends on this side. The sender keeps 4 messages in flight
// per connection (by the bytes its receiver has not consumed); the receiver answers on the first
// connection once it has all.
void FanIn(std::vector<End>& ends, bool client, long count) {
  constexpr std::uint32_t kSize = 4096;
  constexpr std::uint64_t kWindowBytes = 4 * kSize;  // a fifth message's record would exceed it
  constexpr std::size_t kBuffers = 256;
  const std::size_t n = ends.size();
  if (client) {
    std::vector<std::uint8_t> source(kSize, 5);
    const auto start = Clock::now();
    Spin spin("no connection had room for 10 s");
    for (long sent = 0; sent < count;) {
      bool any = false;
      for (std::size_t c = 0; c < n && sent < count; ++c) {
        shm::RingWriter& out = ends[c].out;
        if (out.written() - out.consumed() >= kWindowBytes && (!out.Refresh() || out.written() - out.consumed() >= kWindowBytes))
          continue;
        Write(out, shm::Opcode::kSend, source.data(), kSize);
        ++sent;
        any = true;
      }
      if (!any) spin.Again();
    }
    Read(ends[0].in, nullptr);
    const double seconds = Seconds(Clock::now() - start);
    std::printf("fanin %zu conns 4096 B: %.3f Mmsg/s\n", n, static_cast<double>(count) / seconds / 1e6);
    return;
  }
  std::vector<std::uint8_t> buffers(kBuffers * kSize);
  Spin spin("nothing arrived on any connection for 10 s");
  long received = 0;
  for (std::size_t c = 0; received < count; c = c + 1 == n ? 0 : c + 1) {
    shm::RecordHeader header;
    const std::uint8_t* payload = nullptr;
    const shm::RingReader::Next next = ends[c].in.Peek(header, payload);
    if (next == shm::RingReader::Next::kCorrupt) Die("a corrupt record");
    if (next != shm::RingReader::Next::kRecord) {
      spin.Again();
      continue;
    }
    std::memcpy(&buffers[static_cast<std::size_t>(received % kBuffers) * kSize], payload, header.length);
    ends[c].in.Consume(header);
    ends[c].in.Publish();
    ++received;
  }
  Write(ends[0].out, shm::Opcode::kSend, nullptr, 0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3)
    Die("usage: shm_pingpong lat SIZE ITERS | rate COUNT | copy|pull|put SIZE COUNT | put_lat ITERS | fanin CONNS COUNT "
        "[--ring BYTES]");
  const char* mode = argv[1];
  const bool fan_in = std::strcmp(mode, "fanin") == 0;
  std::uint32_t ring = fan_in ? 1 << 16 : 1 << 20;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--ring") == 0) ring = static_cast<std::uint32_t>(std::atol(argv[i + 1]));
  shm::Geometry g{{ring, std::max<std::uint32_t>(ring, shm::kMinRingBytes)}};
  if (!shm::ValidGeometry(g)) Die("--ring: a power of two from 4096 to 16 MiB");
  const long connections = fan_in ? std::atol(argv[2]) : 1;
  if (connections < 1 || connections > 10000) Die("fanin: 1 to 10,000 connections");
  // One segment per connection, all in one mapping (one fd, however many connections).
  const std::size_t segment_bytes = shm::SegmentBytes(g);
  shm::UniqueFd fd;
  shm::Mapping segment;
  if (!shm::CreateSharedMemory("shm_pingpong", segment_bytes * static_cast<std::size_t>(connections), false, fd, segment).ok())
    Die("no shared memory");
  const pid_t parent = ::getpid();
  std::fflush(nullptr);
  const pid_t child = ::fork();
  if (child < 0) Die("fork failed");
  const bool client = child != 0;
  std::vector<End> ends;
  for (long c = 0; c < connections; ++c)
    ends.push_back(Attach(segment.data() + static_cast<std::size_t>(c) * segment_bytes, g, client ? shm::kActive : shm::kPassive));
  End& e = ends[0];
  if (std::strcmp(mode, "lat") == 0 && argc >= 4) {
    Latency(e, client, static_cast<std::uint32_t>(std::atol(argv[2])), std::atol(argv[3]));
  } else if (std::strcmp(mode, "rate") == 0) {
    Stream(e, client, mode, 8, std::atol(argv[2]), parent);
  } else if ((std::strcmp(mode, "copy") == 0 || std::strcmp(mode, "pull") == 0) && argc >= 4) {
    Stream(e, client, mode, static_cast<std::uint32_t>(std::atol(argv[2])), std::atol(argv[3]), parent);
  } else if (std::strcmp(mode, "put") == 0 && argc >= 4) {
    Put(e, client, static_cast<std::uint32_t>(std::atol(argv[2])), std::atol(argv[3]), child, false);
  } else if (std::strcmp(mode, "put_lat") == 0) {
    Put(e, client, 8, std::atol(argv[2]), child, true);
  } else if (fan_in && argc >= 4) {
    FanIn(ends, client, std::atol(argv[3]));
  } else {
    Die("unknown mode");
  }
  if (!client) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
