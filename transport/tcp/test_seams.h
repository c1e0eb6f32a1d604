// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Test seams of the TCP transport, in a testonly library the fuzzers and transport tests link and
// the shipped provider does not: a connection over a stream socket that is already connected (one
// end of a socketpair) instead of a TCP connect or a listener's accept. Everything after the
// socket exists (MPA, FPDUs, teardown) is the production path; only how the socket came to be
// differs.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "transport/listener.h"
#include "transport/tcp/wire.h"

namespace softdat::transport::tcp {

class Connection;
class LocalConnection;
class TcpTransport;

struct ConnectionTestAccess {
  // The active side over `fd`: the MPA Request goes out at once, as after a TCP connect. Takes
  // `fd` over.
  static Status ConnectOver(Connection& connection, int fd, std::span<const std::uint8_t> private_data);
  // The io lock of a connected endpoint's iWARP connection (null: it has none): a test holds it
  // as another poller does, so that a Post finds the connection taken.
  static softdat::Mutex* IoMutexOf(Endpoint& endpoint);
};

struct TcpTransportTestAccess {
  // A connection request over `fd`, as if a listener had read `request` and `private_data` from
  // it. Takes `fd` over; null if it cannot be used.
  static std::unique_ptr<PendingConnection> AdoptRequest(TcpTransport& transport, int fd,
                                                         const wire::MpaFrame& request,
                                                         std::vector<std::uint8_t> private_data);
  // Connections made after this call coalesce as those of the default mode do while its progress
  // thread is parked and consumers drive progress, with a window of `coalesce_us`: Post no longer
  // writes everything (progress=poll's rule). A poll-mode transport so set up lets a test drive
  // the consumers' side of the default mode deterministically, from one thread.
  static void CoalesceLikeTheDefaultMode(TcpTransport& transport, std::uint32_t coalesce_us);
  // How many same-host (shared-memory) connections of the transport are live: which path its
  // connections took.
  static std::size_t LocalConnections(TcpTransport& transport);
  // The progress thread's last look before it sleeps (LocalPaths::PrepareSleep): true means "do
  // not sleep". A test calls it on a progress=poll transport, whose only poller is the test.
  static bool PrepareSleep(TcpTransport& transport);
  static void EndSleep(TcpTransport& transport);
  // The io lock of live same-host connection `index`'s engine (null if there is none): a test
  // holds it as a consumer thread in Post does, to put another poller on the other side of it.
  static softdat::Mutex* LocalEngineLock(TcpTransport& transport, std::size_t index);
  // The rendezvous socket of live same-host connection `index` (-1 if there is none).
  static int LocalEngineSocket(TcpTransport& transport, std::size_t index);
  // How many same-host connections a poll by activity bits also looks at in turn (4; 0: only the
  // marked ones, to show that the marks alone find the work).
  static void LookInTurn(TcpTransport& transport, std::size_t per_poll);
  // Clears every bit of the transport's activity table, as a hostile peer may.
  static void ClearActivity(TcpTransport& transport);
  // How many connections wait in the transport's kick queue.
  static std::size_t QueuedKicks(TcpTransport& transport);
  // How often the default mode's progress thread woke while parked (TcpTransport::Park): each
  // wake-up preempts a spinning consumer on a small machine.
  static std::uint64_t ParkWakeups(TcpTransport& transport);
  // Whether that thread is parked now.
  static bool Parked(TcpTransport& transport);
  // How often a kick woke the progress thread (KickQueue::Wake).
  static std::uint64_t KickWakes(TcpTransport& transport);
  // Asks the `index`th live same-host connection whether a note of completions may wait for the
  // next poll (LocalConnection::Defer), as its engine does after a Post; false if there is none.
  static bool DeferLocalNote(TcpTransport& transport, std::size_t index);
  // Queues a kick for the `index`th live same-host connection, its flag set, as a consumer's note
  // does, with nothing for the kick's poll to find (another poller took the work meanwhile).
  static bool KickWithNothingToFind(TcpTransport& transport, std::size_t index);
  // Whether that connection's kick flag is set (a kick queued and not yet taken).
  static bool LocalKickPending(TcpTransport& transport, std::size_t index);
  // The `index`th live same-host connection with an engine (null: none).
  static std::shared_ptr<LocalConnection> LiveLocal(TcpTransport& transport, std::size_t index);
  // Whether the consumers' polling spell is watched for its end (TcpTransport::WatchSpell).
  static bool SpellWatched(TcpTransport& transport);
  // The lock of the transport's list of live same-host connections: a test holds it as another
  // poller in its scan does.
  static softdat::Mutex& LocalListLock(TcpTransport& transport);
  // Whether a consumer's `calls`th poll (`any`: it moved something) runs the io_context.
  static bool AsioDue(TcpTransport& transport, std::uint32_t calls, bool any);
  // What the transport's key table tells same-host peers now: a thread of the IA reads its rings
  // (shm::KeyTableView::ReadsRingsNow, through a view of the table as a peer maps it). False
  // without shared memory.
  static bool ReadsRingsNow(TcpTransport& transport);
  // Parks the progress thread as a consumer's streak of polls does, as if a consumer had polled
  // just now and nothing else: no spell begins, so no other handler wakes the thread first.
  static void ParkAsAfterAPoll(TcpTransport& transport);
  // On the progress thread: ends its wait on the poll set without a look at the sockets (the
  // wait's handler runs, cancelled, and watches nothing), as a consumer that runs that handler
  // while the thread is parked leaves it. Returns once the handler has run.
  static void TakePollSetWait(TcpTransport& transport);
  // Returns once the progress thread has run every handler posted before the call (it runs them
  // in order), at most `bound` later; false when that bound passed.
  static bool RunPostedHandlers(TcpTransport& transport, std::chrono::milliseconds bound = std::chrono::seconds(30));
};

}  // namespace softdat::transport::tcp
