#include "simulator/simulation_process.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/error.hpp"

namespace mlpo::sim {

namespace {

struct Child {
  pid_t pid = -1;
  int fd = -1;
};

void write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

Child start(const std::function<Json()>& job) {
  int fds[2];
  if (::pipe(fds) != 0) throw std::runtime_error("pipe: " + errno_text(errno));
  std::fflush(nullptr);  // or the child would flush the parent's buffered output again
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error("fork: " + errno_text(errno));
  if (pid == 0) {
    ::close(fds[0]);
    Json out;
    try {
      out = Json{{"result", job()}};
    } catch (const Error& e) {
      out = Json{{"error", e.what()}};
    } catch (const std::exception& e) {
      out = Json{{"internal_error", e.what()}};
    }
    write_all(fds[1], out.dump());
    ::close(fds[1]);
    ::_exit(0);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

Json finish(Child child) {
  std::string text;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(child.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(child.fd);
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {}
  if (WIFSIGNALED(status))
    throw std::runtime_error("simulation process died with signal " + std::to_string(WTERMSIG(status)));
  Json out = Json::parse(text, nullptr, false);
  if (out.is_discarded() || !out.is_object())
    throw std::runtime_error("simulation process returned no result (exit status " +
                             std::to_string(WEXITSTATUS(status)) + ")");
  if (out.contains("error")) throw Error(out["error"].get<std::string>());
  if (out.contains("internal_error")) throw std::runtime_error(out["internal_error"].get<std::string>());
  return out["result"];
}

}  // namespace

std::vector<Json> run_in_children(const std::vector<std::function<Json()>>& jobs, int parallel) {
  if (parallel < 1) parallel = 1;
  std::vector<Json> results(jobs.size());
  for (std::size_t first = 0; first < jobs.size(); first += static_cast<std::size_t>(parallel)) {
    const std::size_t last = std::min(jobs.size(), first + static_cast<std::size_t>(parallel));
    std::vector<Child> running;
    for (std::size_t i = first; i < last; ++i) running.push_back(start(jobs[i]));
    // Collect every child of the batch even if one failed, then report the first failure.
    std::exception_ptr failure;
    for (std::size_t i = first; i < last; ++i) {
      try {
        results[i] = finish(running[i - first]);
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
    }
    if (failure) std::rethrow_exception(failure);
  }
  return results;
}

}  // namespace mlpo::sim
