// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Test helper: two hosts on one machine — two network namespaces made for this run, joined by a
// veth pair with a /30 between them — and the link between them taken down and up. Names and
// subnet are unique per process (the pid is in each). The namespaces are deleted on every way
// out: the destructor, and SIGTERM/SIGINT (Bazel's timeout) through a handler. Nothing outside
// the two namespaces is touched: the veth ends are created inside them.
//
// Needs CAP_NET_ADMIN and CAP_SYS_ADMIN (ip netns add mounts /run/netns); Create() tells a
// missing permission (the caller skips, counted) from any other failure (the caller fails).
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace softdat::testing {

class VethPair {
 public:
  enum class Result { kReady, kNotPermitted, kFailed };

  VethPair();
  ~VethPair();
  VethPair(const VethPair&) = delete;
  VethPair& operator=(const VethPair&) = delete;

  // Makes both namespaces, the pair, the addresses, and brings everything up. On anything but
  // kReady, `why` says what happened.
  Result Create(std::string& why);

  const std::string& ip() const { return ip_; }  // the ip(8) binary
  const std::string& ns(int side) const { return ns_[side]; }
  const std::string& address(int side) const { return address_[side]; }
  const std::string& veth(int side) const { return veth_[side]; }
  // Sets side's veth end down or up (the other end loses or regains its carrier). "" or why not.
  std::string SetLink(int side, bool up);

 private:
  std::string ip_;
  std::string ns_[2];
  std::string veth_[2];
  std::string address_[2];
  bool created_[2] = {false, false};
};

}  // namespace softdat::testing

// In a GoogleTest body: makes `pair`, skipping the test (counted) where namespaces may not be made
// and failing it on any other setup error.
#define SOFTDAT_VETH_PAIR_OR_SKIP(pair)                                           \
  do {                                                                            \
    std::string veth_why_;                                                        \
    switch ((pair).Create(veth_why_)) {                                           \
      case ::softdat::testing::VethPair::Result::kReady: break;                  \
      case ::softdat::testing::VethPair::Result::kNotPermitted: GTEST_SKIP() << veth_why_; \
      case ::softdat::testing::VethPair::Result::kFailed: FAIL() << veth_why_;   \
    }                                                                             \
  } while (0)
