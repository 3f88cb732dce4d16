// What the launcher makes of a finished run: the collectors' reports of databases they could
// not write completely (one line each on the status pipe, format: common/env_vars.h
// kStatusFd), and the launcher's exit status.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pyprof::launch {

// Exit status when pyprof itself failed (see launch_main.cpp for the others).
inline constexpr int kFailure = 1;

// A database a collector could not write completely, as reported on the status pipe.
struct WriteFailure {
  std::string path;
  bool usable = false;  // the file is a readable database holding what was kept
  std::string ranges, marks, kernels, events_dropped, cuda_dropped;
  std::string reason;    // names the file and the cause ("disk full (or write failed) writing ...")
  bool removed = false;  // an unusable file was deleted
};

// The reports in what the collectors wrote on the status pipe: one per line that starts with
// env::kStatusLinePrefix and a tab, its tab-separated key=value fields read by key (unknown
// keys and fields without '=' ignored). Other lines are not reports.
std::vector<WriteFailure> parse_write_failures(std::string_view text);

// The status a shell gives a command that ended with wait status `status`: its exit code, or
// 128+N when signal N killed it (kFailure otherwise).
int exit_status_of(int status);

// The launcher's exit status once the command has ended with `command_status`: the command's
// own failure says more than ours, and a successful run with an incomplete database must not
// look like success.
int launcher_exit_status(int command_status, bool database_incomplete);

}  // namespace pyprof::launch
