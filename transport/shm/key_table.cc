// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The published key table and its read-only view (key_table.h): the sequence-locked entries, the
// fence that revocations wait in, the sleep epoch.
#include "transport/shm/key_table.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "base/log.h"
#include "transport/shm/layout.h"

namespace softdat::transport::shm {
namespace {

constexpr std::uint64_t kTableMagic = 0x31626174736b6473ull;  // "sdkstab1"
constexpr std::uint32_t kTableVersion = 1;
constexpr std::size_t kEntriesOffset = 2 * kLine;
// A reader that finds an entry being written this many times in a row gives up (grants nothing):
// the owner writes an entry in a few stores, so only a table that lies keeps it odd.
constexpr int kReadAttempts = 64;

struct TableHeader {
  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t capacity;
  // kOwnerThreadReads or 0, written before the fd is passed. A table from a build without the
  // word has 0 there (a memfd starts zeroed): its peers take the one-sided path, as before.
  std::uint32_t flags;
};
constexpr std::uint32_t kOwnerThreadReads = 1;

struct alignas(kLine) Entry {
  std::uint32_t sequence;  // odd while the owner writes the entry
  std::uint32_t key;       // 0: grants nothing
  std::uint64_t address;
  std::uint64_t length;
  std::uint32_t access;
  std::uint32_t pz;
  std::uint64_t endpoint;
};
static_assert(sizeof(Entry) == kLine);

std::size_t TableBytes(std::uint32_t capacity) {
  const std::size_t bytes = kEntriesOffset + std::size_t{capacity} * sizeof(Entry);
  return (bytes + kPage - 1) & ~(kPage - 1);
}

std::uint64_t* SleepWord(std::uint8_t* base) { return reinterpret_cast<std::uint64_t*>(base + kLine); }

// Backs off from spinning to yielding to sleeping: a fence waits for a copy of at most one chunk
// in another process, which may be descheduled on a small machine.
void Pause(int round) {
  if (round < 64) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#endif
  } else if (round < 256) {
    sched_yield();
  } else {
    timespec ts{0, 20'000};
    nanosleep(&ts, nullptr);
  }
}

}  // namespace

bool WaitForAccess(const std::uint64_t* word, std::chrono::nanoseconds bound) {
  const std::uint64_t seen = LoadAcquire(word);
  if ((seen & 1) == 0) return true;
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (int round = 0;; ++round) {
    if (LoadAcquire(word) != seen) return true;
    if ((round & 63) == 63 && std::chrono::steady_clock::now() >= deadline) return false;
    Pause(round);
  }
}

Status KeyTable::Create(std::uint32_t capacity, bool owner_thread_reads, std::unique_ptr<KeyTable>& table) {
  if (capacity == 0 || capacity > kMaxCapacity) return Status(Code::kInvalidParameter);
  std::unique_ptr<KeyTable> made(new KeyTable);
  if (Status status = CreateSharedMemory("softdat-shm-keys", TableBytes(capacity), true, made->fd_, made->mapping_);
      !status.ok())
    return status;
  made->capacity_ = capacity;
  auto* header = reinterpret_cast<TableHeader*>(made->mapping_.data());
  header->version = kTableVersion;
  header->capacity = capacity;
  header->flags = owner_thread_reads ? kOwnerThreadReads : 0;
  StoreRelease(&header->magic, kTableMagic);
  table = std::move(made);
  return Status::Ok();
}

KeyTable::~KeyTable() = default;

void KeyTable::Write(std::uint32_t slot, const KeyGrant& grant) {
  auto* entry = reinterpret_cast<Entry*>(mapping_.data() + kEntriesOffset) + slot;
  const std::uint32_t sequence = LoadRelaxed(&entry->sequence);
  StoreRelaxed(&entry->sequence, sequence + 1);
  std::atomic_thread_fence(std::memory_order_release);
  StoreRelaxed(&entry->key, grant.key);
  StoreRelaxed(&entry->address, grant.address);
  StoreRelaxed(&entry->length, grant.length);
  StoreRelaxed(&entry->access, grant.access);
  StoreRelaxed(&entry->pz, grant.pz);
  StoreRelaxed(&entry->endpoint, grant.endpoint);
  StoreRelease(&entry->sequence, sequence + 2);
}

bool KeyTable::Publish(const KeyGrant& grant) {
  const std::uint32_t slot = grant.key >> 8;
  if (slot >= capacity_ || grant.key == 0) return false;
  std::lock_guard lock(mutex_);
  const auto* entry = reinterpret_cast<const Entry*>(mapping_.data() + kEntriesOffset) + slot;
  const bool replaces = LoadRelaxed(&entry->key) != 0;
  Write(slot, grant);
  // What the slot granted before is revoked by the overwrite: wait for accesses through it.
  if (replaces) FenceAll();
  return true;
}

bool KeyTable::Revoke(std::uint32_t key) {
  const std::uint32_t slot = key >> 8;
  if (slot >= capacity_ || key == 0) return false;
  std::lock_guard lock(mutex_);
  const auto* entry = reinterpret_cast<const Entry*>(mapping_.data() + kEntriesOffset) + slot;
  if (LoadRelaxed(&entry->key) != key) return false;
  Write(slot, KeyGrant{});
  FenceAll();
  return true;
}

void KeyTable::FenceAll() {
  // The store-load fence of the rule: our revocation before our look at the access words.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  for (AccessWatch* watch : watches_) {
    if (WaitForAccess(watch->access_word(), fence_bound_)) continue;
    SOFTDAT_LOG(kWarn, "shm: a peer kept a one-sided access open for more than %lld ms past a revocation; breaking its connection",
                static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(fence_bound_).count()));
    watch->OnFenceTimeout();
  }
}

void KeyTable::AddWatch(AccessWatch* watch) {
  std::lock_guard lock(mutex_);
  watches_.push_back(watch);
}

void KeyTable::RemoveWatch(AccessWatch* watch) {
  std::lock_guard lock(mutex_);
  watches_.erase(std::remove(watches_.begin(), watches_.end(), watch), watches_.end());
}

// The word changes by read-modify-writes only (RenewSleep may run on another thread than the
// sleeper's): odd to even by EndSleep, odd to the next odd by RenewSleep, even to odd by
// BeginSleep.
void KeyTable::BeginSleep() {
  std::atomic_ref<std::uint64_t>(*SleepWord(mapping_.data())).fetch_or(1, std::memory_order_seq_cst);
}

void KeyTable::EndSleep() {
  std::atomic_ref<std::uint64_t> word(*SleepWord(mapping_.data()));
  std::uint64_t epoch = word.load(std::memory_order_relaxed);
  // Awake already: a load, no locked instruction (every poll of the progress thread comes here).
  while ((epoch & 1) != 0 && !word.compare_exchange_weak(epoch, epoch + 1, std::memory_order_release,
                                                         std::memory_order_relaxed)) {
  }
}

void KeyTable::RenewSleep() {
  std::atomic_ref<std::uint64_t> word(*SleepWord(mapping_.data()));
  std::uint64_t epoch = word.load(std::memory_order_relaxed);
  if ((epoch & 1) == 0) {
    // Awake (or parked): the sleeper looks at every connection before it sleeps again. The
    // fence keeps the caller's look at the rings after this one, as the exchange below would.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    return;
  }
  // Failing means the sleeper ended the epoch meanwhile: it is awake, as above. The exchange is
  // a full barrier either way.
  (void)word.compare_exchange_strong(epoch, epoch + 2, std::memory_order_seq_cst, std::memory_order_seq_cst);
}

Status KeyTableView::Open(int fd, std::unique_ptr<KeyTableView>& view) {
  auto made = std::make_unique<KeyTableView>();
  if (Status status = MapPeerMemory(fd, kPage, TableBytes(KeyTable::kMaxCapacity), false, made->mapping_); !status.ok())
    return status;
  TableHeader header;
  const auto* shared = reinterpret_cast<const TableHeader*>(made->mapping_.data());
  header.magic = LoadAcquire(&shared->magic);
  header.version = LoadRelaxed(&shared->version);
  header.capacity = LoadRelaxed(&shared->capacity);
  if (header.magic != kTableMagic || header.version != kTableVersion || header.capacity == 0 ||
      header.capacity > KeyTable::kMaxCapacity || TableBytes(header.capacity) != made->mapping_.size()) {
    SOFTDAT_LOG(kInfo, "shm: the peer's key table is malformed (version %u, %u slots in %zu bytes)", header.version,
                header.capacity, made->mapping_.size());
    return Status(Code::kInvalidParameter);
  }
  made->capacity_ = header.capacity;
  made->owner_thread_reads_ = (LoadRelaxed(&shared->flags) & kOwnerThreadReads) != 0;
  view = std::move(made);
  return Status::Ok();
}

RemoteCheck KeyTableView::Check(std::uint32_t key, std::uint64_t address, std::uint64_t length, RemoteAccess access,
                                const Binding& binding) const {
  const std::uint32_t slot = key >> 8;
  if (key == 0 || slot >= capacity_) return RemoteCheck::kInvalidKey;
  const auto* shared = reinterpret_cast<const Entry*>(mapping_.data() + kEntriesOffset) + slot;
  Entry entry;
  int attempt = 0;
  for (;; ++attempt) {
    if (attempt == kReadAttempts) return RemoteCheck::kInvalidKey;
    const std::uint32_t before = LoadAcquire(&shared->sequence);
    if (before & 1) continue;
    entry.key = LoadRelaxed(&shared->key);
    entry.address = LoadRelaxed(&shared->address);
    entry.length = LoadRelaxed(&shared->length);
    entry.access = LoadRelaxed(&shared->access);
    entry.pz = LoadRelaxed(&shared->pz);
    entry.endpoint = LoadRelaxed(&shared->endpoint);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (LoadRelaxed(&shared->sequence) == before) break;
  }
  if (entry.key != key) return RemoteCheck::kInvalidKey;
  if (entry.pz != binding.pz || (entry.endpoint != 0 && entry.endpoint != binding.endpoint))
    return RemoteCheck::kNotAssociated;
  const std::uint32_t wanted = access == RemoteAccess::kRead ? kRemoteRead : kRemoteWrite;
  if ((entry.access & wanted) != wanted) return RemoteCheck::kAccessRights;
  if (address < entry.address || length > entry.length || address - entry.address > entry.length - length)
    return RemoteCheck::kBounds;
  return RemoteCheck::kOk;
}

std::uint64_t KeyTableView::SleepEpoch() const { return LoadAcquire(SleepWord(mapping_.data())); }

}  // namespace softdat::transport::shm
