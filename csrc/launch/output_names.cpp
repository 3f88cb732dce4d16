#include "output_names.h"

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

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
  consume_number(rest, ".pid");
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

std::string root_database_name(std::string_view base, const char* rank_env) {
  std::string name(base);
  if (rank_env != nullptr && *rank_env != '\0') {
    name += ".rank";
    name += rank_env;
  }
  name += ".sqlite";
  return name;
}

}  // namespace pyprof::launch
