// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The library says, at info, which softdat it is when the registry loads it: version, the git
// commit it was built from and the file it was loaded from ("softdat 0.2 (commit 2f0fb102fd3a)
// loaded from /usr/lib/x86_64-linux-gnu/libsoftdat.so.2"), as ucx_info -v does. Linked only into
// libsoftdat.so.2, so that a new commit relinks the library and nothing else.
#include <dlfcn.h>

#include "base/build_info.h"
#include "base/log.h"

namespace softdat::dat {
namespace {

__attribute__((constructor)) void SayWhichSoftdat() {
  Dl_info info{};
  const char* path = ::dladdr(reinterpret_cast<void*>(&SayWhichSoftdat), &info) != 0 && info.dli_fname != nullptr
                         ? info.dli_fname
                         : "an unknown file";
  SOFTDAT_LOG(kInfo, "softdat %s (commit %s) loaded from %s", kVersionText, kBuildCommit, path);
}

}  // namespace
}  // namespace softdat::dat
