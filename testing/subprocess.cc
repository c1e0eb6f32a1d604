// SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
// fork/exec with a pipe and a deadline; the child gets its own process group so a timeout kills
// everything it started. Nothing between fork and exec allocates or takes a lock.
#include "testing/subprocess.h"

#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

// coreutils' stdbuf library (Debian's coreutils, which every system has): preloaded with
// _STDBUF_O=L it makes a child's stdout line-buffered. Stock consumers write to a pipe here, so
// their stdio buffers all of it, and a child killed at its time bound left nothing to say where it
// stopped (dtestcm's server, hung in CI, printed only its start-up lines).
constexpr const char* kLineBufferLibrary = "/usr/libexec/coreutils/libstdbuf.so";

// argv[0] as execve needs it: a path, found in PATH when it has no '/'.
std::string ResolveProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  for (std::size_t start = 0; start <= dirs.size();) {
    std::size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::string candidate = (end > start ? dirs.substr(start, end - start) : ".") + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return name;  // execve fails and the child exits 127, as a shell would
}

}  // namespace

int SpawnProcess(const std::vector<std::string>& argv,
                 const std::vector<std::pair<std::string, std::string>>& env, int stdin_fd, int stdout_fd) {
  if (argv.empty()) throw std::invalid_argument("SpawnProcess: empty argv");
  // The environment, whole, before fork: setenv in the child would allocate.
  std::vector<std::pair<std::string, std::string>> overrides;
  std::string preload = SanitizerRuntime();
  if (!preload.empty()) {
    // The stock consumers' own leaks are not ours to report.
    overrides.emplace_back("ASAN_OPTIONS", "detect_leaks=0");
  }
  if (access(kLineBufferLibrary, R_OK) == 0) {
    // After the sanitizer runtime, which must come first.
    preload += preload.empty() ? kLineBufferLibrary : std::string(":") + kLineBufferLibrary;
    overrides.emplace_back("_STDBUF_O", "L");
  }
  if (!preload.empty()) overrides.emplace_back("LD_PRELOAD", preload);
  overrides.insert(overrides.end(), env.begin(), env.end());
  std::vector<std::string> entries;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& [key, value] : overrides) replaced |= key == name;
    if (!replaced) entries.push_back(entry);
  }
  for (const auto& [key, value] : overrides) {
    std::erase_if(entries, [&](const std::string& e) { return e.rfind(key + "=", 0) == 0; });
    entries.push_back(key + "=" + value);
  }
  std::vector<char*> envp;
  for (std::string& entry : entries) envp.push_back(entry.data());
  envp.push_back(nullptr);
  const std::string program = ResolveProgram(argv[0]);
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const int devnull = stdin_fd < 0 ? open("/dev/null", O_RDONLY | O_CLOEXEC) : -1;

  const pid_t pid = fork();
  if (pid == 0) {
    // Async-signal-safe calls only from here to execve.
    setpgid(0, 0);
    if (stdout_fd >= 0) {
      dup2(stdout_fd, STDOUT_FILENO);
      dup2(stdout_fd, STDERR_FILENO);
    }
    const int input = stdin_fd >= 0 ? stdin_fd : devnull;
    if (input >= 0) dup2(input, STDIN_FILENO);
    execve(program.c_str(), args.data(), envp.data());
    _exit(127);
  }
  if (devnull >= 0) close(devnull);
  if (pid > 0) setpgid(pid, pid);
  return pid;
}

SubprocessResult RunSubprocess(const std::vector<std::string>& argv,
                               const std::vector<std::pair<std::string, std::string>>& env,
                               std::chrono::milliseconds time_bound) {
  if (argv.empty()) throw std::invalid_argument("RunSubprocess: empty argv");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  const pid_t pid = SpawnProcess(argv, env, -1, fds[1]);
  if (pid < 0) throw std::runtime_error("fork failed");
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
