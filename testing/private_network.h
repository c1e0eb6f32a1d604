// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// A test process's own network namespace with loopback up, so that its sockets and fixed ports
// meet nobody else's. Making one needs root (or user namespaces); each caller decides what to do
// without it.
#pragma once

namespace softdat::testing {

enum class PrivateNetwork {
  kEntered,     // in a namespace of this process's own, lo up
  kNoNamespace, // still in the shared namespace: unshare(CLONE_NEWNET) was refused
  kNoLoopback,  // in a new namespace whose lo could not be brought up (no way back)
};

// Unshares the calling thread's network namespace (threads made afterwards share it) and brings
// lo up. On failure, `error` (if given) gets the errno of the step that failed.
PrivateNetwork EnterPrivateNetwork(int* error = nullptr);

}  // namespace softdat::testing
