// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// IA open, close and query, and the order in which an abrupt close takes objects down.
#include "core/ia.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "base/log.h"
#include "core/cno.h"
#include "core/cr.h"
#include "core/ep.h"
#include "core/ia_attributes.h"
#include "core/lmr.h"
#include "core/pz.h"
#include "core/rmr.h"
#include "core/service_point.h"
#include "core/srq.h"
#include "srq/srq_pool.h"

namespace softdat::core {

Ia::Ia(std::string name, IaParams params, std::unique_ptr<transport::Transport> transport)
    : name_(std::move(name)),
      params_(std::move(params)),
      transport_(std::move(transport)),
      address_(transport_->address()),
      provider_specific_(params_, transport_->capabilities()),
      memory_(kMaxMemoryKeys, transport_->capabilities().device_memory_keys) {
  // A device resolves its own keys, which say nothing of core's slots: only core's keys are told.
  if (!transport_->capabilities().device_memory_keys) memory_.set_observer(&key_hooks_);
  // Every wait on this IA's events goes through poller_ (each EVD's and CNO's), which tells the
  // transport when it sleeps and returns, and each CNO tells it too (Cno::Create, Free).
  transport_->ReportWaits();
}

void Ia::KeyHooks::Published(const WindowView& view) {
  transport::PublishedKey key;
  key.key = view.key;
  key.address = view.address;
  key.length = view.length;
  key.remote_read = view.Allows(DAT_MEM_PRIV_REMOTE_READ_FLAG);
  key.remote_write = view.Allows(DAT_MEM_PRIV_REMOTE_WRITE_FLAG);
  key.pd = view.pz != nullptr ? view.pz->domain() : nullptr;
  key.endpoint = reinterpret_cast<std::uintptr_t>(view.endpoint);  // as EndpointConfig::owner
  ia_.transport_->PublishKey(key);
}

Ia::~Ia() = default;

Status Ia::Open(DAT_PROVIDER* provider, const char* ia_name, const std::string& params_text,
                transport::TransportFactory factory, DAT_COUNT async_evd_qlen, DAT_EVD_HANDLE& async_evd,
                Ia** out) {
  if (async_evd_qlen < 0) return Status(Code::kInvalidParameter, Detail::kParamQlen);
  Evd* adopted = nullptr;
  const bool async_exists = async_evd == DAT_EVD_ASYNC_EXISTS;
  if (async_evd != DAT_HANDLE_NULL && !async_exists) {
    adopted = HandleAs<Evd>(async_evd);
    if (adopted == nullptr || (adopted->flags() & DAT_EVD_ASYNC_FLAG) == 0)
      return Status(Code::kInvalidHandle, Detail::kEvdAsync);
  }

  IaParams params;
  std::string why;
  if (Status status = ParseIaParams(params_text, params, why); !status.ok()) {
    SOFTDAT_LOG(kError, "dat_ia_open(%s): bad IA params \"%s\": %s", ia_name,
                params_text.c_str(), why.c_str());
    return status;
  }
  std::unique_ptr<transport::Transport> transport;
  if (Status status = factory(params, why, transport); !status.ok()) {
    SOFTDAT_LOG(kError, "dat_ia_open(%s): cannot open the transport of \"%s\": %s", ia_name,
                params_text.c_str(), why.empty() ? CodeName(status.code()) : why.c_str());
    return status;
  }

  Ia* ia = NewHandle<Ia>(provider, ia_name, std::move(params), std::move(transport));
  if (adopted != nullptr) {
    ia->async_evd_ = adopted;
  } else if (!async_exists) {
    if (Status status = Evd::MakeAsync(ia, async_evd_qlen, &ia->async_evd_); !status.ok()) {
      DeleteHandle(ia);
      return status;
    }
    ia->owns_async_evd_ = true;
  }
  if (ia->async_evd_ != nullptr) ia->async_base_qlen_ = ia->async_evd_->queue().Query().qlen;
  SOFTDAT_LOG(kInfo, "dat_ia_open(%s): opened, params \"%s\"", ia_name, params_text.c_str());
  if (!async_exists) async_evd = ia->async_evd_;
  *out = ia;
  return Status::Ok();
}

Status Ia::ReserveAsyncEntry() {
  std::lock_guard lock(async_reserve_mutex_);
  if (async_evd_ != nullptr) {
    const DAT_COUNT wanted = std::min<std::int64_t>(std::int64_t{async_base_qlen_} + async_reserved_ + 1,
                                                    evd::EventQueue::kMaxQueueLength);
    if (Status status = async_evd_->queue().Grow(wanted); !status.ok()) return status;
  }
  ++async_reserved_;
  return Status::Ok();
}

void Ia::ReleaseAsyncEntry() {
  std::lock_guard lock(async_reserve_mutex_);
  --async_reserved_;
}

SrqLimits Ia::srq_limits() const {
  const transport::Capabilities& caps = capabilities();
  if (!caps.srq) return SrqLimits{};
  return SrqLimits{std::min(srq::SrqPool::kMaxRecvDtos, caps.max_srq_work),
                   std::min(srq::SrqPool::kMaxRecvIov, caps.max_srq_segments)};
}

namespace {

// Abrupt close takes objects down users first: service points (so no connection request can
// name an EP being destroyed), EPs (so no transport event reaches what they use), pending
// connection requests, SRQs, RMRs, LMRs, PZs, EVDs, CNOs.
int DestroyOrder(HandleKind kind) {
  switch (kind) {
    case HandleKind::kPsp: return 0;
    case HandleKind::kRsp: return 0;
    case HandleKind::kEp: return 1;
    case HandleKind::kCr: return 2;
    case HandleKind::kSrq: return 3;
    case HandleKind::kRmr: return 4;
    case HandleKind::kLmr: return 5;
    case HandleKind::kPz: return 6;
    case HandleKind::kEvd: return 7;
    case HandleKind::kCno: return 8;
    default: return 9;
  }
}
constexpr int kDestroyStages = 10;

void Destroy(HandleHeader* object) {
  switch (object->kind.load(std::memory_order_acquire)) {
    case HandleKind::kPsp: Psp::Destroy(static_cast<Psp*>(object)); break;
    case HandleKind::kRsp: Rsp::Destroy(static_cast<Rsp*>(object)); break;
    case HandleKind::kEp: Ep::Destroy(static_cast<Ep*>(object)); break;
    case HandleKind::kCr: Cr::Destroy(static_cast<Cr*>(object)); break;
    case HandleKind::kSrq: Srq::Destroy(static_cast<Srq*>(object)); break;
    case HandleKind::kRmr: Rmr::Destroy(static_cast<Rmr*>(object)); break;
    case HandleKind::kLmr: (void)Lmr::Free(static_cast<Lmr*>(object)); break;
    case HandleKind::kPz: Pz::Destroy(static_cast<Pz*>(object)); break;
    case HandleKind::kEvd: Evd::Destroy(static_cast<Evd*>(object)); break;
    case HandleKind::kCno: DeleteHandle(static_cast<Cno*>(object)); break;
    default: break;
  }
}

}  // namespace

namespace {

// The DCNT_IA_*_CREATE and _FREE counters of an object kind (created, freed), or -1.
std::pair<int, int> LifeCounters(HandleKind kind) {
  switch (kind) {
    case HandleKind::kPz: return {DCNT_IA_PZ_CREATE, DCNT_IA_PZ_FREE};
    case HandleKind::kLmr: return {DCNT_IA_LMR_CREATE, DCNT_IA_LMR_FREE};
    case HandleKind::kRmr: return {DCNT_IA_RMR_CREATE, DCNT_IA_RMR_FREE};
    case HandleKind::kPsp: return {DCNT_IA_PSP_CREATE, DCNT_IA_PSP_FREE};
    case HandleKind::kRsp: return {DCNT_IA_RSP_CREATE, DCNT_IA_RSP_FREE};
    case HandleKind::kEvd: return {DCNT_IA_EVD_CREATE, DCNT_IA_EVD_FREE};
    case HandleKind::kEp: return {DCNT_IA_EP_CREATE, DCNT_IA_EP_FREE};
    case HandleKind::kSrq: return {DCNT_IA_SRQ_CREATE, DCNT_IA_SRQ_FREE};
    case HandleKind::kCr: return {DCNT_IA_SP_CR, -1};  // a CR goes when answered (counted there)
    default: return {-1, -1};
  }
}

}  // namespace

void Ia::Track(HandleHeader* object) {
  std::lock_guard lock(objects_mutex_);
  objects_.insert(object);
  if (const int created = LifeCounters(object->kind.load(std::memory_order_relaxed)).first; created >= 0)
    counters_.AddShared(static_cast<std::size_t>(created));
}

void Ia::Untrack(HandleHeader* object) {
  std::lock_guard lock(objects_mutex_);
  objects_.erase(object);
  if (const int freed = LifeCounters(object->kind.load(std::memory_order_relaxed)).second; freed >= 0)
    counters_.AddShared(static_cast<std::size_t>(freed));
}

Status Ia::QueryCounters(int which, DAT_UINT64* out, bool reset) {
  return ReadCounters(counters_, kIaCounterNames, "IA", this, which, out, reset);
}

Status Ia::PrintCounters(int which, bool reset) {
  return ReadCounters(counters_, kIaCounterNames, "IA", this, which, nullptr, reset);
}

void Ia::WantDatagrams() {
  // Set first, then visit: a PSP tracked meanwhile either is visited here or sees the flag itself
  // (Psp::Listen checks it after it is tracked); listening twice is a no-op.
  if (datagrams_wanted_.exchange(true, std::memory_order_seq_cst)) return;
  ForEachTracked([](HandleHeader* object) {
    if (object->kind.load(std::memory_order_relaxed) == HandleKind::kPsp) static_cast<Psp*>(object)->ListenDatagrams();
  });
}

std::size_t Ia::tracked() const {
  std::lock_guard lock(objects_mutex_);
  return objects_.size();
}

Status Ia::Close(Ia* ia, DAT_CLOSE_FLAGS flags) {
  if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
    return Status(Code::kInvalidParameter, Detail::kParamFlags);
  if (flags == DAT_CLOSE_GRACEFUL_FLAG && ia->tracked() > 0) {
    SOFTDAT_LOG(kWarn, "dat_ia_close(%s): graceful close refused, %zu objects still exist",
                ia->name_.c_str(), ia->tracked());
    return Status(Code::kInvalidState, Detail::kIaInUse);
  }
  for (int stage = 0; stage < kDestroyStages; ++stage) {
    std::vector<HandleHeader*> batch;
    {
      std::lock_guard lock(ia->objects_mutex_);
      for (HandleHeader* object : ia->objects_)
        if (DestroyOrder(object->kind.load(std::memory_order_acquire)) == stage) batch.push_back(object);
      for (HandleHeader* object : batch) ia->objects_.erase(object);
    }
    for (HandleHeader* object : batch) Destroy(object);
  }
  if (ia->owns_async_evd_) Evd::Destroy(ia->async_evd_);
  SOFTDAT_LOG(kInfo, "dat_ia_close(%s): closed", ia->name_.c_str());
  DeleteHandle(ia);  // the transport goes last, after everything that used it
  return Status::Ok();
}

Status Ia::Query(DAT_EVD_HANDLE* async_evd, DAT_IA_ATTR_MASK ia_mask, DAT_IA_ATTR* ia_attr,
                 DAT_PROVIDER_ATTR_MASK provider_mask, DAT_PROVIDER_ATTR* provider_attr) const {
  if (async_evd != nullptr) *async_evd = async_evd_;
  if (ia_mask != 0) FillIaAttr(*this, *ia_attr);
  if (provider_mask != 0) FillProviderAttr(*this, *provider_attr);
  return Status::Ok();
}

}  // namespace softdat::core
