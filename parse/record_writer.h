// Writes parse's output: JSON Lines, one header line, then one record per GPU activity (in GPU
// start order) or, for a CPU-only profile, per op instance (in CPU start order). The format is
// docs/formats.md §3; bump kDictVersion when a key changes meaning or disappears.
#pragma once

#include <cstdio>
#include <string>

#include "parse/correlate.h"
#include "parse/trace.h"

namespace pyprof::parse {

inline constexpr int kDictVersion = 1;

class RecordWriter {
 public:
  RecordWriter(std::FILE* out, const Trace& trace, const Correlation& corr, TraceReader& reader)
      : out_(out), trace_(trace), corr_(corr), reader_(reader) {}
  // Writes everything; false (errno set) when the output cannot be written (disk full, pipe
  // closed).
  bool write(const std::string& source);
  int64_t args_unavailable() const { return args_unavailable_; }

 private:
  void write_header(const std::string& source);
  void write_header_object(const std::string& source);
  void write_user_ranges(const Attribution& a);
  void write_activity(int32_t index, const Attribution& a);
  void write_op_instance(int32_t index, const Attribution& a);
  void write_attribution(const Attribution& a);
  // Appends "user_ranges" (outermost first), closes the record and ends the line.
  void write_user_ranges_and_close(const Attribution& a);
  // The decoded args of range `index` (its message fetched again from the database).
  const std::string& args_of(int32_t index);
  bool flush();

  std::FILE* out_;
  const Trace& trace_;
  const Correlation& corr_;
  TraceReader& reader_;
  std::string buffer_;
  Marker marker_;
  int32_t cached_index_[2] = {-1, -1};
  std::string cached_args_[2];
  int next_slot_ = 0;
  int64_t args_unavailable_ = 0;
  std::vector<int32_t> chain_;
};

}  // namespace pyprof::parse
