// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// What a tcp IA reports as DAT_IB_TRANSPORT_MTU (Capabilities::transport_mtu) is the payload the
// transport puts in one FPDU, so that stock dtestsrq's default buffers are sized to it.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "transport/ia_params.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/tcp/wire.h"
#include "transport/transport.h"

namespace softdat::transport::tcp {
namespace {

static_assert(kTcpFpduPayload == wire::kMaxFpduPayload, "transport.h's tcp FPDU payload is wire.h's");

TEST(TcpMtu, TransportMtuIsTheFpduPayload) {
  IaParams params;
  std::string why;
  ASSERT_TRUE(ParseIaParams("tcp 127.0.0.1", params, why).ok()) << why;
  std::unique_ptr<Transport> transport;
  ASSERT_TRUE(CreateTcpTransport(params, why, transport).ok()) << why;
  EXPECT_EQ(transport->capabilities().transport_mtu, wire::kMaxFpduPayload);
}

}  // namespace
}  // namespace softdat::transport::tcp
