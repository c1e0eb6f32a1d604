// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// memfd creation, sealing and checked mapping (shared_memory.h).
#include "transport/shm/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/log.h"

namespace softdat::transport::shm {
namespace {

constexpr int kSizeSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

}  // namespace

void Mapping::Reset() {
  if (data_ != nullptr) ::munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

Status CreateSharedMemory(const char* name, std::size_t bytes, bool peers_read_only, UniqueFd& fd, Mapping& mapping) {
  UniqueFd created(::memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!created.valid()) {
    SOFTDAT_LOG(kWarn, "shm: memfd_create(%s) failed: %s", name, std::strerror(errno));
    return Status(Code::kInsufficientResources, Detail::kMemory);
  }
  if (::ftruncate(created.get(), static_cast<off_t>(bytes)) != 0) {
    SOFTDAT_LOG(kWarn, "shm: sizing %s to %zu bytes failed: %s", name, bytes, std::strerror(errno));
    return Status(Code::kInsufficientResources, Detail::kMemory);
  }
  void* at = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, created.get(), 0);
  if (at == MAP_FAILED) {
    SOFTDAT_LOG(kWarn, "shm: mapping %s (%zu bytes) failed: %s", name, bytes, std::strerror(errno));
    return Status(Code::kInsufficientResources, Detail::kMemory);
  }
  Mapping made;
  made.data_ = static_cast<std::uint8_t*>(at);
  made.size_ = bytes;
  // Our writable mapping exists before F_SEAL_FUTURE_WRITE: it stays writable, every later one
  // (the peer's) cannot be.
  const int seals = kSizeSeals | (peers_read_only ? F_SEAL_FUTURE_WRITE : 0);
  if (::fcntl(created.get(), F_ADD_SEALS, seals) != 0) {
    SOFTDAT_LOG(kWarn, "shm: sealing %s failed: %s", name, std::strerror(errno));
    return Status(Code::kInsufficientResources, Detail::kMemory);
  }
  fd = std::move(created);
  mapping = std::move(made);
  return Status::Ok();
}

Status MapPeerMemory(int fd, std::size_t min_bytes, std::size_t max_bytes, bool writable, Mapping& mapping) {
  const int seals = ::fcntl(fd, F_GET_SEALS);
  if (seals < 0 || (seals & kSizeSeals) != kSizeSeals) {
    SOFTDAT_LOG(kInfo, "shm: the peer's memory is not a memfd sealed against resizing (seals %#x)", seals);
    return Status(Code::kInvalidParameter);
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size < 0) return Status(Code::kInvalidParameter);
  const auto bytes = static_cast<std::size_t>(st.st_size);
  if (bytes < min_bytes || bytes > max_bytes || bytes % 4096 != 0) {
    SOFTDAT_LOG(kInfo, "shm: the peer's memory has %zu bytes, expected %zu to %zu", bytes, min_bytes, max_bytes);
    return Status(Code::kInvalidParameter);
  }
  void* at = ::mmap(nullptr, bytes, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
  if (at == MAP_FAILED) {
    SOFTDAT_LOG(kInfo, "shm: mapping the peer's memory (%zu bytes) failed: %s", bytes, std::strerror(errno));
    return Status(Code::kInsufficientResources, Detail::kMemory);
  }
  mapping.Reset();
  mapping.data_ = static_cast<std::uint8_t*>(at);
  mapping.size_ = bytes;
  return Status::Ok();
}

}  // namespace softdat::transport::shm
