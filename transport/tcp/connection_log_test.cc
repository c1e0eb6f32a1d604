// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What a connection says in the log (softdat(7), LOGGING): at SOFTDAT_LOG=tcp:debug (this test's
// environment) each step of its life, LOCAL -> PEER, the end with its reason; at the default level
// the failures its consumer sees, with why.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "testing/stderr_capture.h"
#include "transport/ia_params.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/test_recorder.h"

namespace softdat::transport::tcp {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<Transport> OpenLoopback() {
  IaParams params;
  params.kind = TransportKind::kTcp;
  params.address = "127.0.0.1";
  params.options.shm = ShmMode::kOff;  // the iWARP connection's steps (local_path_test has the other path)
  std::string why;
  std::unique_ptr<Transport> transport;
  EXPECT_TRUE(CreateTcpTransport(params, why, transport).ok()) << why;
  return transport;
}

TEST(ConnectionLog, EachStepOfAConnectionAndItsEndAreSaidAtDebug) {
  std::unique_ptr<Transport> transport = OpenLoopback();
  ASSERT_NE(transport, nullptr);
  testing::RecordingRequests requests;
  testing::RecordingEvents client_events, server_events;
  std::unique_ptr<Listener> listener;
  std::unique_ptr<Endpoint> client, server;
  ASSERT_TRUE(transport->Listen(0, &requests, listener).ok());
  ASSERT_TRUE(transport->CreateEndpoint(testing::SmallEndpointConfig(), &client_events, client).ok());
  ASSERT_TRUE(transport->CreateEndpoint(testing::SmallEndpointConfig(), &server_events, server).ok());
  softdat::testing::StderrCapture captured;
  ASSERT_TRUE(client->Connect(transport->address(), listener->port(), {}, UINT64_MAX).ok());
  std::unique_ptr<PendingConnection> pending = requests.Next();
  ASSERT_NE(pending, nullptr);
  ASSERT_TRUE(pending->Accept(*server, {}).ok());
  ASSERT_TRUE(client_events.WaitFor([&] { return client_events.established > 0; }));
  ASSERT_TRUE(server_events.WaitFor([&] { return server_events.established > 0; }));
  client->Disconnect(true);
  ASSERT_TRUE(client_events.WaitFor([&] { return client_events.ended.has_value(); }));
  ASSERT_TRUE(server_events.WaitFor([&] { return server_events.ended.has_value(); }));
  const std::string port = ":" + std::to_string(listener->port());
  for (const std::string step : {"idle -> connecting", "connecting -> awaiting the MPA Reply",
                                 "awaiting the MPA Reply -> established", "the consumer asks for a graceful disconnect",
                                 "established -> closing", "-> ended: disconnected"}) {
    EXPECT_TRUE(captured.WaitFor(step, 10s)) << step << "\n" << captured.written();
  }
  // The steps name the connection: "softdat: debug: tcp 127.0.0.1:N -> 127.0.0.1:PORT: ...".
  EXPECT_NE(captured.written().find("softdat: debug: tcp 127.0.0.1:"), std::string::npos) << captured.written();
  EXPECT_NE(captured.written().find("-> 127.0.0.1" + port + ": awaiting the MPA Reply -> established"), std::string::npos)
      << captured.written();
  client.reset();
  server.reset();
  pending.reset();
  listener.reset();
}

// A connect nobody answers: the consumer gets UNREACHABLE, and the default level says why.
TEST(ConnectionLog, AConnectNobodyAnswersIsSaidAtWarnWithTheReason) {
  std::unique_ptr<Transport> transport = OpenLoopback();
  ASSERT_NE(transport, nullptr);
  testing::RecordingRequests requests;
  std::unique_ptr<Listener> listener;
  ASSERT_TRUE(transport->Listen(0, &requests, listener).ok());
  const std::uint16_t port = listener->port();
  listener.reset();  // nobody listens there now
  testing::RecordingEvents events;
  std::unique_ptr<Endpoint> client;
  ASSERT_TRUE(transport->CreateEndpoint(testing::SmallEndpointConfig(), &events, client).ok());
  softdat::testing::StderrCapture captured;
  ASSERT_TRUE(client->Connect(transport->address(), port, {}, UINT64_MAX).ok());
  ASSERT_TRUE(events.WaitFor([&] { return events.ended.has_value(); }));
  EXPECT_EQ(*events.ended, ConnectionEnd::kUnreachable);
  EXPECT_TRUE(captured.WaitFor("softdat: warn: tcp -> 127.0.0.1:" + std::to_string(port) +
                                   ": connect failed: Connection refused (nobody listens on that port there); the "
                                   "endpoint gets DAT_CONNECTION_EVENT_UNREACHABLE",
                               10s))
      << captured.written();
  client.reset();
}

}  // namespace
}  // namespace softdat::transport::tcp
