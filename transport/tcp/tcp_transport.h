// The TCP transport: iWARP (MPA/DDP/RDMAP) over kernel TCP sockets, driven by one Boost.Asio
// io_context per IA. By default a progress thread runs it; with progress=poll the consumer's
// EVD waits run it through Progress(). Software receive model: srq/ picks receive buffers.
#pragma once

#include <netinet/in.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "transport/tcp/kick_queue.h"
#include "transport/tcp/tcp_connection.h"
#include "transport/transport.h"

namespace softdat::transport::tcp {

class TcpTransport final : public Transport {
 public:
  TcpTransport(const sockaddr_in& address, const IaOptions& options);
  ~TcpTransport() override;
  TcpTransport(const TcpTransport&) = delete;
  TcpTransport& operator=(const TcpTransport&) = delete;

  const Capabilities& capabilities() const override { return capabilities_; }
  sockaddr_in address() const override { return address_; }
  Status CreateProtectionDomain(std::unique_ptr<ProtectionDomain>& out) override;
  Status RegisterMemory(ProtectionDomain& pd, void* address, std::uint64_t length, MemoryAccess access,
                        std::unique_ptr<MemoryRegion>& out) override;
  Status CreateDeviceSrq(ProtectionDomain& pd, std::uint32_t max_work, std::uint32_t max_segments,
                         DeviceSrqEvents* events, std::unique_ptr<DeviceSrq>& out) override;
  Status CreateEndpoint(const EndpointConfig& config, EndpointEvents* events, std::unique_ptr<Endpoint>& out) override;
  Status Listen(std::uint16_t port, ListenEvents* events, std::unique_ptr<Listener>& out) override;
  bool Progress() noexcept override;

 private:
  void Run() noexcept;

  const sockaddr_in address_;
  Capabilities capabilities_;
  ConnectionOptions connection_options_;
  asio::io_context io_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  KickQueue kicks_;  // after io_: destroyed before it
  std::mutex poll_mutex_;  // busy-poll mode: one consumer thread at a time runs the io_context
  std::thread thread_;     // progress-thread mode
};

// Resolves the IA address of `params` and makes the transport: a transport::TransportFactory
// (transport/factory.h).
Status CreateTcpTransport(const IaParams& params, std::string& why, std::unique_ptr<Transport>& out);

}  // namespace softdat::transport::tcp
