// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The passive side of the TCP transport: a listening socket on the IA address, an MPA Request
// reader per incoming connection (bounded in number and time, so a silent or hostile peer cannot
// pin resources; beyond the bound the listener stops accepting and the kernel's backlog holds
// the rest, as an RNIC's listen backlog would), and the PendingConnection the consumer accepts
// or rejects. With shm=auto the listener also answers same-host softdat peers on its rendezvous
// (local_listener.cc): their requests, read likewise, become PendingConnections with the same
// accept and reject semantics.
#pragma once

#include <netinet/in.h>

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "transport/listener.h"
#include "transport/tcp/connection.h"
#include "transport/tcp/wire.h"

namespace softdat::transport::tcp {

// Shared with the accept and request-reading handlers, which may outlive the TcpListener.
class ListenerCore : public std::enable_shared_from_this<ListenerCore> {
 public:
  // MPA Requests read at once; beyond it the listener stops accepting until one is read, and
  // the kernel's listen backlog holds the rest.
  static constexpr int kMaxRequestsInFlight = 1024;

  ListenerCore(asio::io_context& io, asio::ip::tcp::acceptor acceptor, ListenEvents* events);
  void Start();
  // Same-host softdat peers: listens on the rendezvous of `address`:`port` beside the TCP socket
  // (local_listener.cc). When its name is taken, this listener serves them over TCP.
  void StartLocal(in_addr address, std::uint16_t port);
  // No ListenEvents call runs after this returns; requests still being read are refused.
  void Stop();

 private:
  struct RequestReader;
  void AcceptNext();
  void ReadRequest(std::shared_ptr<RequestReader> reader);
  void Deliver(const std::shared_ptr<RequestReader>& reader);
  // Hands a request to the consumer (ListenEvents), or refuses it once stopped.
  void Report(std::unique_ptr<PendingConnection> request);
  // The rendezvous (local_listener.cc), progress context.
  struct LocalReader;
  void AcceptLocalNext();
  void ReadLocalRequest(const std::shared_ptr<LocalReader>& reader);
  void WaitLocal(const std::shared_ptr<LocalReader>& reader);
  void FinishLocal(const std::shared_ptr<LocalReader>& reader, bool delivered);
  // A reader is done (request read, refused or timed out): accepting resumes if it had paused.
  void DoneReading();
  bool Open();  // not stopped
  const std::string& ListenText() const { return listen_text_; }  // "ADDRESS:PORT" for log lines

  asio::io_context& io_;
  // The listening socket. Stop closes it on the consumer's thread, so that the port is free when
  // dat_psp_free returns (a new PSP on the same port must not find it in use); every other use is
  // the progress context's, under the same lock (Asio's reactor synchronizes the rest itself).
  softdat::Mutex acceptor_mutex_;
  asio::ip::tcp::acceptor acceptor_;
  const std::string listen_text_;
  // Null once stopped. A request is reported with no lock held (the consumer's EVD gets the event):
  // Stop clears events_ and waits for a report that saw it set (calling_) to end.
  std::atomic<ListenEvents*> events_;
  std::atomic<int> calling_{0};
  int reading_ = 0;                   // progress context only
  bool accept_paused_ = false;        // progress context only: reading_ reached the bound
  bool starved_ = false;              // progress context only: accept ran out of descriptors
  asio::steady_timer retry_;          // when to try accepting again after running out
  // The rendezvous: closed by Stop like the acceptor (under acceptor_mutex_), so that its name is
  // free when dat_psp_free returns.
  asio::posix::stream_descriptor rendezvous_;
  sockaddr_in local_address_{};       // the listener's address and port: its requests' local end
  int local_reading_ = 0;             // progress context only
  bool local_paused_ = false;         // progress context only
  bool local_starved_ = false;        // progress context only
  asio::steady_timer local_retry_;
};

class TcpListener final : public Listener {
 public:
  TcpListener(std::shared_ptr<ListenerCore> core, std::uint16_t port) : core_(std::move(core)), port_(port) {}
  ~TcpListener() override { core_->Stop(); }
  std::uint16_t port() const override { return port_; }

 private:
  std::shared_ptr<ListenerCore> core_;
  std::uint16_t port_;
};

class TcpPendingConnection final : public PendingConnection {
 public:
  TcpPendingConnection(asio::ip::tcp::socket socket, const wire::MpaFrame& request,
                       std::vector<std::uint8_t> private_data);
  ~TcpPendingConnection() override;
  std::span<const std::uint8_t> private_data() const override { return private_data_; }
  sockaddr_in remote_address() const override { return remote_; }
  sockaddr_in local_address() const override { return local_; }
  Status Accept(Endpoint& endpoint, std::span<const std::uint8_t> private_data) override;
  void Reject(std::span<const std::uint8_t> private_data) override;

 private:
  asio::ip::tcp::socket socket_;  // no operation is pending on it: any thread may use it
  wire::MpaFrame request_;
  std::vector<std::uint8_t> private_data_;
  sockaddr_in local_{};
  sockaddr_in remote_{};
  bool answered_ = false;
};

}  // namespace softdat::transport::tcp
