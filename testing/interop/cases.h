// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// interop_peer's cases: the DAT data-path behaviours that must hold across two stacks, run by a
// server and a client process that may use different providers (softdat-tcp, softdat-verbs, OFED
// DAPL) over one wire. Both processes run the same list of cases in the same order; each case
// makes its own connection. What a case expects is what DAT says, except where a named
// difference of a peer is documented in docs/WIRE.md (interop): those are options.
#pragma once

#include <string>

#include "testing/interop/peer_kit.h"

namespace softdat::testing::interop {

struct Setup {
  bool server = false;
  std::string host;        // client: the server's IA address
  DAT_CONN_QUAL port = 0;  // the server's connection qualifier
  // The connection runs over IB/RoCE: rdma_cm pads private data with zeros to the CM message's
  // field, so a receiver sees the sender's bytes and then zeros.
  bool padded = false;
  // The peer is OFED DAPL: its dat_cr_reject puts a 4-byte header of its own before the
  // consumer's private data.
  bool peer_ofed = false;
  // This process is OFED DAPL: on iWARP it reports any reject as NON_PEER_REJECTED (it reads
  // only the IB CM's reason), without the private data.
  bool self_ofed = false;
  bool iwarp = false;  // the connection runs over iWARP (siw, softdat-tcp)
  // crc-race: connections and Reads per connection the client tries at most.
  int attempts = 10;
  int reads = 50;
};

// Runs case `name`; false when it failed (reasons on stderr). Unknown names fail.
bool RunCase(Peer& peer, const Setup& setup, const std::string& name);

// The names RunCase knows, for the usage text.
const char* CaseNames();

}  // namespace softdat::testing::interop
