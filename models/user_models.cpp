#include "models/user_models.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "common/suggest.h"

namespace pyprof::models {

namespace {

// Formulas read at most this many arguments (the evaluator's slot table lives on the stack).
constexpr size_t kMaxArgs = 64;

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// "ns::name" or "ns::name.overload", each part an identifier, namespaces possibly nested.
bool is_qualified_op(std::string_view op) {
  size_t dot = op.find('.');
  if (dot != std::string_view::npos) {
    if (!is_identifier(op.substr(dot + 1))) return false;
    op = op.substr(0, dot);
  }
  int parts = 0;
  for (;;) {
    size_t colons = op.find("::");
    if (!is_identifier(op.substr(0, colons))) return false;
    ++parts;
    if (colons == std::string_view::npos) break;
    op.remove_prefix(colons + 2);
  }
  return parts >= 2;
}

// Whether pyprof's registry models `op` (as op_cost() finds it: the qualified name, then the
// bare name and its out-of-place form).
bool builtin_model_exists(std::string_view op) {
  size_t dot = op.find('.', op.rfind("::"));
  if (dot != std::string_view::npos) op = op.substr(0, dot);
  if (registry().find(op, nullptr)) return true;
  std::string_view bare = op.substr(op.rfind("::") + 2);
  if (registry().find(bare, nullptr)) return true;
  return bare.size() > 1 && bare.back() == '_' &&
         registry().find(bare.substr(0, bare.size() - 1), nullptr);
}

const std::vector<std::string>& keys() {
  static const std::vector<std::string> k = {"flops", "bytes", "family", "dtype"};
  return k;
}

// One file being read: the model of the block open now, and the lines its keys came from.
struct BlockState {
  bool open = false;
  UserModel model;
  size_t op_line = 0;
  std::map<std::string, size_t, std::less<>> key_lines;
};

}  // namespace

bool UserModels::add_text(std::string_view text, const std::string& file, std::string& error) {
  std::vector<UserModel> added;
  std::map<std::string, size_t, std::less<>> added_by_op;
  BlockState block;
  auto at = [&](size_t line) { return file + ":" + std::to_string(line) + ": "; };
  auto close_block = [&]() -> bool {
    if (!block.open) return true;
    for (std::string_view key : {"flops", "bytes"}) {
      if (!block.key_lines.contains(key)) {
        error = at(block.op_line) + "op " + block.model.op + " has no `" + std::string(key) +
                " = ...` line (every op needs a flops and a bytes formula; 0 where there is none)";
        return false;
      }
    }
    for (size_t i = 0; i < block.model.args.size(); ++i) {
      const int32_t slot = static_cast<int32_t>(i);
      block.model.used.push_back(block.model.flops.uses(slot) || block.model.bytes.uses(slot) ||
                                 block.model.dtype_arg == slot);
    }
    added_by_op[block.model.op] = added.size();
    added.push_back(std::move(block.model));
    block = BlockState{};
    return true;
  };

  size_t line_number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    for (char c : line) {
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
        error = at(line_number) + "a control character in the line (not a text file?)";
        return false;
      }
    }

    if (line.starts_with("op ") || line.starts_with("op\t")) {
      if (!close_block()) return false;
      std::string_view rest = trim(line.substr(3));
      size_t paren = rest.find('(');
      std::string_view name = trim(rest.substr(0, paren));
      if (!is_qualified_op(name)) {
        error = at(line_number) + "'" + std::string(name) +
                "' is no qualified op name (namespace::name or namespace::name.overload, as "
                "the trace names it: mylib::fused_gate)";
        return false;
      }
      if (paren == std::string_view::npos || rest.back() != ')') {
        error = at(line_number) + "op " + std::string(name) +
                ": expected its argument names in the schema's order after the name, in "
                "parentheses: op " +
                std::string(name) + "(a, b, out), or () for none";
        return false;
      }
      const std::string op(name);
      if (auto it = added_by_op.find(op); it != added_by_op.end()) {
        error = at(line_number) + "op " + op + " defined twice (first at " +
                added[it->second].where + ")";
        return false;
      }
      if (auto it = by_op_.find(op); it != by_op_.end()) {
        error = at(line_number) + "op " + op + " defined twice (first at " +
                models_[it->second].where + ")";
        return false;
      }
      block.open = true;
      block.op_line = line_number;
      block.model.op = op;
      block.model.where = file + ":" + std::to_string(line_number);
      block.model.params = "user=" + std::filesystem::path(file).filename().string() + ":" +
                           std::to_string(line_number);
      std::string_view list = trim(rest.substr(paren + 1, rest.size() - paren - 2));
      while (!list.empty()) {
        size_t comma = list.find(',');
        std::string_view arg = trim(list.substr(0, comma));
        if (!is_identifier(arg)) {
          error = at(line_number) + "op " + op + ": '" + std::string(arg) +
                  "' is no argument name (letters, digits and _, as the op's schema names it)";
          return false;
        }
        for (const std::string& seen : block.model.args) {
          if (seen == arg) {
            error = at(line_number) + "op " + op + ": argument '" + seen + "' named twice";
            return false;
          }
        }
        block.model.args.emplace_back(arg);
        if (comma == std::string_view::npos) break;
        list = trim(list.substr(comma + 1));
        if (list.empty()) {
          error = at(line_number) + "op " + op + ": an argument name is missing after ','";
          return false;
        }
      }
      if (block.model.args.size() > kMaxArgs) {
        error =
            at(line_number) + "op " + op + ": more than " + std::to_string(kMaxArgs) + " arguments";
        return false;
      }
      continue;
    }

    size_t equals = line.find('=');
    if (equals == std::string_view::npos) {
      error = at(line_number) + "expected `op NAME(ARGS)` or `KEY = VALUE`, found '" +
              std::string(line) + "'";
      return false;
    }
    const std::string key(trim(line.substr(0, equals)));
    std::string_view value = trim(line.substr(equals + 1));
    bool known = false;
    for (const std::string& k : keys()) known = known || k == key;
    if (!known) {
      error = at(line_number) + "unknown key '" + key + "'" + did_you_mean(key, keys()) +
              " (keys: flops, bytes, family, dtype)";
      return false;
    }
    if (!block.open) {
      error = at(line_number) + "`" + key + " = ...` before any `op NAME(ARGS)` line";
      return false;
    }
    if (auto it = block.key_lines.find(key); it != block.key_lines.end()) {
      error = at(line_number) + "op " + block.model.op + ": " + key +
              " given twice (first at line " + std::to_string(it->second) + ")";
      return false;
    }
    block.key_lines[key] = line_number;
    UserModel& m = block.model;
    if (key == "flops" || key == "bytes") {
      std::string why;
      if (!(key == "flops" ? m.flops : m.bytes).compile(value, m.args, why)) {
        error = at(line_number) + "op " + m.op + ": " + key + ": " + why;
        return false;
      }
    } else if (key == "family") {
      if (!is_identifier(value)) {
        error = at(line_number) + "op " + m.op + ": family '" + std::string(value) +
                "' is no name (a word: pointwise, matmul, ...)";
        return false;
      }
      m.family = std::string(value);
    } else {  // dtype
      for (size_t i = 0; i < m.args.size(); ++i) {
        if (m.args[i] == value) m.dtype_arg = static_cast<int32_t>(i);
      }
      if (m.dtype_arg < 0) {
        error = at(line_number) + "op " + m.op + ": dtype = '" + std::string(value) +
                "' is none of the op's arguments" + did_you_mean_argument(value, m.args);
        return false;
      }
    }
  }
  if (!close_block()) return false;
  for (UserModel& m : added) {
    by_op_[m.op] = models_.size();
    models_.push_back(std::move(m));
  }
  return true;
}

bool UserModels::add_file(const std::string& path, std::string& error) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    error = "cannot read op models file " + path + ": no such file";
    return false;
  }
  if (std::filesystem::is_directory(path, ec)) {
    error = "cannot read op models file " + path + ": a folder";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in || in.bad()) {
    error = "cannot read op models file " + path + ": " + std::strerror(errno);
    return false;
  }
  return add_text(text.str(), path, error);
}

const UserModel* UserModels::find(std::string_view op) const {
  if (models_.empty()) return nullptr;
  auto it = by_op_.find(op);
  if (it == by_op_.end()) {
    // A record naming an overload ("mylib::op.default") uses the model of the op.
    size_t colons = op.rfind("::");
    size_t dot = op.find('.', colons == std::string_view::npos ? 0 : colons);
    if (colons == std::string_view::npos || dot == std::string_view::npos) return nullptr;
    it = by_op_.find(op.substr(0, dot));
    if (it == by_op_.end()) return nullptr;
  }
  return &models_[it->second];
}

bool user_model_cost(const UserModel& model, const OpArgs& args, OpCost& cost) {
  const Value* slots[kMaxArgs];
  for (size_t i = 0; i < model.args.size(); ++i) {
    slots[i] = model.used[i] ? args.arg(model.args[i], i) : nullptr;
  }
  const std::span<const Value* const> bound(slots, model.args.size());
  std::string why;
  double flops = 0, bytes = 0;
  const char* failed = nullptr;
  if (!model.flops.evaluate(bound, model.args, flops, why)) {
    failed = "flops";
  } else if (!model.bytes.evaluate(bound, model.args, bytes, why)) {
    failed = "bytes";
  } else if (flops < 0 || bytes < 0) {
    failed = flops < 0 ? "flops" : "bytes";
    const double negative = flops < 0 ? flops : bytes;
    why = "negative (" +
          (negative == std::floor(negative) && negative > -1e15
               ? std::to_string(static_cast<int64_t>(negative))
               : std::to_string(negative)) +
          ")";
  }
  if (failed) {
    cost.problem = CostProblem::kUserModel;
    cost.params = model.where + ": " + failed + ": " + why;
    return false;
  }
  cost.flops = std::round(flops);
  cost.bytes = std::round(bytes);
  cost.params = model.params;
  if (model.dtype_arg >= 0) {
    const Value* v = slots[model.dtype_arg];
    if (v && v->kind == Value::Kind::kTensor) cost.dtype = canonical_dtype(v->tensor.dtype);
  }
  return true;
}

namespace {
std::unique_ptr<const UserModels>& installed() {
  static std::unique_ptr<const UserModels> models;
  return models;
}
}  // namespace

void install_user_models(UserModels models) {
  installed() = models.empty() ? nullptr : std::make_unique<const UserModels>(std::move(models));
}

const UserModels* installed_user_models() { return installed().get(); }

bool load_user_models(const std::vector<std::string>& files, std::vector<std::string>& notes,
                      std::string& error) {
  std::vector<std::string> paths;
  if (const char* env = std::getenv(kOpModelsEnv); env != nullptr) {
    std::string_view list = env;
    while (!list.empty()) {
      size_t colon = list.find(':');
      if (colon != 0) paths.emplace_back(list.substr(0, colon));
      if (colon == std::string_view::npos) break;
      list.remove_prefix(colon + 1);
    }
  }
  paths.insert(paths.end(), files.begin(), files.end());
  UserModels models;
  for (const std::string& path : paths) {
    if (!models.add_file(path, error)) return false;
  }
  for (const UserModel& m : models.models()) {
    if (builtin_model_exists(m.op)) {
      notes.push_back(m.where + ": op " + m.op +
                      " has a model in pyprof; this file's formulas replace it");
    }
  }
  install_user_models(std::move(models));
  return true;
}

}  // namespace pyprof::models
