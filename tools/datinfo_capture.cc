// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// OutputCapture (datinfo_capture.h): descriptor moves with dup and dup2, the captured text in an
// unlinked temporary file.
#include "tools/datinfo_capture.h"

#include <fcntl.h>
#include <unistd.h>

namespace softdat::tools {

OutputCapture::OutputCapture() {
  std::fflush(stdout);
  const int report_fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  saved_stderr_ = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
  if (report_fd < 0 || saved_stderr_ < 0) return;  // no descriptor to spare: share stdout as before
  std::FILE* report = ::fdopen(report_fd, "w");
  if (report == nullptr) return;
  report_ = report;
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
}

OutputCapture::~OutputCapture() {
  if (report_ != stdout) std::fflush(report_);
  if (scratch_ != nullptr) std::fclose(scratch_);
}

void OutputCapture::Begin() {
  std::fflush(report_);
  std::fflush(stdout);
  std::fflush(stderr);
  if (saved_stderr_ < 0) return;
  if (scratch_ == nullptr) scratch_ = std::tmpfile();
  if (scratch_ == nullptr) return;
  const int fd = ::fileno(scratch_);
  if (::ftruncate(fd, 0) != 0 || ::lseek(fd, 0, SEEK_SET) != 0) return;
  ::dup2(fd, STDOUT_FILENO);
  ::dup2(fd, STDERR_FILENO);
}

std::string OutputCapture::End() {
  std::fflush(stdout);
  std::fflush(stderr);
  if (saved_stderr_ < 0 || scratch_ == nullptr) return "";
  ::dup2(saved_stderr_, STDERR_FILENO);
  ::dup2(saved_stderr_, STDOUT_FILENO);
  const int fd = ::fileno(scratch_);
  std::string text;
  char buffer[4096];
  ssize_t got;
  off_t at = 0;
  while ((got = ::pread(fd, buffer, sizeof buffer, at)) > 0) {
    text.append(buffer, static_cast<std::size_t>(got));
    at += got;
  }
  if (!text.empty() && text.back() != '\n') text += '\n';
  return text;
}

}  // namespace softdat::tools
