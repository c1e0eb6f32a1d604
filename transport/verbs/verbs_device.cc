// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Opening the device by name, finding its rdma_cm address, and reading its limits.
#include "transport/verbs/verbs_device.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <rdma/rdma_cma.h>

#include <algorithm>
#include <cstring>

#include "transport/verbs/private_data.h"

namespace softdat::transport::verbs {
namespace {

// The first local IPv4 address that rdma_cm binds to `context`: rxe and siw both sit on a netdev,
// and a bound cm_id names the device its address belongs to.
bool FindAddress(ibv_context* context, sockaddr_in& out) {
  ifaddrs* addrs = nullptr;
  if (getifaddrs(&addrs) != 0) return false;
  bool found = false;
  for (ifaddrs* a = addrs; a != nullptr && !found; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    rdma_cm_id* id = nullptr;
    if (rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP) != 0) break;
    sockaddr_in address;
    std::memcpy(&address, a->ifa_addr, sizeof address);
    address.sin_port = 0;
    if (rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&address)) == 0 && id->verbs != nullptr &&
        std::strcmp(ibv_get_device_name(id->verbs->device), ibv_get_device_name(context->device)) == 0) {
      out = address;
      found = true;
    }
    rdma_destroy_id(id);
  }
  freeifaddrs(addrs);
  return found;
}

}  // namespace

Status OpenDevice(const std::string& name, std::uint8_t port, Device& out, std::string& why) {
  int count = 0;
  ibv_context** list = rdma_get_devices(&count);
  std::string names;
  ibv_context* context = nullptr;
  for (int i = 0; list != nullptr && i < count; ++i) {
    const char* n = ibv_get_device_name(list[i]->device);
    if (name == n) context = list[i];
    names += names.empty() ? n : std::string(" ") + n;
  }
  if (context == nullptr) {
    why = "no RDMA device " + name + "; devices: " + (names.empty() ? "none" : names);
    if (list != nullptr) rdma_free_devices(list);
    return Status(Code::kInvalidParameter);
  }
  Device device;
  device.list = list;
  device.context = context;
  device.port = port;
  device.name = name;
  if (ibv_query_device(context, &device.attr) != 0 || ibv_query_port(context, port, &device.port_attr) != 0) {
    why = "RDMA device " + name + " has no port " + std::to_string(port);
    rdma_free_devices(list);
    return Status(Code::kInvalidParameter);
  }
  if (!FindAddress(context, device.address)) {
    why = "no IPv4 address of this machine belongs to RDMA device " + name;
    rdma_free_devices(list);
    return Status(Code::kInvalidParameter);
  }
  out = device;
  return Status::Ok();
}

void CloseDevice(Device& device) {
  if (device.list != nullptr) rdma_free_devices(device.list);
  device.list = nullptr;
  device.context = nullptr;
}

Capabilities CapabilitiesOf(const Device& device, bool busy_poll) {
  const ibv_device_attr& a = device.attr;
  auto u32 = [](auto v) { return static_cast<std::uint32_t>(std::max<long long>(0, v)); };
  Capabilities c;
  c.receive_model = ReceiveModel::kDevice;
  c.device_memory_keys = true;
  c.rdma_read = true;
  c.busy_poll = busy_poll;
  c.srq = a.max_srq > 0;
  c.srq_resize = (a.device_cap_flags & IBV_DEVICE_SRQ_RESIZE) != 0;
  c.srq_limit = c.srq;
  c.recv_solicited_known = false;  // ibv_wc carries no solicited-event flag
  // iWARP has no RNR NAK: a Send that finds no receive buffer terminates the connection.
  c.rnr_waits = device.context->device->transport_type != IBV_TRANSPORT_IWARP;
  c.max_endpoints = u32(a.max_qp);
  c.max_send_work = u32(a.max_qp_wr);
  c.max_recv_work = u32(a.max_qp_wr);
  c.max_segments = u32(a.max_sge);
  c.max_message_size = device.port_attr.max_msg_sz;
  c.max_rdma_size = device.port_attr.max_msg_sz;
  // The port's active MTU in bytes (IBV_MTU_256 = 1 ... IBV_MTU_4096 = 5): what DAT_IB_TRANSPORT_MTU
  // reports, and stock dtestsrq sizes its buffers from when not given -b.
  const int mtu = static_cast<int>(device.port_attr.active_mtu);
  if (mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096) c.transport_mtu = 128u << mtu;
  c.max_private_data = MaxPrivateData(device.context->device->transport_type);
  c.max_rdma_read_in = u32(a.max_qp_rd_atom);
  c.max_rdma_read_out = u32(a.max_qp_init_rd_atom);
  c.max_srq_work = u32(a.max_srq_wr);
  c.max_srq_segments = u32(a.max_srq_sge);
  // The port's active MTU in bytes (IBV_MTU_256 is 1 ... IBV_MTU_4096 5): DAT_IB_TRANSPORT_MTU, and a
  // UD datagram's largest payload.
  c.transport_mtu = 128u << std::clamp<int>(device.port_attr.active_mtu, 1, 5);
  // The DAT IB extensions the device carries: RDMA Write with immediate data on InfiniBand and
  // RoCE (iWARP has no immediate; siw none), atomics where the device says so (rxe does, siw not).
  // What it lacks the IA reports FALSE and core refuses, saying why.
  const bool infiniband = device.context->device->transport_type == IBV_TRANSPORT_IB;
  c.immediate_data = infiniband;
  c.atomics = a.atomic_cap != IBV_ATOMIC_NONE;
  // UD QPs (verbs_ud.h), datagrams of one MTU, completed by the device like any send.
  c.datagrams = infiniband;
  c.max_datagram = c.datagrams ? c.transport_mtu : 0;
  return c;
}

WorkStatus FromWcStatus(ibv_wc_status status) {
  switch (status) {
    case IBV_WC_SUCCESS: return WorkStatus::kSuccess;
    case IBV_WC_WR_FLUSH_ERR: return WorkStatus::kFlushed;
    case IBV_WC_REM_ACCESS_ERR: return WorkStatus::kRemoteAccess;
    case IBV_WC_LOC_LEN_ERR: return WorkStatus::kLocalLength;
    case IBV_WC_LOC_PROT_ERR: return WorkStatus::kLocalProtection;
    case IBV_WC_RNR_RETRY_EXC_ERR: return WorkStatus::kReceiverNotReady;
    case IBV_WC_REM_OP_ERR: return WorkStatus::kRemoteResponder;
    case IBV_WC_REM_INV_REQ_ERR: return WorkStatus::kRemoteResponder;  // e.g. a misaligned atomic
    default: return WorkStatus::kTransport;
  }
}

}  // namespace softdat::transport::verbs
