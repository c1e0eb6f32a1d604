// IA open, close and query.
#include "core/ia.h"

#include <vector>

#include "base/log.h"
#include "core/ia_attributes.h"
#include "core/lmr.h"
#include "core/pz.h"

namespace softdat::core {

Status Ia::Open(DAT_PROVIDER* provider, const char* ia_name, const std::string& params_text,
                DAT_COUNT async_evd_qlen, DAT_EVD_HANDLE* async_evd, Ia** out) {
  if (async_evd == nullptr) return Status(Code::kInvalidParameter, Detail::kArg3);
  if (async_evd_qlen < 0) return Status(Code::kInvalidParameter, Detail::kArg2);
  Evd* adopted = nullptr;
  const bool async_exists = *async_evd == DAT_EVD_ASYNC_EXISTS;
  if (*async_evd != DAT_HANDLE_NULL && !async_exists) {
    adopted = HandleAs<Evd>(*async_evd);
    if (adopted == nullptr || (adopted->flags() & DAT_EVD_ASYNC_FLAG) == 0)
      return Status(Code::kInvalidHandle, Detail::kEvdAsync);
  }

  IaParams params;
  std::string why;
  if (Status status = ParseIaParams(params_text, params, why); !status.ok()) {
    SOFTDAT_LOG(kError, "dat_ia_open(%s): bad IA params \"%s\" in dat.conf: %s", ia_name,
                params_text.c_str(), why.c_str());
    return status;
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  switch (params.kind) {
    case TransportKind::kTcp:
      if (Status status = ResolveIpv4(params.address, address, why); !status.ok()) {
        SOFTDAT_LOG(kError, "dat_ia_open(%s): %s", ia_name, why.c_str());
        return status;
      }
      break;
    case TransportKind::kVerbs:
      SOFTDAT_LOG(kError, "dat_ia_open(%s): the verbs transport is not built yet (device %s port %u)",
                  ia_name, params.device.c_str(), static_cast<unsigned>(params.port));
      return Status(Code::kNotImplemented);
    case TransportKind::kFake:
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      break;
  }

  Ia* ia = NewHandle<Ia>(provider, ia_name, std::move(params), address);
  if (adopted != nullptr) {
    ia->async_evd_ = adopted;
  } else if (!async_exists) {
    ia->async_evd_ = NewHandle<Evd>(provider, ia, async_evd_qlen, DAT_EVD_ASYNC_FLAG);
    ia->owns_async_evd_ = true;
  }
  SOFTDAT_LOG(kInfo, "dat_ia_open(%s): opened, params \"%s\"", ia_name, params_text.c_str());
  if (!async_exists) *async_evd = ia->async_evd_;
  *out = ia;
  return Status::Ok();
}

namespace {

// Abrupt close destroys what the consumer left, users before what they use.
int DestroyOrder(HandleKind kind) {
  switch (kind) {
    case HandleKind::kLmr: return 0;
    case HandleKind::kPz: return 1;
    case HandleKind::kEvd: return 2;
    default: return 3;
  }
}

void Destroy(HandleHeader* object) {
  switch (object->kind.load(std::memory_order_acquire)) {
    case HandleKind::kLmr: (void)Lmr::Free(static_cast<Lmr*>(object)); break;
    case HandleKind::kPz: (void)Pz::Free(static_cast<Pz*>(object)); break;
    case HandleKind::kEvd: DeleteHandle(static_cast<Evd*>(object)); break;
    default: break;
  }
}

}  // namespace

void Ia::Track(HandleHeader* object) {
  std::lock_guard lock(objects_mutex_);
  objects_.insert(object);
}

void Ia::Untrack(HandleHeader* object) {
  std::lock_guard lock(objects_mutex_);
  objects_.erase(object);
}

std::size_t Ia::tracked() const {
  std::lock_guard lock(objects_mutex_);
  return objects_.size();
}

Status Ia::Close(Ia* ia, DAT_CLOSE_FLAGS flags) {
  if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
    return Status(Code::kInvalidParameter, Detail::kArg2);
  if (flags == DAT_CLOSE_GRACEFUL_FLAG && ia->tracked() > 0) {
    SOFTDAT_LOG(kInfo, "dat_ia_close(%s): graceful close refused, %zu objects still exist",
                ia->name_.c_str(), ia->tracked());
    return Status(Code::kInvalidState, Detail::kIaInUse);
  }
  for (int order = 0; order <= 3; ++order) {
    std::vector<HandleHeader*> batch;
    {
      std::lock_guard lock(ia->objects_mutex_);
      for (HandleHeader* object : ia->objects_)
        if (DestroyOrder(object->kind.load(std::memory_order_acquire)) == order) batch.push_back(object);
    }
    for (HandleHeader* object : batch) Destroy(object);
  }
  if (ia->owns_async_evd_) DeleteHandle(ia->async_evd_);
  SOFTDAT_LOG(kInfo, "dat_ia_close(%s): closed", ia->name_.c_str());
  DeleteHandle(ia);
  return Status::Ok();
}

Status Ia::Query(DAT_EVD_HANDLE* async_evd, DAT_IA_ATTR_MASK ia_mask, DAT_IA_ATTR* ia_attr,
                 DAT_PROVIDER_ATTR_MASK provider_mask, DAT_PROVIDER_ATTR* provider_attr) const {
  if (ia_mask != 0 && ia_attr == nullptr) return Status(Code::kInvalidParameter, Detail::kArg4);
  if (provider_mask != 0 && provider_attr == nullptr)
    return Status(Code::kInvalidParameter, Detail::kArg6);
  if (async_evd != nullptr) *async_evd = async_evd_;
  if (ia_mask != 0) FillIaAttr(*this, *ia_attr);
  if (provider_mask != 0) FillProviderAttr(*this, *provider_attr);
  return Status::Ok();
}

}  // namespace softdat::core
