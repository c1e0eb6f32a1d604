// TcpTransport: capabilities, the io_context and who runs it, endpoints and listeners; and the
// static registrar that makes "tcp ..." IA params open this transport.
#include "transport/tcp/tcp_transport.h"

#include <pthread.h>
#include <signal.h>

#include <boost/asio/ip/tcp.hpp>
#include <exception>

#include "base/log.h"
#include "transport/tcp/tcp_endpoint.h"
#include "transport/tcp/tcp_listener.h"

namespace softdat::transport::tcp {
namespace {

constexpr std::uint32_t kMaxBytes = 1u << 30;
// MPA allows 512 bytes of private data; the RFC 6581 block takes 4 and DAT consumers expect
// the InfiniBand-sized limits (dapltest uses up to 196 bytes).
constexpr std::uint32_t kMaxPrivateData = 252;

class TcpProtectionDomain final : public ProtectionDomain {};

Capabilities TcpCapabilities(const IaOptions& options) {
  Capabilities c;
  c.receive_model = ReceiveModel::kSoftware;
  c.rdma_read = true;
  c.busy_poll = options.progress == ProgressMode::kPoll;
  c.srq = true;
  c.srq_resize = true;
  c.srq_limit = true;
  c.max_endpoints = 4096;
  c.max_send_work = 4096;
  c.max_recv_work = 4096;
  c.max_segments = 16;
  c.max_message_size = kMaxBytes;
  c.max_rdma_size = kMaxBytes;
  c.max_private_data = kMaxPrivateData;
  c.max_rdma_read_in = 128;
  c.max_rdma_read_out = 128;
  c.max_srq_work = 65536;
  c.max_srq_segments = 16;
  return c;
}

}  // namespace

TcpTransport::TcpTransport(const sockaddr_in& address, const IaOptions& options)
    : address_(address),
      capabilities_(TcpCapabilities(options)),
      work_(asio::make_work_guard(io_)),
      kicks_(io_, capabilities_.max_endpoints) {
  kicks_.Start();
  connection_options_.kicks = &kicks_;
  connection_options_.local = address;
  connection_options_.rnr_timeout_ms = options.rnr_timeout_ms;
  connection_options_.mpa_crc = options.mpa_crc;
  connection_options_.max_private_data = kMaxPrivateData;
  if (options.progress == ProgressMode::kThread) {
    // Signals stay with the consumer's threads.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    thread_ = std::thread([this] { Run(); });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
}

TcpTransport::~TcpTransport() {
  work_.reset();
  io_.stop();
  if (thread_.joinable()) thread_.join();
}

void TcpTransport::Run() noexcept {
  pthread_setname_np(pthread_self(), "softdat-tcp");
  while (!io_.stopped()) {
    try {
      io_.run();
    } catch (const std::exception& e) {
      SOFTDAT_LOG(kError, "tcp: progress thread caught an exception: %s", e.what());
    }
  }
}

bool TcpTransport::Progress() noexcept {
  if (thread_.joinable()) return false;
  std::unique_lock lock(poll_mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return false;
  try {
    return io_.poll() > 0;
  } catch (const std::exception& e) {
    SOFTDAT_LOG(kError, "tcp: progress caught an exception: %s", e.what());
    return true;
  }
}

Status TcpTransport::CreateProtectionDomain(std::unique_ptr<ProtectionDomain>& out) {
  out = std::make_unique<TcpProtectionDomain>();
  return Status::Ok();
}

Status TcpTransport::RegisterMemory(ProtectionDomain&, void*, std::uint64_t, MemoryAccess,
                                    std::unique_ptr<MemoryRegion>& out) {
  out.reset();  // core issues the keys and checks every access
  return Status::Ok();
}

Status TcpTransport::CreateDeviceSrq(ProtectionDomain&, std::uint32_t, std::uint32_t, DeviceSrqEvents*,
                                     std::unique_ptr<DeviceSrq>&) {
  return Status(Code::kModelNotSupported);
}

Status TcpTransport::CreateEndpoint(const EndpointConfig& config, EndpointEvents* events,
                                    std::unique_ptr<Endpoint>& out) {
  out = std::make_unique<TcpEndpoint>(std::make_shared<Connection>(io_, connection_options_, config, events));
  return Status::Ok();
}

Status TcpTransport::Listen(std::uint16_t port, ListenEvents* events, std::unique_ptr<Listener>& out) {
  asio::ip::tcp::acceptor acceptor(io_);
  const asio::ip::tcp::endpoint at(asio::ip::address_v4(ntohl(address_.sin_addr.s_addr)), port);
  boost::system::error_code error;
  acceptor.open(at.protocol(), error);
  if (!error) acceptor.set_option(asio::socket_base::reuse_address(true), error);
  if (!error) acceptor.bind(at, error);
  if (!error) acceptor.listen(asio::socket_base::max_listen_connections, error);
  if (error == asio::error::address_in_use) {
    SOFTDAT_LOG(kInfo, "tcp: port %u is already in use", port);
    return Status(Code::kConnQualInUse);
  }
  if (error) {
    SOFTDAT_LOG(kError, "tcp: cannot listen on port %u: %s", port, error.message().c_str());
    return Status(Code::kConnQualUnavailable);
  }
  const std::uint16_t bound = acceptor.local_endpoint(error).port();
  auto core = std::make_shared<ListenerCore>(io_, std::move(acceptor), events);
  core->Start();
  out = std::make_unique<TcpListener>(std::move(core), bound);
  return Status::Ok();
}

Status CreateTcpTransport(const IaParams& params, std::string& why, std::unique_ptr<Transport>& out) {
  sockaddr_in address{};
  if (Status status = ResolveIpv4(params.address, address, why); !status.ok()) return status;
  out = std::make_unique<TcpTransport>(address, params.options);
  return Status::Ok();
}

}  // namespace softdat::transport::tcp
