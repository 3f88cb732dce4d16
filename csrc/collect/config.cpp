#include "config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "common/env_vars.h"
#include "diagnostics.h"

namespace pyprof::collect {
namespace {

constexpr int64_t kNanosPerSecond = 1'000'000'000;

// Parses a whole decimal integer; rejects empty strings, trailing junk and overflow.
std::optional<int64_t> parse_int64(const char* text) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0') return std::nullopt;
  return static_cast<int64_t>(value);
}

// Non-negative integer from the environment; a malformed value is reported and ignored.
std::optional<int64_t> env_non_negative(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  const std::optional<int64_t> value = parse_int64(text);
  if (!value || *value < 0) {
    print_line("ignoring %s=%s (expected a non-negative integer)", name, text);
    return std::nullopt;
  }
  return value;
}

int64_t saturating_add(int64_t a, int64_t b) {
  if (b > 0 && a > std::numeric_limits<int64_t>::max() - b) {
    return std::numeric_limits<int64_t>::max();
  }
  return a + b;
}

std::string rank_part(const CollectorConfig& config) {
  return config.rank ? ".rank" + *config.rank : std::string();
}

// mkdir -p for the directory part of `path`; failures show up when the file is created.
void create_parent_directories(const std::string& path) {
  for (size_t slash = path.find('/', 1); slash != std::string::npos;
       slash = path.find('/', slash + 1)) {
    ::mkdir(path.substr(0, slash).c_str(), 0777);
  }
}

}  // namespace

int64_t CollectorConfig::window_begin_ns() const {
  if (delay_ns) return *delay_ns;
  return duration_ns ? 0 : std::numeric_limits<int64_t>::min();
}

int64_t CollectorConfig::window_end_ns() const {
  if (!duration_ns) return std::numeric_limits<int64_t>::max();
  return saturating_add(delay_ns.value_or(0), *duration_ns);
}

CollectorConfig CollectorConfig::from_environment(int64_t now_mono_ns, int64_t now_utc_ns) {
  CollectorConfig config;
  const std::optional<int64_t> start_mono = env_non_negative(env::kSessionStartMonoNs);
  const std::optional<int64_t> start_utc = env_non_negative(env::kSessionStartUtcNs);
  config.session_start_mono_ns = start_mono.value_or(now_mono_ns);
  config.session_start_utc_ns =
      start_utc.value_or(now_utc_ns - (now_mono_ns - config.session_start_mono_ns));

  if (const char* base = std::getenv(env::kOutput); base != nullptr && *base != '\0') {
    config.output_base = base;
  }
  if (const char* rank = std::getenv(env::kRank); rank != nullptr && *rank != '\0') {
    if (env::is_file_rank(rank)) {
      config.rank = rank;
    } else {
      // A value that is no rank number would put itself (a '/', "..") into the file name.
      print_line("ignoring %s=%s (expected a rank number): the files are named as without a rank",
                 env::kRank, rank);
    }
  }
  if (const char* world = std::getenv(env::kWorldSize); world != nullptr && *world != '\0') {
    config.world_size = world;
  }
  config.root_pid = env_non_negative(env::kRootPid);
  if (const char* command = std::getenv(env::kLaunchCmdline); command != nullptr) {
    config.launch_command_line = command;
  }
  config.delay_ns = env_non_negative(env::kDelayNs);
  config.duration_ns = env_non_negative(env::kDurationNs);
  if (const std::optional<int64_t> mb = env_non_negative(env::kBufferMb)) {
    config.buffer_limit_bytes = static_cast<uint64_t>(*mb) << 20;
  }
  if (const std::optional<int64_t> bytes = env_non_negative(env::kBufferBytes)) {
    config.buffer_limit_bytes = static_cast<uint64_t>(*bytes);
  }
  if (const std::optional<int64_t> seconds = env_non_negative(env::kFinalizeTimeoutS)) {
    config.finalize_timeout_ns = *seconds * kNanosPerSecond;
  }
  if (const char* range = std::getenv(env::kCaptureRange); range != nullptr && *range) {
    if (std::strcmp(range, "cudaProfilerApi") == 0) {
      config.capture_range_cuda_profiler = true;
    } else if (std::strcmp(range, "none") != 0) {
      print_line("ignoring %s=%s (expected cudaProfilerApi or none)", env::kCaptureRange, range);
    }
  }
  if (const char* trace = std::getenv(env::kCudaTrace); trace != nullptr && *trace) {
    config.cuda_trace = std::strcmp(trace, "0") != 0;
  }
  if (const char* library = std::getenv(env::kCuptiLibrary); library != nullptr && *library) {
    config.cupti_library = library;
  }
  if (const char* status = std::getenv(env::kStatusFd); status != nullptr && *status) {
    // "FD:INODE", written by the launcher; anything else means no channel.
    char* end = nullptr;
    errno = 0;
    const long fd = std::strtol(status, &end, 10);
    if (errno == 0 && end != status && *end == ':' && fd >= 0 &&
        fd <= std::numeric_limits<int>::max()) {
      const char* inode_text = end + 1;
      const unsigned long long inode = std::strtoull(inode_text, &end, 10);
      if (errno == 0 && end != inode_text && *end == '\0') {
        config.status_fd = static_cast<int>(fd);
        config.status_pipe_inode = inode;
      }
    }
    if (config.status_fd < 0) {
      print_line("ignoring %s=%s (expected FD:INODE)", env::kStatusFd, status);
    }
  }
  return config;
}

std::string pid_output_path(const CollectorConfig& config, pid_t pid, int attempt) {
  // Built with append(): GCC 12 reports a false -Wrestrict for "." + std::to_string(n).
  std::string path = config.output_base;
  path.append(rank_part(config)).append(".pid").append(std::to_string(pid));
  if (attempt > 0) path.append(".").append(std::to_string(attempt));
  return path.append(".sqlite");
}

std::string preferred_output_path(const CollectorConfig& config, pid_t pid, bool forked_child) {
  if (forked_child) return pid_output_path(config, pid, 0);
  if (config.rank) return config.output_base + rank_part(config) + ".sqlite";
  const bool is_root = !config.root_pid || *config.root_pid == static_cast<int64_t>(pid);
  if (is_root) return config.output_base + ".sqlite";
  return pid_output_path(config, pid, 0);
}

std::optional<std::string> create_output_file(const CollectorConfig& config, pid_t pid,
                                              bool forked_child, std::string* error) {
  constexpr int kMaxAttempts = 1000;
  std::string path = preferred_output_path(config, pid, forked_child);
  create_parent_directories(path);
  for (int attempt = 0; attempt <= kMaxAttempts; ++attempt) {
    if (attempt > 0) {
      const std::string fallback = pid_output_path(config, pid, attempt - 1);
      if (fallback == path) continue;  // the preferred name was already the pid form
      path = fallback;
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::close(fd);
      return path;
    }
    if (errno != EEXIST) {
      if (error != nullptr) *error = "cannot create " + path + ": " + std::strerror(errno);
      return std::nullopt;
    }
  }
  if (error != nullptr) *error = "every candidate output file exists (last: " + path + ")";
  return std::nullopt;
}

}  // namespace pyprof::collect
