// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Building the DAT IB extension events (dat_ib_extensions.h): a completion of an extension DTO,
// or a receive completion that carries extension data (immediate data, a datagram's source), is
// a DAT_IB_DTO_EVENT whose DTO data is the usual one and whose extension words hold a
// DAT_IB_EXTENSION_EVENT_DATA; a UD endpoint's connection events are DAT_IB_UD_CONNECTION_*
// events with the peer's address handle there. As OFED DAPL reports them.
#pragma once

#include <cstring>

#include "core/dat_ib.h"

namespace softdat::core {

// The extension data of `event`, copied out and back (the words are DAT_UINT64s).
inline DAT_IB_EXTENSION_EVENT_DATA ExtensionData(const DAT_EVENT& event) {
  DAT_IB_EXTENSION_EVENT_DATA data;
  std::memcpy(&data, event.event_extension_data, sizeof data);
  return data;
}
inline void SetExtensionData(DAT_EVENT& event, const DAT_IB_EXTENSION_EVENT_DATA& data) {
  std::memcpy(event.event_extension_data, &data, sizeof data);
}

// Whether a DTO operation is one of the extension's (its completion is a DAT_IB_DTO_EVENT).
inline bool IsExtensionDto(DAT_DTOS operation) { return operation >= DAT_DTO_EXTENSION_BASE; }

// The extension type a completed extension DTO reports (DAT_IB_EXTENSION_EVENT_DATA::type).
inline DAT_IB_EXT_TYPE ExtensionTypeOf(DAT_DTOS operation) {
  switch (static_cast<int>(operation)) {
    case DAT_IB_DTO_RDMA_WRITE_IMMED: return DAT_IB_RDMA_WRITE_IMMED;
    case DAT_IB_DTO_RECV_IMMED: return DAT_IB_RDMA_WRITE_IMMED_DATA;
    case DAT_IB_DTO_FETCH_ADD: return DAT_IB_FETCH_AND_ADD;
    case DAT_IB_DTO_CMP_SWAP: return DAT_IB_CMP_AND_SWAP;
    case DAT_IB_DTO_SEND_UD: return DAT_IB_UD_SEND;
    default: return DAT_IB_UD_RECV;  // DAT_IB_DTO_RECV_UD
  }
}

// Turns a DTO completion event built by DtoEvent into the extension's: event number, extension
// type and status (the DTO status, summed up as the extension's success or error).
inline void MakeExtensionDto(DAT_EVENT& event) {
  const DAT_DTO_COMPLETION_EVENT_DATA& dto = event.event_data.dto_completion_event_data;
  event.event_number = static_cast<DAT_EVENT_NUMBER>(DAT_IB_DTO_EVENT);
  DAT_IB_EXTENSION_EVENT_DATA data = ExtensionData(event);
  data.type = ExtensionTypeOf(dto.operation);
  data.status = dto.status == DAT_DTO_SUCCESS ? DAT_OP_SUCCESS : DAT_IB_OP_ERR;
  SetExtensionData(event, data);
}

// An address handle as DAT reports it: the provider's handle, the peer's endpoint number and its
// IA address (an AF_INET sockaddr in the DAT_SOCK_ADDR6 room).
inline DAT_IB_ADDR_HANDLE MakeAddressHandle(void* handle, std::uint32_t qpn, std::uint32_t address,
                                            std::uint16_t port) {
  DAT_IB_ADDR_HANDLE ah{};
  ah.ah = static_cast<struct ibv_ah*>(handle);
  ah.qpn = qpn;
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = address;
  in.sin_port = htons(port);
  std::memcpy(&ah.ia_addr, &in, sizeof in);
  return ah;
}

}  // namespace softdat::core
