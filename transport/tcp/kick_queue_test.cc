// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// KickQueue: what a drain does with connections pushed while it runs, and who is woken when.
#include "transport/tcp/kick_queue.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <memory>
#include <vector>

#include "transport/tcp/block_pool.h"
#include "transport/tcp/connection.h"

namespace softdat::transport::tcp {
namespace {

// Connections that never connect: what a queue holds and runs.
std::vector<std::shared_ptr<Connection>> Unconnected(boost::asio::io_context& io, int count) {
  ConnectionOptions options;
  options.buffers = std::make_shared<ConnectionBuffers>();
  std::vector<std::shared_ptr<Connection>> connections;
  for (int i = 0; i < count; ++i) connections.push_back(std::make_shared<Connection>(io, options, EndpointConfig{}, nullptr));
  return connections;
}

// Regression: a connection pushed while a drain ran (a consumer's Post during the progress
// thread's drain) found the ring not empty, so its push woke nobody, and the drain stopped at
// what was queued when it began: the connection waited for the next push onto an empty ring,
// which never came (tcp_transport_test hung 5 runs in 12 once Posts deferred more often). The
// drain pushes a connection itself, from the first one's turn while a third is still queued, so
// the interleaving is the same every run.
TEST(KickQueue, AConnectionPushedDuringADrainIsRunWithoutAnotherPush) {
  boost::asio::io_context io;
  std::vector<std::shared_ptr<Connection>> connections = Unconnected(io, 3);
  std::vector<const ProgressTarget*> ran;
  KickQueue* queue_ptr = nullptr;
  KickQueue queue(
      io, 4, [] { return true; },
      [&](ProgressTarget& connection, bool, std::uint64_t) {
        ran.push_back(&connection);
        // Pushed mid-drain while the third is still queued: the ring is not empty, no wake.
        if (&connection == connections[0].get()) queue_ptr->Push(connections[1]);
        return true;
      });
  queue_ptr = &queue;
  queue.Start();
  queue.Push(connections[0]);
  queue.Push(connections[2]);
  // The progress thread's turns: the eventfd fires and drains run, until nothing is ready.
  for (int turn = 0; turn < 4; ++turn) {
    io.restart();
    (void)io.poll();
  }
  ASSERT_EQ(ran.size(), 3u) << "a connection pushed during a drain was left in the ring";
  EXPECT_EQ(ran[0], connections[0].get());
  EXPECT_EQ(ran[1], connections[2].get());
  EXPECT_EQ(ran[2], connections[1].get());
}

// Regression: a connection that deferred during a drain (a consumer's poll inside the coalescing
// window) was put back in its old slot, but a Push may fill that slot while the drain runs: with
// the ring full, the requeue overwrote the connection at the head, whose kick stayed pending
// forever and whose queued Sends were never written. Three connections on a ring of two, the
// push made from inside the drain, so the interleaving is the same every run.
TEST(KickQueue, ARingFullOfKicksLosesNone) {
  boost::asio::io_context io;
  std::vector<std::shared_ptr<Connection>> connections = Unconnected(io, 3);
  std::vector<int> runs(3, 0);
  KickQueue* queue_ptr = nullptr;
  KickQueue queue(
      io, 2, [] { return true; },
      [&](ProgressTarget& connection, bool, std::uint64_t) {
        const int index = &connection == connections[0].get() ? 0 : &connection == connections[1].get() ? 1 : 2;
        ++runs[index];
        if (index == 0 && runs[0] == 1) {
          queue_ptr->Push(connections[2]);  // fills the slot the first one left
          return false;                     // and the first one defers: back into a full ring
        }
        return true;
      });
  queue_ptr = &queue;
  queue.Start();
  queue.Push(connections[0]);
  queue.Push(connections[1]);
  for (int turn = 0; turn < 8; ++turn) {
    io.restart();
    (void)io.poll();
    (void)queue.Drain();
  }
  EXPECT_EQ(runs[0], 2) << "the deferred connection ran again";
  EXPECT_EQ(runs[1], 1) << "a connection's kick was lost in a full ring";
  EXPECT_EQ(runs[2], 1);
}

// Regression: a drain whose every connection deferred its writes (a consumer's poll inside a
// send-only stream's coalescing window) said it had run one, so a dat_evd_wait that spins while
// the transport moves (EventQueue::Wait) would take the deferral for progress. It moved nothing.
TEST(KickQueue, ADrainWhoseConnectionsAllDeferMovedNothing) {
  boost::asio::io_context io;
  std::shared_ptr<Connection> connection = Unconnected(io, 1)[0];
  bool defer = true;
  int runs = 0;
  KickQueue queue(
      io, 4, [] { return false; },
      [&](ProgressTarget&, bool, std::uint64_t) {
        ++runs;
        return !defer;
      });
  queue.Push(connection);
  EXPECT_FALSE(queue.Drain(true, 0));
  EXPECT_EQ(runs, 1);
  EXPECT_TRUE(queue.queued()) << "a deferring connection stays queued";
  defer = false;
  EXPECT_TRUE(queue.Drain(true, 0));
  EXPECT_EQ(runs, 2);
  EXPECT_FALSE(queue.queued());
  EXPECT_FALSE(queue.Drain(true, 0)) << "an empty queue moved nothing";
}

// A connection queued without a wake (a completion nobody waits for: Connection::Defer) wakes
// nobody, and leaves the next wake owed: a Push with a wake onto that ring, or WakeForQueued,
// wakes the thread (once) for everything queued. With the rule "only the push onto an empty
// ring wakes", the second Push found the ring not empty and woke nobody.
TEST(KickQueue, AConnectionQueuedWithoutAWakeLeavesTheNextWakeOwed) {
  boost::asio::io_context io;
  std::vector<std::shared_ptr<Connection>> connections = Unconnected(io, 3);
  std::vector<const ProgressTarget*> ran;
  KickQueue queue(io, 4, [] { return true; }, [&](ProgressTarget& connection, bool, std::uint64_t) {
    ran.push_back(&connection);
    return true;
  });
  queue.Start();
  auto turns = [&] {
    for (int turn = 0; turn < 4; ++turn) {
      io.restart();
      (void)io.poll();
    }
  };
  queue.Push(connections[0], false);
  turns();
  EXPECT_EQ(queue.wakes(), 0u);
  EXPECT_TRUE(ran.empty()) << "a connection queued without a wake woke the thread";
  queue.Push(connections[1]);
  EXPECT_EQ(queue.wakes(), 1u) << "a push with a wake onto a ring that woke nobody woke nobody";
  turns();
  ASSERT_EQ(ran.size(), 2u);

  queue.Push(connections[2], false);
  queue.WakeForQueued();
  queue.WakeForQueued();  // one wake is on its way: no second
  EXPECT_EQ(queue.wakes(), 2u);
  turns();
  EXPECT_EQ(ran.size(), 3u);
  queue.WakeForQueued();  // nothing queued
  EXPECT_EQ(queue.wakes(), 2u);
}

}  // namespace
}  // namespace softdat::transport::tcp
