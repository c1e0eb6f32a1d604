// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What the progress context drives: a connection whose socket sits in the PollSet and which
// consumer threads hand over through the KickQueue. An iWARP connection (tcp::Connection) and a
// same-host shared-memory one (LocalConnection, local_path.h) are both one, so both kinds share
// one poll set, one kick ring and one progress thread per IA.
#pragma once

#include <cstdint>

namespace softdat::transport::tcp {

class ProgressTarget {
 public:
  // The PollSet found the socket readable (or a consumer polls the only connection: PollSet::Sole).
  // `wait`: take the connection's lock even when another thread holds it (the progress thread);
  // otherwise a busy connection is left to its holder. True when something arrived or it ended.
  virtual bool PollIo(bool wait) = 0;
  // Acts on what consumer threads left. False when a consumer's poll should leave it for later
  // (the KickQueue queues it again); `ia_last_write_ns`: when the IA last wrote (coalescing).
  virtual bool OnKick(bool consumer, std::uint64_t ia_last_write_ns) = 0;

 protected:
  ~ProgressTarget() = default;
};

}  // namespace softdat::transport::tcp
