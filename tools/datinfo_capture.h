// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// datinfo owns its standard output. Other providers write to fd 1 and fd 2 while their IAs open
// (OFED's libdaplofa prints "open_hca: getaddr_netdev ERROR ..." on stdout), which would break a
// table and a JSON document alike. OutputCapture keeps the original fd 1 for the report alone,
// points fd 1 at stderr for everyone else for the rest of the run, and between Begin and End
// sends both fds to a temporary file, so what a provider says while one IA opens can be shown
// with that IA.
#pragma once

#include <cstdio>
#include <string>

namespace softdat::tools {

class OutputCapture {
 public:
  OutputCapture();
  ~OutputCapture();
  OutputCapture(const OutputCapture&) = delete;
  OutputCapture& operator=(const OutputCapture&) = delete;

  // Where datinfo's report goes: the original standard output.
  std::FILE* Report() const { return report_; }

  // From Begin to End, whatever anybody in the process writes to fd 1 or fd 2 (and the stdio
  // streams on them) is kept; End returns it and points both back (fd 1 at stderr).
  void Begin();
  std::string End();

 private:
  std::FILE* report_ = stdout;
  int saved_stderr_ = -1;
  std::FILE* scratch_ = nullptr;
};

}  // namespace softdat::tools
