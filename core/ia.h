// The IA (interface adapter) handle object: one opened dat.conf entry, its transport choice and
// address, its asynchronous EVD, and the attributes it reports through dat_ia_query.
#pragma once

#include <netinet/in.h>

#include <mutex>
#include <string>
#include <unordered_set>

#include "base/status.h"
#include "core/evd.h"
#include "core/handle.h"
#include "core/memory_table.h"
#include "transport/ia_params.h"

namespace softdat::core {

class Ia : public HandleHeader {
 public:
  static constexpr HandleKind kKind = HandleKind::kIa;

  // Opens the IA named `ia_name` whose dat.conf params are `params_text`. `async_evd` follows
  // dat_ia_open: DAT_HANDLE_NULL asks us to create the async EVD with at least `async_evd_qlen`
  // entries; an existing async EVD handle is adopted. Output parameters are set only on success.
  static Status Open(DAT_PROVIDER* provider, const char* ia_name, const std::string& params_text,
                     DAT_COUNT async_evd_qlen, DAT_EVD_HANDLE* async_evd, Ia** out);

  // dat_ia_close. Graceful close refuses (kInvalidState, kIaInUse) while consumer objects other
  // than the async EVD we created exist; abrupt close destroys them. Frees `ia` on success.
  static Status Close(Ia* ia, DAT_CLOSE_FLAGS flags);

  // dat_ia_query: fills the fields the masks ask for.
  Status Query(DAT_EVD_HANDLE* async_evd, DAT_IA_ATTR_MASK ia_mask, DAT_IA_ATTR* ia_attr,
               DAT_PROVIDER_ATTR_MASK provider_mask, DAT_PROVIDER_ATTR* provider_attr) const;

  const std::string& name() const { return name_; }
  const IaParams& params() const { return params_; }
  const sockaddr_in& address() const { return address_; }
  Evd* async_evd() const { return async_evd_; }
  MemoryTable& memory() { return memory_; }

  // The handle the consumer holds for this IA: libdat2 hands out its own index in place of our
  // pointer. dat/ finds it once and caches it here for queries that report an ia_handle.
  std::atomic<DAT_IA_HANDLE>& consumer_handle() { return consumer_handle_; }

  // The consumer objects of this IA (all but the async EVD it created), so that graceful close
  // can refuse while any exists and abrupt close can destroy them.
  void Track(HandleHeader* object);
  void Untrack(HandleHeader* object);
  std::size_t tracked() const;

  // How many LMRs one IA may register (the memory table is sized for it at open).
  static constexpr std::uint32_t kMaxLmrs = 16384;

  // Public for NewHandle; use Open.
  Ia(std::string name, IaParams params, const sockaddr_in& address)
      : name_(std::move(name)), params_(std::move(params)), address_(address), memory_(kMaxLmrs) {}

 private:
  std::string name_;
  IaParams params_;
  sockaddr_in address_;
  Evd* async_evd_ = nullptr;
  bool owns_async_evd_ = false;
  MemoryTable memory_;
  std::atomic<DAT_IA_HANDLE> consumer_handle_{nullptr};
  mutable std::mutex objects_mutex_;
  std::unordered_set<HandleHeader*> objects_;
};

}  // namespace softdat::core
