// The environment variables of pyprof's own tools: how `pyprof profile` (csrc/launch) configures
// the collector (csrc/collect) inside the program it runs, what users may set for either, and the
// foreign names that are part of the same contract. One home for the names, so that the side that
// sets a variable and the side that reads it cannot drift apart. Tests spell the names out on
// purpose: they check this contract from outside.
#pragma once

#include <string_view>

namespace pyprof::env {

// ---- Set by the launcher for the command it runs; read by the collector (config.cpp). ----

// Output base path without extension; the collector adds [.rankR][.pidP].sqlite.
inline constexpr char kOutput[] = "PYPROF_OUTPUT";
// Pid of the launched command, written by the forked child itself: that process writes
// BASE.sqlite, the others BASE.pidP.sqlite.
inline constexpr char kRootPid[] = "PYPROF_ROOT_PID";
// Session start in CLOCK_MONOTONIC ns: time zero of every database of the run.
inline constexpr char kSessionStartMonoNs[] = "PYPROF_SESSION_START_MONO_NS";
// The same instant in UTC ns (TARGET_INFO_SESSION_START_TIME).
inline constexpr char kSessionStartUtcNs[] = "PYPROF_SESSION_START_UTC_NS";
// The command line the launcher ran, kept in META_DATA_CAPTURE.
inline constexpr char kLaunchCmdline[] = "PYPROF_LAUNCH_CMDLINE";
// --delay in ns: nothing is recorded before the session start plus this.
inline constexpr char kDelayNs[] = "PYPROF_DELAY_NS";
// --duration in ns: nothing is recorded after the delay plus this.
inline constexpr char kDurationNs[] = "PYPROF_DURATION_NS";
// --capture-range: "cudaProfilerApi" records only between the first cudaProfilerStart() and the
// next cudaProfilerStop() ("none" or unset: always).
inline constexpr char kCaptureRange[] = "PYPROF_CAPTURE_RANGE";
// --no-cuda-trace sets "0": the collector never starts CUPTI.
inline constexpr char kCudaTrace[] = "PYPROF_CUDA_TRACE";
// "FD:INODE": the write end of a non-blocking pipe on which a collector whose database could not
// be written completely (disk full) reports it, so that the launcher can say so and exit
// non-zero. The collector writes only while FD is still that pipe (INODE): the program may have
// closed the descriptor and reused its number. One line per database, at most PIPE_BUF bytes so
// lines of several processes never interleave: kStatusLinePrefix, then tab-separated fields
// path=, usable= (0: nothing readable was kept), ranges=, marks=, kernels= (kept), events_dropped=,
// cuda_dropped= (lost to failed writes), and last reason= (the message naming the file).
inline constexpr char kStatusFd[] = "PYPROF_STATUS_FD";
inline constexpr char kStatusLinePrefix[] = "pyprof-write-failed";

// ---- Set by the user (or a test); read by the collector. ----

// MiB of recorded events and CUDA records that may wait to be written (default 1024); more are
// dropped and counted.
inline constexpr char kBufferMb[] = "PYPROF_BUFFER_MB";
// The same limit in bytes, overriding kBufferMb (tests, limits below 1 MiB).
inline constexpr char kBufferBytes[] = "PYPROF_BUFFER_BYTES";
// Seconds finalization waits for the writer thread to drain (default 120).
inline constexpr char kFinalizeTimeoutS[] = "PYPROF_FINALIZE_TIMEOUT_S";
// The libcupti to load instead of searching for libcupti.so.13.
inline constexpr char kCuptiLibrary[] = "PYPROF_CUPTI_LIBRARY";

// ---- Set by the user; read by the launcher. ----

// The collector library to inject instead of ../lib/libpyprof_collect.so beside the launcher.
inline constexpr char kCollector[] = "PYPROF_COLLECTOR";

// ---- Set by a test; read by pyprof-parse (parse/nsys_reader.cpp). ----

// Rows per chunk of NVTX_EVENTS, which two threads read and parse merges in table order; set, it
// also makes a table of any size be read that way, so that tests can compare the chunked read
// with the plain one on small files. Unset: one thread under 200,000 rows, chunks of 2^18.
inline constexpr char kParseChunkRows[] = "PYPROF_PARSE_CHUNK_ROWS";

// Records per chunk of parse's output, formatted on several threads and written in order
// (parse/record_writer.cpp); set, the chunks go to two threads or more whatever the machine, so
// that tests can compare the threaded write with one chunk's on small files. Unset: 2,048, on
// up to 4 threads, as many as the machine has.
inline constexpr char kParseWriteChunkRecords[] = "PYPROF_PARSE_WRITE_CHUNK_RECORDS";

// ---- Not pyprof's, but part of the contract. ----

// The library NVTX loads into each process: the launcher sets it to the collector, and refuses
// to run when another tool (Nsight Systems) already set it.
inline constexpr char kNvtxInjection[] = "NVTX_INJECTION64_PATH";
// The library the CUDA driver loads at cuInit: the launcher sets it to the collector unless
// another CUDA tool's is there; the collector reports when it was not set.
inline constexpr char kCudaInjection[] = "CUDA_INJECTION64_PATH";
// The process's rank under torchrun & co.: launcher and collector both name its database
// BASE.rankR.sqlite, when is_file_rank() accepts the value.
inline constexpr char kRank[] = "RANK";
// Whether a RANK value names files: 1 to 9 decimal digits. Anything else (empty, "abc", "-1",
// "0/../x") is ignored by both sides (the collector says so once): it must never put a path
// into a file name, and the launcher lists only the names its own rule can read back.
inline bool is_file_rank(std::string_view value) {
  if (value.empty() || value.size() > 9) return false;
  for (const char c : value) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}
// The job's number of ranks under torchrun & co.: recorded (META_DATA_CAPTURE WORLD_SIZE) for
// parse's header and the cross-rank report; names no file.
inline constexpr char kWorldSize[] = "WORLD_SIZE";

}  // namespace pyprof::env
