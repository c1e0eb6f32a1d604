// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// One async event reader per device context, shared by the IAs of a process (async_events.h).
#include "base/mutex.h"
#include "transport/verbs/async_events.h"

#include <fcntl.h>

#include <algorithm>
#include <vector>

#include "base/log.h"

namespace softdat::transport::verbs {

std::shared_ptr<AsyncEventRouter> AsyncEventRouter::For(ibv_context* context) {
  static softdat::Mutex registry_mutex;
  static std::vector<std::weak_ptr<AsyncEventRouter>> registry;
  std::lock_guard lock(registry_mutex);
  std::erase_if(registry, [](const std::weak_ptr<AsyncEventRouter>& r) { return r.expired(); });
  for (const std::weak_ptr<AsyncEventRouter>& weak : registry) {
    std::shared_ptr<AsyncEventRouter> router = weak.lock();
    if (router != nullptr && router->context_ == context) return router;
  }
  const int flags = fcntl(context->async_fd, F_GETFL);
  if (flags < 0 || fcntl(context->async_fd, F_SETFL, flags | O_NONBLOCK) != 0) return nullptr;
  auto router = std::make_shared<AsyncEventRouter>(context);
  registry.push_back(router);
  return router;
}

bool AsyncEventRouter::Read() {
  std::lock_guard lock(mutex_);
  bool any = false;
  ibv_async_event event;
  while (ibv_get_async_event(context_, &event) == 0) {
    any = true;
    void* context = nullptr;
    switch (event.event_type) {
      case IBV_EVENT_QP_FATAL:
      case IBV_EVENT_QP_REQ_ERR:
      case IBV_EVENT_QP_ACCESS_ERR:
      case IBV_EVENT_COMM_EST:
        context = event.element.qp->qp_context;
        break;
      case IBV_EVENT_SRQ_LIMIT_REACHED:
        context = event.element.srq->srq_context;
        break;
      case IBV_EVENT_CQ_ERR:
        context = event.element.cq->cq_context;
        break;
      default:
        break;
    }
    SOFTDAT_LOG(kDebug, "verbs: async event %s%s", ibv_event_type_str(event.event_type),
                context == nullptr ? " (no target)" : "");
    if (context != nullptr) {
      auto* target = static_cast<AsyncTarget*>(context);
      queue_.push_back({target, event.event_type});
      target->sink().WakeForAsyncEvents();
    }
    ibv_ack_async_event(&event);
  }
  return any;
}

bool AsyncEventRouter::Next(const AsyncSink& sink, AsyncTarget*& target, ibv_event_type& type) {
  std::lock_guard lock(mutex_);
  auto it = std::find_if(queue_.begin(), queue_.end(), [&](const Entry& e) { return &e.target->sink() == &sink; });
  if (it == queue_.end()) return false;
  target = it->target;
  type = it->type;
  queue_.erase(it);
  return true;
}

void AsyncEventRouter::Detach(AsyncTarget* target, void** context) {
  std::lock_guard lock(mutex_);
  if (context != nullptr) *context = nullptr;
  std::erase_if(queue_, [&](const Entry& e) { return e.target == target; });
}

}  // namespace softdat::transport::verbs
