// An output that is either complete or absent: what parse and prof write their results to.
//
// A regular file (or a name not there yet) is written to a temporary file beside it, which is
// renamed over the name only after every byte was written and the file closed without error;
// on any failure the temporary is removed, so a full disk never leaves a cut-short file that
// looks complete, and an older file of that name stays as it was. Standard output, devices
// and FIFOs cannot be swapped for another file: they are written in place.
//
// Every write is checked; the first failure is kept with its errno, later writes are skipped
// (a tool writing a million rows to a full disk stops at the first error), and close() reports
// it in the user's terms: "writing net.dict failed: No space left on device".
//
// Two things no output may do: replace one of the tool's inputs (`pyprof parse net.sqlite -o
// net.sqlite`, or the same file through a link: refused, see protect_inputs), and outlive an
// interrupted tool as a hidden temporary (SIGINT, SIGTERM and SIGHUP remove every temporary not
// yet committed before the signal ends the tool: guard_outputs).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace pyprof {

// The exit status of a tool whose standard output was closed by its reader (`... | head`):
// 128 + SIGPIPE, what a shell shows for a tool the signal ended, and no message.
inline constexpr int kBrokenPipeExitStatus = 141;

// Makes a closed pipe a write error (EPIPE) that the tools handle, rather than a signal that
// kills them: the same behaviour whether or not the parent (Python ignores SIGPIPE and exec
// hands that on) left the signal ignored.
void ignore_sigpipe();

// What every tool that writes outputs calls first: ignore_sigpipe(); a standard stream that
// was closed (`pyprof prof net.dict >&-`) is reopened on /dev/null, so that no file opened
// later takes its descriptor, and writing to it is then an error ("standard output is closed")
// rather than bytes lost; SIGINT, SIGTERM and SIGHUP remove the temporaries of the outputs not
// yet committed, then end the tool as the signal would have.
void guard_outputs();
// Whether guard_outputs() found standard descriptor `fd` (0, 1 or 2) closed.
bool standard_stream_was_closed(int fd);

// Files the tool reads: an output that is one of them (the same path, or the same file through
// a symbolic or hard link) is refused by OutputFile::open ("cannot write X: it is the input Y").
// Devices and FIFOs are not inputs' contents and stay writable. Call before opening outputs;
// later calls add to the set.
void protect_inputs(const std::vector<std::string>& paths);

class OutputFile {
 public:
  OutputFile() = default;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  // Removes a temporary that was never committed.
  ~OutputFile();

  // `path` empty or "-": standard output. False with `error` ("cannot write PATH: reason")
  // when the file (or its temporary) cannot be created.
  bool open(const std::string& path, std::string& error);

  std::FILE* stream() const { return stream_; }
  // The name messages use: the path as given, or "standard output".
  const std::string& name() const { return name_; }

  // Writes `text` unless an earlier write failed; false once any write has failed.
  bool write(std::string_view text);
  // Records the failure (an errno value) of a write made directly on stream().
  void fail(int error_number);
  bool failed() const { return error_number_ != 0; }
  // The failure was a closed pipe (the reader went away), which the tools end quietly on.
  bool broken_pipe() const;

  // Flushes and closes (standard output is only flushed), checking both. False with `error`
  // ("writing NAME failed: reason") after any failure, the temporary then removed.
  bool close(std::string& error);
  // Renames the closed temporary over the name (nothing to do when written in place). False
  // with `error`, the temporary removed.
  bool commit(std::string& error);
  // close() and commit().
  bool finish(std::string& error);
  // Closes without checking and removes the temporary.
  void discard();

 private:
  std::string name_;         // as the user gave it
  std::string target_;       // what the temporary is renamed to (a symlink resolved)
  std::string temporary_;    // empty when written in place
  int temporary_slot_ = -1;  // its entry in the list a signal's handler removes, or -1
  std::FILE* stream_ = nullptr;
  int error_number_ = 0;
};

// A set of outputs kept all or nothing: closes every output, then moves them all into place
// only when each was written whole; after any failure none is left (older files of those
// names stay as they were). 0 when all were committed; kBrokenPipeExitStatus when a reader
// closed the pipe (nothing to say); else 1 with `error` set.
int commit_all(std::vector<OutputFile>& outputs, std::string& error);

}  // namespace pyprof
