#pragma once
// Running mlpo-run as a child process: start it (output to a file), kill it, wait for it.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace mlpo::train::test {

class Child {
 public:
  // Starts argv[0] with `env` ("NAME=value") added, stdout+stderr to `output`.
  Child(const std::vector<std::string>& argv, const std::vector<std::string>& env,
        const std::string& output) {
    pid_ = ::fork();
    if (pid_ == 0) {
      const int fd = ::open(output.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> args;
      for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0 && !done_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // True (and the raw status in status()) once it has exited; never blocks.
  bool exited() {
    if (done_) return true;
    if (::waitpid(pid_, &status_, WNOHANG) == pid_) done_ = true;
    return done_;
  }
  int wait() {
    if (!done_ && ::waitpid(pid_, &status_, 0) == pid_) done_ = true;
    return status_;
  }
  void kill9() { ::kill(pid_, SIGKILL); }
  int status() const { return status_; }

 private:
  pid_t pid_ = -1;
  int status_ = 0;
  bool done_ = false;
};

// Runs to completion; returns the exit code (128 + signal when killed).
inline int run_to_end(const std::vector<std::string>& argv, const std::string& output,
                      const std::vector<std::string>& env = {}) {
  Child c(argv, env, output);
  const int st = c.wait();
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

}  // namespace mlpo::train::test
