// `TOOL --list-options`: a C++ tool's command-line options as JSON, for pyprof's Python fronts
// (pyprof/_tools.py), which must tell an option's value from an input (`pyprof prof --parquet`,
// `pyprof export` and `pyprof diff` of a database, `pyprof profile --report`). Reading the list
// from the tool itself, rather than from a copy in Python, means a new option that takes a value
// is never taken for an input. Hidden: it is not registered with CLI11, so --help does not show
// it. Every tool's main calls, once its options are added and before it parses:
//   if (int status = pyprof::list_options_if_asked(app, argc, argv); status >= 0) return status;
// Header-only, like CLI11.
//
// The JSON (one line):
//   {"tool":"pyprof prof","options":[
//     {"names":["-o","--output"],"takes_value":true,"positional":false,"hidden":false,
//      "default":""}, ...,
//     {"names":["dict"],"takes_value":true,"positional":true,"hidden":false,"default":""}]}
// `names`: as typed (short, then long); a positional's its own name. `takes_value`: whether the
// option consumes the next argument (`-o FILE`; also written `-oFILE`, `--output=FILE`).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "common/json_writer.h"

namespace pyprof {

inline constexpr std::string_view kListOptionsFlag = "--list-options";

inline std::string options_json(const CLI::App& app) {
  std::string out;
  {
    JsonWriter w(out, 4096);
    w.begin_object();
    w.key("tool");
    w.string(app.get_name());
    w.key("options");
    w.begin_array();
    for (const CLI::Option* opt : app.get_options()) {
      w.begin_object();
      w.key("names");
      w.begin_array();
      for (const std::string& name : opt->get_snames()) w.string("-" + name);
      for (const std::string& name : opt->get_lnames()) w.string("--" + name);
      if (opt->get_positional()) w.string(opt->get_name(true));
      w.end_array();
      w.key("takes_value");
      w.boolean(opt->get_items_expected_max() > 0);
      w.key("positional");
      w.boolean(opt->get_positional());
      w.key("hidden");
      w.boolean(opt->get_group().empty());
      w.key("default");
      w.string(opt->get_default_str());
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  out += '\n';
  return out;
}

// -1 when `args` does not hold --list-options (before a `--`); else the options printed on
// standard output and the exit status (1 when standard output could not take them).
inline int list_options_if_asked(const CLI::App& app, const std::vector<std::string>& args) {
  bool asked = false;
  for (const std::string& arg : args) {
    if (arg == "--") break;
    asked = asked || arg == kListOptionsFlag;
  }
  if (!asked) return -1;
  const std::string text = options_json(app);
  const bool written =
      std::fwrite(text.data(), 1, text.size(), stdout) == text.size() && std::fflush(stdout) == 0;
  if (!written)
    std::fprintf(stderr, "%s: error: writing the options failed\n", app.get_name().c_str());
  return written ? 0 : 1;
}

inline int list_options_if_asked(const CLI::App& app, int argc, char** argv) {
  return list_options_if_asked(app,
                               std::vector<std::string>(argv + (argc > 0 ? 1 : 0), argv + argc));
}

}  // namespace pyprof
