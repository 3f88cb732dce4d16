// `pyprof export`: a net.dict (docs/formats.md §3) as a Chrome trace that Perfetto and
// chrome://tracing load (docs/export.md). Written in torch.profiler's (Kineto's) dialect: the same
// categories and arg names, so that `pyprof parse` reads the export back with its Kineto reader;
// what Kineto's encoding cannot hold (exact args, module paths, dialects, thread ids of the
// pairing) rides along in each event's `args.pyprof` object, which that reader prefers.
//
//   op / node / user / module ranges (the dict's range lines, `pyprof parse --ranges`)
//       -> X events on (pid, tid): cpu_op, user_annotation, python_function; op ranges carry
//          their op's FLOPs, bytes, shapes and rate from prof's cost models
//   GPU records -> X events on (pid = device, tid = stream): kernel, gpu_memcpy, gpu_memset;
//          their launch calls -> cuda_runtime X events on the launching thread
//   flows: launch -> GPU record (ac2g), forward op -> backward node (fwdbwd)
//   memory lines -> C (counter) events per device on the allocating process: allocated, the
//          allocator's allocated and reserved; downsampled past kExportMemoryPoints a device
//
// The dict is read twice, through the one net.dict reader (prof/dict_reader.h): first by
// load_profile (prof/load_profile.h) for prof's costs, which an op instance has only once its
// last kernel is read, then line by line for the events; what is kept between is prof's records
// and, per op instance, its cost. A FIFO cannot be read twice: save it to a file first.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace pyprof::prof {

struct ReadResult;  // prof/records.h

enum class TraceFormat : uint8_t {
  kChrome,    // flow events `s`/`f` with `id` and `bp:"e"` (what chrome://tracing draws)
  kPerfetto,  // flow v2: `bind_id` with `flow_out`/`flow_in` on the slices themselves
};

// Per device, the memory samples written as counter points at most (prof/memory_timeline.h's
// downsampling past it): each point is up to three counter events of about 110 bytes.
inline constexpr size_t kExportMemoryPoints = 100000;

struct ExportOptions {
  TraceFormat format = TraceFormat::kChrome;
};

struct ExportResult {
  int64_t records = 0;
  int64_t ranges = 0;  // range lines drawn
  int64_t events = 0;  // trace events written
  // Lines the trace cannot draw, left out (noted): a record or range without its name, a range
  // without its kind (`range`); only a damaged net.dict has them.
  int64_t unnamed = 0;
  int64_t marks = 0;  // pyprof.mark instants drawn
  // Memory lines (allocations and frees) drawn as counter events: the events, the counter
  // points written (every series), the devices whose series was downsampled.
  int64_t memory_events = 0, memory_points = 0, memory_downsampled = 0;
  bool had_ranges = false;
  bool cpu_only = false;
  std::vector<std::string> notes;  // for standard error (quoting the dict: terminal_safe them)
};

// Where the JSON text goes, a megabyte at a time (the caller compresses it and writes it
// atomically); false stops the export (a failed write).
using TraceSink = std::function<bool(std::string_view)>;

// Exports the dict at `dict_path` into `sink`; `costs` is what load_profile read from it, with
// `select` off (every record) and ReadOptions::strict_json on: every line is checked to be strict
// JSON (a token prof's reader would let pass unread, `00012`, `nan`, `0x10`, would otherwise be
// copied into the trace), so the trace is always valid JSON, and a line that is not was skipped
// and said by that read. False with `error` for an input that cannot be read again or a failed
// write (`error` empty: the sink knows why).
bool export_trace(const std::string& dict_path, const ReadResult& costs,
                  const ExportOptions& options, const TraceSink& sink, ExportResult& result,
                  std::string& error);

// ns -> the µs text Chrome traces use, with three decimals so that nanoseconds stay exact
// ("1234567" -> "1234.567", "-1500" -> "-1.500").
void append_microseconds(std::string& out, int64_t ns);

}  // namespace pyprof::prof
