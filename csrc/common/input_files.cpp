#include "common/input_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "common/output_file.h"

namespace pyprof {

const char* file_kind(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

std::FILE* open_input_stream(const std::string& path, std::string& error) {
  if (path == "-") {
    if (standard_stream_was_closed(0)) {
      error = "standard input is closed";
      return nullptr;
    }
    return stdin;
  }
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever if none
  // comes. Reads block again once it is open; a FIFO without a writer then reads as empty.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot open " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode) || S_ISSOCK(st.st_mode)) {
    error = S_ISDIR(st.st_mode) || S_ISSOCK(st.st_mode)
                ? path + " is " + file_kind(st.st_mode) + ", not a file to read"
                : "cannot open " + path + ": " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  std::FILE* in = ::fdopen(fd, "rb");
  if (in == nullptr) {
    error = "cannot open " + path + ": " + std::strerror(errno);
    ::close(fd);
  }
  return in;
}

bool is_regular_input(const std::string& path, const std::string& needs, std::string& error) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    error = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    error = path + " is " + file_kind(st.st_mode) + ", not a regular file: " + needs;
    return false;
  }
  return true;
}

bool is_input_folder(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

void expand_input_folders(const std::vector<std::string>& inputs,
                          const std::function<bool(const std::string&)>& wanted,
                          const std::string& what, std::vector<std::string>& files,
                          std::vector<std::string>& failed) {
  namespace fs = std::filesystem;
  for (const std::string& input : inputs) {
    if (!is_input_folder(input)) {
      files.push_back(input);
      continue;
    }
    std::vector<std::string> found;
    std::error_code ec;
    fs::directory_iterator it(input, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
      std::error_code type_ec;
      // A link is followed: one to a folder is left out, a broken one (or a loop) kept.
      if (it->is_directory(type_ec) || !wanted(it->path().filename().string())) continue;
      found.push_back(it->path().string());
    }
    if (ec) {
      failed.push_back("cannot list " + input + ": " + ec.message());
    } else if (found.empty()) {
      failed.push_back(input + " holds no " + what);
    } else {
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    }
  }
}

}  // namespace pyprof
