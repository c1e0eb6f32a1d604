// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The activity table's memfd (activity.h).
#include "transport/shm/activity.h"

#include "base/log.h"

namespace softdat::transport::shm {

static_assert(kActivityBytes % 4096 == 0, "the table is whole pages");
static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

Status ActivityTable::Create(std::unique_ptr<ActivityTable>& table) {
  std::unique_ptr<ActivityTable> made(new ActivityTable);
  if (Status status = CreateSharedMemory("softdat-shm-activity", kActivityBytes, false, made->fd_, made->mapping_);
      !status.ok())
    return status;
  table = std::move(made);
  return Status::Ok();
}

Status ActivityView::Open(int fd, std::unique_ptr<ActivityView>& view) {
  auto made = std::make_unique<ActivityView>();
  if (Status status = MapPeerMemory(fd, kActivityBytes, kActivityBytes, true, made->mapping_); !status.ok()) {
    SOFTDAT_LOG(kInfo, "shm: the peer's activity table is unusable");
    return status;
  }
  view = std::move(made);
  return Status::Ok();
}

}  // namespace softdat::transport::shm
