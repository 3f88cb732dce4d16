// "Read, cost, select iterations, warn": how every tool that reads a net.dict makes it a profile
// ready for its reports, in one place: `pyprof prof` (its one input, and each rank of --report
// ranks), each side of `pyprof diff` and `pyprof export`.
//
// One behaviour for each of them (docs/prof.md, "Reading a net.dict"): an input that is no
// net.dict, or a damaged one (no readable header, an `args` line or reference that is malformed,
// a line past 64 MiB, a read error) fails with its name and the line; a line that cannot be read
// after the header is skipped, counted and warned about (the first few by line number, then how
// many), and the rest is read; every warning and note is printed, each naming its input where a
// tool reads several.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/phase_timer.h"
#include "prof/iterations.h"
#include "prof/records.h"

namespace pyprof::prof {

struct PeaksFile;  // prof/device_peaks.h

struct LoadRequest {
  ReadOptions read;
  const PeaksFile* peaks = nullptr;  // `--peaks`: peaks for the above-peak check (assign_costs)
  // Select the iterations the reports cover (select_iterations, after Triton's autotuning is
  // left out). False: every record is kept (`pyprof export` draws the whole timeline).
  bool select = true;
  // An unreadable line fails the load instead of being skipped (`pyprof export`: its trace
  // copies the dict's lines, and one left out would be a hole no viewer shows; docs/export.md).
  // The error names the first such line.
  bool unreadable_lines_fatal = false;
  IterationRequest iterations;
  pyprof::PhaseTimer* timer = nullptr;  // laps "read" and "cost" when given
};

// Why a profile could not be loaded.
struct LoadError {
  std::string input;    // the input as messages name it ("standard input" for -); "" when
                        // `problem` names it already (it could not be opened)
  std::string problem;  // "line 3: no pyprof_dict header (...)", "--iterations 9: ..."
  int exit_code = 1;    // 1: the input cannot be read; 2: the iteration request selects nothing
  // "INPUT: PROBLEM" (or the problem alone when it names the input).
  std::string message() const { return input.empty() ? problem : input + ": " + problem; }
};

// Reads the net.dict at `path` ("-": standard input), costs its records (assign_costs) and, as
// `request` says, selects its iterations. False with `error` when the input cannot be read as a
// net.dict (with unreadable_lines_fatal: holds an unreadable line) or the selection selects
// nothing.
bool load_profile(const std::string& path, const LoadRequest& request, ReadResult& out,
                  LoadError& error);

// Installs the op models a tool costs with besides pyprof's, before it loads any profile: the
// user models of the files $PYPROF_OP_MODELS names, then of `op_model_files` (`--op-models`,
// models/user_models.h), then the FLOP tables `flop_tables` (`--flop-table`,
// models/flop_table.h), whose entries of ops now modelled are ignored. Each note is printed as
// "pyprof TOOL: note: ...". False with `error` naming the file and line of the first problem.
bool load_op_models(std::string_view tool, const std::vector<std::string>& op_model_files,
                    const std::vector<std::string>& flop_tables, std::string& error);

// What a tool says on standard error about a profile it loaded, one line each:
// "pyprof TOOL: warning: [LABEL: ]TEXT" for the reader's warnings and the count of unreadable
// lines skipped, "pyprof TOOL: note: [LABEL: ]TEXT" for what the iteration selection and the
// autotuning rule left out. The trace's text in them is escaped (common/terminal_text.h).
// `label`: which input, where the tool reads several ("base", a rank's file); "" for none.
std::string load_messages(std::string_view tool, std::string_view label, const ReadResult& data);

}  // namespace pyprof::prof
