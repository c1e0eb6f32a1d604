// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The relay: one connection in, the same bytes out to one connection, each step bounded.
#include "testing/consumers/handoff_relay.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "testing/consumers/consumer_pair.h"

namespace softdat::testing {

sockaddr_in LoopbackAddress(std::uint16_t port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return address;
}

namespace {

using namespace std::chrono_literals;

int Milliseconds(std::chrono::steady_clock::duration d) {
  return static_cast<int>(std::max<std::int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(d).count()));
}

// Waits until `fd` has `events`, at most until `deadline`.
bool WaitFor(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  pollfd p{fd, events, 0};
  return poll(&p, 1, Milliseconds(deadline - std::chrono::steady_clock::now())) == 1;
}

std::string Why(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

// Reads `bytes` from `fd` and drops them, at most until `deadline`.
void Drain(int fd, std::size_t bytes, std::chrono::steady_clock::time_point deadline) {
  std::vector<char> sink(bytes);
  for (std::size_t got = 0; got < bytes;) {
    const ssize_t n = WaitFor(fd, POLLIN, deadline) ? recv(fd, sink.data(), bytes - got, 0) : -1;
    if (n <= 0) return;
    got += static_cast<std::size_t>(n);
  }
}

}  // namespace

std::string DtestxReply(const sockaddr_in& client, const std::string& provider) {
  char text[kDtestHandoffBytes] = {};
  std::snprintf(text, sizeof text, "%04hx:%08x:%08x:%08x:%s", static_cast<unsigned short>(0), 0u, 0u,
                static_cast<unsigned>(client.sin_addr.s_addr), provider.c_str());
  return std::string(text, sizeof text);
}

HandoffRelay::~HandoffRelay() {
  if (serving_.joinable()) serving_.join();
}

bool HandoffRelay::Start(std::uint16_t port, std::size_t bytes, std::uint16_t then_port, std::chrono::seconds bound,
                         std::string& error, const std::string& reply) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  const sockaddr_in address = LoopbackAddress(port);
  std::vector<char> handoff(bytes);

  // Take the hand-off as the client would.
  const int in = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (in < 0) return error = Why("socket"), false;
  bool taken = connect(in, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
  if (!taken) error = Why("connect to the server's hand-off port");
  for (std::size_t got = 0; taken && got < bytes;) {
    const ssize_t n = WaitFor(in, POLLIN, deadline) ? recv(in, handoff.data() + got, bytes - got, 0) : -1;
    if (n <= 0) {
      error = n == 0 ? "the server closed its hand-off early" : "no hand-off from the server within the bound";
      taken = false;
    } else {
      got += static_cast<std::size_t>(n);
    }
  }
  if (taken && !reply.empty() && send(in, reply.data(), reply.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(reply.size())) {
    error = Why("answering the server's hand-off");
    taken = false;
  }
  close(in);
  if (!taken) return false;

  // The server is ready once its next port listens; a listener the kernel's socket table does not
  // show (rdma_cm's on RoCE: then_port 0) gets a pause instead.
  if (then_port == 0) {
    std::this_thread::sleep_for(kUnseenListenerPause);
  } else {
    while (!Listening(then_port) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(10ms);
    if (!Listening(then_port)) return error = "the server never listened on port " + std::to_string(then_port), false;
  }

  // Serve the same bytes on the server's hand-off port (the server closed its listener before it
  // wrote), on every address as dtest's server listens: a client in another network namespace
  // reaches it at the server's own address.
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int one = 1;
  if (listener < 0) return error = Why("socket"), false;
  setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in every = address;
  every.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(listener, reinterpret_cast<const sockaddr*>(&every), sizeof every) != 0 || listen(listener, 1) != 0) {
    error = Why("listening on the hand-off port");
    close(listener);
    return false;
  }
  serving_ = std::thread([listener, handoff = std::move(handoff), answer = reply.size(), deadline] {
    if (WaitFor(listener, POLLIN, deadline)) {
      const int out = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (out >= 0) {
        (void)send(out, handoff.data(), handoff.size(), MSG_NOSIGNAL);
        Drain(out, answer, deadline);  // the client's answer, already given to the server
        close(out);
      }
    }
    close(listener);
  });
  return true;
}

}  // namespace softdat::testing
