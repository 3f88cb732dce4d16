#include "common/output_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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

}  // namespace

void ignore_sigpipe() { std::signal(SIGPIPE, SIG_IGN); }

OutputFile::OutputFile(OutputFile&& other) noexcept
    : name_(std::move(other.name_)),
      target_(std::move(other.target_)),
      temporary_(std::exchange(other.temporary_, std::string())),
      stream_(std::exchange(other.stream_, nullptr)),
      error_number_(other.error_number_) {}

OutputFile::~OutputFile() { discard(); }

bool OutputFile::open(const std::string& path, std::string& error) {
  discard();
  error_number_ = 0;
  if (path.empty() || path == "-") {
    name_ = "standard output";
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
  int fd = ::mkstemp(name.data());
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
  if (!temporary_.empty()) ::unlink(temporary_.c_str());
  temporary_.clear();
}

}  // namespace pyprof
