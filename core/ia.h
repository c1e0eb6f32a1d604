// The IA (interface adapter) handle object: one opened dat.conf entry, its transport choice and
// address, its asynchronous EVD, and the attributes it reports through dat_ia_query.
#pragma once

#include <netinet/in.h>

#include <string>

#include "base/status.h"
#include "core/evd.h"
#include "core/handle.h"
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

  // Public for NewHandle; use Open.
  Ia(std::string name, IaParams params, const sockaddr_in& address)
      : name_(std::move(name)), params_(std::move(params)), address_(address) {}

 private:
  std::string name_;
  IaParams params_;
  sockaddr_in address_;
  Evd* async_evd_ = nullptr;
  bool owns_async_evd_ = false;
};

}  // namespace softdat::core
