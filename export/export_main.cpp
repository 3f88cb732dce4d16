// pyprof-export: `pyprof export [--format chrome|perfetto] net.dict -o trace.json[.gz]`: a
// net.dict as a Chrome trace for Perfetto and chrome://tracing (docs/export.md). `pyprof export`
// (pyprof/cli.py) runs `pyprof parse --ranges` first when given a database or a trace.
// Exit codes: 0 ok, 1 bad input or unwritable output (no file is left), 2 usage.
#include <fmt/core.h>
#include <zlib.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/cli_help.h"
#include "common/cli_options.h"
#include "common/input_files.h"
#include "common/output_file.h"
#include "common/terminal_text.h"
#include "export/trace_export.h"
#include "prof/load_profile.h"
#include "prof/op_model_options.h"

namespace {

// gzip (a .gz name) on the fly, so that a million-record trace is never held whole.
class GzipStream {
 public:
  explicit GzipStream(std::FILE* out) : out_(out) {
    ok_ = deflateInit2(&z_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) ==
          Z_OK;
  }
  ~GzipStream() { deflateEnd(&z_); }
  bool write(std::string_view text) { return pump(text, Z_NO_FLUSH); }
  bool finish() { return pump({}, Z_FINISH); }

 private:
  bool pump(std::string_view text, int flush) {
    if (!ok_) return false;
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    z_.avail_in = static_cast<uInt>(text.size());
    int status = Z_OK;
    do {
      z_.next_out = buffer_;
      z_.avail_out = sizeof buffer_;
      status = deflate(&z_, flush);
      if (status == Z_STREAM_ERROR) return ok_ = false;
      const size_t n = sizeof buffer_ - z_.avail_out;
      if (n > 0 && std::fwrite(buffer_, 1, n, out_) != n) return ok_ = false;
    } while (z_.avail_out == 0 || (flush == Z_FINISH && status != Z_STREAM_END));
    return true;
  }

  std::FILE* out_;
  z_stream z_{};
  Bytef buffer_[1 << 16];
  bool ok_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  pyprof::guard_outputs();
  CLI::App app{
      "Write a net.dict (pyprof parse's output; with --ranges for op, module and user ranges) "
      "as a Chrome trace that Perfetto (ui.perfetto.dev) and chrome://tracing load: ranges on "
      "CPU thread tracks with their FLOPs, bytes and shapes, kernels and copies on GPU stream "
      "tracks, flows launch -> kernel and forward op -> backward node, each device's memory "
      "allocated and reserved as counter tracks (docs/export.md). `pyprof parse` reads the "
      "trace back (the memory counters aside).",
      "pyprof export"};
  app.formatter(std::make_shared<pyprof::WrappingFormatter>());
  std::string input, output, format = "chrome";
  bool quiet = false, no_tf32 = false;
  app.add_option("input", input,
                 "net.dict (`pyprof export` also takes a database or a torch.profiler trace and "
                 "runs `pyprof parse --ranges` first)")
      ->required();
  app.add_option("-o,--output", output,
                 "the trace file to write (gzip when it ends in .gz); written under a temporary "
                 "name and renamed when complete")
      ->required();
  app.add_option("--format", format,
                 "chrome: flow events s/f (drawn by chrome://tracing and Perfetto); perfetto: "
                 "flow v2 (bind_id / flow_in / flow_out on the slices, Perfetto's preferred "
                 "form)")
      ->check(CLI::IsMember({"chrome", "perfetto"}));
  app.add_flag("--no-tf32", no_tf32, "as pyprof prof: fp32 GEMMs are not Tensor Core eligible");
  app.add_flag("-q,--quiet", quiet, "no summary on standard error");
  pyprof::prof::OpModelFiles op_model_files;
  pyprof::prof::add_op_model_options(app, op_model_files);
  // Hidden (group ""): `pyprof export DB` parses DB into a temporary net.dict first and names
  // DB here, so that the summary names the file the user gave.
  std::string source_label;
  app.add_option("--source-label", source_label, "the input's name in the summary")->group("");
  if (int status = pyprof::list_options_if_asked(app, argc, argv); status >= 0) return status;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "pyprof export: error: {}\nRun with --help for usage.\n", e.what());
    return 2;
  }
  pyprof::prof::ExportOptions options;
  options.format = format == "perfetto" ? pyprof::prof::TraceFormat::kPerfetto
                                        : pyprof::prof::TraceFormat::kChrome;
  // Every record is drawn (no iteration selection); every line strict JSON, as the trace
  // copies values as the dict holds them, and a line that is not fails the export
  // (docs/export.md): a trace missing a line would show a hole no viewer names.
  pyprof::prof::LoadRequest request;
  request.read.allow_tf32 = !no_tf32;
  request.read.strict_json = true;
  request.select = false;
  request.unreadable_lines_fatal = true;

  std::string error;
  if (!pyprof::prof::load_op_models("export", op_model_files.op_models, op_model_files.flop_tables,
                                    error)) {
    fmt::print(stderr, "pyprof export: error: {}\n", pyprof::terminal_safe(error));
    return 2;
  }
  // The dict is read twice (prof's costs, then the trace): a FIFO or a device cannot be.
  if (!pyprof::is_regular_input(input, "export reads it twice (save it to a file first)", error)) {
    fmt::print(stderr, "pyprof export: error: {}\n", pyprof::terminal_safe(error));
    return 1;
  }
  pyprof::protect_inputs({input});
  pyprof::OutputFile out;
  if (!out.open(output, error)) {
    fmt::print(stderr, "pyprof export: error: {}\n", error);
    return 1;
  }
  const bool gzip = output.size() > 3 && output.ends_with(".gz");
  GzipStream gz(out.stream());
  pyprof::prof::TraceSink sink = [&](std::string_view text) {
    if (gzip) {
      if (!gz.write(text)) {
        out.fail(errno ? errno : EIO);
        return false;
      }
      return true;
    }
    if (!out.write(text)) return false;
    return true;
  };
  pyprof::prof::ExportResult result;
  bool ok = false;
  try {
    pyprof::prof::ReadResult costs;
    pyprof::prof::LoadError load_error;
    if (!pyprof::prof::load_profile(input, request, costs, load_error)) {
      error = load_error.message();
    } else {
      fmt::print(stderr, "{}", pyprof::prof::load_messages("export", "", costs));
      ok = pyprof::prof::export_trace(input, costs, options, sink, result, error);
    }
  } catch (const std::bad_alloc&) {
    error = "out of memory";
  }
  if (ok && gzip && !gz.finish()) out.fail(errno ? errno : EIO);
  if (!ok) {
    out.discard();
    if (!error.empty()) {
      fmt::print(stderr, "pyprof export: error: {}\n", pyprof::terminal_safe(error));
      return 1;
    }
  }
  if (!out.finish(error)) {
    fmt::print(stderr, "pyprof export: error: {}\n", error);
    return 1;
  }
  if (!ok) return 1;
  if (!quiet) {
    // Memory counters said only where there are some: a profile without memory lines prints
    // what it always printed.
    const std::string memory = result.memory_events > 0
                                   ? fmt::format(", {} memory events as {} counter points",
                                                 result.memory_events, result.memory_points)
                                   : "";
    fmt::print(stderr,
               "pyprof export: {} -> {} ({} records, {} ranges, {} marks{}, {} trace events; {})\n",
               pyprof::terminal_safe(source_label.empty() ? input : source_label), output,
               result.records, result.ranges, result.marks, memory, result.events, format);
    for (const std::string& note : result.notes) {
      fmt::print(stderr, "  note: {}\n", pyprof::terminal_safe(note));
    }
  }
  return 0;
}
