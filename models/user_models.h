// Op models users add without rebuilding pyprof (docs/ops.md "Adding your own models"): a text
// file of blocks, one per op, each a FLOP and a byte formula over the op's arguments,
//
//   op mylib::fused_gate(a, b, out)          # the op's qualified name, its arguments in order
//   flops = 2 * numel(a) * size(b, -1)
//   bytes = nbytes(a) + nbytes(b) + nbytes(out)
//   family = pointwise                       # optional (default: user)
//   dtype = a                                # optional: the argument whose dtype the op computes
//   in
//
// read by `pyprof prof --op-models FILE` and from the files $PYPROF_OP_MODELS names. Every line
// is checked when the file is loaded (an unknown key, function or argument, a bad formula, an op
// defined twice: an error naming the file and the line), and each formula is compiled once
// (models/user_expr.h). A user model replaces pyprof's own model of the same op. op_cost() looks
// the installed user models up before the registry.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "models/op_model.h"
#include "models/user_expr.h"

namespace pyprof::models {

// The environment variable naming the models files prof loads by default, separated by ':'.
inline constexpr const char* kOpModelsEnv = "PYPROF_OP_MODELS";

struct UserModel {
  std::string op;                 // "mylib::fused_gate", or one overload: "mylib::op.Tensor"
  std::string where;              // "FILE:LINE" of its op line, for messages
  std::string params;             // what prof's Params column shows: "user=FILE:LINE"
  std::vector<std::string> args;  // the op's argument names, in the schema's order
  std::vector<bool> used;         // per argument: read by a formula
  UserExpr flops, bytes;
  std::string family = "user";
  int32_t dtype_arg = -1;  // the argument whose dtype is the op's compute dtype; -1: none
};

class UserModels {
 public:
  // Adds the models in `text`, read from `file` (named in errors and in each model's `where`).
  // False with `error` ("FILE:LINE: message") at the first line that is not right; then nothing
  // of `text` is added.
  bool add_text(std::string_view text, const std::string& file, std::string& error);
  // Reads `path` and adds its models.
  bool add_file(const std::string& path, std::string& error);

  // The model of `op` as a record names it ("mylib::fused_gate.default" finds a model of
  // "mylib::fused_gate" when none names that overload), or null.
  const UserModel* find(std::string_view op) const;
  const std::vector<UserModel>& models() const { return models_; }
  bool empty() const { return models_.empty(); }

 private:
  std::vector<UserModel> models_;
  std::map<std::string, size_t, std::less<>> by_op_;  // op -> index in models_
};

// The cost of one call under `model`: false when the call does not fit it (an argument missing
// or of another kind, a dimension past the tensor's rank, a division by zero, a negative
// result), with cost.problem kUserModel and the reason, after the model's place, in cost.params.
bool user_model_cost(const UserModel& model, const OpArgs& args, OpCost& cost);

// Loads the files $PYPROF_OP_MODELS names, then `files`, and installs their models for
// op_cost(). `notes`: one line per op pyprof models itself, whose user model now replaces it.
// False with `error` naming the file and line of the first problem (nothing installed).
bool load_user_models(const std::vector<std::string>& files, std::vector<std::string>& notes,
                      std::string& error);

// The models op_cost() consults first. Installed once, before any op is costed (prof reads them
// on several threads afterwards); installing an empty set removes them (tests).
void install_user_models(UserModels models);
const UserModels* installed_user_models();

}  // namespace pyprof::models
