#include "common/output_file.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace pyprof {
namespace {

std::string reason(int error_number) { return std::strerror(error_number); }

// The permissions a plain fopen() would give a new file. umask can only be read by setting
// it; the tools call open() before they start any thread, so nothing sees the moment between.
mode_t new_file_mode() {
  mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

// A hidden name beside `target` for mkstemp: ".net.dict.XXXXXX" next to "out/net.dict".
std::string temporary_template(const std::string& target) {
  size_t slash = target.rfind('/');
  std::string directory = slash == std::string::npos ? "" : target.substr(0, slash + 1);
  std::string base = slash == std::string::npos ? target : target.substr(slash + 1);
  // Room for the dot and the suffix within a file name's 255 bytes.
  constexpr size_t kMaxBase = 200;
  if (base.size() > kMaxBase) base.resize(kMaxBase);
  return directory + "." + base + ".XXXXXX";
}

// The temporaries not yet committed, for the handler of SIGINT, SIGTERM and SIGHUP to remove:
// fixed slots written before a temporary exists and cleared before it is renamed or removed,
// so the handler (which may only make async-signal-safe calls) reads them without a lock.
// Outputs beyond the slots (a tool opens a few dozen at most) are merely not removed by it.
struct TemporarySlot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 holds a temporary's path
  char path[PATH_MAX];
};
constexpr int kTemporarySlots = 256;
TemporarySlot temporary_slots[kTemporarySlots];

int register_temporary(const std::string& path) {
  if (path.size() >= PATH_MAX) return -1;
  for (int i = 0; i < kTemporarySlots; ++i) {
    int expected = 0;
    if (temporary_slots[i].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(temporary_slots[i].path, path.c_str(), path.size() + 1);
      temporary_slots[i].state.store(2);
      return i;
    }
  }
  return -1;
}

void unregister_temporary(int& slot) {
  if (slot >= 0) temporary_slots[slot].state.store(0);
  slot = -1;
}

extern "C" void remove_temporaries_and_end(int signal_number) {
  for (TemporarySlot& slot : temporary_slots) {
    if (slot.state.load() == 2) ::unlink(slot.path);
  }
  // The signal's own ending (status 128 + N to a shell), as if it had not been caught.
  std::signal(signal_number, SIG_DFL);
  ::raise(signal_number);
}

bool closed_standard_streams[3] = {false, false, false};

// (device, inode) of each protected input.
std::vector<std::pair<dev_t, ino_t>> protected_inputs;
std::vector<std::string> protected_input_names;

}  // namespace

void ignore_sigpipe() { std::signal(SIGPIPE, SIG_IGN); }

void guard_outputs() {
  ignore_sigpipe();
  for (int fd = 0; fd <= 2; ++fd) {
    if (::fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
    // open() returns the lowest free descriptor: this one.
    int null_fd = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
    if (null_fd >= 0 && null_fd != fd) {
      ::dup2(null_fd, fd);
      ::close(null_fd);
    }
    closed_standard_streams[fd] = true;
  }
  struct sigaction action {};
  action.sa_handler = remove_temporaries_and_end;
  sigemptyset(&action.sa_mask);
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction previous {};
    // A signal the parent left ignored (nohup, `cmd &` without job control) stays ignored.
    if (::sigaction(signal_number, nullptr, &previous) == 0 && previous.sa_handler == SIG_IGN) {
      continue;
    }
    ::sigaction(signal_number, &action, nullptr);
  }
}

bool standard_stream_was_closed(int fd) {
  return fd >= 0 && fd <= 2 && closed_standard_streams[fd];
}

void protect_inputs(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    struct stat st {};
    if (path.empty() || path == "-" || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      continue;
    }
    protected_inputs.emplace_back(st.st_dev, st.st_ino);
    protected_input_names.push_back(path);
  }
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : name_(std::move(other.name_)),
      target_(std::move(other.target_)),
      temporary_(std::exchange(other.temporary_, std::string())),
      temporary_slot_(std::exchange(other.temporary_slot_, -1)),
      stream_(std::exchange(other.stream_, nullptr)),
      error_number_(other.error_number_) {}

OutputFile::~OutputFile() { discard(); }

bool OutputFile::open(const std::string& path, std::string& error) {
  discard();
  error_number_ = 0;
  if (path.empty() || path == "-") {
    name_ = "standard output";
    if (standard_stream_was_closed(1)) {
      error = "cannot write standard output: it is closed (give -o FILE)";
      return false;
    }
    stream_ = stdout;
    return true;
  }
  name_ = path;
  target_ = path;
  auto open_in_place = [&] {
    stream_ = std::fopen(path.c_str(), "wb");
    if (!stream_) error = "cannot write " + name_ + ": " + reason(errno);
    return stream_ != nullptr;
  };
  struct stat existing {};
  bool exists = ::stat(path.c_str(), &existing) == 0;
  // A device, a FIFO or /dev/stdout is the destination itself, not a name to replace.
  if (exists && !S_ISREG(existing.st_mode)) return open_in_place();
  for (size_t i = 0; exists && i < protected_inputs.size(); ++i) {
    if (protected_inputs[i] == std::make_pair(existing.st_dev, existing.st_ino)) {
      error = "cannot write " + name_ + ": it is the input " + protected_input_names[i] +
              (protected_input_names[i] == path ? "" : " (the same file)") +
              ", which writing would replace; name another output";
      return false;
    }
  }
  mode_t mode = new_file_mode();
  if (exists) {
    // Renaming would replace a file the user may not write: refuse as fopen() would.
    if (::access(path.c_str(), W_OK) != 0) {
      error = "cannot write " + name_ + ": " + reason(errno);
      return false;
    }
    mode = existing.st_mode & 07777;  // an overwritten file keeps its permissions
    // Through a symbolic link, replace the file it names and keep the link.
    struct stat link {};
    if (::lstat(path.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) {
      if (char* resolved = ::realpath(path.c_str(), nullptr)) {
        target_ = resolved;
        std::free(resolved);
      }
    }
  }
  std::string name = temporary_template(target_);
  // No signal between the temporary's creation and its registration could leave it behind.
  sigset_t ending, previous;
  sigemptyset(&ending);
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&ending, signal_number);
  pthread_sigmask(SIG_BLOCK, &ending, &previous);
  int fd = ::mkstemp(name.data());
  if (fd >= 0) temporary_slot_ = register_temporary(name);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (fd < 0) {
    // A writable file in a folder we may not create files in was overwritten in place before
    // temporaries existed; keep that working (without the all-or-nothing guarantee).
    if (exists) return open_in_place();
    error = "cannot write " + name_ + ": " + reason(errno);
    return false;
  }
  temporary_ = name;
  if (::fchmod(fd, mode) != 0 || (stream_ = ::fdopen(fd, "wb")) == nullptr) {
    error = "cannot write " + name_ + ": " + reason(errno);
    ::close(fd);
    discard();
    return false;
  }
  return true;
}

bool OutputFile::write(std::string_view text) {
  if (failed()) return false;
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), stream_) != text.size()) {
    fail(errno != 0 ? errno : EIO);
    return false;
  }
  return true;
}

void OutputFile::fail(int error_number) {
  if (error_number_ == 0) error_number_ = error_number != 0 ? error_number : EIO;
}

bool OutputFile::broken_pipe() const { return error_number_ == EPIPE; }

bool OutputFile::close(std::string& error) {
  if (stream_ != nullptr) {
    errno = 0;
    if (!failed() && std::fflush(stream_) != 0) fail(errno);
    // A failed write seen only by the stream (fputs, fmt::print) leaves no errno behind.
    if (!failed() && std::ferror(stream_)) fail(EIO);
    if (stream_ != stdout) {
      errno = 0;
      if (std::fclose(stream_) != 0) fail(errno);
    }
    stream_ = nullptr;
  }
  if (failed()) {
    error = "writing " + name_ + " failed: " + reason(error_number_);
    discard();
    return false;
  }
  return true;
}

bool OutputFile::commit(std::string& error) {
  if (temporary_.empty()) return true;
  if (std::rename(temporary_.c_str(), target_.c_str()) != 0) {
    fail(errno);
    error = "writing " + name_ + " failed: " + reason(error_number_);
    discard();
    return false;
  }
  // Renamed, it is the output: a signal from here on leaves it (complete) in place. (One
  // between the rename and this finds no temporary left to remove.)
  unregister_temporary(temporary_slot_);
  temporary_.clear();
  return true;
}

bool OutputFile::finish(std::string& error) { return close(error) && commit(error); }

int commit_all(std::vector<OutputFile>& outputs, std::string& error) {
  bool ok = true, broken_pipe = false;
  for (OutputFile& output : outputs) {
    if (!output.close(error)) {
      ok = false;
      broken_pipe = output.broken_pipe();
      break;
    }
  }
  for (size_t i = 0; ok && i < outputs.size(); ++i) ok = outputs[i].commit(error);
  if (ok) return 0;
  for (OutputFile& output : outputs) output.discard();
  return broken_pipe ? kBrokenPipeExitStatus : 1;
}

void OutputFile::discard() {
  if (stream_ != nullptr && stream_ != stdout) std::fclose(stream_);
  stream_ = nullptr;
  unregister_temporary(temporary_slot_);
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
  temporary_.clear();
}

}  // namespace pyprof
