// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// Every DAT_RETURN softdat can return is one libdat2's dat_strerror can name: each Code with each
// Detail (parameters in every call that has them), through ToDatReturn. A consumer printing our
// failure with dat_strerror never reads "unknown error".
#include <dat2/udat.h>

#include <string>

#include <gtest/gtest.h>

#include "base/dat_names.h"
#include "dat/argument_positions.h"
#include "dat/status_map.h"

namespace softdat::dat {
namespace {

constexpr int kLastCode = static_cast<int>(Code::kAbort);
constexpr int kLastDetail = static_cast<int>(Detail::kAddressMalformed);

// Empty when dat_strerror names `value` whole, else what it said.
std::string Unnamed(DAT_RETURN value) {
  const char* major = nullptr;
  const char* minor = nullptr;
  const DAT_RETURN status = dat_strerror(value, &major, &minor);
  if (status == DAT_SUCCESS && DAT_GET_SUBTYPE(value) == 0) return "";
  if (status == DAT_SUCCESS && minor != nullptr && *minor != '\0') return "";
  return std::string(major != nullptr ? major : "(null)") + " / " + (minor != nullptr ? minor : "(null)");
}

TEST(StatusMap, DatStrerrorNamesEveryReturnSoftdatMakes) {
  int checked = 0;
  for (int code = 1; code <= kLastCode; ++code) {
    for (int detail = 0; detail <= kLastDetail; ++detail) {
      const Status status(static_cast<Code>(code), static_cast<Detail>(detail));
      std::vector<const char*> calls = {"dat_ep_connect"};
      if (ParamName(status.detail()) != nullptr) {
        calls.clear();  // a parameter detail is only ever used in a call that has the parameter
        for (const char* call : KnownCalls())
          if (ArgumentPosition(call, status.detail()) > 0) calls.push_back(call);
      }
      for (const char* call : calls) {
        const DAT_RETURN value = ToDatReturn(status, call);
        EXPECT_EQ(Unnamed(value), "") << CodeName(status.code()) << " detail " << detail << " in " << call << ": "
                                      << DatReturnText(value).text;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 2000);
}

TEST(StatusMap, AQualifierThatCannotBeUsedIsReportedInUse) {
  // DAT_CONN_QUAL_UNAVAILABLE is a DAT 2.0 code libdat2's dat_strerror does not know.
  EXPECT_EQ(ToDatReturn(Status(Code::kConnQualUnavailable), "dat_psp_create"), DAT_CONN_QUAL_IN_USE);
}

// The inline answers (success, a bare empty queue) are the table's own.
TEST(StatusMap, TheInlineAnswersAreTheTables) {
  EXPECT_EQ(ToDatReturn(Status(Code::kQueueEmpty), "dat_evd_dequeue"), DAT_QUEUE_EMPTY);
  EXPECT_EQ(ToDatReturn(Status(Code::kQueueEmpty), "dat_evd_dequeue"), MapStatus(Status(Code::kQueueEmpty), "dat_evd_dequeue"));
  EXPECT_EQ(ToDatReturn(Status::Ok(), "dat_evd_dequeue"), MapStatus(Status::Ok(), "dat_evd_dequeue"));
}

}  // namespace
}  // namespace softdat::dat
