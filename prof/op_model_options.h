// The options by which a tool other than prof takes the op models prof takes (`pyprof diff`,
// `pyprof export`): `--op-models FILE` and `--flop-table FILE`, both repeatable, with one help
// text, handed to load_op_models (prof/load_profile.h). prof adds its own, with more words, as
// the tool they are documented for. Header-only, like CLI11, for the tools' mains.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace pyprof::prof {

struct OpModelFiles {
  std::vector<std::string> op_models;    // --op-models, after those $PYPROF_OP_MODELS names
  std::vector<std::string> flop_tables;  // --flop-table
};

inline void add_op_model_options(CLI::App& app, OpModelFiles& files) {
  app.add_option("--op-models", files.op_models,
                 "as pyprof prof: a file of your own op models, after those $PYPROF_OP_MODELS "
                 "names; repeatable (docs/ops.md \"Adding your own models\")")
      ->allow_extra_args(false);
  app.add_option("--flop-table", files.flop_tables,
                 "as pyprof prof: a FLOP table of calls of ops pyprof has no model of "
                 "(docs/formats.md §5); repeatable")
      ->allow_extra_args(false);
}

}  // namespace pyprof::prof
