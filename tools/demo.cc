// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// softdat_demo: what `tools/dev demo` runs. A loopback transfer over softdat-tcp through the
// stock DAT registry: a client EP connected to a server EP that receives from an SRQ; for a few
// message sizes it streams Sends into the SRQ's buffers, RDMA Writes and RDMA Reads, checks every
// byte that arrived, and prints a table (the raw numbers also go to a CSV file it names).
//
// Usage: softdat_demo [--ia NAME] [--csv PATH]    (dat.conf via DAT_OVERRIDE, as any consumer)
//
// Bounded: each row stops posting after kRowTime, every wait is bounded by LoopbackPair, and the
// whole transfer phase takes well under 30 s.
#include <dat2/udat.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <string>
#include <vector>

#include "tools/loopback_pair.h"

namespace softdat::tools {
namespace {

using Clock = std::chrono::steady_clock;

constexpr std::size_t kMaxSize = 1 << 20;
constexpr std::size_t kSizes[] = {64, 4 << 10, 64 << 10, 1 << 20};
constexpr int kWindow = 8;         // operations in flight (and send / read slots)
constexpr int kSrqBuffers = 16;    // receive buffers posted on the SRQ, each kMaxSize
constexpr std::size_t kRowBytes = 128u << 20;  // bytes a row aims to move
constexpr int kMinCount = 64;
constexpr int kMaxCount = 20000;
constexpr auto kRowTime = std::chrono::milliseconds(1500);  // a row stops posting after this
constexpr std::uint64_t kTrailerMagic = 0x5eedda7a5eedda7aull;
constexpr std::uint64_t kSentinel = ~std::uint64_t{0};

struct Row {
  Row(const char* operation_, std::size_t size_) : operation(operation_), size(size_) {}
  const char* operation;
  std::size_t size;
  int count = 0;
  double seconds = 0;
  bool data_ok = false;
  std::string error;
};

std::string SizeText(std::size_t size) {
  if (size >= (1u << 20)) return std::to_string(size >> 20) + " MiB";
  if (size >= (1u << 10)) return std::to_string(size >> 10) + " KiB";
  return std::to_string(size) + " B";
}

// Each message carries a unique stamp in its first 8 bytes and (stamp ^ magic) in its last 8, and
// a body that depends on size and slot: a receiver that sees the stamps it expects and the body
// of the slot the message came from got this message, not a stale buffer.
void Stamp(char* at, std::size_t size, std::uint64_t stamp) {
  const std::uint64_t trailer = stamp ^ kTrailerMagic;
  std::memcpy(at, &stamp, 8);
  std::memcpy(at + size - 8, &trailer, 8);
}

void Unstamp(char* at, std::size_t size) {
  std::memcpy(at, &kSentinel, 8);
  std::memcpy(at + size - 8, &kSentinel, 8);
}

bool StampIs(const char* at, std::size_t size, std::uint64_t stamp) {
  std::uint64_t head, trailer;
  std::memcpy(&head, at, 8);
  std::memcpy(&trailer, at + size - 8, 8);
  return head == stamp && trailer == (stamp ^ kTrailerMagic);
}

bool BodyEqual(const char* a, const char* b, std::size_t size) {
  return std::memcmp(a + 8, b + 8, size - 16) == 0;
}

class Demo {
 public:
  explicit Demo(LoopbackPair& pair) : pair_(pair) {}

  bool Prepare(std::string& error) {
    if (!pair_.Register((kWindow + 1) * kMaxSize, source_, error) ||
        !pair_.Register(kSrqBuffers * kMaxSize, srq_buffers_, error) ||
        !pair_.Register(kWindow * kMaxSize, target_, error) ||
        !pair_.Register(kWindow * kMaxSize, read_into_, error))
      return false;
    for (int b = 0; b < kSrqBuffers; ++b)
      if (!PostSrqBuffer(b, error)) return false;
    return true;
  }

  // Fills every source slot's body for `size`: the slot number and size are in the pattern.
  void FillSources(std::size_t size) {
    for (int slot = 0; slot < kWindow; ++slot) {
      char* at = source_.data + slot * kMaxSize;
      for (std::size_t i = 0; i < size; ++i) at[i] = static_cast<char>(i * 131 + slot * 7 + size);
    }
  }

  Row Send(std::size_t size, int count) {
    Row row("Send", size);
    const Clock::time_point start = Clock::now();
    const Clock::time_point stop_posting = start + kRowTime;
    int posted = 0, completed = 0, received = 0;
    bool ok = true;
    DAT_DTO_COMPLETION_EVENT_DATA done;
    bool failed = false;
    while (row.error.empty() && (received < posted || (posted < count && Clock::now() < stop_posting))) {
      while (posted < count && posted - completed < kWindow && Clock::now() < stop_posting) {
        if (!PostSend(posted % kWindow, size, row.error)) break;
        ++posted;
      }
      bool progressed = false;
      while (row.error.empty() && pair_.TryDto(pair_.client_request_evd, done, failed, row.error)) {
        ++completed;
        progressed = true;
      }
      while (row.error.empty() && pair_.TryDto(pair_.server_recv_evd, done, failed, row.error)) {
        ok &= CheckReceive(done, row.error);
        ++received;
        progressed = true;
      }
      if (progressed || !row.error.empty()) continue;
      if (received < posted) {
        if (pair_.WaitDto(pair_.server_recv_evd, done, row.error)) {
          ok &= CheckReceive(done, row.error);
          ++received;
        }
      } else if (completed < posted && pair_.WaitDto(pair_.client_request_evd, done, row.error)) {
        ++completed;
      }
    }
    while (row.error.empty() && completed < posted && pair_.WaitDto(pair_.client_request_evd, done, row.error))
      ++completed;
    row.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    row.count = received;
    row.data_ok = ok && row.error.empty() && received == posted;
    return row;
  }

  Row Write(std::size_t size, int count) {
    Row row("RDMA Write", size);
    std::uint64_t last_stamp[kWindow];
    for (int slot = 0; slot < kWindow; ++slot) Unstamp(target_.data + slot * kMaxSize, size);
    const Clock::time_point start = Clock::now();
    const Clock::time_point stop_posting = start + kRowTime;
    int posted = 0, completed = 0;
    DAT_DTO_COMPLETION_EVENT_DATA done;
    while (row.error.empty() && (completed < posted || (posted < count && Clock::now() < stop_posting))) {
      while (posted < count && posted - completed < kWindow && Clock::now() < stop_posting) {
        const int slot = posted % kWindow;
        last_stamp[slot] = next_stamp_++;
        Stamp(source_.data + slot * kMaxSize, size, last_stamp[slot]);
        DAT_LMR_TRIPLET local = source_.Local(slot * kMaxSize, size);
        DAT_RMR_TRIPLET remote = target_.Remote(slot * kMaxSize, size);
        DAT_DTO_COOKIE cookie;
        cookie.as_64 = posted;
        const DAT_RETURN status =
            dat_ep_post_rdma_write(pair_.client_ep, 1, &local, cookie, &remote, DAT_COMPLETION_DEFAULT_FLAG);
        if (status != DAT_SUCCESS) {
          row.error = DatError("dat_ep_post_rdma_write", status);
          break;
        }
        ++posted;
      }
      if (row.error.empty() && completed < posted && pair_.WaitDto(pair_.client_request_evd, done, row.error))
        ++completed;
    }
    // A Write's completion only says the data left; a Send behind it on the same connection is
    // delivered after the Writes are placed, so its receive is the proof they landed.
    bool ok = row.error.empty() && Fence(row.error);
    row.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    row.count = completed;
    for (int slot = 0; ok && slot < std::min(posted, kWindow); ++slot) {
      const char* landed = target_.data + slot * kMaxSize;
      ok = StampIs(landed, size, last_stamp[slot]) && BodyEqual(landed, source_.data + slot * kMaxSize, size);
    }
    row.data_ok = ok && posted == completed;
    return row;
  }

  // Reads back the target slots the Write row left (each stamped and with its body).
  Row Read(std::size_t size, int count) {
    Row row("RDMA Read", size);
    const Clock::time_point start = Clock::now();
    const Clock::time_point stop_posting = start + kRowTime;
    const int slots = std::min(count, kWindow);
    int posted = 0, completed = 0;
    bool ok = true;
    DAT_DTO_COMPLETION_EVENT_DATA done;
    while (row.error.empty() && (completed < posted || (posted < count && Clock::now() < stop_posting))) {
      while (posted < count && posted - completed < kWindow && Clock::now() < stop_posting) {
        const int slot = posted % slots;
        Unstamp(read_into_.data + slot * kMaxSize, size);
        DAT_LMR_TRIPLET local = read_into_.Local(slot * kMaxSize, size);
        DAT_RMR_TRIPLET remote = target_.Remote(slot * kMaxSize, size);
        DAT_DTO_COOKIE cookie;
        cookie.as_64 = slot;
        const DAT_RETURN status =
            dat_ep_post_rdma_read(pair_.client_ep, 1, &local, cookie, &remote, DAT_COMPLETION_DEFAULT_FLAG);
        if (status != DAT_SUCCESS) {
          row.error = DatError("dat_ep_post_rdma_read", status);
          break;
        }
        ++posted;
      }
      if (row.error.empty() && completed < posted && pair_.WaitDto(pair_.client_request_evd, done, row.error)) {
        ++completed;
        const std::size_t offset = done.user_cookie.as_64 * kMaxSize;
        std::uint64_t head;
        std::memcpy(&head, read_into_.data + offset, 8);
        ok &= done.transfered_length == size && head != kSentinel &&
              std::memcmp(read_into_.data + offset, target_.data + offset, size) == 0;
      }
    }
    row.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    row.count = completed;
    row.data_ok = ok && row.error.empty() && posted == completed;
    return row;
  }

 private:
  struct Expected {
    std::uint64_t stamp;
    int slot;
    std::size_t size;
  };

  bool PostSrqBuffer(int buffer, std::string& error) {
    DAT_LMR_TRIPLET iov = srq_buffers_.Local(buffer * kMaxSize, kMaxSize);
    DAT_DTO_COOKIE cookie;
    cookie.as_64 = buffer;
    const DAT_RETURN status = dat_srq_post_recv(pair_.srq, 1, &iov, cookie);
    if (status != DAT_SUCCESS) error = DatError("dat_srq_post_recv", status);
    return status == DAT_SUCCESS;
  }

  bool PostSend(int slot, std::size_t size, std::string& error) {
    const std::uint64_t stamp = next_stamp_++;
    Stamp(source_.data + slot * kMaxSize, size, stamp);
    DAT_LMR_TRIPLET iov = source_.Local(slot * kMaxSize, size);
    DAT_DTO_COOKIE cookie;
    cookie.as_64 = stamp;
    const DAT_RETURN status = dat_ep_post_send(pair_.client_ep, 1, &iov, cookie, DAT_COMPLETION_DEFAULT_FLAG);
    if (status != DAT_SUCCESS) {
      error = DatError("dat_ep_post_send", status);
      return false;
    }
    expected_.push_back({stamp, slot, size});
    return true;
  }

  // Receives complete in the order the Sends were posted; the buffer they used is checked, marked
  // stale again and given back to the SRQ.
  bool CheckReceive(const DAT_DTO_COMPLETION_EVENT_DATA& done, std::string& error) {
    if (expected_.empty()) {
      error = "a receive completed that nobody sent";
      return false;
    }
    const Expected want = expected_.front();
    expected_.pop_front();
    const int buffer = static_cast<int>(done.user_cookie.as_64);
    char* at = srq_buffers_.data + buffer * kMaxSize;
    const bool ok = buffer >= 0 && buffer < kSrqBuffers && done.transfered_length == want.size &&
                    done.ep_handle == pair_.server_ep && StampIs(at, want.size, want.stamp) &&
                    BodyEqual(at, source_.data + want.slot * kMaxSize, want.size);
    Unstamp(at, want.size);
    if (!PostSrqBuffer(buffer, error)) return false;
    return ok;
  }

  // One small Send after everything posted so far, waited for at the receiver.
  bool Fence(std::string& error) {
    if (!PostSend(kFenceSlot, 64, error)) return false;
    DAT_DTO_COMPLETION_EVENT_DATA done;
    if (!pair_.WaitDto(pair_.server_recv_evd, done, error)) return false;
    const bool ok = CheckReceive(done, error);
    if (!pair_.WaitDto(pair_.client_request_evd, done, error)) return false;
    return ok;
  }

  static constexpr int kFenceSlot = kWindow;  // a source slot of its own: the Write rows' stay intact

  LoopbackPair& pair_;
  Region source_;       // client: Send and Write sources, kWindow slots, then the fence's
  Region srq_buffers_;  // server: the SRQ's receive buffers
  Region target_;       // server: Write target and Read source, kWindow slots
  Region read_into_;    // client: Read destinations, kWindow slots
  std::uint64_t next_stamp_ = 1;
  std::deque<Expected> expected_;
};

int CountFor(std::size_t size) {
  const std::size_t by_bytes = kRowBytes / size;
  return static_cast<int>(std::min<std::size_t>(kMaxCount, std::max<std::size_t>(kMinCount, by_bytes)));
}

std::string DefaultCsvPath() {
  const char* tmp = std::getenv("TMPDIR");
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::gmtime(&now));
  return std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/softdat-demo-" + stamp + ".csv";
}

int Run(const std::string& ia_name, const std::string& csv_path) {
  LoopbackPair pair;
  PairConfig config;
  config.ia_name = ia_name;
  config.srq_buffers = kSrqBuffers;
  config.request_dtos = 2 * kWindow;
  config.rdma_reads = kWindow;
  std::string error;
  std::fflush(stdout);
  if (!pair.Open(config, error)) {
    std::printf("softdat demo: setup failed: %s\n", error.c_str());
    return 1;
  }
  Demo demo(pair);
  if (!demo.Prepare(error)) {
    std::printf("softdat demo: setup failed: %s\n", error.c_str());
    return 1;
  }
  std::printf("softdat demo: %s, one IA, client EP -> server EP on an SRQ (%d x %s buffers), "
              "connected over loopback TCP port %u; %d operations in flight; every byte checked\n\n",
              ia_name.c_str(), kSrqBuffers, SizeText(kMaxSize).c_str(), static_cast<unsigned>(pair.port), kWindow);
  std::printf("%-11s | %7s | %6s | %9s | %9s | %s\n", "operation", "size", "count", "MB/s", "us/op", "data ok");
  std::printf("------------+---------+--------+-----------+-----------+--------\n");
  std::vector<Row> rows;
  bool all_ok = true;
  bool broken = false;  // a DAT call failed: the connection cannot be trusted for more rows
  for (const std::size_t size : kSizes) {
    demo.FillSources(size);
    const int count = CountFor(size);
    for (int op = 0; op < 3 && !broken; ++op) {
      Row row = op == 0 ? demo.Send(size, count) : op == 1 ? demo.Write(size, count) : demo.Read(size, count);
      const double mbps = row.seconds > 0 ? row.count * static_cast<double>(size) / row.seconds / 1e6 : 0;
      const double us = row.count > 0 ? row.seconds * 1e6 / row.count : 0;
      std::printf("%-11s | %7s | %6d | %9.1f | %9.2f | %s\n", row.operation, SizeText(size).c_str(), row.count,
                  mbps, us, row.data_ok ? "yes" : "NO");
      if (!row.error.empty()) std::printf("  error: %s\n", row.error.c_str());
      all_ok &= row.data_ok && row.error.empty();
      broken |= !row.error.empty();
      rows.push_back(row);
    }
  }
  std::printf("\nMB/s is 10^6 bytes per second; us/op is elapsed time / count with %d in flight "
              "(a throughput figure, not a round-trip latency: datperf measures that).\n",
              kWindow);

  if (FILE* csv = std::fopen(csv_path.c_str(), "w")) {
    std::fprintf(csv, "operation,size_bytes,count,seconds,mb_per_s,us_per_op,data_ok,in_flight,ia_name\n");
    for (const Row& row : rows) {
      const double mbps = row.seconds > 0 ? row.count * static_cast<double>(row.size) / row.seconds / 1e6 : 0;
      const double us = row.count > 0 ? row.seconds * 1e6 / row.count : 0;
      std::fprintf(csv, "%s,%zu,%d,%.6f,%.3f,%.3f,%s,%d,%s\n", row.operation, row.size, row.count, row.seconds,
                   mbps, us, row.data_ok ? "yes" : "no", kWindow, ia_name.c_str());
    }
    std::fclose(csv);
    std::printf("raw numbers: %s\n", csv_path.c_str());
  } else {
    std::printf("cannot write %s\n", csv_path.c_str());
    all_ok = false;
  }
  std::printf("%s\n", all_ok ? "softdat demo: PASSED (all data checked)" : "softdat demo: FAILED");
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace softdat::tools

int main(int argc, char** argv) {
  std::string ia_name = "softdat-tcp";
  std::string csv_path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--ia" && i + 1 < argc) {
      ia_name = argv[++i];
    } else if (arg == "--csv" && i + 1 < argc) {
      csv_path = argv[++i];
    } else {
      std::fprintf(stderr, "usage: %s [--ia NAME] [--csv PATH]\n", argv[0]);
      return 2;
    }
  }
  if (csv_path.empty()) csv_path = softdat::tools::DefaultCsvPath();
  return softdat::tools::Run(ia_name, csv_path);
}
