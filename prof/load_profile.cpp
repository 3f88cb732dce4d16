#include "prof/load_profile.h"

#include <fmt/core.h>

#include <cstdio>

#include "common/input_files.h"
#include "common/terminal_text.h"
#include "models/flop_table.h"
#include "models/user_models.h"

namespace pyprof::prof {

bool load_profile(const std::string& path, const LoadRequest& request, ReadResult& out,
                  LoadError& error) {
  error = LoadError{};
  std::FILE* in = pyprof::open_input_stream(path, error.problem);
  if (in == nullptr) return false;
  const bool read = read_dict(in, request.read, out, error.problem);
  if (in != stdin) std::fclose(in);
  error.input = path == "-" ? "standard input" : path;
  if (!read) return false;
  if (request.unreadable_lines_fatal && out.skipped_lines > 0) {
    error.problem = out.skipped_lines == 1 ? out.first_skipped_line
                                           : fmt::format("{} (one of {} unreadable lines)",
                                                         out.first_skipped_line, out.skipped_lines);
    return false;
  }
  if (request.timer) request.timer->lap("read");
  assign_costs(out, request.peaks);
  if (request.select && !select_iterations(out, request.iterations, error.problem)) {
    error.exit_code = 2;
    return false;
  }
  if (request.timer) request.timer->lap("cost");
  error = LoadError{};
  return true;
}

bool load_op_models(std::string_view tool, const std::vector<std::string>& op_model_files,
                    const std::vector<std::string>& flop_tables, std::string& error) {
  std::vector<std::string> notes;
  if (!models::load_user_models(op_model_files, notes, error) ||
      !models::load_flop_tables(flop_tables, notes, error)) {
    return false;
  }
  for (const std::string& note : notes) {
    fmt::print(stderr, "pyprof {}: note: {}\n", tool, pyprof::terminal_safe(note));
  }
  return true;
}

std::string load_messages(std::string_view tool, std::string_view label, const ReadResult& data) {
  std::string out;
  const std::string prefix = label.empty() ? std::string() : pyprof::terminal_safe(label) + ": ";
  auto say = [&](const char* level, std::string_view text) {
    out += fmt::format("pyprof {}: {}: {}{}\n", tool, level, prefix, pyprof::terminal_safe(text));
  };
  // The warnings quote the trace's names, whatever bytes the profiled program wrote: escaped, so
  // that none reaches the terminal as a control sequence.
  for (const std::string& w : data.warnings) say("warning", w);
  if (data.skipped_lines > 0) {
    say("warning", fmt::format("{} unreadable lines skipped", data.skipped_lines));
  }
  // Every number a report gives covers the selected iterations only: said once, where a person
  // sees it.
  if (std::string note = iteration_note(data); !note.empty()) say("note", note);
  if (std::string note = autotuning_note(data); !note.empty()) say("note", note);
  return out;
}

}  // namespace pyprof::prof
