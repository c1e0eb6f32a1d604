// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Connecting when the ephemeral port range is crowded. Inside a private network namespace whose
// range holds two ports, four connections to two listeners all come up: the port is chosen by
// connect() for each peer, not by bind() for every peer at once. A fifth finds no port towards
// its peer: it ends unreachable, and a line at the default log level says why.
// Regression: bind() to port 0 before connect() made a burst of 1,000 connects take 5 s on a host
// whose range was half full of TIME_WAIT sockets, and the server closed the connections whose
// MPA Request had not gone out in that time.
// And an active connection's port, open or in TIME_WAIT, can be bound by a socket that asks for
// SO_REUSEADDR, as Linux siw's kernel sockets do on ports rdma_cm picks without asking TCP.
// Regression: softdat's connections did not allow it, and an OFED DAPL client on siw0 in the
// interop guest failed to connect ("rdma_connect ERR -1 Address already in use") when rdma_cm
// happened to pick the port of a softdat-tcp connection of the last minute.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>

#include "transport/tcp/proc_net_tcp.h"
#include "transport/tcp/tcp_transport.h"
#include "testing/private_network.h"
#include "transport/test_recorder.h"

namespace softdat::transport::tcp {
namespace {

using softdat::testing::EnterPrivateNetwork;
using softdat::testing::PrivateNetwork;
using testing::RecordingEvents;
using testing::RecordingRequests;

// A network namespace of this process's own, loopback up, ephemeral ports 40000-40001 only.
// Empty on success, else what failed.
std::string EnterCrowdedNamespace() {
  int error = 0;
  if (const PrivateNetwork entered = EnterPrivateNetwork(&error); entered != PrivateNetwork::kEntered)
    return std::string(entered == PrivateNetwork::kNoNamespace ? "unshare(CLONE_NEWNET): " : "bringing lo up: ") +
           std::strerror(error);
  const int range = ::open("/proc/sys/net/ipv4/ip_local_port_range", O_WRONLY | O_CLOEXEC);
  if (range < 0) return std::string("opening ip_local_port_range: ") + std::strerror(errno);
  const char text[] = "40000 40001\n";
  const bool written = ::write(range, text, sizeof text - 1) == static_cast<ssize_t>(sizeof text - 1);
  ::close(range);
  if (!written) return std::string("writing ip_local_port_range: ") + std::strerror(errno);
  return {};
}

// Each test in that namespace, with a softdat-tcp transport on 127.0.0.1.
class TcpConnectPortTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why_not = EnterCrowdedNamespace();
    ASSERT_TRUE(why_not.empty()) << "this test needs a private network namespace (root, or user namespaces): "
                                 << why_not;
    IaParams params;
    params.kind = TransportKind::kTcp;
    params.address = "127.0.0.1";
    params.options.shm = ShmMode::kOff;  // TCP's ports are what this tests
    std::string why;
    ASSERT_TRUE(CreateTcpTransport(params, why, transport).ok()) << why;
  }

  std::unique_ptr<Transport> transport;
};

TEST_F(TcpConnectPortTest, TwoEphemeralPortsCarryTwoConnectionsToEachOfTwoPeersAndNoMore) {
  // Listening ports outside the two-port range, so that the clients have both.
  constexpr std::uint16_t kPorts[2] = {41000, 41001};
  RecordingRequests requests[2];
  std::unique_ptr<Listener> listeners[2];
  for (int p = 0; p < 2; ++p) ASSERT_TRUE(transport->Listen(kPorts[p], &requests[p], listeners[p]).ok());

  constexpr int kConnections = 4;  // two per peer: more than two ports if each needed its own
  RecordingEvents client_events[kConnections], server_events[kConnections];
  std::unique_ptr<Endpoint> clients[kConnections], servers[kConnections];
  std::unique_ptr<PendingConnection> pending[kConnections];
  for (int i = 0; i < kConnections; ++i) {
    ASSERT_TRUE(transport->CreateEndpoint(testing::SmallEndpointConfig(), &client_events[i], clients[i]).ok());
    ASSERT_TRUE(transport->CreateEndpoint(testing::SmallEndpointConfig(), &server_events[i], servers[i]).ok());
    ASSERT_TRUE(clients[i]->Connect(transport->address(), kPorts[i % 2], {}, UINT64_MAX).ok());
    pending[i] = requests[i % 2].Next();
    ASSERT_NE(pending[i], nullptr) << "connection " << i << " never reached its listener";
    ASSERT_TRUE(pending[i]->Accept(*servers[i], {}).ok());
    EXPECT_TRUE(client_events[i].WaitFor([&] { return client_events[i].established > 0; })) << "connection " << i;
    EXPECT_TRUE(server_events[i].WaitFor([&] { return server_events[i].established > 0; })) << "connection " << i;
  }

  // A third connection to one peer finds no port: unreachable, and the log says why.
  RecordingEvents extra_events;
  std::unique_ptr<Endpoint> extra;
  ASSERT_TRUE(transport->CreateEndpoint(testing::SmallEndpointConfig(), &extra_events, extra).ok());
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(extra->Connect(transport->address(), kPorts[0], {}, UINT64_MAX).ok());
  const bool ended = extra_events.WaitFor([&] { return extra_events.ended_count > 0; });
  const std::string log = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(ended);
  EXPECT_EQ(extra_events.ended, ConnectionEnd::kUnreachable);
  EXPECT_NE(log.find("no local port is free towards the peer"), std::string::npos) << log;

  extra.reset();
  for (int i = 0; i < kConnections; ++i) {
    clients[i].reset();
    servers[i].reset();
  }
}

// 0 if a socket with SO_REUSEADDR can bind 127.0.0.1:port, else errno.
int BindWithReuseAddress(std::uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  const int on = 1;
  int error = 0;
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0) error = errno;
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  at.sin_port = htons(port);
  if (error == 0 && ::bind(fd, reinterpret_cast<const sockaddr*>(&at), sizeof at) != 0) error = errno;
  ::close(fd);
  return error;
}

// Whether a socket of local port `port` waits in TIME_WAIT.
bool InTimeWait(std::uint16_t port) {
  for (const ProcNetTcpRow& row : ReadProcNetTcp())
    if (row.state == 0x06 && row.local_port == port) return true;
  return false;
}

TEST_F(TcpConnectPortTest, AnActiveConnectionsPortCanBeBoundWithReuseAddressOpenAndInTimeWait) {
  constexpr std::uint16_t kPort = 41000;
  RecordingRequests requests;
  std::unique_ptr<Listener> listener;
  ASSERT_TRUE(transport->Listen(kPort, &requests, listener).ok());
  RecordingEvents client_events, server_events;
  std::unique_ptr<Endpoint> client, server;
  ASSERT_TRUE(transport->CreateEndpoint(testing::SmallEndpointConfig(), &client_events, client).ok());
  ASSERT_TRUE(transport->CreateEndpoint(testing::SmallEndpointConfig(), &server_events, server).ok());
  ASSERT_TRUE(client->Connect(transport->address(), kPort, {}, UINT64_MAX).ok());
  std::unique_ptr<PendingConnection> pending = requests.Next();
  ASSERT_NE(pending, nullptr);
  ASSERT_TRUE(pending->Accept(*server, {}).ok());
  ASSERT_TRUE(client_events.WaitFor([&] { return client_events.established > 0; }));
  ASSERT_TRUE(server_events.WaitFor([&] { return server_events.established > 0; }));

  const std::uint16_t port = ntohs(client->local_address().sin_port);
  ASSERT_NE(port, 0);
  const int open_error = BindWithReuseAddress(port);
  EXPECT_EQ(open_error, 0) << "port " << port << " of an open connection: " << std::strerror(open_error);

  // The client closes first, so its end waits in TIME_WAIT once the server has closed too.
  client->Disconnect(true);
  ASSERT_TRUE(client_events.WaitFor([&] { return client_events.ended_count > 0; }));
  ASSERT_TRUE(server_events.WaitFor([&] { return server_events.ended_count > 0; }));
  client.reset();
  server.reset();
  bool waiting = false;
  for (int i = 0; i < 500 && !(waiting = InTimeWait(port)); ++i) ::usleep(10'000);
  ASSERT_TRUE(waiting) << "port " << port << " never reached TIME_WAIT";
  const int waiting_error = BindWithReuseAddress(port);
  EXPECT_EQ(waiting_error, 0) << "port " << port << " in TIME_WAIT: " << std::strerror(waiting_error);
}

}  // namespace
}  // namespace softdat::transport::tcp
