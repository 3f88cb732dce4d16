#include "run_status.h"

#include <sys/wait.h>

#include "common/env_vars.h"

namespace pyprof::launch {

std::vector<WriteFailure> parse_write_failures(std::string_view text) {
  std::vector<WriteFailure> failures;
  const std::string prefix = std::string(env::kStatusLinePrefix) + "\t";
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (!line.starts_with(prefix)) continue;
    WriteFailure failure;
    size_t field_start = prefix.size();
    while (field_start <= line.size()) {
      size_t field_end = line.find('\t', field_start);
      if (field_end == std::string_view::npos) field_end = line.size();
      const std::string_view field = line.substr(field_start, field_end - field_start);
      field_start = field_end + 1;
      const size_t eq = field.find('=');
      if (eq == std::string_view::npos) continue;
      const std::string_view key = field.substr(0, eq);
      const std::string value(field.substr(eq + 1));
      if (key == "path") failure.path = value;
      if (key == "usable") failure.usable = value == "1";
      if (key == "ranges") failure.ranges = value;
      if (key == "marks") failure.marks = value;
      if (key == "kernels") failure.kernels = value;
      if (key == "events_dropped") failure.events_dropped = value;
      if (key == "cuda_dropped") failure.cuda_dropped = value;
      if (key == "reason") failure.reason = value;
    }
    failures.push_back(std::move(failure));
  }
  return failures;
}

int exit_status_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return kFailure;
}

int launcher_exit_status(int command_status, bool database_incomplete) {
  return !database_incomplete || command_status != 0 ? command_status : kFailure;
}

}  // namespace pyprof::launch
