// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// datperf's DAT plumbing: one IA with its PZ, registered regions, and reaping completions the way
// --reap says (dat_evd_wait, or spinning on dat_evd_dequeue).
#pragma once

#include <dat2/udat.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tools/datperf/options.h"

namespace softdat::datperf {

// A page-aligned buffer registered as one LMR with every privilege.
struct Region {
  std::uint8_t* data = nullptr;
  std::uint64_t size = 0;
  DAT_LMR_HANDLE lmr = DAT_HANDLE_NULL;
  DAT_LMR_CONTEXT lmr_context = 0;
  DAT_RMR_CONTEXT rmr_context = 0;

  DAT_LMR_TRIPLET Local(std::uint64_t offset, std::uint64_t length) const;
  DAT_RMR_TRIPLET Remote(std::uint64_t offset, std::uint64_t length) const;
};

class DatEnv {
 public:
  DatEnv() = default;
  DatEnv(const DatEnv&) = delete;
  DatEnv& operator=(const DatEnv&) = delete;
  ~DatEnv();  // closes the IA abruptly (freeing everything on it), then the memory

  // Opens `ia_name` and a PZ; false with `error` ("cannot open IA 'x': DAT_... (...)").
  bool Open(const std::string& ia_name, std::string& error);
  bool MakeEvd(DAT_EVD_FLAGS flags, DAT_COUNT qlen, DAT_EVD_HANDLE& out, std::string& error);
  // Registers `size` bytes (zeroed, page-aligned); kept until Release or the env goes.
  bool Register(std::uint64_t size, Region& out, std::string& error);
  void Release(Region& region);

  DAT_IA_HANDLE ia() const { return ia_; }
  DAT_PZ_HANDLE pz() const { return pz_; }
  const DAT_IA_ATTR& ia_attr() const { return ia_attr_; }
  const DAT_PROVIDER_ATTR& provider_attr() const { return provider_attr_; }

 private:
  DAT_IA_HANDLE ia_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE async_evd_ = DAT_HANDLE_NULL;
  DAT_PZ_HANDLE pz_ = DAT_HANDLE_NULL;
  DAT_IA_ATTR ia_attr_{};
  DAT_PROVIDER_ATTR provider_attr_{};
  std::vector<void*> memory_;
};

// One event from `evd`: waits up to `timeout_us` (--reap wait) or spins on dat_evd_dequeue for as
// long (--reap dequeue). DAT_SUCCESS, a DAT_TIMEOUT_EXPIRED type when none came, or the error.
DAT_RETURN NextEvent(DAT_EVD_HANDLE evd, Reap reap, DAT_TIMEOUT timeout_us, DAT_EVENT& event);

// "what: DAT_MAJOR/DAT_MINOR" for a DAT_RETURN.
std::string DatError(const char* what, DAT_RETURN status);

// What to add to a failed dat_ia_open's message: for a name the registry does not know, which
// dat.conf was read (DAT_OVERRIDE's or /etc/dat.conf); nothing for other failures.
std::string OpenHint(DAT_RETURN status);

// "DAT_CONNECTION_EVENT_UNREACHABLE", not 0x4008.
std::string EventName(DAT_EVENT_NUMBER number);

// Microseconds of a monotonic clock.
std::uint64_t NowUs();

// A spin's time bound that reads the clock only when checked, and first sets itself there: a
// spin that ends before its first check reads none. A read costs about 28 ns on the development
// VM, a tenth of an 8 B same-host message, so one per dequeue loop was datperf's own cost in the
// rates it reported. The bound runs from the first check, a few microseconds late.
class SpinBound {
 public:
  explicit SpinBound(std::uint64_t timeout_us) : timeout_us_(timeout_us) {}
  bool Passed() {
    const std::uint64_t now = NowUs();
    if (at_us_ == 0) {
      at_us_ = now + timeout_us_;
      return false;
    }
    return now >= at_us_;
  }

 private:
  std::uint64_t timeout_us_;
  std::uint64_t at_us_ = 0;
};

}  // namespace softdat::datperf
