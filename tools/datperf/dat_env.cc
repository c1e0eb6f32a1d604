// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// DatEnv: the IA, PZ and regions datperf runs on.
#include "tools/datperf/dat_env.h"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "base/dat_names.h"

namespace softdat::datperf {

DAT_LMR_TRIPLET Region::Local(std::uint64_t offset, std::uint64_t length) const {
  DAT_LMR_TRIPLET iov{};
  iov.virtual_address = reinterpret_cast<DAT_VADDR>(data + offset);
  iov.segment_length = static_cast<DAT_SEG_LENGTH>(length);
  iov.lmr_context = lmr_context;
  return iov;
}

DAT_RMR_TRIPLET Region::Remote(std::uint64_t offset, std::uint64_t length) const {
  DAT_RMR_TRIPLET iov{};
  iov.virtual_address = reinterpret_cast<DAT_VADDR>(data + offset);
  iov.segment_length = static_cast<DAT_SEG_LENGTH>(length);
  iov.rmr_context = rmr_context;
  return iov;
}

std::string DatError(const char* what, DAT_RETURN status) {
  const char* major = "?";
  const char* minor = "?";
  dat_strerror(status, &major, &minor);
  std::string text = std::string(what) + ": " + major;
  if (minor != nullptr && *minor != '\0' && std::strcmp(minor, "DAT_NO_SUBTYPE") != 0) text += std::string("/") + minor;
  return text;
}

std::string OpenHint(DAT_RETURN status) {
  // Only a name the registry does not know is about which dat.conf is read; any other failure
  // is the provider's to explain (softdat logs why at the default level).
  if (DAT_GET_TYPE(status) != DAT_PROVIDER_NOT_FOUND) return "";
  const char* override_path = std::getenv("DAT_OVERRIDE");
  const std::string file = override_path != nullptr && *override_path != '\0'
                               ? std::string(override_path) + " (named by DAT_OVERRIDE)"
                               : std::string("/etc/dat.conf");
  return ": no IA of that name in " + file + "; datinfo -l lists its IAs";
}

std::string EventName(DAT_EVENT_NUMBER number) { return DatEventText(static_cast<std::uint32_t>(number)).text; }

std::uint64_t NowUs() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

DatEnv::~DatEnv() {
  if (ia_ != DAT_HANDLE_NULL) (void)dat_ia_close(ia_, DAT_CLOSE_ABRUPT_FLAG);
  for (void* p : memory_) std::free(p);
}

bool DatEnv::Open(const std::string& ia_name, std::string& error) {
  DAT_RETURN status = dat_ia_open(const_cast<char*>(ia_name.c_str()), 64, &async_evd_, &ia_);
  if (status != DAT_SUCCESS) {
    ia_ = DAT_HANDLE_NULL;
    error = DatError(("cannot open IA '" + ia_name + "'").c_str(), status) + OpenHint(status);
    return false;
  }
  status = dat_ia_query(ia_, nullptr, DAT_IA_FIELD_ALL, &ia_attr_, DAT_PROVIDER_FIELD_ALL, &provider_attr_);
  if (status != DAT_SUCCESS) return error = DatError("dat_ia_query", status), false;
  status = dat_pz_create(ia_, &pz_);
  if (status != DAT_SUCCESS) return error = DatError("dat_pz_create", status), false;
  return true;
}

bool DatEnv::MakeEvd(DAT_EVD_FLAGS flags, DAT_COUNT qlen, DAT_EVD_HANDLE& out, std::string& error) {
  const DAT_COUNT max = ia_attr_.max_evd_qlen > 0 ? ia_attr_.max_evd_qlen : qlen;
  const DAT_RETURN status = dat_evd_create(ia_, std::min(qlen, max), DAT_HANDLE_NULL, flags, &out);
  if (status != DAT_SUCCESS) return error = DatError("dat_evd_create", status), false;
  return true;
}

bool DatEnv::Register(std::uint64_t size, Region& out, std::string& error) {
  constexpr std::uint64_t kPage = 4096;
  const std::uint64_t rounded = (std::max<std::uint64_t>(size, 1) + kPage - 1) / kPage * kPage;
  void* memory = std::aligned_alloc(kPage, rounded);
  if (memory == nullptr) return error = "out of memory for a " + std::to_string(rounded) + "-byte buffer", false;
  std::memset(memory, 0, rounded);
  memory_.push_back(memory);
  DAT_REGION_DESCRIPTION region{};
  region.for_va = memory;
  DAT_VLEN registered_length = 0;
  DAT_VADDR registered_address = 0;
  const DAT_RETURN status =
      dat_lmr_create(ia_, DAT_MEM_TYPE_VIRTUAL, region, rounded, pz_, DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &out.lmr,
                     &out.lmr_context, &out.rmr_context, &registered_length, &registered_address);
  if (status != DAT_SUCCESS) return error = DatError("dat_lmr_create", status), false;
  out.data = static_cast<std::uint8_t*>(memory);
  out.size = rounded;
  return true;
}

void DatEnv::Release(Region& region) {
  if (region.lmr != DAT_HANDLE_NULL) (void)dat_lmr_free(region.lmr);
  for (void*& p : memory_) {
    if (p == region.data) {
      std::free(p);
      p = memory_.back();
      memory_.pop_back();
      break;
    }
  }
  region = Region{};
}

DAT_RETURN NextEvent(DAT_EVD_HANDLE evd, Reap reap, DAT_TIMEOUT timeout_us, DAT_EVENT& event) {
  if (reap == Reap::kWait) {
    DAT_COUNT more = 0;
    return dat_evd_wait(evd, timeout_us, 1, &event, &more);
  }
  SpinBound bound(timeout_us);
  for (std::uint32_t spins = 0;; ++spins) {
    const DAT_RETURN status = dat_evd_dequeue(evd, &event);
    if (DAT_GET_TYPE(status) != DAT_QUEUE_EMPTY) return status;
    // The clock only every so often: the spin itself is what is measured.
    if ((spins & 1023) == 1023 && bound.Passed()) return DAT_TIMEOUT_EXPIRED;
  }
}

}  // namespace softdat::datperf
