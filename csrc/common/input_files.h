// The inputs of parse, prof, diff and export: lists with folders expanded to the files a tool
// reads, and each input opened (or refused) by what kind of file it is.
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace pyprof {

// What kind of file a mode is, in words for messages: "a FIFO (named pipe)", "a character
// device", "a socket", "a folder", "a block device", "a regular file".
const char* file_kind(unsigned mode);

// An input read once, start to end, as a stream: "-" is standard input; a regular file, a FIFO
// or a character device (`<(zcat net.dict.gz)`, /dev/stdin) is opened without waiting for a
// writer, so that a FIFO no program writes to reads as empty rather than blocking the tool
// forever. nullptr with `error` ("cannot open PATH: Too many levels of symbolic links", "PATH is
// a folder", "standard input is closed") when it cannot be read.
std::FILE* open_input_stream(const std::string& path, std::string& error);

// For readers that need a regular file (read twice, or at random as SQLite does): true when
// `path` names one (through any links); else false with `error` ("cannot open PATH: reason",
// or "PATH is a FIFO (named pipe), not a regular file: " + `needs`, why the tool needs one).
bool is_regular_input(const std::string& path, const std::string& needs, std::string& error);

// Whether `path` is a folder (through links); false, never an exception, for a path that cannot
// be examined (a loop of links, a missing file): opening it then says why.
bool is_input_folder(const std::string& path);

// Appends each input to `files`, a folder as its entries whose name `wanted(name)` accepts,
// sorted by path: every kind of entry but a folder, so that a broken link or a FIFO among a
// job's rank files is an input that fails to open (and is counted as failed), never one
// silently left out. A folder that cannot be listed ("cannot list DIR: why") or holds no such
// entry ("DIR holds no " + `what`) is a failed input: its message is appended to `failed` and
// the other inputs are still expanded.
void expand_input_folders(const std::vector<std::string>& inputs,
                          const std::function<bool(const std::string&)>& wanted,
                          const std::string& what, std::vector<std::string>& files,
                          std::vector<std::string>& failed);

}  // namespace pyprof
