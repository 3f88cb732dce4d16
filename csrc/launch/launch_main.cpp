// pyprof-profile: the `pyprof profile` launcher (pyprof/cli.py execs it as "pyprof profile").
//
// It checks everything it can before starting anything (options, output directory, command,
// collector library, databases of an earlier run), then forks and execs the command with the NVTX
// collector injected through NVTX_INJECTION64_PATH, forwards termination signals to it, waits for
// it, makes sure NAME.sqlite exists (an empty database when the program made no NVTX calls), lists
// the databases the run produced and exits with the command's status (128+N if killed by signal N).
// It holds the output name for the whole run (OutputClaim), so a second run with the same NAME
// refuses instead of writing beside the first.
//
// Every error is one line on stderr, "pyprof: error: ...", with its own exit status:
//   1    pyprof could not prepare the run (output, collector, earlier databases, environment), or
//        a database could not be written completely (disk full) while the command succeeded
//   2    usage error
//   75   another `pyprof profile` is running with the same NAME (EX_TEMPFAIL: try again later)
//   126  the command exists but cannot be executed
//   127  the command was not found
#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/capture_limits.h"
#include "common/env_vars.h"
#include "launch_options.h"
#include "output_names.h"
#include "run_status.h"

extern char** environ;

namespace pyprof::launch {
namespace {

constexpr int kOutputInUse = 75;
constexpr int kCannotExecute = 126;
constexpr int kNotFound = 127;

constexpr const char* kInitSymbol = "InitializeInjectionNvtx2";
constexpr const char* kWriteEmptySymbol = "pyprof_collect_write_empty";
using WriteEmptyFn = int (*)(const char* path, const char* note);
constexpr const char* kFinishedSymbol = "pyprof_collect_database_finished";
using FinishedFn = int (*)(const char* path);
constexpr const char* kEmptyNoteSymbol = "pyprof_collect_database_is_empty_note";

// Signals the launcher passes on to the command while it runs. SIGINT is not among them: Ctrl-C
// reaches the whole foreground process group, so the command gets it anyway and the launcher
// ignores it, waiting for the command to finish its own way. A SIGTERM or SIGHUP sent to the whole
// group reaches the command twice (directly, then forwarded), and nothing tells the two apart; the
// collector holds the second one until it has finished the database (collector_finalize.cpp).
constexpr std::array<int, 5> kForwardedSignals = {SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

volatile sig_atomic_t g_child_pid = 0;

extern "C" void forward_signal(int sig) {
  const int saved_errno = errno;
  if (g_child_pid > 0) kill(static_cast<pid_t>(g_child_pid), sig);
  errno = saved_errno;
}

template <typename... Args>
int fail(int code, fmt::format_string<Args...> format, Args&&... args) {
  fmt::print(stderr, "pyprof: error: {}\n", fmt::format(format, std::forward<Args>(args)...));
  return code;
}

template <typename... Args>
void warn(fmt::format_string<Args...> format, Args&&... args) {
  fmt::print(stderr, "pyprof: warning: {}\n", fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
void note(fmt::format_string<Args...> format, Args&&... args) {
  fmt::print(stderr, "pyprof: note: {}\n", fmt::format(format, std::forward<Args>(args)...));
}

// Messages from dlerror() and the like, flattened to one line.
std::string one_line(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

int64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string current_dir() {
  std::vector<char> buf(PATH_MAX);
  while (getcwd(buf.data(), buf.size()) == nullptr) {
    if (errno != ERANGE) return ".";
    buf.resize(buf.size() * 2);
  }
  return buf.data();
}

std::string absolute(const std::string& path) {
  if (!path.empty() && path.front() == '/') return path;
  return current_dir() + "/" + path;
}

// realpath(), or `path` made absolute when it cannot be resolved (e.g. it does not exist).
std::string canonical_or_absolute(const std::string& path) {
  if (char* resolved = realpath(path.c_str(), nullptr)) {
    std::string out(resolved);
    std::free(resolved);
    return out;
  }
  return absolute(path);
}

std::optional<std::string> own_executable_dir() {
  std::vector<char> buf(PATH_MAX + 1);
  const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
  if (n <= 0) return std::nullopt;
  std::string path(buf.data(), static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return std::nullopt;
  return slash == 0 ? "/" : path.substr(0, slash);
}

const char* env_or_null(const char* name) {
  const char* value = std::getenv(name);
  return (value != nullptr && *value != '\0') ? value : nullptr;
}

// Checks that files can be created in `dir` by creating and removing one: permission bits alone
// say nothing when running as root, or on read-only mounts. Returns 0 or an errno value.
int probe_writable(const std::string& dir) {
  std::string probe = dir + "/.pyprof-write-test.XXXXXX";
  const int fd = mkstemp(probe.data());
  if (fd < 0) return errno;
  close(fd);
  unlink(probe.c_str());
  return 0;
}

enum class Lookup { kFound, kNotFound, kNotExecutable };

struct CommandLookup {
  Lookup result = Lookup::kNotFound;
  int error = ENOENT;  // for kNotExecutable: why
};

CommandLookup check_candidate(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return {Lookup::kNotFound, err};
    return {Lookup::kNotExecutable, err};
  }
  if (S_ISDIR(st.st_mode)) return {Lookup::kNotExecutable, EISDIR};
  if (!S_ISREG(st.st_mode) || access(path.c_str(), X_OK) != 0) {
    return {Lookup::kNotExecutable, EACCES};
  }
  return {Lookup::kFound, 0};
}

// Looks `name` up the way execvp() will: as a path when it contains a slash, else in $PATH, where
// a non-executable match is only reported when no executable one follows.
CommandLookup lookup_command(const std::string& name) {
  if (name.find('/') != std::string::npos) return check_candidate(name);
  const char* path_env = std::getenv("PATH");
  const std::string_view search = path_env != nullptr ? path_env : "/bin:/usr/bin";
  CommandLookup best;
  size_t start = 0;
  while (start <= search.size()) {
    size_t end = search.find(':', start);
    if (end == std::string_view::npos) end = search.size();
    const std::string_view dir = search.substr(start, end - start);
    const CommandLookup here =
        check_candidate((dir.empty() ? std::string(".") : std::string(dir)) + "/" + name);
    if (here.result == Lookup::kFound) return here;
    if (here.result == Lookup::kNotExecutable && best.result == Lookup::kNotFound) best = here;
    start = end + 1;
  }
  return best;
}

int report_exec_error(const std::string& command, int err) {
  if (err == ENOENT || err == ENOTDIR) return fail(kNotFound, "command not found: {}", command);
  return fail(kCannotExecute, "cannot execute {}: {}", command, std::strerror(err));
}

std::string join(const std::vector<std::string>& words, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += sep;
    out += words[i];
  }
  return out;
}

// Environment variables this launcher sets for the command; inherited values are dropped.
// CUDA_INJECTION64_PATH is not among them: another CUDA tool's value is kept (see
// prepare_collector).
constexpr std::array<std::string_view, 11> kOwnedEnv = {
    env::kNvtxInjection,     env::kOutput,        env::kRootPid, env::kSessionStartMonoNs,
    env::kSessionStartUtcNs, env::kLaunchCmdline, env::kDelayNs, env::kDurationNs,
    env::kCaptureRange,      env::kCudaTrace,     env::kStatusFd};

bool is_owned_env(std::string_view entry) {
  const size_t eq = entry.find('=');
  const std::string_view key = entry.substr(0, eq);
  for (std::string_view owned : kOwnedEnv) {
    if (key == owned) return true;
  }
  return false;
}

// Writes "PYPROF_ROOT_PID=<pid>" into `buf` without allocating (runs between fork and exec).
void format_root_pid(char* buf, size_t size, pid_t pid) {
  char digits[24];
  size_t n = 0;
  auto value = static_cast<uint64_t>(pid);
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0 && n < sizeof(digits));
  size_t pos = 0;
  for (const char* c = env::kRootPid; *c != '\0' && pos + 1 < size; ++c) buf[pos++] = *c;
  if (pos + 1 < size) buf[pos++] = '=';
  while (n > 0 && pos + 1 < size) buf[pos++] = digits[--n];
  buf[pos] = '\0';
}

struct Run {
  LaunchOptions opts;
  std::string dir;     // NAME's directory, absolute
  std::string base;    // NAME's file name
  std::string prefix;  // dir + "/" + base: PYPROF_OUTPUT
  // The name this run's files start with: base, or base.rank<R> when the launcher itself runs
  // with RANK=R (one launcher per rank, e.g. under srun): then the launchers of other ranks
  // share NAME, and their files, lock and listing are theirs, not this run's.
  std::string files_base;
  std::string collector;  // absolute path of the collector library
  void* collector_handle = nullptr;
  // Set CUDA_INJECTION64_PATH to the collector (CUDA tracing on, and no other CUDA tool's
  // library already named there).
  bool inject_cuda = false;
  // The pipe on which collectors report databases they could not write completely
  // (PYPROF_STATUS_FD); -1 when it could not be created.
  int status_read_fd = -1;
  int status_write_fd = -1;
  uint64_t status_pipe_inode = 0;
};

// Deletes the databases the collector could not make usable (not even the schema fit): a file
// holding nothing would only make the next run with the same name need --force.
void remove_unusable_databases(std::vector<WriteFailure>& failures) {
  for (WriteFailure& failure : failures) {
    if (failure.usable || failure.path.empty()) continue;
    failure.removed = unlink(failure.path.c_str()) == 0 || errno == ENOENT;
    for (const char* sidecar : {"-journal", "-wal", "-shm"}) {
      unlink((failure.path + sidecar).c_str());
    }
  }
}

// Creates the status pipe. Both ends are non-blocking: a collector never waits for the launcher,
// and the launcher reads what is there once the command has exited. The write end is close-on-
// exec here and made inheritable in the child only.
void open_status_pipe(Run& run) {
  std::array<int, 2> fds{};
  if (pipe2(fds.data(), O_CLOEXEC | O_NONBLOCK) != 0) {
    warn(
        "cannot create a pipe ({}); a database that cannot be written completely is only "
        "reported by the program's own messages",
        std::strerror(errno));
    return;
  }
  struct stat st {};
  fstat(fds[1], &st);
  run.status_read_fd = fds[0];
  run.status_write_fd = fds[1];
  run.status_pipe_inode = static_cast<uint64_t>(st.st_ino);
}

// The reports collectors wrote, one line each (format: env::kStatusFd).
std::vector<WriteFailure> read_write_failures(Run& run) {
  if (run.status_read_fd < 0) return {};
  close(run.status_write_fd);
  run.status_write_fd = -1;
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(run.status_read_fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF, or EAGAIN: a process still holding the pipe has not written
    text.append(buffer, static_cast<size_t>(n));
  }
  close(run.status_read_fd);
  run.status_read_fd = -1;
  return parse_write_failures(text);
}

// One error line per incomplete database: why (naming the file) and what it still holds.
void report_write_failures(const std::vector<WriteFailure>& failures) {
  for (const WriteFailure& failure : failures) {
    const std::string reason =
        failure.reason.empty() ? "cannot write " + failure.path : failure.reason;
    if (failure.usable) {
      fmt::print(stderr,
                 "pyprof: error: {}; kept {} ranges, {} marks and {} kernels; dropped {} NVTX "
                 "events and {} CUDA records\n",
                 reason, failure.ranges, failure.marks, failure.kernels, failure.events_dropped,
                 failure.cuda_dropped);
    } else {
      fmt::print(stderr, "pyprof: error: {}; nothing usable was kept{}\n", reason,
                 failure.removed ? " (the file was removed)" : "");
    }
  }
}

int prepare_output(Run& run) {
  const OutputName name = split_output_name(run.opts.output);
  if (name.base == "." || name.base == "..") {
    return fail(kUsageError, "--output needs a file name, not '{}'", run.opts.output);
  }
  if (const int err = probe_writable(name.dir); err != 0) {
    return fail(kFailure, "cannot write to output directory {}: {}", name.dir, std::strerror(err));
  }
  run.dir = canonical_or_absolute(name.dir);
  run.base = name.base;
  run.prefix = (run.dir == "/" ? "" : run.dir) + "/" + run.base;
  run.files_base = run_files_base(run.base, std::getenv(env::kRank));
  return 0;
}

int prepare_collector(Run& run) {
  if (const char* from_env = env_or_null(env::kCollector)) {
    run.collector = absolute(from_env);  // as given, so that messages name what the user set
  } else {
    const std::optional<std::string> exe_dir = own_executable_dir();
    if (!exe_dir) {
      return fail(kFailure,
                  "cannot find the collector library: /proc/self/exe is unreadable "
                  "(set {} to its path)",
                  env::kCollector);
    }
    // Resolve the package directory (which exists) so that messages show a clean path even
    // when the library is missing.
    run.collector = canonical_or_absolute(*exe_dir + "/..") + "/lib/libpyprof_collect.so";
    run.collector = canonical_or_absolute(run.collector);
  }

  // NVTX loads one injection library per process: another tool (e.g. Nsight Systems) already
  // owns it unless the variable names our collector (as in a nested `pyprof profile`).
  if (const char* existing = env_or_null(env::kNvtxInjection)) {
    if (canonical_or_absolute(existing) != canonical_or_absolute(run.collector)) {
      return fail(kFailure,
                  "{} is already set to {} (another NVTX tool, e.g. Nsight Systems?); a process "
                  "can load only one NVTX injection library, so unset it or run pyprof outside "
                  "that tool",
                  env::kNvtxInjection, existing);
    }
  }

  dlerror();
  run.collector_handle = dlopen(run.collector.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (run.collector_handle == nullptr) {
    std::string why = one_line(dlerror());
    // dlerror() usually starts with the path again.
    if (why.rfind(run.collector + ": ", 0) == 0) why.erase(0, run.collector.size() + 2);
    return fail(kFailure, "cannot load the collector library {}: {}", run.collector, why);
  }
  dlerror();
  if (dlsym(run.collector_handle, kInitSymbol) == nullptr) {
    const char* error = dlerror();
    std::string why = error != nullptr ? one_line(error) : std::string(kInitSymbol) + " is null";
    if (const size_t undefined = why.find("undefined symbol"); undefined != std::string::npos) {
      why.erase(0, undefined);  // drop the (resolved) path dlerror() starts with
    }
    return fail(kFailure, "{} is not an NVTX injection library: {}", run.collector, why);
  }

  // The CUDA driver loads one injection library too. Another tool's stays (it may be what the
  // user wants profiled), and only NVTX ranges are recorded then.
  run.inject_cuda = run.opts.cuda_trace;
  if (const char* existing = env_or_null(env::kCudaInjection);
      existing != nullptr && run.opts.cuda_trace &&
      canonical_or_absolute(existing) != canonical_or_absolute(run.collector)) {
    fmt::print(stderr,
               "pyprof: {} is already set to {} (another CUDA tool); pyprof records NVTX ranges "
               "only, no CUDA kernels\n",
               env::kCudaInjection, existing);
    run.inject_cuda = false;
  }
  return 0;
}

// Claims NAME for this run, or refuses when another run holds it: it is writing these files now,
// so even --force must not delete them.
int claim_output(const Run& run, OutputClaim& claim) {
  switch (claim.claim(run.dir, run.files_base)) {
    case OutputClaim::Outcome::kClaimed:
      return 0;
    case OutputClaim::Outcome::kInUse: {
      const std::string holder =
          claim.holder_pid() > 0 ? fmt::format(" (pid {})", claim.holder_pid()) : "";
      return fail(kOutputInUse,
                  "another pyprof profile{} is writing the databases of -o {} ({}*.sqlite) now; "
                  "wait for it to end or choose another -o NAME",
                  holder, run.prefix, run.prefix + run.files_base.substr(run.base.size()));
    }
    case OutputClaim::Outcome::kUnsupported:
      warn("cannot lock {} ({}): a second run with the same -o NAME would not be refused",
           claim.lock_path(), std::strerror(claim.error()));
      return 0;
    case OutputClaim::Outcome::kFailed:
      break;
  }
  return fail(kFailure, "cannot lock {}: {}", claim.lock_path(), std::strerror(claim.error()));
}

// Whether the earlier run's files are one empty database the launcher wrote (and no sidecar
// with anything in it): pyprof_collect_database_is_empty_note says so for the database.
bool only_empty_databases(const Run& run, const std::vector<std::string>& earlier) {
  using EmptyNoteFn = int (*)(const char* path);
  const auto is_empty_note =
      reinterpret_cast<EmptyNoteFn>(dlsym(run.collector_handle, kEmptyNoteSymbol));
  if (is_empty_note == nullptr) return false;
  int databases = 0;
  for (const std::string& name : earlier) {
    const std::string path = run.dir + "/" + name;
    if (classify_run_file(name, run.files_base) == RunFileKind::kSidecar) {
      struct stat st {};
      if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 0) return false;
      continue;
    }
    if (is_empty_note(path.c_str()) != 1) return false;
    ++databases;
  }
  return databases == 1;
}

// Refuses to mix with an earlier run's databases, or deletes them (with their SQLite sidecars)
// under --force. One empty database an earlier run left is replaced without --force.
int handle_earlier_run(const Run& run) {
  std::vector<std::string> earlier;
  if (!list_run_files(run.dir, run.files_base, /*with_sidecars=*/true, earlier)) {
    return fail(kFailure, "cannot read output directory {}: {}", run.dir, std::strerror(errno));
  }
  if (earlier.empty()) return 0;
  if (!run.opts.force && only_empty_databases(run, earlier)) {
    // An earlier run whose program made no NVTX call (often: options given after the command)
    // left an empty database; it holds nothing, so it does not make the next try need --force.
    note("replacing the empty {}/{} an earlier run left (its program made no NVTX calls)", run.dir,
         earlier.front());
  } else if (!run.opts.force) {
    constexpr size_t kShown = 3;
    std::string shown;
    for (size_t i = 0; i < earlier.size() && i < kShown; ++i) {
      shown += (i > 0 ? ", " : "") + run.dir + "/" + earlier[i];
    }
    if (earlier.size() > kShown) shown += fmt::format(" and {} more", earlier.size() - kShown);
    return fail(kFailure, "output of an earlier run exists: {} (use --force to overwrite)", shown);
  }
  for (const std::string& name : earlier) {
    const std::string path = run.dir + "/" + name;
    if (unlink(path.c_str()) != 0 && errno != ENOENT) {
      return fail(kFailure, "cannot delete {}: {}", path, std::strerror(errno));
    }
  }
  return 0;
}

// Builds the command's environment: ours minus kOwnedEnv, plus the session variables. The
// PYPROF_ROOT_PID entry points into `root_pid_buf`, which the child fills in after fork.
std::vector<std::string> session_env(const Run& run, int64_t mono_ns, int64_t utc_ns) {
  std::vector<std::string> entries;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (!is_owned_env(*entry)) entries.emplace_back(*entry);
  }
  const auto set = [&entries](std::string_view name, const auto& value) {
    entries.push_back(fmt::format("{}={}", name, value));
  };
  set(env::kNvtxInjection, run.collector);
  set(env::kOutput, run.prefix);
  set(env::kSessionStartMonoNs, mono_ns);
  set(env::kSessionStartUtcNs, utc_ns);
  set(env::kLaunchCmdline, join(run.opts.command, " "));
  if (run.opts.delay_ns) set(env::kDelayNs, *run.opts.delay_ns);
  if (run.opts.duration_ns) set(env::kDurationNs, *run.opts.duration_ns);
  if (run.opts.capture_range_cuda_profiler) set(env::kCaptureRange, "cudaProfilerApi");
  if (!run.opts.cuda_trace) set(env::kCudaTrace, "0");
  if (run.status_write_fd >= 0) {
    set(env::kStatusFd, fmt::format("{}:{}", run.status_write_fd, run.status_pipe_inode));
  }
  if (run.inject_cuda) {
    const std::string inherited = fmt::format("{}=", env::kCudaInjection);
    std::erase_if(entries,
                  [&inherited](const std::string& entry) { return entry.starts_with(inherited); });
    set(env::kCudaInjection, run.collector);
  }
  return entries;
}

// Runs the command and returns its wait status, or nullopt after printing why it did not run
// (`exit_code` then holds the launcher's status).
std::optional<int> run_command(const Run& run, int& exit_code) {
  const std::vector<std::string>& command = run.opts.command;
  std::vector<char*> argv;
  for (const std::string& word : command) argv.push_back(const_cast<char*>(word.c_str()));
  argv.push_back(nullptr);

  const int64_t mono_ns = clock_ns(CLOCK_MONOTONIC);
  const int64_t utc_ns = clock_ns(CLOCK_REALTIME);
  const std::vector<std::string> env = session_env(run, mono_ns, utc_ns);
  std::array<char, 64> root_pid_buf{};
  std::vector<char*> envp;
  for (const std::string& entry : env) envp.push_back(const_cast<char*>(entry.c_str()));
  envp.push_back(root_pid_buf.data());
  envp.push_back(nullptr);

  // The child reports a failed exec through this pipe; a successful exec closes it (CLOEXEC).
  std::array<int, 2> exec_pipe{};
  if (pipe2(exec_pipe.data(), O_CLOEXEC) != 0) {
    exit_code = fail(kFailure, "pipe: {}", std::strerror(errno));
    return std::nullopt;
  }

  // Block the signals we handle until the handlers know the child's pid.
  sigset_t handled;
  sigset_t old_mask;
  sigemptyset(&handled);
  for (int sig : kForwardedSignals) sigaddset(&handled, sig);
  sigaddset(&handled, SIGINT);
  sigprocmask(SIG_BLOCK, &handled, &old_mask);

  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    exit_code = fail(kFailure, "fork: {}", std::strerror(err));
    return std::nullopt;
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls from here to exec. Its signal dispositions are still
    // the inherited ones; restore the inherited mask too.
    close(exec_pipe[0]);
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    format_root_pid(root_pid_buf.data(), root_pid_buf.size(), getpid());
    if (run.status_write_fd >= 0) fcntl(run.status_write_fd, F_SETFD, 0);  // PYPROF_STATUS_FD
    execvpe(argv[0], argv.data(), envp.data());
    const int err = errno;
    [[maybe_unused]] const ssize_t n = write(exec_pipe[1], &err, sizeof(err));
    _exit(kNotFound);
  }

  g_child_pid = pid;
  struct sigaction forward {};
  forward.sa_handler = forward_signal;
  sigemptyset(&forward.sa_mask);
  forward.sa_flags = 0;  // no SA_RESTART: waitpid() sees EINTR and loops
  std::array<struct sigaction, kForwardedSignals.size()> old_actions{};
  for (size_t i = 0; i < kForwardedSignals.size(); ++i) {
    sigaction(kForwardedSignals[i], &forward, &old_actions[i]);
  }
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  struct sigaction old_int {};
  sigaction(SIGINT, &ignore, &old_int);
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);

  close(exec_pipe[1]);
  int exec_error = 0;
  ssize_t got = 0;
  do {
    got = read(exec_pipe[0], &exec_error, sizeof(exec_error));
  } while (got < 0 && errno == EINTR);
  close(exec_pipe[0]);

  // Wait without reaping, so the pid cannot be reused while a handler may still signal it.
  siginfo_t info{};
  while (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0) {
    if (errno != EINTR) break;
  }
  sigprocmask(SIG_BLOCK, &handled, nullptr);
  g_child_pid = 0;
  int status = 0;
  pid_t reaped = -1;
  do {
    reaped = waitpid(pid, &status, 0);
  } while (reaped < 0 && errno == EINTR);
  const int wait_error = errno;
  // Back to the inherited handling: a signal from now on acts on the launcher itself.
  for (size_t i = 0; i < kForwardedSignals.size(); ++i) {
    sigaction(kForwardedSignals[i], &old_actions[i], nullptr);
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);

  if (got == static_cast<ssize_t>(sizeof(exec_error))) {
    exit_code = report_exec_error(command.front(), exec_error);
    return std::nullopt;
  }
  if (reaped != pid) {
    exit_code = fail(kFailure, "waitpid: {}", std::strerror(wait_error));
    return std::nullopt;
  }
  return status;
}

// How many databases besides the root one this run's processes wrote (a launcher's workers:
// torchrun's ranks, multiprocessing children). Files older than the launch are another run's.
int child_databases(const Run& run, int64_t launch_coarse_ns) {
  std::vector<std::string> names;
  if (!list_run_files(run.dir, run.files_base, /*with_sidecars=*/false, names)) return 0;
  const std::string root_name = root_database_name(run.base, std::getenv(env::kRank));
  constexpr int64_t kSlackNs = 2'000'000'000;  // coarse file-system clocks
  int count = 0;
  for (const std::string& name : names) {
    struct stat st {};
    if (name == root_name || stat((run.dir + "/" + name).c_str(), &st) != 0) continue;
    const int64_t mtime_ns =
        static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    count += mtime_ns + kSlackNs >= launch_coarse_ns ? 1 : 0;
  }
  return count;
}

// "-o, --force": our options found after the command (LaunchOptions::options_after_command).
std::string misplaced_text(const LaunchOptions& opts) {
  std::string text;
  for (const std::string& o : opts.options_after_command) text += (text.empty() ? "" : ", ") + o;
  return text;
}

// Makes sure NAME.sqlite exists: a program that never made an NVTX call never loaded the
// collector, so nothing wrote it.
void ensure_root_database(const Run& run, int status, int64_t launch_coarse_ns) {
  const char* rank = std::getenv(env::kRank);
  const std::string root = root_database_name(run.prefix, rank);
  struct stat st {};
  if (stat(root.c_str(), &st) == 0) {
    // The collector creates its file empty and the writer thread adds the schema moments
    // later; a program killed in between leaves 0 bytes. Replace that with a valid database.
    if (st.st_size != 0 || unlink(root.c_str()) != 0) return;
  }
  const std::string shown = root_database_name(run.opts.output, rank);

  std::string note;
  std::string why;
  if (WIFSIGNALED(status)) {
    note = fmt::format("the program was killed by signal {} before writing its database",
                       WTERMSIG(status));
    why = fmt::format("the program was killed by signal {} ({}) before writing {}",
                      WTERMSIG(status), strsignal(WTERMSIG(status)), shown);
  } else {
    note = "the program made no NVTX calls";
    why = "the program made no NVTX calls (did it call pyprof.init()?)";
    if (!run.opts.options_after_command.empty()) {
      why += fmt::format("; {} after the command went to the program, not to pyprof profile",
                         misplaced_text(run.opts));
    }
  }
  // A launcher (torchrun, a multiprocessing parent) whose child processes profiled themselves:
  // expected, so a note rather than a warning.
  const int children = WIFSIGNALED(status) ? 0 : child_databases(run, launch_coarse_ns);
  if (children > 0) {
    note = "the launching process made no NVTX calls; its child processes wrote their own";
    why = "the launching process made no NVTX calls";
  }

  dlerror();
  auto write_empty = reinterpret_cast<WriteEmptyFn>(dlsym(run.collector_handle, kWriteEmptySymbol));
  if (write_empty == nullptr) {
    warn("{}; the collector {} has no {}(), so no {} was written", why, run.collector,
         kWriteEmptySymbol, shown);
    return;
  }
  if (const int rc = write_empty(root.c_str(), note.c_str()); rc != 0) {
    warn("{}; writing an empty {} failed ({}() returned {})", why, shown, kWriteEmptySymbol, rc);
    return;
  }
  if (children > 0) {
    fmt::print(stderr,
               "pyprof: note: the launching process made no NVTX calls; its child processes "
               "wrote {} database{} (below); {} is empty\n",
               children, children == 1 ? "" : "s", shown);
    return;
  }
  warn("{}; wrote an empty {}", why, shown);
}

// Lists the databases this run wrote: the root one first, then the others by name.
void report_databases(const Run& run, int64_t launch_coarse_ns) {
  std::vector<std::string> names;
  if (!list_run_files(run.dir, run.files_base, /*with_sidecars=*/false, names)) {
    warn("cannot list {}: {}", run.dir, std::strerror(errno));
    return;
  }
  const std::string root_name = root_database_name(run.base, std::getenv(env::kRank));
  std::stable_partition(names.begin(), names.end(),
                        [&](const std::string& name) { return name == root_name; });
  // Earlier files were refused or deleted before the launch and a concurrent run with the same
  // NAME refused, so the mtime test only guards against other writers; allow for coarse
  // file-system clocks.
  constexpr int64_t kSlackNs = 2'000'000'000;
  // A process killed before its collector finished (SIGKILL, the OOM killer, a DataLoader
  // worker whose own SIGTERM handler replaced the collector's) leaves a file without its final
  // record: say so here, where the user looks, not only when parse reads it.
  dlerror();
  auto finished = run.collector_handle != nullptr
                      ? reinterpret_cast<FinishedFn>(dlsym(run.collector_handle, kFinishedSymbol))
                      : nullptr;
  int unfinished = 0;
  int children = 0;
  for (const std::string& name : names) {
    const std::string path = run.dir + "/" + name;
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) continue;
    const int64_t mtime_ns =
        static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    if (mtime_ns + kSlackNs < launch_coarse_ns) continue;
    children += name.find(".pid") != std::string::npos ? 1 : 0;
    const bool cut_short = finished != nullptr && finished(path.c_str()) == 0;
    unfinished += cut_short ? 1 : 0;
    fmt::print(stderr, "pyprof: {} ({} bytes){}\n", path, static_cast<int64_t>(st.st_size),
               cut_short ? " UNFINISHED" : "");
  }
  if (children > 0) {
    // DataLoader workers and other forked processes: each file is a profile of its own.
    fmt::print(stderr,
               "pyprof: note: the .pid<P> file{0} {1} the program's child process{2} (DataLoader "
               "workers, multiprocessing): each is a profile of its own, not a rank; "
               "`pyprof parse FILE -o worker.dict` and `pyprof prof --report op worker.dict` "
               "show its work (a DataLoader worker's: the dataset's __getitem__ and collate); "
               "docs/formats.md §2\n",
               children == 1 ? "" : "s", children == 1 ? "is" : "are", children == 1 ? "" : "es");
  }
  if (unfinished > 0) {
    static_assert(kEventsPerThreadChunk == 4096, "the message below quotes the chunk size");
    warn("{}; `pyprof parse` reads what is there and says so",
         unfinished == 1
             ? std::string("1 database is UNFINISHED: its process ended before its collector "
                           "finished the file (killed?), so each of its threads' last events (up "
                           "to 4,096) are missing")
             : fmt::format("{} databases are UNFINISHED: their processes ended before their "
                           "collectors finished the files (killed?), so each of their threads' "
                           "last events (up to 4,096) are missing",
                           unfinished));
  }
}

int profile_main(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  const std::string prog_name = (argc > 0 && argv[0][0] != '\0') ? argv[0] : "pyprof profile";
  ParseOutcome parsed = parse_launch_options(args, prog_name);
  if (!parsed.options) return parsed.exit_code;

  Run run;
  run.opts = std::move(*parsed.options);
  if (const int rc = prepare_output(run); rc != 0) return rc;

  const CommandLookup lookup = lookup_command(run.opts.command.front());
  if (lookup.result != Lookup::kFound) {
    return report_exec_error(run.opts.command.front(), lookup.error);
  }

  if (const int rc = prepare_collector(run); rc != 0) return rc;
  OutputClaim claim;  // held until the databases are listed
  if (const int rc = claim_output(run, claim); rc != 0) return rc;
  if (const int rc = handle_earlier_run(run); rc != 0) return rc;

  if (!run.opts.options_after_command.empty()) {
    // `pyprof profile python train.py -o run`: every word after the command is the command's.
    fmt::print(stderr,
               "pyprof: note: {} after the command go{} to the program, not to pyprof profile "
               "(its options go before the command: pyprof profile [OPTIONS] -- CMD ...); "
               "recording into {}.sqlite\n",
               misplaced_text(run.opts), run.opts.options_after_command.size() == 1 ? "es" : "",
               run.opts.output);
  }
  const int64_t launch_coarse_ns = clock_ns(CLOCK_REALTIME_COARSE);
  open_status_pipe(run);
  int exit_code = 0;
  const std::optional<int> status = run_command(run, exit_code);
  std::vector<WriteFailure> failures = read_write_failures(run);
  if (!status) return exit_code;
  remove_unusable_databases(failures);

  // A root database the collector failed to write is no sign of a program without NVTX calls:
  // replacing it with an empty one would hide the failure.
  const std::string root = root_database_name(run.prefix, std::getenv(env::kRank));
  if (std::none_of(failures.begin(), failures.end(),
                   [&root](const WriteFailure& failure) { return failure.path == root; })) {
    ensure_root_database(run, *status, launch_coarse_ns);
  }
  report_databases(run, launch_coarse_ns);
  report_write_failures(failures);
  return launcher_exit_status(exit_status_of(*status), !failures.empty());
}

}  // namespace
}  // namespace pyprof::launch

int main(int argc, char** argv) { return pyprof::launch::profile_main(argc, argv); }
