// The input lists of parse and prof: files as given, folders as the files in them a tool reads.
#pragma once

#include <algorithm>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace pyprof {

// Appends each input to `files`, a folder as its regular files whose name `wanted(name)`
// accepts, sorted by path. False with `error` when a folder cannot be listed ("cannot list DIR:
// why") or holds none of them ("DIR holds no " + `what`).
template <class Wanted>
bool expand_input_folders(const std::vector<std::string>& inputs, Wanted wanted,
                          const std::string& what, std::vector<std::string>& files,
                          std::string& error) {
  namespace fs = std::filesystem;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (!fs::is_directory(input, ec)) {
      files.push_back(input);
      continue;
    }
    std::vector<std::string> found;
    for (const auto& entry : fs::directory_iterator(input, ec)) {
      std::error_code type_ec;
      if (entry.is_regular_file(type_ec) && wanted(entry.path().filename().string())) {
        found.push_back(entry.path().string());
      }
    }
    if (ec) {
      error = "cannot list " + input + ": " + ec.message();
      return false;
    }
    if (found.empty()) {
      error = input + " holds no " + what;
      return false;
    }
    std::sort(found.begin(), found.end());
    files.insert(files.end(), found.begin(), found.end());
  }
  return true;
}

}  // namespace pyprof
