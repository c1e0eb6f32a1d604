// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// The server loop: connection requests, connection ends and completions of every connection, on
// shared EVDs; per-connection and per-session (SRQ) state.
#include "tools/datperf/server.h"

#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <unordered_map>

#include "tools/datperf/dat_env.h"
#include "tools/datperf/protocol.h"
#include "tools/datperf/write_ping_pong.h"

namespace softdat::datperf {
namespace {

volatile std::sig_atomic_t stop_requested = 0;
void OnSignal(int) { stop_requested = 1; }

constexpr DAT_COUNT kEvdQlen = 1 << 16;
// How long lat waits for an echo's completion before echoing the next ping (it is at hand: see OnReceive).
constexpr DAT_TIMEOUT kEchoWaitUs = 10'000'000;

// A session: one client run, whose connections may share an SRQ.
struct Session {
  std::uint32_t id = 0;
  std::uint32_t live = 0;  // its connections not yet ended
  DAT_SRQ_HANDLE srq = DAT_HANDLE_NULL;
  Region buffers;          // the SRQ's receive buffers
  std::uint64_t size = 0;
  std::uint32_t count = 0;
};

struct Connection {
  DAT_EP_HANDLE ep = DAT_HANDLE_NULL;
  Request request;
  Session* session = nullptr;
  Region recv;    // own receive buffers (no SRQ): `recv_count` of `request.size` (at least 8) bytes
  Region ack;     // the Ack this side sends
  Region target;  // write, write_lat: where the client writes; read: what it reads
  Region source;  // write_lat: what this side writes back
  std::uint32_t recv_count = 0;
  std::uint64_t slot_size = 0;
  std::uint64_t received = 0;  // data messages, in order: message k used the client's slot k % window
  std::uint64_t bad = 0;
  std::uint32_t echoes = 0;  // lat: echoes posted whose completion was not reaped yet
};

// Where receive slot `slot` lies in the connection's own buffer: its own place, or, for a stream
// client that asked for one buffer, the one place every receive shares (a Write or Read stream
// receives only its end marker there).
bool OneBuffer(const Request& request) {
  return request.one_buffer != 0 && static_cast<Test>(request.test) != Test::kLat;
}
std::uint64_t RecvOffset(const Connection& c, std::uint32_t slot) { return OneBuffer(c.request) ? 0 : slot * c.slot_size; }

class Server {
 public:
  explicit Server(const Options& options) : options_(options) {}
  int Run();

 private:
  bool Setup(std::string& error);
  void OnConnectionRequest(const DAT_EVENT& event);
  bool Admit(DAT_CR_HANDLE cr, const Request& request, Connection& c, Reply& reply, std::string& error);
  bool PrepareSession(const Request& request, Session*& out, std::string& error);
  bool PostOwn(Connection& c, std::uint32_t slot, std::string& error);
  bool PostShared(Session& s, std::uint32_t slot, std::string& error);
  void OnConnectionEvent(const DAT_EVENT& event);
  bool OnReceive(const DAT_DTO_COMPLETION_EVENT_DATA& dto, std::string& error);
  bool OnSendDone(const DAT_DTO_COMPLETION_EVENT_DATA& dto, std::string& error);
  bool Repost(Connection& c, std::uint32_t slot, std::string& error);
  bool SendAck(Connection& c, std::string& error);
  bool RunWritePingPong(Connection& c, const Reply& client, std::string& error);
  void Forget(DAT_EP_HANDLE ep);
  Connection* Find(DAT_EP_HANDLE ep);
  Reap CurrentReap() const { return reap_; }

  const Options& options_;
  DatEnv env_;
  DAT_EVD_HANDLE cr_evd_ = DAT_HANDLE_NULL, connect_evd_ = DAT_HANDLE_NULL;
  DAT_EVD_HANDLE recv_evd_ = DAT_HANDLE_NULL, request_evd_ = DAT_HANDLE_NULL;
  DAT_PSP_HANDLE psp_ = DAT_HANDLE_NULL;
  std::unordered_map<DAT_EP_HANDLE, std::unique_ptr<Connection>> connections_;
  // The connection Find found last: one client's completions come in long runs, and the map's
  // lookup (a division by the bucket count) was 4.5% of a rate test's server samples, work
  // ucx_perftest's server does not do.
  DAT_EP_HANDLE last_ep_ = DAT_HANDLE_NULL;
  Connection* last_ = nullptr;
  std::map<std::uint32_t, std::unique_ptr<Session>> sessions_;
  Reap reap_ = Reap::kWait;  // as the latest client asked
  // Echoes and Acks posted and not yet reaped. The loop looks at request_evd_ only while some
  // are: a dequeue that finds its EVD empty runs the transport's progress (a pass with an
  // epoll_wait), and a rate test's server, which sends nothing until the end, paid one such pass
  // per message for an EVD that could not have an event (docs/PERFORMANCE.md, "SRQ fan-in and
  // many connections").
  std::uint64_t sends_outstanding_ = 0;
  bool served_ = false;      // --once: the client's last run began
};

// Cookies: the slot in the low 32 bits; bit 63 marks the Ack send.
constexpr std::uint64_t kAckCookie = 1ull << 63;
DAT_DTO_COOKIE Cookie(std::uint64_t value) {
  DAT_DTO_COOKIE cookie{};
  cookie.as_64 = value;
  return cookie;
}

bool Server::Setup(std::string& error) {
  if (!env_.Open(options_.ia_name, error)) return false;
  if (!env_.MakeEvd(DAT_EVD_CR_FLAG, 1024, cr_evd_, error) ||
      !env_.MakeEvd(DAT_EVD_CONNECTION_FLAG, kEvdQlen, connect_evd_, error) ||
      !env_.MakeEvd(DAT_EVD_DTO_FLAG, kEvdQlen, recv_evd_, error) ||
      !env_.MakeEvd(DAT_EVD_DTO_FLAG, kEvdQlen, request_evd_, error))
    return false;
  const DAT_RETURN status = dat_psp_create(env_.ia(), options_.port, cr_evd_, DAT_PSP_CONSUMER_FLAG, &psp_);
  if (status != DAT_SUCCESS) {
    error = DatError(("dat_psp_create on port " + std::to_string(options_.port)).c_str(), status);
    return false;
  }
  return true;
}

Connection* Server::Find(DAT_EP_HANDLE ep) {
  if (ep == last_ep_ && ep != DAT_HANDLE_NULL) return last_;
  const auto it = connections_.find(ep);
  if (it == connections_.end()) return nullptr;
  last_ep_ = ep;
  last_ = it->second.get();
  return last_;
}

bool Server::PrepareSession(const Request& request, Session*& out, std::string& error) {
  std::unique_ptr<Session>& slot = sessions_[request.session];
  if (slot == nullptr) {
    slot = std::make_unique<Session>();
    slot->id = request.session;
    if (request.srq != 0) {
      Session& s = *slot;
      s.size = std::max<std::uint64_t>(request.size, 8);
      s.count = request.srq_buffers != 0 ? request.srq_buffers
                                         : std::min<std::uint32_t>(256, request.window * std::max(1u, request.clients));
      DAT_SRQ_ATTR attr{};
      attr.max_recv_dtos = static_cast<DAT_COUNT>(s.count);
      attr.max_recv_iov = 1;
      attr.low_watermark = DAT_SRQ_LW_DEFAULT;
      const DAT_RETURN status = dat_srq_create(env_.ia(), env_.pz(), &attr, &s.srq);
      if (status != DAT_SUCCESS) return error = DatError("dat_srq_create", status), false;
      if (!env_.Register(s.size * s.count, s.buffers, error)) return false;
      for (std::uint32_t i = 0; i < s.count; ++i)
        if (!PostShared(s, i, error)) return false;
    }
  }
  out = slot.get();
  return true;
}

bool Server::PostOwn(Connection& c, std::uint32_t slot, std::string& error) {
  const DAT_LMR_TRIPLET iov = c.recv.Local(RecvOffset(c, slot), c.slot_size);
  const DAT_RETURN status = dat_ep_post_recv(c.ep, 1, const_cast<DAT_LMR_TRIPLET*>(&iov), Cookie(slot),
                                             DAT_COMPLETION_DEFAULT_FLAG);
  if (status != DAT_SUCCESS) return error = DatError("dat_ep_post_recv", status), false;
  return true;
}

bool Server::PostShared(Session& s, std::uint32_t slot, std::string& error) {
  const DAT_LMR_TRIPLET iov = s.buffers.Local(slot * s.size, s.size);
  const DAT_RETURN status = dat_srq_post_recv(s.srq, 1, const_cast<DAT_LMR_TRIPLET*>(&iov), Cookie(slot));
  if (status != DAT_SUCCESS) return error = DatError("dat_srq_post_recv", status), false;
  return true;
}

bool Server::Admit(DAT_CR_HANDLE cr, const Request& request, Connection& c, Reply& reply, std::string& error) {
  c.request = request;
  if (!PrepareSession(request, c.session, error)) return false;
  const auto test = static_cast<Test>(request.test);
  const std::uint32_t window = std::max<std::uint32_t>(1, request.window);
  // lat echoes from the receive buffer and reposts it once the echo's send completed, so two
  // buffers per ping in flight keep one always posted. Streams need a window of them.
  // write_lat receives the client's region (a Reply), then zero-byte notifications.
  c.slot_size = test == Test::kWriteLat ? sizeof(Reply) : std::max<std::uint64_t>(request.size, sizeof(Ack));
  c.recv_count = test == Test::kLat ? 2 * window : test == Test::kBw || test == Test::kRate ? 2 * window
                 : test == Test::kWriteLat                                  ? 4
                                                                            : 2;
  DAT_EP_ATTR attr{};
  attr.service_type = DAT_SERVICE_TYPE_RC;
  attr.qos = DAT_QOS_BEST_EFFORT;
  attr.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  attr.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG;
  attr.max_recv_dtos = c.session->srq != DAT_HANDLE_NULL ? 0 : static_cast<DAT_COUNT>(c.recv_count);
  attr.max_request_dtos = static_cast<DAT_COUNT>(test == Test::kWriteLat ? 2 * kWriteSignalEvery + 2 : 2 * window + 2);
  attr.max_recv_iov = 1;
  attr.max_request_iov = 1;
  attr.max_rdma_read_in = std::min<DAT_COUNT>(static_cast<DAT_COUNT>(window), env_.ia_attr().max_rdma_read_per_ep_in);
  attr.max_rdma_read_out = 0;
  attr.max_rdma_read_iov = 1;
  attr.max_rdma_write_iov = 1;
  attr.srq_soft_hw = DAT_HW_DEFAULT;
  if (c.session->srq != DAT_HANDLE_NULL) attr.recv_completion_flags = DAT_COMPLETION_UNSIGNALLED_FLAG;
  DAT_RETURN status =
      c.session->srq != DAT_HANDLE_NULL
          ? dat_ep_create_with_srq(env_.ia(), env_.pz(), recv_evd_, request_evd_, connect_evd_, c.session->srq, &attr, &c.ep)
          : dat_ep_create(env_.ia(), env_.pz(), recv_evd_, request_evd_, connect_evd_, &attr, &c.ep);
  if (status != DAT_SUCCESS) return error = DatError("dat_ep_create", status), false;
  if (!env_.Register(sizeof(Ack), c.ack, error)) return false;
  if (c.session->srq == DAT_HANDLE_NULL) {
    if (!env_.Register(c.slot_size * (OneBuffer(request) ? 1 : c.recv_count), c.recv, error)) return false;
    for (std::uint32_t i = 0; i < c.recv_count; ++i)
      if (!PostOwn(c, i, error)) return false;
  }
  if (test == Test::kWrite || test == Test::kRead || test == Test::kWriteLat) {
    if (!env_.Register(request.size * window, c.target, error)) return false;
    if (test == Test::kWriteLat) {
      if (!env_.Register(request.size, c.source, error)) return false;
      FillPattern(c.source.data, request.size, 0);
    }
    if (test == Test::kRead)
      for (std::uint32_t s = 0; s < window; ++s) FillPattern(c.target.data + s * request.size, request.size, s);
    reply.rmr_context = c.target.rmr_context;
    reply.address = reinterpret_cast<std::uint64_t>(c.target.data);
    reply.length = request.size * window;
  }
  status = dat_cr_accept(cr, c.ep, sizeof reply, &reply);
  if (status != DAT_SUCCESS) return error = DatError("dat_cr_accept", status), false;
  ++c.session->live;
  reap_ = static_cast<Reap>(request.reap);
  if (request.last != 0) served_ = true;
  return true;
}

void Server::OnConnectionRequest(const DAT_EVENT& event) {
  const DAT_CR_HANDLE cr = event.event_data.cr_arrival_event_data.cr_handle;
  DAT_CR_PARAM param{};
  Request request;
  if (dat_cr_query(cr, DAT_CR_FIELD_ALL, &param) != DAT_SUCCESS || param.private_data_size < DAT_COUNT{sizeof request}) {
    std::fprintf(stderr, "datperf: a connection request without a datperf request: rejected\n");
    (void)dat_cr_reject(cr, 0, nullptr);
    return;
  }
  std::memcpy(&request, param.private_data, sizeof request);
  if (request.magic != kMagic || request.version != kVersion || request.test > static_cast<std::uint8_t>(Test::kWriteLat)) {
    std::fprintf(stderr, "datperf: a connection request from another program or version: rejected\n");
    (void)dat_cr_reject(cr, 0, nullptr);
    return;
  }
  auto c = std::make_unique<Connection>();
  Reply reply;
  std::string error;
  if (!Admit(cr, request, *c, reply, error)) {
    std::fprintf(stderr, "datperf: cannot serve a client: %s\n", error.c_str());
    if (c->ep == DAT_HANDLE_NULL) (void)dat_cr_reject(cr, 0, nullptr);
    if (c->ep != DAT_HANDLE_NULL) (void)dat_ep_free(c->ep);
    return;
  }
  const DAT_EP_HANDLE ep = c->ep;
  connections_[ep] = std::move(c);
}

void Server::Forget(DAT_EP_HANDLE ep) {
  auto it = connections_.find(ep);
  if (it == connections_.end()) return;
  Connection& c = *it->second;
  // Completions of this EP still queued name it: take them first.
  DAT_EVENT event;
  for (DAT_EVD_HANDLE evd : {recv_evd_, request_evd_})
    while (dat_evd_dequeue(evd, &event) == DAT_SUCCESS) {
      if (event.event_number != DAT_DTO_COMPLETION_EVENT) continue;
      std::string error;
      const auto& dto = event.event_data.dto_completion_event_data;
      if (dto.ep_handle == ep) {  // flushed: this connection is gone
        if (evd == request_evd_ && sends_outstanding_ > 0) --sends_outstanding_;
        continue;
      }
      (void)(evd == recv_evd_ ? OnReceive(dto, error) : OnSendDone(dto, error));
    }
  (void)dat_ep_free(c.ep);
  for (Region* r : {&c.recv, &c.ack, &c.target, &c.source})
    if (r->lmr != DAT_HANDLE_NULL) env_.Release(*r);
  Session* session = c.session;
  if (last_ == &c) {
    last_ep_ = DAT_HANDLE_NULL;
    last_ = nullptr;
  }
  connections_.erase(it);
  if (session != nullptr && --session->live == 0) {
    if (session->srq != DAT_HANDLE_NULL) {
      (void)dat_srq_free(session->srq);
      env_.Release(session->buffers);
    }
    sessions_.erase(session->id);
  }
}

void Server::OnConnectionEvent(const DAT_EVENT& event) {
  const DAT_EP_HANDLE ep = event.event_data.connect_event_data.ep_handle;
  switch (event.event_number) {
    case DAT_CONNECTION_EVENT_ESTABLISHED: return;
    case DAT_CONNECTION_EVENT_DISCONNECTED:
    case DAT_CONNECTION_EVENT_BROKEN:
    case DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR:
      Forget(ep);
      return;
    default: return;
  }
}

bool Server::Repost(Connection& c, std::uint32_t slot, std::string& error) {
  if (c.session->srq != DAT_HANDLE_NULL) return PostShared(*c.session, slot, error);
  return PostOwn(c, slot, error);
}

bool Server::SendAck(Connection& c, std::string& error) {
  Ack ack{c.received, c.bad};
  std::memcpy(c.ack.data, &ack, sizeof ack);
  const DAT_LMR_TRIPLET iov = c.ack.Local(0, sizeof ack);
  const DAT_RETURN status = dat_ep_post_send(c.ep, 1, const_cast<DAT_LMR_TRIPLET*>(&iov), Cookie(kAckCookie),
                                             DAT_COMPLETION_DEFAULT_FLAG);
  if (status != DAT_SUCCESS) return error = DatError("dat_ep_post_send (ack)", status), false;
  ++sends_outstanding_;
  return true;
}

bool Server::OnReceive(const DAT_DTO_COMPLETION_EVENT_DATA& dto, std::string& error) {
  Connection* found = Find(dto.ep_handle);
  if (found == nullptr) return true;  // its connection already went
  Connection& c = *found;
  if (dto.status != DAT_DTO_SUCCESS) return true;  // flushed as the connection ends
  const auto slot = static_cast<std::uint32_t>(dto.user_cookie.as_64);
  const bool shared = c.session->srq != DAT_HANDLE_NULL;
  std::uint8_t* data = shared ? c.session->buffers.data + slot * c.session->size : c.recv.data + RecvOffset(c, slot);
  const std::uint32_t window = std::max<std::uint32_t>(1, c.request.window);
  const auto test = static_cast<Test>(c.request.test);
  if (test == Test::kWriteLat) {
    // The client's region: the ping-pong runs now, to its end, on this thread.
    if (dto.transfered_length != sizeof(Reply)) return true;
    Reply client;
    std::memcpy(&client, data, sizeof client);
    if (!Repost(c, slot, error)) return false;
    return RunWritePingPong(c, client, error);
  }
  if (dto.transfered_length == 0 && test != Test::kLat) {
    // The end marker: for write, check the region (slot s holds message pattern s; with one
    // buffer, every Write landed in slot 0 with pattern 0 and the other slots are untouched).
    if (test == Test::kWrite)
      for (std::uint32_t s = 0; s < (OneBuffer(c.request) ? 1 : window); ++s)
        c.bad += CountBad(c.target.data + s * c.request.size, c.request.size, s, c.request.verify != 0);
    // With one buffer, the last message's bytes (pattern 0): no message lands there any more.
    if (OneBuffer(c.request) && c.received > 0) c.bad += CountBad(c.recv.data, c.request.size, 0, c.request.verify != 0);
    if (!Repost(c, slot, error)) return false;
    return SendAck(c, error);
  }
  // With one buffer the next messages are being placed where this one lies while it is looked at:
  // the buffer is checked once, at the end marker, when nothing lands there any more.
  if (!OneBuffer(c.request)) c.bad += CountBad(data, dto.transfered_length, c.received % window, c.request.verify != 0);
  ++c.received;
  if (test != Test::kLat) return Repost(c, slot, error);
  // Echo from the buffer itself; it is reposted when the echo's send completes. At most `window`
  // echoes in flight, so the other `window` buffers are posted for the pings the client may send
  // meanwhile: the client answers an echo before this side may have reaped its completion (siw
  // writes the CQE after handing the bytes to TCP), and a ping finding no buffer breaks an iWARP
  // connection (no RNR retry there; the client then sees its receives flushed). The echo this
  // waits for reached the client (its next ping is here), so its completion is at hand.
  while (c.echoes >= window) {
    DAT_EVENT event;
    const DAT_RETURN reaped = NextEvent(request_evd_, CurrentReap(), kEchoWaitUs, event);
    if (reaped != DAT_SUCCESS) return error = DatError("waiting for an echo to complete", reaped), false;
    if (!OnSendDone(event.event_data.dto_completion_event_data, error)) return false;
  }
  const DAT_LMR_TRIPLET iov =
      shared ? c.session->buffers.Local(slot * c.session->size, dto.transfered_length)
             : c.recv.Local(slot * c.slot_size, dto.transfered_length);
  const DAT_RETURN status = dat_ep_post_send(c.ep, dto.transfered_length == 0 ? 0 : 1,
                                             const_cast<DAT_LMR_TRIPLET*>(&iov), Cookie(slot), DAT_COMPLETION_DEFAULT_FLAG);
  if (status != DAT_SUCCESS) return error = DatError("dat_ep_post_send (echo)", status), false;
  ++sends_outstanding_;
  ++c.echoes;
  return true;
}

// write_lat's server side (client.cc has the client's): for each round, wait for the client's
// Write of the round's tag (in memory, or by its notification), then write the same tag back. A
// write_lat client is served alone: the loop takes every receive completion as its own.
bool Server::RunWritePingPong(Connection& c, const Reply& client, std::string& error) {
  const std::uint64_t size = c.request.size;
  if (client.magic != kMagic || client.length < size) return error = "a write_lat client sent no region", false;
  const auto notify = static_cast<Notify>(c.request.notify);
  const auto reap = static_cast<Reap>(c.request.reap);
  WritePingPong pong(c.ep, request_evd_, notify, static_cast<Spin>(c.request.spin));
  const std::uint8_t* const mailbox = c.target.data + size - 1;
  DAT_RMR_TRIPLET remote{};
  remote.rmr_context = client.rmr_context;
  remote.virtual_address = client.address;
  remote.segment_length = static_cast<DAT_SEG_LENGTH>(size);
  const DAT_LMR_TRIPLET local = c.source.Local(0, size);
  constexpr std::uint64_t kStepNs = 30'000'000'000ull;
  DAT_EVENT event;
  for (std::uint64_t round = 0; round < c.request.iters; ++round) {
    const std::uint8_t tag = RoundTag(round);
    if (notify == Notify::kSend) {
      const DAT_RETURN status = NextEvent(recv_evd_, reap, 30'000'000, event);
      if (status != DAT_SUCCESS) return error = DatError("waiting for a write_lat notification", status), false;
      const DAT_DTO_COMPLETION_EVENT_DATA& dto = event.event_data.dto_completion_event_data;
      if (dto.status != DAT_DTO_SUCCESS) return error = "a write_lat notification failed", false;
      if (!Repost(c, static_cast<std::uint32_t>(dto.user_cookie.as_64), error)) return false;
      const std::uint8_t seen = __atomic_load_n(mailbox, __ATOMIC_ACQUIRE);
      if (seen == kEndTag) break;
      if (seen != tag) return error = "a write_lat notification came before its Write's last byte", false;
    } else {
      const WritePingPong::Landed landed = pong.Await(mailbox, tag, MonotonicNs() + kStepNs);
      if (landed == WritePingPong::Landed::kEnd) break;
      if (landed == WritePingPong::Landed::kTimedOut) return error = "no Write from the write_lat client within 30 s", false;
    }
    c.source.data[size - 1] = tag;
    if (!pong.Post(local, remote, round, error)) return false;
  }
  c.bad += CountBad(c.target.data, size - 1, 0, c.request.verify != 0);
  return true;
}

bool Server::OnSendDone(const DAT_DTO_COMPLETION_EVENT_DATA& dto, std::string& error) {
  if (sends_outstanding_ > 0) --sends_outstanding_;
  Connection* found = Find(dto.ep_handle);
  if (found == nullptr) return true;
  if ((dto.user_cookie.as_64 & kAckCookie) == 0 && found->echoes > 0) --found->echoes;
  if (dto.status != DAT_DTO_SUCCESS) return true;
  if (dto.user_cookie.as_64 & kAckCookie) return true;
  return Repost(*found, static_cast<std::uint32_t>(dto.user_cookie.as_64), error);
}

int Server::Run() {
  std::string error;
  if (!Setup(error)) {
    std::fprintf(stderr, "datperf: %s\n", error.c_str());
    return 1;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::fprintf(stderr, "datperf: serving on IA %s, port %u\n", options_.ia_name.c_str(), options_.port);
  DAT_EVENT event;
  for (std::uint64_t turn = 0; stop_requested == 0; ++turn) {
    // Completions first, reaped the way the client asked; control events between them.
    const DAT_RETURN got = NextEvent(recv_evd_, CurrentReap(), connections_.empty() ? 100'000 : 1000, event);
    if (got == DAT_SUCCESS && event.event_number == DAT_DTO_COMPLETION_EVENT) {
      if (!OnReceive(event.event_data.dto_completion_event_data, error)) break;
    } else if (got != DAT_SUCCESS && DAT_GET_TYPE(got) != DAT_TIMEOUT_EXPIRED && DAT_GET_TYPE(got) != DAT_QUEUE_EMPTY) {
      error = DatError("reaping receive completions", got);
      break;
    }
    while (sends_outstanding_ > 0 && dat_evd_dequeue(request_evd_, &event) == DAT_SUCCESS)
      if (!OnSendDone(event.event_data.dto_completion_event_data, error)) break;
    if (!error.empty()) break;
    // Connection setup and teardown need no hurry: look every so often, or when idle.
    if (got != DAT_SUCCESS || (turn & 63) == 0) {
      while (dat_evd_dequeue(cr_evd_, &event) == DAT_SUCCESS)
        if (event.event_number == DAT_CONNECTION_REQUEST_EVENT) OnConnectionRequest(event);
      while (dat_evd_dequeue(connect_evd_, &event) == DAT_SUCCESS) OnConnectionEvent(event);
      if (options_.once && served_ && connections_.empty()) break;
    }
  }
  if (!error.empty()) {
    std::fprintf(stderr, "datperf: %s\n", error.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int RunServer(const Options& options) { return Server(options).Run(); }

}  // namespace softdat::datperf
