#include "session_metadata.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "clock.h"
#include "common/env_vars.h"
#include "common/nsys_schema.h"

namespace pyprof::collect {
namespace {

std::string read_small_file(const std::string& path) {
  std::string content;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return content;
  char buffer[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || content.size() > (1 << 20)) break;
    content.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return content;
}

std::string utc_iso_time(int64_t utc_ns) {
  const time_t seconds = static_cast<time_t>(utc_ns / kNanosPerSecond);
  tm parts{};
  gmtime_r(&seconds, &parts);
  char buffer[32];
  return std::string(buffer, strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%S", &parts));
}

std::string optional_text(const std::optional<int64_t>& value) {
  return value ? std::to_string(*value) : std::string();
}

}  // namespace

std::vector<StatRow> CollectorStats::rows() const {
  const auto row = [](const char* name, uint64_t value) {
    return StatRow{name, static_cast<int64_t>(value)};
  };
  return {
      row("events_recorded", events_recorded),
      row("events_written", events_written),
      row("events_dropped", events_dropped),
      row("events_outside_window", events_outside_window),
      row("events_after_shutdown", events_after_shutdown),
      row("messages_truncated", messages_truncated),
      row("unclosed_ranges", unclosed_ranges),
      row("unbalanced_pops", unbalanced_pops),
      row("unknown_range_ends", unknown_range_ends),
      row("threads", threads),
      row("ranges_written", ranges_written),
      row("marks_written", marks_written),
      row("write_errors", write_errors),
      row("events_write_failed", events_write_failed),
      row("nvtx_inits", nvtx_inits),
      row("cupti_records", cupti_records),
      row("cupti_records_dropped", cupti_records_dropped),
      row("cupti_records_write_failed", cupti_records_write_failed),
      row("cupti_records_no_timestamp", cupti_records_no_timestamp),
      row("cupti_records_outside_window", cupti_records_outside_window),
      row("cupti_records_after_shutdown", cupti_records_after_shutdown),
      row("cupti_records_ignored", cupti_records_ignored),
      row("cuda_graph_nodes", cuda_graph_nodes),
      row("cuda_graph_nodes_unreadable", cuda_graph_nodes_unreadable),
      row("kernels_written", kernels_written),
      row("api_calls_written", api_calls_written),
      row("memcpys_written", memcpys_written),
      row("memsets_written", memsets_written),
      row("syncs_written", syncs_written),
      row("gpus_written", gpus_written),
      row("memory_events", memory_events),
      row("memory_events_written", memory_events_written),
      row("memory_events_dropped", memory_events_dropped),
      row("memory_events_write_failed", memory_events_write_failed),
      row("memory_events_outside_window", memory_events_outside_window),
      row("memory_events_after_shutdown", memory_events_after_shutdown),
      row("memory_ops_unseen", memory_ops_unseen),
      row("memory_devices_written", memory_devices_written),
  };
}

ProcessInfo read_process_info(pid_t pid) {
  ProcessInfo info;
  info.pid = pid;
  const std::string arguments = read_small_file("/proc/self/cmdline");
  for (size_t begin = 0; begin < arguments.size();) {
    size_t end = arguments.find('\0', begin);
    if (end == std::string::npos) end = arguments.size();
    if (!info.command_line.empty()) info.command_line += ' ';
    info.command_line.append(arguments, begin, end - begin);
    if (begin == 0) info.name = arguments.substr(0, end);
    begin = end + 1;
  }
  if (info.name.empty()) {
    info.name = read_small_file("/proc/self/comm");
    while (!info.name.empty() && info.name.back() == '\n') info.name.pop_back();
  }
  return info;
}

std::vector<MetadataRow> export_metadata() {
  return {
      {"EXPORT_PRODUCT_NAME", std::string(nsys::kPyprofProductName)},
      {"EXPORT_PRODUCT_VERSION", std::string(kProductVersion)},
      {"EXPORT_SCHEMA_VERSION", std::string(nsys::kPyprofSchemaVersion)},
  };
}

MetadataRow export_time_row(int64_t utc_ns) { return {"EXPORT_TIME_UTC", utc_iso_time(utc_ns)}; }

std::vector<MetadataRow> capture_metadata(const CollectorConfig& config, const ProcessInfo* process,
                                          const std::string& output_path) {
  std::vector<MetadataRow> rows;
  if (process != nullptr) {
    rows.push_back({"COMMAND_LINE", process->command_line});
    rows.push_back({"PID", std::to_string(process->pid)});
  }
  if (config.launch_command_line) {
    rows.push_back({"LAUNCH_COMMAND_LINE", *config.launch_command_line});
  }
  rows.push_back({"ROOT_PID", optional_text(config.root_pid)});
  rows.push_back({"RANK", config.rank.value_or("")});
  rows.push_back({"WORLD_SIZE", config.world_size.value_or("")});
  rows.push_back({"OUTPUT_BASE", config.output_base});
  rows.push_back({"OUTPUT_FILE", output_path});
  rows.push_back({"DELAY_NS", optional_text(config.delay_ns)});
  rows.push_back({"DURATION_NS", optional_text(config.duration_ns)});
  rows.push_back({"BUFFER_LIMIT_BYTES", std::to_string(config.buffer_limit_bytes)});
  rows.push_back({"SESSION_START_MONO_NS", std::to_string(config.session_start_mono_ns)});
  rows.push_back({"SESSION_START_UTC_NS", std::to_string(config.session_start_utc_ns)});
  rows.push_back(
      {"CAPTURE_RANGE", config.capture_range_cuda_profiler ? "cudaProfilerApi" : "none"});
  return rows;
}

MetadataRow cuda_trace_not_started_row(const CollectorConfig& config) {
  std::string why;
  if (!config.cuda_trace) {
    why = std::string("off: disabled (--no-cuda-trace / ") + env::kCudaTrace + "=0)";
  } else if (const char* path = std::getenv(env::kCudaInjection); path == nullptr || !*path) {
    why = std::string("off: ") + env::kCudaInjection +
          " was not set (run the program under `pyprof profile`)";
  } else {
    why = "off: the program never initialised CUDA";
  }
  return {std::string(nsys::kCudaTraceMetadata), why};
}

bool write_empty_database(const std::string& path, const char* note, std::string* error) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (error != nullptr) *error = "cannot create " + path + ": " + std::strerror(errno);
    return false;
  }
  ::close(fd);
  const CollectorConfig config = CollectorConfig::from_environment(monotonic_ns(), realtime_ns());
  std::unique_ptr<SqliteWriter> writer = SqliteWriter::open(path, error);
  if (!writer) return false;
  std::vector<MetadataRow> exported = export_metadata();
  exported.push_back(export_time_row(realtime_ns()));
  std::vector<MetadataRow> captured = capture_metadata(config, nullptr, path);
  captured.push_back({"PYPROF_NOTE", note != nullptr ? note : ""});
  const std::vector<StatRow> stats = CollectorStats{}.rows();
  const bool ok =
      writer->begin() &&
      writer->write_session_start({config.session_start_utc_ns, config.session_start_mono_ns}) &&
      writer->write_metadata(MetadataTable::kExport, exported) &&
      writer->write_metadata(MetadataTable::kCapture, captured) && writer->write_stats(stats) &&
      writer->commit();
  if (!ok && error != nullptr) *error = writer->last_error();
  return ok;
}

}  // namespace pyprof::collect
