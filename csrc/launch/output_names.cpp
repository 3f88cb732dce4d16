#include "output_names.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/env_vars.h"

namespace pyprof::launch {
namespace {

// Consumes `prefix` followed by one or more decimal digits from the front of `rest`.
bool consume_number(std::string_view& rest, std::string_view prefix) {
  if (rest.substr(0, prefix.size()) != prefix) return false;
  size_t n = prefix.size();
  while (n < rest.size() && std::isdigit(static_cast<unsigned char>(rest[n]))) ++n;
  if (n == prefix.size()) return false;
  rest.remove_prefix(n);
  return true;
}

// The pid a claiming launcher wrote into its lock file (0 when unreadable or not yet written).
long read_holder_pid(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[32] = {};
  const ssize_t n = ::read(fd, text, sizeof(text) - 1);
  ::close(fd);
  if (n <= 0) return 0;
  char* end = nullptr;
  const long pid = std::strtol(text, &end, 10);
  return (end != text && pid > 0) ? pid : 0;
}

// Whether flock() failing with `err` means the file system cannot lock at all.
bool locking_unsupported(int err) { return err == ENOLCK || err == ENOSYS || err == EOPNOTSUPP; }

}  // namespace

OutputName split_output_name(std::string_view name) {
  const size_t slash = name.rfind('/');
  if (slash == std::string_view::npos) return {".", std::string(name)};
  return {slash == 0 ? "/" : std::string(name.substr(0, slash)),
          std::string(name.substr(slash + 1))};
}

RunFileKind classify_run_file(std::string_view filename, std::string_view base) {
  if (base.empty() || filename.substr(0, base.size()) != base) return RunFileKind::kOther;
  std::string_view rest = filename.substr(base.size());
  consume_number(rest, ".rank");
  // The collector's fallback names: .pid<P>, then .<n> when that name was taken (config.h).
  if (consume_number(rest, ".pid")) consume_number(rest, ".");
  constexpr std::string_view kDb = ".sqlite";
  if (rest.substr(0, kDb.size()) != kDb) return RunFileKind::kOther;
  rest.remove_prefix(kDb.size());
  if (rest.empty()) return RunFileKind::kDatabase;
  if (rest == "-journal" || rest == "-wal" || rest == "-shm") return RunFileKind::kSidecar;
  return RunFileKind::kOther;
}

bool list_run_files(const std::string& dir, std::string_view base, bool with_sidecars,
                    std::vector<std::string>& names) {
  names.clear();
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  errno = 0;
  while (const dirent* entry = readdir(d)) {
    const RunFileKind kind = classify_run_file(entry->d_name, base);
    if (kind == RunFileKind::kDatabase || (with_sidecars && kind == RunFileKind::kSidecar)) {
      names.emplace_back(entry->d_name);
    }
  }
  const int err = errno;
  closedir(d);
  if (err != 0) {
    errno = err;
    return false;
  }
  std::sort(names.begin(), names.end());
  return true;
}

OutputClaim::~OutputClaim() {
  if (fd_ < 0) return;
  // Unlink before unlocking: a run that opened the old file and then gets the lock sees that
  // the name no longer leads to the file it locked, and starts over.
  ::unlink(lock_path_.c_str());
  ::close(fd_);
}

OutputClaim::Outcome OutputClaim::claim(const std::string& dir, std::string_view base) {
  lock_path_ = (dir == "/" ? "" : dir) + "/." + std::string(base) + ".pyprof-lock";
  // Each retry means a run that held the name has just ended (it removed its lock file).
  constexpr int kAttempts = 100;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    const int fd = ::open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
      if (errno == EINTR) continue;
      error_ = errno;
      return Outcome::kFailed;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd);
      if (err == EINTR) continue;
      if (err == EWOULDBLOCK) {
        holder_pid_ = read_holder_pid(lock_path_);
        return Outcome::kInUse;
      }
      // Nothing created by this run may stay behind; a file another run holds is not ours.
      ::unlink(lock_path_.c_str());
      error_ = err;
      return locking_unsupported(err) ? Outcome::kUnsupported : Outcome::kFailed;
    }
    struct stat held {};
    struct stat named {};
    if (::fstat(fd, &held) == 0 && ::stat(lock_path_.c_str(), &named) == 0 &&
        held.st_dev == named.st_dev && held.st_ino == named.st_ino) {
      // For the message of a refused run only; the lock is what counts, so failures are fine.
      const std::string pid = std::to_string(::getpid()) + "\n";
      [[maybe_unused]] const bool written =
          ::ftruncate(fd, 0) == 0 && ::pwrite(fd, pid.data(), pid.size(), 0) > 0;
      fd_ = fd;
      return Outcome::kClaimed;
    }
    ::close(fd);  // the run that held it removed or replaced the file meanwhile
  }
  error_ = EAGAIN;
  return Outcome::kFailed;
}

std::string root_database_name(std::string_view base, const char* rank_env) {
  std::string name(base);
  if (rank_env != nullptr && env::is_file_rank(rank_env)) {
    name += ".rank";
    name += rank_env;
  }
  name += ".sqlite";
  return name;
}

std::string run_files_base(std::string_view base, const char* rank_env) {
  std::string name(base);
  if (rank_env != nullptr && env::is_file_rank(rank_env)) {
    name += ".rank";
    name += rank_env;
  }
  return name;
}

}  // namespace pyprof::launch
