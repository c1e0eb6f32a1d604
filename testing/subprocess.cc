// fork/exec with a pipe and a deadline; the child gets its own process group so a timeout kills
// everything it started.
#include "testing/subprocess.h"

#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <stdexcept>

namespace softdat::testing {
namespace {

// The sanitizer runtime this test process runs with, if any. A stock consumer is not built with
// sanitizers, so when it loads our sanitized provider the runtime has to be preloaded.
std::string SanitizerRuntime() {
  std::string found;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        const std::string name = info->dlpi_name != nullptr ? info->dlpi_name : "";
        for (const char* runtime : {"libasan.so", "libtsan.so", "libubsan.so"}) {
          if (name.find(runtime) != std::string::npos) {
            *static_cast<std::string*>(out) = name;
            return 1;
          }
        }
        return 0;
      },
      &found);
  return found;
}

}  // namespace

SubprocessResult RunSubprocess(const std::vector<std::string>& argv,
                               const std::vector<std::pair<std::string, std::string>>& env,
                               std::chrono::milliseconds time_bound) {
  if (argv.empty()) throw std::invalid_argument("RunSubprocess: empty argv");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  const std::string preload = SanitizerRuntime();
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fds[1], STDOUT_FILENO);
    dup2(fds[1], STDERR_FILENO);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    if (!preload.empty()) {
      setenv("LD_PRELOAD", preload.c_str(), 1);
      // The stock consumers' own leaks are not ours to report.
      setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
    }
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
    execvp(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);
  close(fds[1]);

  SubprocessResult result;
  const auto deadline = std::chrono::steady_clock::now() + time_bound;
  char buffer[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      result.timed_out = true;
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    const ssize_t got = read(fds[0], buffer, sizeof buffer);
    if (got > 0) {
      result.output.append(buffer, static_cast<size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      break;  // every writer closed: the child and anything it started are done writing
    }
  }
  if (result.timed_out) kill(-pid, SIGKILL);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  return result;
}

}  // namespace softdat::testing
