// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Fuzz target: the DAT entry points' argument checks. Each input is a program of calls into
// softdat's DAT_PROVIDER table (the table libdat2 dispatches through, registered by
// dat_provider_init as libdat2 would: dat/registry_stand_in.h), made with the handles the
// program created, handles of the wrong kind, freed ones, null, pointers to garbage, null or
// valid output pointers, and arbitrary flags, masks, counts, lengths and iovs. A program can build real
// objects and connect EPs to each other over loopback TCP, so the checks behind the first ones
// (states, iovs against registered memory, SRQ and EVD rules) are reached too.
//
// Program: a sequence of [op][arguments...]; every argument is read from the input as needed
// (zeros once it runs out). A handle argument is one byte: high nibble the kind (Kind below) and
// low nibble which one of that kind, counted back from the newest; kinds 12-15 are null, a
// pointer to garbage, a misaligned pointer and a pointer to zeroes.
//
// Checks: no crash, hang, leak or undefined behaviour; every call returns a DAT_RETURN of a known
// type; a call whose mandatory output pointer is null does not succeed. What a consumer can only
// get wrong by breaking the DAT contract is kept valid: memory given to dat_lmr_create lies in
// the harness's buffer, waits have short timeouts, connections go only to this program's own
// service points (and, when the process could get a network namespace of its own, nowhere else
// exists anyway).
#include <dat2/udat.h>
#include <dat2/dat_registry.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "dat/registry_stand_in.h"
#include "testing/private_network.h"

namespace {

const DAT_PROVIDER* registered = nullptr;
constexpr char kIaName[] = "softdat-fuzz";
constexpr std::size_t kMaxOps = 64;
constexpr std::size_t kMemorySize = 1 << 20;
constexpr DAT_TIMEOUT kMaxWaitUs = 2000;

enum Kind : std::uint8_t { kIa, kEvd, kEp, kPz, kLmr, kRmr, kPsp, kRsp, kCr, kCno, kSrq, kAny, kKinds };

// Where the program's LMRs, iovs and private data point.
alignas(4096) std::uint8_t memory[kMemorySize];
// What "garbage" handles point at: bytes from the input.
alignas(64) std::uint8_t garbage[256];
alignas(64) std::uint8_t zeroes[256];
bool private_network = false;
// SOFTDAT_FUZZ_VERBOSE=1: one line per call with what it returned (seed checks).
bool verbose = false;

struct Program {
  const std::uint8_t* data;
  std::size_t size;
  std::size_t at = 0;

  std::uint8_t U8() { return at < size ? data[at++] : 0; }
  std::uint16_t U16() { return static_cast<std::uint16_t>(U8() | U8() << 8); }
  std::uint32_t U32() { return static_cast<std::uint32_t>(U16() | std::uint32_t{U16()} << 16); }
  std::uint64_t U64() { return U32() | std::uint64_t{U32()} << 32; }
  bool done() const { return at >= size; }
  // A count or length: mostly small, sometimes anything.
  DAT_COUNT Count() {
    const std::uint8_t b = U8();
    if (b < 0xF0) return b % 70;
    if (b == 0xF0) return -1;
    if (b == 0xF1) return static_cast<DAT_COUNT>(U32());
    return 0x7FFFFFFF - (b - 0xF2);
  }
};

struct State {
  std::array<std::vector<DAT_HANDLE>, kKinds> handles;
  std::vector<DAT_LMR_CONTEXT> lmr_contexts;
  std::vector<DAT_RMR_CONTEXT> rmr_contexts;
  std::vector<DAT_CONN_QUAL> ports;  // of this program's PSPs and RSPs
  std::vector<DAT_IA_HANDLE> open_ias;
  DAT_EVENT events[4];
  std::uint8_t last_op = 0;
};

const DAT_PROVIDER& P() { return *registered; }

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "dat_api_fuzzer: %s\n", what);
    std::abort();
  }
}

void CheckReturn(DAT_RETURN r) {
  switch (DAT_GET_TYPE(r)) {
    case DAT_SUCCESS:
    case DAT_ABORT:
    case DAT_CONN_QUAL_IN_USE:
    case DAT_INSUFFICIENT_RESOURCES:
    case DAT_INTERNAL_ERROR:
    case DAT_INVALID_HANDLE:
    case DAT_INVALID_PARAMETER:
    case DAT_INVALID_STATE:
    case DAT_LENGTH_ERROR:
    case DAT_MODEL_NOT_SUPPORTED:
    case DAT_PROVIDER_NOT_FOUND:
    case DAT_PRIVILEGES_VIOLATION:
    case DAT_PROTECTION_VIOLATION:
    case DAT_QUEUE_EMPTY:
    case DAT_QUEUE_FULL:
    case DAT_TIMEOUT_EXPIRED:
    case DAT_PROVIDER_ALREADY_REGISTERED:
    case DAT_PROVIDER_IN_USE:
    case DAT_INVALID_ADDRESS:
    case DAT_INTERRUPTED_CALL:
    case DAT_NOT_IMPLEMENTED:
      return;
    default:
      std::fprintf(stderr, "dat_api_fuzzer: unknown DAT_RETURN %#x\n", static_cast<unsigned>(r));
      std::abort();
  }
}

// A call with a null mandatory output pointer must not succeed (there is nowhere to put the result).
void CheckRefused(DAT_RETURN r, bool out_null) {
  CheckReturn(r);
  if (out_null) Check(r != DAT_SUCCESS, "a call with a null output pointer succeeded");
}

DAT_HANDLE Handle(Program& p, State& s) {
  const std::uint8_t b = p.U8();
  const std::uint8_t kind = b >> 4, which = b & 0x0F;
  if (kind < kAny) {
    const auto& v = s.handles[kind];
    return v.empty() ? nullptr : v[v.size() - 1 - which % v.size()];
  }
  if (kind == kAny) {
    std::size_t total = 0;
    for (const auto& v : s.handles) total += v.size();
    if (total == 0) return nullptr;
    std::size_t i = which % total;
    for (const auto& v : s.handles) {
      if (i < v.size()) return v[i];
      i -= v.size();
    }
  }
  switch (kind) {
    case 12: return nullptr;
    case 13: return garbage;
    case 14: return garbage + 1 + which % 7;
    default: return zeroes;
  }
}

void Add(State& s, Kind kind, DAT_HANDLE h) {
  if (h != nullptr) s.handles[kind].push_back(h);
}

// An output pointer: null or `valid`.
template <class T>
T* Out(Program& p, T* valid) {
  return (p.U8() & 0x7) == 0 ? nullptr : valid;
}

DAT_TIMEOUT Timeout(Program& p) { return p.U16() % (kMaxWaitUs + 1); }

// An address in the harness's memory, and a length that stays inside it.
std::uint8_t* Place(Program& p, std::uint32_t& length) {
  const std::uint32_t offset = p.U32() % kMemorySize;
  length = p.U32() % (kMemorySize - offset + 1);
  return memory + offset;
}

DAT_LMR_CONTEXT LmrContext(Program& p, const State& s) {
  const std::uint8_t b = p.U8();
  if (b < 0xF0 && !s.lmr_contexts.empty()) return s.lmr_contexts[s.lmr_contexts.size() - 1 - b % s.lmr_contexts.size()];
  return b == 0xF0 ? 0 : p.U32();
}

DAT_RMR_CONTEXT RmrContext(Program& p, const State& s) {
  const std::uint8_t b = p.U8();
  if (b < 0xF0 && !s.rmr_contexts.empty()) return s.rmr_contexts[s.rmr_contexts.size() - 1 - b % s.rmr_contexts.size()];
  return b == 0xF0 ? 0 : p.U32();
}

// An iov: null, or up to 8 triplets naming this program's LMRs (or not) at addresses inside the
// harness's memory (or anywhere: softdat must refuse what no LMR covers).
struct Iov {
  DAT_LMR_TRIPLET triplets[8] = {};
  DAT_COUNT count = 0;
  DAT_LMR_TRIPLET* pointer = nullptr;
};

void ReadIov(Program& p, const State& s, Iov& iov) {
  iov.count = p.Count();
  const std::uint8_t shape = p.U8();
  iov.pointer = (shape & 0x7) == 0 ? nullptr : iov.triplets;
  const int n = iov.count > 0 && iov.count <= 8 ? iov.count : 8;
  for (int i = 0; i < n && iov.pointer != nullptr; ++i) {
    DAT_LMR_TRIPLET& t = iov.triplets[i];
    t.lmr_context = LmrContext(p, s);
    if ((p.U8() & 0x3) != 0) {
      std::uint32_t length = 0;
      t.virtual_address = reinterpret_cast<DAT_VADDR>(Place(p, length));
      t.segment_length = length;
    } else {
      t.virtual_address = p.U64();
      t.segment_length = p.U32();
    }
  }
  // More segments than the array holds would make softdat read past it: a consumer bug, not ours.
  if (iov.count > 8) iov.count = 8;
}

void ReadRemote(Program& p, const State& s, DAT_RMR_TRIPLET& r) {
  r.rmr_context = RmrContext(p, s);
  std::uint32_t length = 0;
  r.virtual_address = (p.U8() & 0x3) != 0 ? reinterpret_cast<DAT_VADDR>(Place(p, length)) : p.U64();
  r.segment_length = (p.U8() & 0x1) != 0 ? length : p.U32();
}

DAT_DTO_COOKIE Cookie(Program& p) {
  DAT_DTO_COOKIE c;
  c.as_64 = p.U64();
  return c;
}

void ReadEpAttr(Program& p, DAT_EP_ATTR& a) {
  a.service_type = static_cast<DAT_SERVICE_TYPE>(p.U8() % 3);
  a.max_message_size = p.U32();
  a.max_rdma_size = p.U32();
  a.qos = static_cast<DAT_QOS>(p.U8());
  a.recv_completion_flags = static_cast<DAT_COMPLETION_FLAGS>(p.U8());
  a.request_completion_flags = static_cast<DAT_COMPLETION_FLAGS>(p.U8());
  a.max_recv_dtos = p.Count();
  a.max_request_dtos = p.Count();
  a.max_recv_iov = p.Count();
  a.max_request_iov = p.Count();
  a.max_rdma_read_in = p.Count();
  a.max_rdma_read_out = p.Count();
  a.srq_soft_hw = p.Count();
  a.max_rdma_read_iov = p.Count();
  a.max_rdma_write_iov = p.Count();
  a.ep_transport_specific_count = 0;  // the pointers below are null: a count would be a lie
  a.ep_transport_specific = nullptr;
  a.ep_provider_specific_count = 0;
  a.ep_provider_specific = nullptr;
}

// A sockaddr for dat_ep_connect: this machine, this program's ports (or a closed one), or a
// family softdat does not speak.
sockaddr_in remote_address;

DAT_IA_ADDRESS_PTR RemoteAddress(Program& p) {
  const std::uint8_t b = p.U8();
  if (b % 5 == 0) return nullptr;
  remote_address = sockaddr_in{};
  remote_address.sin_family = b % 5 == 1 ? AF_INET6 : AF_INET;
  remote_address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return reinterpret_cast<DAT_IA_ADDRESS_PTR>(&remote_address);
}

// A connection qualifier: one of this program's ports, an invalid one, or (only with a network of
// our own) a fixed one; never another process's port.
DAT_CONN_QUAL ConnQual(Program& p, const State& s) {
  const std::uint8_t b = p.U8();
  if (b < 0xE0 && !s.ports.empty()) return s.ports[s.ports.size() - 1 - b % s.ports.size()];
  switch (b & 3) {
    case 0: return 0;
    case 1: return 70000;
    case 2: return private_network ? 40000 + (b >> 2) % 4 : 0;
    default: return ~DAT_CONN_QUAL{0};
  }
}

void Agent(DAT_PVOID, DAT_EVD_HANDLE) {}

DAT_OS_WAIT_PROXY_AGENT ReadAgent(Program& p) {
  DAT_OS_WAIT_PROXY_AGENT agent{};
  if ((p.U8() & 1) != 0) agent.proxy_agent_func = Agent;
  agent.instance_data = garbage;
  return agent;
}

// Reads what an event handed over: a CR arrival's CR handle joins the program's handles.
void Harvest(State& s, const DAT_EVENT& e) {
  if (e.event_number == DAT_CONNECTION_REQUEST_EVENT) Add(s, kCr, e.event_data.cr_arrival_event_data.cr_handle);
}

DAT_RETURN ExtendedOp(DAT_HANDLE h, DAT_EXTENDED_OP op, ...) {
  va_list args;
  va_start(args, op);
  const DAT_RETURN r = P().handle_extendedop_func(h, op, args);
  va_end(args);
  return r;
}

// Runs one call of the program; its DAT_RETURN (already checked).
DAT_RETURN Step(Program& p, State& s) {
  const DAT_PROVIDER& t = P();
  DAT_RETURN r = DAT_SUCCESS;
  const std::uint8_t op = p.U8() % 62;
  s.last_op = op;
  switch (op) {
    case 0: {  // dat_ia_open
      const std::uint8_t how = p.U8();
      DAT_EVD_HANDLE async = how % 3 == 0 ? DAT_HANDLE_NULL : how % 3 == 1 ? DAT_EVD_ASYNC_EXISTS : Handle(p, s);
      DAT_IA_HANDLE ia = nullptr;
      DAT_IA_HANDLE* out = Out(p, &ia);
      const char* name = (how & 0x10) != 0 ? "no-such-ia" : (how & 0x20) != 0 ? nullptr : kIaName;
      r = t.ia_open_func(const_cast<DAT_NAME_PTR>(name), p.Count(), (how & 0x40) != 0 ? nullptr : &async, out);
      CheckRefused(r, out == nullptr);
      if (r == DAT_SUCCESS) {
        Add(s, kIa, ia);
        s.open_ias.push_back(ia);
        if (async != DAT_HANDLE_NULL && async != DAT_EVD_ASYNC_EXISTS) Add(s, kEvd, async);
      }
      return r;
    }
    case 1: {  // dat_ia_close
      DAT_HANDLE ia = Handle(p, s);
      r = t.ia_close_func(ia, (p.U8() & 1) != 0 ? DAT_CLOSE_ABRUPT_FLAG : static_cast<DAT_CLOSE_FLAGS>(p.U32()));
      CheckReturn(r);
      if (r == DAT_SUCCESS) {
        for (auto& open : s.open_ias) {
          if (open == ia) open = nullptr;
        }
      }
      return r;
    }
    case 2: {
      DAT_EVD_HANDLE async;
      DAT_IA_ATTR ia_attr;
      // Its const members forbid a plain local; the provider fills what the mask asks for.
      alignas(DAT_PROVIDER_ATTR) static unsigned char provider_attr[sizeof(DAT_PROVIDER_ATTR)];
      DAT_HANDLE ia = Handle(p, s);
      DAT_EVD_HANDLE* a = Out(p, &async);
      const DAT_IA_ATTR_MASK ia_mask = p.U64();
      DAT_IA_ATTR* ia_out = Out(p, &ia_attr);
      const DAT_PROVIDER_ATTR_MASK provider_mask = p.U64();
      r = t.ia_query_func(ia, a, ia_mask, ia_out, provider_mask,
                          Out(p, reinterpret_cast<DAT_PROVIDER_ATTR*>(provider_attr)));
      break;
    }
    case 3: {
      DAT_HANDLE h = Handle(p, s);
      DAT_CONTEXT context;
      context.as_64 = p.U64();
      r = t.set_consumer_context_func(h, context);
      break;
    }
    case 4: {
      DAT_CONTEXT context;
      DAT_HANDLE h = Handle(p, s);
      DAT_CONTEXT* out = Out(p, &context);
      r = t.get_consumer_context_func(h, out);
      CheckRefused(r, out == nullptr);
      return r;
    }
    case 5: {
      DAT_HANDLE_TYPE type;
      DAT_HANDLE h = Handle(p, s);
      DAT_HANDLE_TYPE* out = Out(p, &type);
      r = t.get_handle_type_func(h, out);
      CheckRefused(r, out == nullptr);
      return r;
    }
    case 6: {  // dat_pz_create
      DAT_PZ_HANDLE pz = nullptr;
      DAT_HANDLE ia = Handle(p, s);
      DAT_PZ_HANDLE* out = Out(p, &pz);
      r = t.pz_create_func(ia, out);
      CheckRefused(r, out == nullptr);
      if (r == DAT_SUCCESS) Add(s, kPz, pz);
      return r;
    }
    case 7: {
      DAT_PZ_PARAM param;
      DAT_HANDLE h = Handle(p, s);
      const auto mask = static_cast<DAT_PZ_PARAM_MASK>(p.U64());
      r = t.pz_query_func(h, mask, Out(p, &param));
      break;
    }
    case 8: r = t.pz_free_func(Handle(p, s)); break;
    case 9: {  // dat_evd_create
      DAT_EVD_HANDLE evd = nullptr;
      DAT_HANDLE ia = Handle(p, s);
      const DAT_COUNT qlen = p.Count();
      DAT_HANDLE cno = Handle(p, s);
      const auto flags = static_cast<DAT_EVD_FLAGS>(p.U8() & 1 ? p.U8() : p.U32());
      DAT_EVD_HANDLE* out = Out(p, &evd);
      r = t.evd_create_func(ia, qlen, cno, flags, out);
      CheckRefused(r, out == nullptr);
      if (r == DAT_SUCCESS) Add(s, kEvd, evd);
      return r;
    }
    case 10: {
      DAT_EVD_PARAM param;
      DAT_HANDLE h = Handle(p, s);
      const auto mask = static_cast<DAT_EVD_PARAM_MASK>(p.U64());
      r = t.evd_query_func(h, mask, Out(p, &param));
      break;
    }
    case 11: {
      DAT_HANDLE evd = Handle(p, s);
      r = t.evd_modify_cno_func(evd, Handle(p, s));
      break;
    }
    case 12: r = t.evd_enable_func(Handle(p, s)); break;
    case 13: r = t.evd_disable_func(Handle(p, s)); break;
    case 14: {  // dat_evd_wait
      DAT_COUNT nmore = 0;
      DAT_HANDLE evd = Handle(p, s);
      const DAT_TIMEOUT timeout = Timeout(p);
      const DAT_COUNT threshold = p.Count();
      DAT_EVENT* event = Out(p, &s.events[0]);
      r = t.evd_wait_func(evd, timeout, threshold, event, Out(p, &nmore));
      CheckReturn(r);
      if (r == DAT_SUCCESS && event != nullptr) Harvest(s, *event);
      return r;
    }
    case 15: {
      DAT_HANDLE evd = Handle(p, s);
      r = t.evd_resize_func(evd, p.Count());
      break;
    }
    case 16: {  // dat_evd_post_se
      DAT_EVENT& e = s.events[1];
      std::memset(&e, 0, sizeof e);
      e.event_number = (p.U8() & 1) != 0 ? DAT_SOFTWARE_EVENT : static_cast<DAT_EVENT_NUMBER>(p.U32());
      e.evd_handle = Handle(p, s);
      e.event_data.software_event_data.pointer = garbage;
      DAT_HANDLE evd = Handle(p, s);
      r = t.evd_post_se_func(evd, Out(p, &e));
      break;
    }
    case 17: {  // dat_evd_dequeue
      DAT_HANDLE evd = Handle(p, s);
      DAT_EVENT* event = Out(p, &s.events[2]);
      r = t.evd_dequeue_func(evd, event);
      CheckRefused(r, event == nullptr);
      if (r == DAT_SUCCESS) Harvest(s, *event);
      return r;
    }
    case 18: r = t.evd_free_func(Handle(p, s)); break;
    case 19:
    case 20: {  // dat_ep_create, dat_ep_create_with_srq
      DAT_EP_HANDLE ep = nullptr;
      DAT_EP_ATTR attr;
      DAT_HANDLE ia = Handle(p, s), pz = Handle(p, s), recv = Handle(p, s), request = Handle(p, s),
                 connect = Handle(p, s);
      DAT_HANDLE srq = op == 20 ? Handle(p, s) : nullptr;
      const bool with_attr = (p.U8() & 1) != 0;
      if (with_attr) ReadEpAttr(p, attr);
      DAT_EP_HANDLE* out = Out(p, &ep);
      r = op == 19 ? t.ep_create_func(ia, pz, recv, request, connect, with_attr ? &attr : nullptr, out)
                   : t.ep_create_with_srq_func(ia, pz, recv, request, connect, srq, with_attr ? &attr : nullptr, out);
      CheckRefused(r, out == nullptr);
      if (r == DAT_SUCCESS) Add(s, kEp, ep);
      return r;
    }
    case 21: {
      static DAT_EP_PARAM param;
      DAT_HANDLE ep = Handle(p, s);
      const auto mask = static_cast<DAT_EP_PARAM_MASK>(p.U64());
      r = t.ep_query_func(ep, mask, Out(p, &param));
      break;
    }
    case 22: {  // dat_ep_modify
      DAT_EP_PARAM param{};
      DAT_HANDLE ep = Handle(p, s);
      const auto mask = static_cast<DAT_EP_PARAM_MASK>(p.U64());
      param.ia_handle = Handle(p, s);
      param.ep_state = static_cast<DAT_EP_STATE>(p.U8());
      param.local_ia_address_ptr = RemoteAddress(p);
      param.local_port_qual = p.U64();
      param.remote_ia_address_ptr = RemoteAddress(p);
      param.remote_port_qual = p.U64();
      param.pz_handle = Handle(p, s);
      param.recv_evd_handle = Handle(p, s);
      param.request_evd_handle = Handle(p, s);
      param.connect_evd_handle = Handle(p, s);
      param.srq_handle = Handle(p, s);
      ReadEpAttr(p, param.ep_attr);
      r = t.ep_modify_func(ep, mask, Out(p, &param));
      break;
    }
    case 23: {  // dat_ep_connect
      DAT_HANDLE ep = Handle(p, s);
      DAT_IA_ADDRESS_PTR address = RemoteAddress(p);
      const DAT_CONN_QUAL port = ConnQual(p, s);
      const DAT_TIMEOUT timeout = (p.U8() & 1) != 0 ? DAT_TIMEOUT_INFINITE : Timeout(p);
      const DAT_COUNT size = p.Count();
      void* data = Out(p, memory);
      const auto qos = static_cast<DAT_QOS>(p.U8());
      const auto flags = static_cast<DAT_CONNECT_FLAGS>(p.U8());
      r = t.ep_connect_func(ep, address, port, timeout, size, data, qos, flags);
      break;
    }
    case 24: {
      DAT_HANDLE ep = Handle(p, s), dup = Handle(p, s);
      const DAT_TIMEOUT timeout = Timeout(p);
      const DAT_COUNT size = p.Count();
      void* data = Out(p, memory);
      r = t.ep_dup_connect_func(ep, dup, timeout, size, data, static_cast<DAT_QOS>(p.U8()));
      break;
    }
    case 25: {
      DAT_HANDLE ep = Handle(p, s);
      r = t.ep_disconnect_func(ep, (p.U8() & 1) != 0 ? DAT_CLOSE_ABRUPT_FLAG : static_cast<DAT_CLOSE_FLAGS>(p.U32()));
      break;
    }
    case 26:
    case 27:
    case 28: {  // dat_ep_post_send, _with_invalidate, dat_ep_post_recv
      Iov iov;
      DAT_HANDLE ep = Handle(p, s);
      ReadIov(p, s, iov);
      const DAT_DTO_COOKIE cookie = Cookie(p);
      const auto flags = static_cast<DAT_COMPLETION_FLAGS>(p.U8());
      if (op == 26) {
        r = t.ep_post_send_func(ep, iov.count, iov.pointer, cookie, flags);
      } else if (op == 27) {
        const DAT_BOOLEAN invalidate = static_cast<DAT_BOOLEAN>(p.U8() % 3);
        r = t.ep_post_send_with_invalidate_func(ep, iov.count, iov.pointer, cookie, flags, invalidate, RmrContext(p, s));
      } else {
        r = t.ep_post_recv_func(ep, iov.count, iov.pointer, cookie, flags);
      }
      break;
    }
    case 29:
    case 30: {  // dat_ep_post_rdma_read, _write
      Iov iov;
      DAT_RMR_TRIPLET remote{};
      DAT_HANDLE ep = Handle(p, s);
      ReadIov(p, s, iov);
      const DAT_DTO_COOKIE cookie = Cookie(p);
      ReadRemote(p, s, remote);
      const auto flags = static_cast<DAT_COMPLETION_FLAGS>(p.U8());
      const DAT_RMR_TRIPLET* remote_ptr = Out(p, &remote);
      r = op == 29 ? t.ep_post_rdma_read_func(ep, iov.count, iov.pointer, cookie, remote_ptr, flags)
                   : t.ep_post_rdma_write_func(ep, iov.count, iov.pointer, cookie, remote_ptr, flags);
      break;
    }
    case 31: {
      DAT_EP_STATE state;
      DAT_BOOLEAN recv_idle, request_idle;
      DAT_HANDLE ep = Handle(p, s);
      DAT_EP_STATE* out = Out(p, &state);
      DAT_BOOLEAN* a = Out(p, &recv_idle);
      r = t.ep_get_status_func(ep, out, a, Out(p, &request_idle));
      CheckRefused(r, out == nullptr);
      return r;
    }
    case 32: r = t.ep_free_func(Handle(p, s)); break;
    case 33: r = t.ep_reset_func(Handle(p, s)); break;
    case 34: {
      DAT_COUNT n, span;
      DAT_HANDLE ep = Handle(p, s);
      DAT_COUNT* a = Out(p, &n);
      r = t.ep_recv_query_func(ep, a, Out(p, &span));
      break;
    }
    case 35: {
      DAT_HANDLE ep = Handle(p, s);
      const DAT_COUNT soft = p.Count();
      r = t.ep_set_watermark_func(ep, soft, p.Count());
      break;
    }
    case 36: {  // dat_lmr_create
      DAT_LMR_HANDLE lmr = nullptr;
      DAT_LMR_CONTEXT lmr_context = 0;
      DAT_RMR_CONTEXT rmr_context = 0;
      DAT_VLEN registered_length = 0;
      DAT_VADDR registered_address = 0;
      DAT_HANDLE ia = Handle(p, s);
      const std::uint8_t type = p.U8();
      DAT_MEM_TYPE mem_type = type % 4 == 0 ? DAT_MEM_TYPE_LMR
                              : type % 4 == 1 ? DAT_MEM_TYPE_SHARED_VIRTUAL
                              : type % 4 == 2 ? static_cast<DAT_MEM_TYPE>(p.U32())
                                              : DAT_MEM_TYPE_VIRTUAL;
      DAT_REGION_DESCRIPTION region{};
      std::uint32_t length = 0;
      if (mem_type == DAT_MEM_TYPE_LMR) {
        region.for_lmr_handle = Handle(p, s);
      } else {
        region.for_va = Place(p, length);
      }
      if (mem_type == DAT_MEM_TYPE_SHARED_VIRTUAL) region.for_shared_memory.shared_memory_id = nullptr;
      DAT_HANDLE pz = Handle(p, s);
      const auto privileges = static_cast<DAT_MEM_PRIV_FLAGS>(p.U8() & 1 ? p.U8() : p.U32());
      const auto va_type = static_cast<DAT_VA_TYPE>(p.U8() % 3);
      DAT_LMR_HANDLE* out = Out(p, &lmr);
      DAT_LMR_CONTEXT* lmr_out = Out(p, &lmr_context);
      DAT_RMR_CONTEXT* rmr_out = Out(p, &rmr_context);
      DAT_VLEN* length_out = Out(p, &registered_length);
      r = t.lmr_create_func(ia, mem_type, region, length, pz, privileges, va_type, out, lmr_out, rmr_out, length_out,
                            Out(p, &registered_address));
      CheckRefused(r, out == nullptr);
      if (r == DAT_SUCCESS) {
        Add(s, kLmr, lmr);
        if (lmr_out != nullptr) s.lmr_contexts.push_back(lmr_context);
        if (rmr_out != nullptr) s.rmr_contexts.push_back(rmr_context);
      }
      return r;
    }
    case 37: {
      DAT_LMR_PARAM param;
      DAT_HANDLE h = Handle(p, s);
      const auto mask = static_cast<DAT_LMR_PARAM_MASK>(p.U64());
      r = t.lmr_query_func(h, mask, Out(p, &param));
      break;
    }
    case 38: r = t.lmr_free_func(Handle(p, s)); break;
    case 39:
    case 40: {
      Iov iov;
      DAT_HANDLE ia = Handle(p, s);
      ReadIov(p, s, iov);
      const DAT_VLEN n = iov.count < 0 ? 0 : static_cast<DAT_VLEN>(iov.count);
      r = op == 39 ? t.lmr_sync_rdma_read_func(ia, iov.pointer, n) : t.lmr_sync_rdma_write_func(ia, iov.pointer, n);
      break;
    }
    case 41:
    case 42: {  // dat_rmr_create, _for_ep
      DAT_RMR_HANDLE rmr = nullptr;
      DAT_HANDLE pz = Handle(p, s);
      DAT_RMR_HANDLE* out = Out(p, &rmr);
      r = op == 41 ? t.rmr_create_func(pz, out) : t.rmr_create_for_ep_func(pz, out);
      CheckRefused(r, out == nullptr);
      if (r == DAT_SUCCESS) Add(s, kRmr, rmr);
      return r;
    }
    case 43: {
      DAT_RMR_PARAM param;
      DAT_HANDLE h = Handle(p, s);
      const auto mask = static_cast<DAT_RMR_PARAM_MASK>(p.U64());
      r = t.rmr_query_func(h, mask, Out(p, &param));
      break;
    }
    case 44: {  // dat_rmr_bind
      DAT_RMR_CONTEXT context = 0;
      Iov iov;
      DAT_HANDLE rmr = Handle(p, s), lmr = Handle(p, s);
      ReadIov(p, s, iov);
      const auto privileges = static_cast<DAT_MEM_PRIV_FLAGS>(p.U8());
      const auto va_type = static_cast<DAT_VA_TYPE>(p.U8() % 3);
      DAT_HANDLE ep = Handle(p, s);
      DAT_RMR_COOKIE cookie;
      cookie.as_64 = p.U64();
      const auto flags = static_cast<DAT_COMPLETION_FLAGS>(p.U8());
      DAT_RMR_CONTEXT* out = Out(p, &context);
      r = t.rmr_bind_func(rmr, lmr, iov.pointer, privileges, va_type, ep, cookie, flags, out);
      CheckRefused(r, out == nullptr);
      if (r == DAT_SUCCESS) s.rmr_contexts.push_back(context);
      return r;
    }
    case 45: r = t.rmr_free_func(Handle(p, s)); break;
    case 46:
    case 47: {  // dat_psp_create, _any
      DAT_PSP_HANDLE psp = nullptr;
      DAT_CONN_QUAL port = 0;
      DAT_HANDLE ia = Handle(p, s);
      if (op == 46) port = ConnQual(p, s);
      DAT_HANDLE evd = Handle(p, s);
      const auto flags = static_cast<DAT_PSP_FLAGS>(p.U8() % 3);
      DAT_CONN_QUAL* port_out = op == 47 ? Out(p, &port) : nullptr;
      DAT_PSP_HANDLE* out = Out(p, &psp);
      r = op == 46 ? t.psp_create_func(ia, port, evd, flags, out) : t.psp_create_any_func(ia, port_out, evd, flags, out);
      CheckRefused(r, out == nullptr || (op == 47 && port_out == nullptr));
      if (r == DAT_SUCCESS) {
        Add(s, kPsp, psp);
        s.ports.push_back(port);
      }
      return r;
    }
    case 48: {
      DAT_PSP_PARAM param;
      DAT_HANDLE h = Handle(p, s);
      const auto mask = static_cast<DAT_PSP_PARAM_MASK>(p.U64());
      r = t.psp_query_func(h, mask, Out(p, &param));
      break;
    }
    case 49: r = t.psp_free_func(Handle(p, s)); break;
    case 50: {  // dat_rsp_create
      DAT_RSP_HANDLE rsp = nullptr;
      DAT_HANDLE ia = Handle(p, s);
      const DAT_CONN_QUAL port = ConnQual(p, s);
      DAT_HANDLE ep = Handle(p, s), evd = Handle(p, s);
      DAT_RSP_HANDLE* out = Out(p, &rsp);
      r = t.rsp_create_func(ia, port, ep, evd, out);
      CheckRefused(r, out == nullptr);
      if (r == DAT_SUCCESS) Add(s, kRsp, rsp);
      return r;
    }
    case 51: {
      DAT_RSP_PARAM param;
      DAT_HANDLE h = Handle(p, s);
      const auto mask = static_cast<DAT_RSP_PARAM_MASK>(p.U64());
      r = t.rsp_query_func(h, mask, Out(p, &param));
      break;
    }
    case 52: r = t.rsp_free_func(Handle(p, s)); break;
    case 53: {
      DAT_CR_PARAM param;
      DAT_HANDLE h = Handle(p, s);
      const auto mask = static_cast<DAT_CR_PARAM_MASK>(p.U64());
      r = t.cr_query_func(h, mask, Out(p, &param));
      break;
    }
    case 54: {  // dat_cr_accept
      DAT_HANDLE cr = Handle(p, s), ep = Handle(p, s);
      const DAT_COUNT size = p.Count();
      r = t.cr_accept_func(cr, ep, size, Out(p, memory));
      break;
    }
    case 55: {
      DAT_HANDLE cr = Handle(p, s);
      const DAT_COUNT size = p.Count();
      r = t.cr_reject_func(cr, size, Out(p, memory));
      break;
    }
    case 56: {
      DAT_HANDLE cr = Handle(p, s);
      r = t.cr_handoff_func(cr, ConnQual(p, s));
      break;
    }
    case 57: {  // dat_cno_create
      DAT_CNO_HANDLE cno = nullptr;
      DAT_HANDLE ia = Handle(p, s);
      const DAT_OS_WAIT_PROXY_AGENT agent = ReadAgent(p);
      DAT_CNO_HANDLE* out = Out(p, &cno);
      r = t.cno_create_func(ia, agent, out);
      CheckRefused(r, out == nullptr);
      if (r == DAT_SUCCESS) Add(s, kCno, cno);
      return r;
    }
    case 58: {
      DAT_HANDLE cno = Handle(p, s);
      const std::uint8_t which = p.U8() % 4;
      if (which == 0) {
        r = t.cno_modify_agent_func(cno, ReadAgent(p));
      } else if (which == 1) {
        DAT_CNO_PARAM param;
        const auto mask = static_cast<DAT_CNO_PARAM_MASK>(p.U64());
        r = t.cno_query_func(cno, mask, Out(p, &param));
      } else if (which == 2) {
        r = t.cno_free_func(cno);
      } else {
        DAT_EVD_HANDLE evd = nullptr;
        const DAT_TIMEOUT timeout = Timeout(p);
        r = t.cno_wait_func(cno, timeout, Out(p, &evd));
      }
      break;
    }
    case 59: {  // dat_srq_create
      DAT_SRQ_HANDLE srq = nullptr;
      DAT_SRQ_ATTR attr{};
      DAT_HANDLE ia = Handle(p, s), pz = Handle(p, s);
      attr.max_recv_dtos = p.Count();
      attr.max_recv_iov = p.Count();
      attr.low_watermark = (p.U8() & 1) != 0 ? DAT_SRQ_LW_DEFAULT : p.Count();
      DAT_SRQ_ATTR* attr_ptr = Out(p, &attr);
      DAT_SRQ_HANDLE* out = Out(p, &srq);
      r = t.srq_create_func(ia, pz, attr_ptr, out);
      CheckRefused(r, out == nullptr);
      if (r == DAT_SUCCESS) Add(s, kSrq, srq);
      return r;
    }
    case 60: {
      DAT_HANDLE srq = Handle(p, s);
      const std::uint8_t which = p.U8() % 5;
      if (which == 0) {
        r = t.srq_set_lw_func(srq, p.Count());
      } else if (which == 1) {
        r = t.srq_free_func(srq);
      } else if (which == 2) {
        DAT_SRQ_PARAM param;
        const auto mask = static_cast<DAT_SRQ_PARAM_MASK>(p.U64());
        r = t.srq_query_func(srq, mask, Out(p, &param));
      } else if (which == 3) {
        r = t.srq_resize_func(srq, p.Count());
      } else {
        Iov iov;
        ReadIov(p, s, iov);
        r = t.srq_post_recv_func(srq, iov.count, iov.pointer, Cookie(p));
      }
      break;
    }
    default: {  // the rest of the table: unsupported features and extensions
      DAT_HANDLE h = Handle(p, s);
      const std::uint8_t which = p.U8() % 6;
      if (which == 0) {
        DAT_BOOLEAN answer;
        r = t.ia_ha_related_func(h, const_cast<DAT_NAME_PTR>(kIaName), Out(p, &answer));
      } else if (which == 1) {
        DAT_CSP_HANDLE csp = nullptr;
        DAT_IA_ADDRESS_PTR address = RemoteAddress(p);
        r = t.csp_create_func(h, nullptr, address, Handle(p, s), &csp);
        Check(r != DAT_SUCCESS, "dat_csp_create succeeded with no communicator");
      } else if (which == 2) {
        r = t.evd_set_unwaitable_func(h);
      } else if (which == 3) {
        r = t.evd_clear_unwaitable_func(h);
      } else if (which == 4) {
        DAT_FD fd;
        DAT_CNO_HANDLE cno = nullptr;
        r = t.cno_fd_create_func(h, Out(p, &fd), &cno);
        if (r == DAT_SUCCESS) Add(s, kCno, cno);
      } else {
        // As many arguments as the longest operation reads (six after the operation): a consumer
        // passes its macro's full list, and a shorter one made the provider read past the
        // caller's arguments (ASan: stack-buffer-underflow in Dispatch).
        const std::uint64_t zero = 0;
        r = ExtendedOp(h, static_cast<DAT_EXTENDED_OP>(p.U32()), garbage, zero, zero, zero, zero, zero, zero, zero);
      }
      break;
    }
  }
  CheckReturn(r);
  return r;
}

// Brings up loopback in a network namespace of the fuzzer's own (root only), so the programs'
// connections and ports are nobody else's business.
void TryPrivateNetwork() {
  private_network = softdat::testing::EnterPrivateNetwork() == softdat::testing::PrivateNetwork::kEntered;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv("SOFTDAT_LOG", "error", 0);
  const char* v = std::getenv("SOFTDAT_FUZZ_VERBOSE");
  verbose = v != nullptr && v[0] == '1';
  TryPrivateNetwork();
  // progress=poll: nothing moves but in the program's own calls, so an input replays the same.
  registered = softdat::dat::RegisterWithoutLibdat2(kIaName, "tcp 127.0.0.1 progress=poll");
  if (registered == nullptr) {
    std::fprintf(stderr, "dat_api_fuzzer: dat_provider_init registered nothing\n");
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Program p{data, size};
  State s;
  std::memset(garbage, 0, sizeof garbage);
  std::memcpy(garbage, data, std::min(size, sizeof garbage));
  // Every program starts with an IA open, as every consumer does.
  DAT_EVD_HANDLE async = DAT_HANDLE_NULL;
  DAT_IA_HANDLE ia = nullptr;
  Check(P().ia_open_func(const_cast<DAT_NAME_PTR>(kIaName), 8, &async, &ia) == DAT_SUCCESS, "dat_ia_open");
  Add(s, kIa, ia);
  Add(s, kEvd, async);
  s.open_ias.push_back(ia);
  for (std::size_t i = 0; i < kMaxOps && !p.done(); ++i) {
    const DAT_RETURN r = Step(p, s);
    if (verbose) std::fprintf(stderr, "dat_api: op %u -> %#x\n", s.last_op, static_cast<unsigned>(r));
  }
  for (DAT_IA_HANDLE open : s.open_ias) {
    if (open != nullptr) (void)P().ia_close_func(open, DAT_CLOSE_ABRUPT_FLAG);
  }
  return 0;
}
