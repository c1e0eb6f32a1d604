// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Accepting TCP connections and reading their MPA Requests; answering them for the consumer.
#include "transport/tcp/tcp_listener.h"

#include <array>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "base/log.h"
#include "transport/tcp/socket_fd.h"
#include "transport/tcp/tcp_endpoint.h"

namespace softdat::transport::tcp {
namespace {

// A peer gets this long to send its MPA Request. At kMaxRequestsInFlight the listener waits
// instead of refusing: refusing made a burst of 100 connects fail on a loaded machine.
constexpr auto kRequestTimeout = std::chrono::seconds(5);
// Out of descriptors (or kernel memory) the listening socket stays readable: accepting again at
// once would spin. The connections wait in the backlog while the listener retries this often.
constexpr auto kStarvedRetry = std::chrono::milliseconds(100);

bool OutOfResources(const boost::system::error_code& error) {
  return error == asio::error::no_descriptors || error == asio::error::no_buffer_space ||
         error == asio::error::no_memory || error.value() == ENFILE;
}

sockaddr_in ToSockaddr(const asio::ip::tcp::endpoint& endpoint) {
  sockaddr_in out{};
  if (endpoint.protocol() == asio::ip::tcp::v4()) std::memcpy(&out, endpoint.data(), sizeof out);
  return out;
}

// "ADDRESS:PORT" for log lines: a listener's address, a connection's local or remote end.
std::string EndText(const asio::ip::tcp::endpoint& end, const boost::system::error_code& error) {
  return error ? std::string("?") : end.address().to_string() + ":" + std::to_string(end.port());
}
std::string EndText(const asio::ip::tcp::acceptor& acceptor, bool) {
  boost::system::error_code error;
  const asio::ip::tcp::endpoint end = acceptor.local_endpoint(error);
  return EndText(end, error);
}
std::string EndText(const asio::ip::tcp::socket& socket, bool local) {
  boost::system::error_code error;
  const asio::ip::tcp::endpoint end = local ? socket.local_endpoint(error) : socket.remote_endpoint(error);
  return EndText(end, error);
}

}  // namespace

struct ListenerCore::RequestReader {
  explicit RequestReader(asio::ip::tcp::socket s) : socket(std::move(s)), timer(socket.get_executor()) {}
  asio::ip::tcp::socket socket;
  asio::steady_timer timer;
  std::array<std::uint8_t, wire::kMpaFrameHeaderSize + wire::kMaxMpaPrivateData> bytes{};
  wire::MpaFrame frame;
  std::uint16_t pd_length = 0;
};

ListenerCore::ListenerCore(asio::io_context& io, asio::ip::tcp::acceptor acceptor, ListenEvents* events)
    : io_(io),
      acceptor_(std::move(acceptor)),
      listen_text_(EndText(acceptor_, true)),
      events_(events),
      retry_(io),
      rendezvous_(io),
      local_retry_(io) {}

bool ListenerCore::Open() {
  std::lock_guard lock(acceptor_mutex_);
  return acceptor_.is_open();
}

void ListenerCore::Start() {
  asio::post(io_, [self = shared_from_this()] { self->AcceptNext(); });
}

void ListenerCore::Stop() {
  // Sequentially consistent with Report's count and load: either Report saw null, or this sees
  // its count and waits. A report runs no consumer code (CNO agents are deferred) and takes no
  // lock of ours, so it ends without this thread.
  events_.store(nullptr, std::memory_order_seq_cst);
  while (calling_.load(std::memory_order_seq_cst) != 0) std::this_thread::yield();
  {
    std::lock_guard lock(acceptor_mutex_);
    boost::system::error_code ignored;
    acceptor_.close(ignored);  // a pending accept completes with operation_aborted
    rendezvous_.close(ignored);
  }
  asio::post(io_, [self = shared_from_this()] {
    self->retry_.cancel();
    self->local_retry_.cancel();
  });
}

void ListenerCore::AcceptNext() {
  if (reading_ >= kMaxRequestsInFlight) {
    accept_paused_ = true;  // DoneReading accepts again
    return;
  }
  std::lock_guard lock(acceptor_mutex_);
  if (!acceptor_.is_open()) return;  // stopped
  acceptor_.async_accept([self = shared_from_this()](const boost::system::error_code& error,
                                                     asio::ip::tcp::socket socket) {
    if (error == asio::error::operation_aborted || !self->Open()) return;
    if (OutOfResources(error)) {
      // Said once per episode, not once per retry: the limit is the process's to raise.
      if (!self->starved_)
        SOFTDAT_LOG(kWarn, "tcp listener %s: cannot accept connections: %s; they wait in the backlog until "
                    "descriptors are free (raise the limit: ulimit -n)", self->ListenText().c_str(),
                    error.message().c_str());
      self->starved_ = true;
      self->retry_.expires_after(kStarvedRetry);
      self->retry_.async_wait([self](const boost::system::error_code& cancelled) {
        if (!cancelled && self->Open()) self->AcceptNext();
      });
      return;
    }
    if (error) {
      SOFTDAT_LOG(kWarn, "tcp listener %s: accept failed: %s", self->ListenText().c_str(), error.message().c_str());
    } else {
      if (self->starved_) SOFTDAT_LOG(kWarn, "tcp listener %s: accepting connections again", self->ListenText().c_str());
      self->starved_ = false;
      SetCloseOnExec(socket.native_handle());  // Asio's accept cannot ask for it
      ++self->reading_;
      self->ReadRequest(std::make_shared<RequestReader>(std::move(socket)));
    }
    // At the bound AcceptNext pauses: further peers wait in the kernel's backlog instead of being
    // refused, so a burst of connects whose MPA Requests come late is slow, not rejected.
    self->AcceptNext();
  });
}

void ListenerCore::DoneReading() {
  --reading_;
  if (accept_paused_ && reading_ < kMaxRequestsInFlight && Open()) {
    accept_paused_ = false;
    AcceptNext();
  }
}

void ListenerCore::ReadRequest(std::shared_ptr<RequestReader> reader) {
  reader->timer.expires_after(kRequestTimeout);
  reader->timer.async_wait([reader](const boost::system::error_code& error) {
    if (error) return;
    SOFTDAT_LOG(kInfo, "tcp %s -> %s: closing an incoming connection: no MPA Request within 5 s",
                EndText(reader->socket, true).c_str(), EndText(reader->socket, false).c_str());
    boost::system::error_code ignored;
    reader->socket.close(ignored);
  });
  asio::async_read(
      reader->socket, asio::buffer(reader->bytes.data(), wire::kMpaFrameHeaderSize),
      [self = shared_from_this(), reader](const boost::system::error_code& error, std::size_t) {
        const char* why = nullptr;
        if (error || !wire::DecodeMpaHeader(reader->bytes.data(), false, reader->frame, reader->pd_length, why)) {
          if (why != nullptr)
            SOFTDAT_LOG(kWarn, "tcp %s -> %s: refusing a connection: %s", EndText(reader->socket, true).c_str(),
                        EndText(reader->socket, false).c_str(), why);
          self->DoneReading();
          reader->timer.cancel();
          boost::system::error_code ignored;
          reader->socket.close(ignored);
          return;
        }
        asio::async_read(reader->socket,
                         asio::buffer(reader->bytes.data() + wire::kMpaFrameHeaderSize, reader->pd_length),
                         [self, reader](const boost::system::error_code& error, std::size_t) {
                           self->DoneReading();
                           reader->timer.cancel();
                           if (error) {
                             boost::system::error_code ignored;
                             reader->socket.close(ignored);
                             return;
                           }
                           self->Deliver(reader);
                         });
      });
}

void ListenerCore::Deliver(const std::shared_ptr<RequestReader>& reader) {
  const std::uint8_t* data = reader->bytes.data() + wire::kMpaFrameHeaderSize;
  if (reader->frame.enhanced) {
    wire::DecodeMpaBlock(data, reader->frame);
    data += wire::kMpaEnhancedBlockSize;
  }
  std::vector<std::uint8_t> private_data(data, data + reader->frame.private_data_length);
  Report(std::make_unique<TcpPendingConnection>(std::move(reader->socket), reader->frame, std::move(private_data)));
}

void ListenerCore::Report(std::unique_ptr<PendingConnection> request) {
  calling_.fetch_add(1, std::memory_order_seq_cst);
  ListenEvents* events = events_.load(std::memory_order_seq_cst);
  // Stopped: the request is refused as it is destroyed.
  if (events != nullptr) events->OnConnectRequest(std::move(request));
  calling_.fetch_sub(1, std::memory_order_seq_cst);
}

TcpPendingConnection::TcpPendingConnection(asio::ip::tcp::socket socket, const wire::MpaFrame& request,
                                           std::vector<std::uint8_t> private_data)
    : socket_(std::move(socket)), request_(request), private_data_(std::move(private_data)) {
  boost::system::error_code ignored;
  local_ = ToSockaddr(socket_.local_endpoint(ignored));
  remote_ = ToSockaddr(socket_.remote_endpoint(ignored));
}

TcpPendingConnection::~TcpPendingConnection() {
  if (answered_) return;
  // Closing without a Reply: the active side sees a non-peer rejection.
  boost::system::error_code ignored;
  socket_.close(ignored);
}

Status TcpPendingConnection::Accept(Endpoint& endpoint, std::span<const std::uint8_t> private_data) {
  if (answered_) return Status(Code::kInvalidState);
  auto* tcp = dynamic_cast<TcpEndpoint*>(&endpoint);
  if (tcp == nullptr) return Status(Code::kInvalidParameter, Detail::kNone);
  Status status = tcp->AcceptTcp(std::move(socket_), request_, private_data);
  if (status.ok()) answered_ = true;
  return status;
}

void TcpPendingConnection::Reject(std::span<const std::uint8_t> private_data) {
  if (answered_) return;
  answered_ = true;
  wire::MpaFrame reply;
  reply.reply = true;
  reply.rejected = true;
  reply.revision = request_.revision;
  reply.enhanced = request_.enhanced;
  reply.peer_to_peer = request_.peer_to_peer;
  const std::size_t room = wire::kMaxMpaPrivateData - (reply.enhanced ? wire::kMpaEnhancedBlockSize : 0);
  const std::size_t length = std::min(private_data.size(), room);
  reply.private_data_length = static_cast<std::uint16_t>(length);
  std::array<std::uint8_t, wire::kMpaFrameHeaderSize + wire::kMaxMpaPrivateData> bytes{};
  std::size_t size = wire::EncodeMpaFrame(reply, bytes.data());
  if (length != 0) std::memcpy(bytes.data() + size, private_data.data(), length);
  size += length;
  // A Reply is a few hundred bytes on a fresh connection: the socket buffer takes it at once.
  boost::system::error_code error;
  asio::write(socket_, asio::buffer(bytes.data(), size), error);
  if (error)
    SOFTDAT_LOG(kInfo, "tcp %s -> %s: could not send the reject: %s", EndText(socket_, true).c_str(),
                EndText(socket_, false).c_str(), error.message().c_str());
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, error);
  socket_.close(error);
}

}  // namespace softdat::transport::tcp
