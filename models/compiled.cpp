// The cost of a kernel torch.compile (Inductor) generated: docs/ops.md "compiled kernels".
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/op_model.h"

namespace pyprof::models {

namespace {
namespace dom = simdjson::dom;

// Sum of the bytes of a list of tensors ({"shape","dtype",...}); false when one has no readable
// extent (a symbolic shape under dynamic shapes).
bool buffer_bytes(dom::element list, double& bytes, std::string& dtype) {
  dom::array items;
  if (list.get_array().get(items) != simdjson::SUCCESS) return false;
  for (dom::element item : items) {
    dom::object o;
    dom::array shape;
    if (item.get_object().get(o) != simdjson::SUCCESS ||
        o["shape"].get_array().get(shape) != simdjson::SUCCESS) {
      return false;
    }
    Tensor t;
    for (dom::element d : shape) {
      int64_t v;
      if (d.get_int64().get(v) != simdjson::SUCCESS || v < 0) return false;
      t.shape.push_back(v);
    }
    std::string_view name;
    if (o["dtype"].get_string().get(name) == simdjson::SUCCESS) t.dtype = name;
    if (dtype.empty()) dtype = t.dtype;
    bytes += tensor_bytes(t);
  }
  return true;
}
}  // namespace

// A fused kernel runs its ATen nodes on values it keeps in registers: its FLOPs are the sum of
// its nodes' FLOPs, each from that op's own model, and its ideal DRAM traffic is the buffers it
// reads and writes once each (the nodes' inputs made outside the kernel, and their outputs used
// outside it), not the sum of the nodes' bytes: what fusion saved.
OpCost compiled_kernel_cost(std::string_view kernel_json, CompiledKernelNodes* nodes_out) {
  OpCost cost;
  CompiledKernelNodes nodes;
  thread_local dom::parser parser;
  dom::element root;
  dom::array list;
  if (parser.parse(kernel_json.data(), kernel_json.size()).get(root) != simdjson::SUCCESS ||
      root["nodes"].get_array().get(list) != simdjson::SUCCESS) {
    if (nodes_out) *nodes_out = nodes;
    return cost;
  }
  int64_t missing = 0;
  if (root["missing"].get_int64().get(missing) != simdjson::SUCCESS) missing = 0;
  nodes.missing = missing;
  bool tc = false;
  for (dom::element node : list) {
    std::string_view op;
    dom::element args;
    if (node["op"].get_string().get(op) != simdjson::SUCCESS) continue;
    ++nodes.count;
    std::string args_json;
    if (node["args"].get(args) == simdjson::SUCCESS) args_json = simdjson::minify(args);
    const OpCost c = op_cost(op, OpArgs::from_json(args_json));
    if (c.modeled) {
      ++nodes.modeled;
      cost.flops += c.flops;
      cost.masked_flops += c.masked_flops;  // a causal attention node's skipped blocks
      nodes.unfused_bytes += c.bytes;
      tc = tc || c.tc_eligible;
    } else if (std::find(nodes.unmodeled.begin(), nodes.unmodeled.end(), op) ==
               nodes.unmodeled.end()) {
      nodes.unmodeled.emplace_back(op);
    }
  }
  std::string dtype;
  double bytes = 0;
  dom::element reads, writes;
  const bool have_bytes = root["reads"].get(reads) == simdjson::SUCCESS &&
                          root["writes"].get(writes) == simdjson::SUCCESS &&
                          buffer_bytes(writes, bytes, dtype) && buffer_bytes(reads, bytes, dtype);
  if (nodes_out) *nodes_out = nodes;
  // Exact only when every node has a model and the buffers have sizes; else "na", as any op
  // without a model.
  // A size still symbolic (a dynamic-shape kernel not bound to a call's sizes: bind_symbols)
  // would count its nodes on made-up extents.
  if (!have_bytes || has_symbolic_sizes(kernel_json) || nodes.modeled != nodes.count ||
      missing > 0 || !(cost.flops < kMaxCount) || !(bytes < kMaxCount)) {
    cost.flops = cost.masked_flops = 0;
    return cost;
  }
  cost.modeled = true;
  cost.bytes = bytes;
  cost.tc_eligible = tc;
  cost.dtype = dtype;
  cost.family = "compiled";
  cost.params = "nodes=" + std::to_string(nodes.count);
  if (!dtype.empty()) cost.params += "," + short_dtype(dtype);
  cost.params += ",unfused_bytes=" + std::to_string(static_cast<int64_t>(nodes.unfused_bytes));
  return cost;
}

}  // namespace pyprof::models

namespace pyprof::models {

namespace {

// Recursive descent over one expression; `ok` turns false at the first thing it cannot read.
class SizeExpr {
 public:
  SizeExpr(std::string_view text, const std::vector<std::pair<std::string, int64_t>>& symbols)
      : text_(text), symbols_(symbols) {}

  std::optional<int64_t> evaluate() {
    const int64_t v = sum();
    skip_space();
    if (!ok_ || at_ != text_.size()) return std::nullopt;
    return v;
  }

 private:
  void skip_space() {
    while (at_ < text_.size() && text_[at_] == ' ') ++at_;
  }
  bool eat(std::string_view token) {
    skip_space();
    if (text_.substr(at_, token.size()) != token) return false;
    at_ += token.size();
    return true;
  }
  // After an overflow-checked builtin: ok_ turns false on overflow.
  void overflowed(bool overflow) {
    if (overflow) ok_ = false;
  }
  static int64_t floor_div(int64_t a, int64_t b) {
    const int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
  }
  static int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

  int64_t sum() {
    int64_t v = product();
    while (ok_) {
      int64_t out = 0;
      if (eat("+")) {
        const int64_t r = product();
        overflowed(__builtin_add_overflow(v, r, &out));
      } else if (eat("-")) {
        const int64_t r = product();
        overflowed(__builtin_sub_overflow(v, r, &out));
      } else {
        break;
      }
      v = out;
    }
    return v;
  }
  int64_t product() {
    int64_t v = unary();
    while (ok_) {
      if (eat("//")) {
        const int64_t r = unary();
        if (r == 0) return ok_ = false, 0;
        v = floor_div(v, r);
      } else if (peek_single_star() && eat("*")) {
        const int64_t r = unary();
        int64_t out = 0;
        overflowed(__builtin_mul_overflow(v, r, &out));
        v = out;
      } else if (eat("/")) {
        const int64_t r = unary();
        if (r == 0 || v % r != 0) return ok_ = false, 0;  // a size is whole
        v /= r;
      } else if (eat("%")) {
        const int64_t r = unary();
        if (r == 0) return ok_ = false, 0;
        v = floor_mod(v, r);
      } else {
        break;
      }
    }
    return v;
  }
  // A "*" that is not the start of "**" (a power binds tighter: unary() takes it).
  bool peek_single_star() {
    skip_space();
    return text_.substr(at_, 1) == "*" && text_.substr(at_, 2) != "**";
  }
  int64_t unary() {
    if (eat("-")) {
      const int64_t v = unary();
      if (v == INT64_MIN) return ok_ = false, 0;
      return -v;
    }
    int64_t base = atom();
    if (ok_ && eat("**")) {
      const int64_t exponent = unary();
      if (exponent < 0 || exponent > 62) return ok_ = false, 0;
      int64_t v = 1;
      for (int64_t i = 0; i < exponent && ok_; ++i) {
        int64_t out = 0;
        overflowed(__builtin_mul_overflow(v, base, &out));
        v = out;
      }
      return v;
    }
    return base;
  }
  int64_t atom() {
    skip_space();
    if (at_ >= text_.size()) return ok_ = false, 0;
    const char c = text_[at_];
    if (c == '(') {
      ++at_;
      const int64_t v = sum();
      if (!eat(")")) ok_ = false;
      return v;
    }
    if (c >= '0' && c <= '9') {
      int64_t v = 0;
      while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, text_[at_] - '0', &v)) {
          return ok_ = false, 0;
        }
        ++at_;
      }
      return v;
    }
    if (!(std::isalpha(static_cast<unsigned char>(c)) || c == '_')) return ok_ = false, 0;
    const size_t begin = at_;
    while (at_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_')) {
      ++at_;
    }
    const std::string_view name = text_.substr(begin, at_ - begin);
    if (eat("(")) return call(name);
    for (const auto& [symbol, value] : symbols_) {
      if (symbol == name) return value;
    }
    return ok_ = false, 0;
  }
  int64_t call(std::string_view name) {
    std::vector<int64_t> args;
    if (!eat(")")) {
      do {
        args.push_back(sum());
      } while (ok_ && eat(","));
      if (!eat(")")) ok_ = false;
    }
    if (!ok_) return 0;
    const size_t n = args.size();
    if ((name == "floor" || name == "ceiling" || name == "Integer") && n == 1) return args[0];
    if ((name == "Max" || name == "Min") && n >= 1) {
      int64_t v = args[0];
      for (int64_t a : args) v = name == "Max" ? std::max(v, a) : std::min(v, a);
      return v;
    }
    if ((name == "FloorDiv" || name == "CleanDiv" || name == "CeilDiv") && n == 2 && args[1] != 0) {
      if (name == "CeilDiv") return -floor_div(-args[0], args[1]);
      return floor_div(args[0], args[1]);
    }
    if ((name == "Mod" || name == "PythonMod") && n == 2 && args[1] != 0) {
      return floor_mod(args[0], args[1]);
    }
    if (name == "ModularIndexing" && n == 3 && args[1] != 0 && args[2] != 0) {
      return floor_mod(floor_div(args[0], args[1]), args[2]);
    }
    return ok_ = false, 0;
  }

  std::string_view text_;
  const std::vector<std::pair<std::string, int64_t>>& symbols_;
  size_t at_ = 0;
  bool ok_ = true;
};

// Whether `text` names a size symbol as Dynamo does (s77, u0, ps1...): an unbound one makes the
// kernel unmodelled, where another word ("float32", "cpu") is simply not an expression.
bool names_a_symbol(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    if (!std::isalpha(static_cast<unsigned char>(text[i]))) {
      ++i;
      continue;
    }
    size_t letters = 0, digits = 0, j = i;
    while (j < text.size() && std::isalpha(static_cast<unsigned char>(text[j]))) ++j, ++letters;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j, ++digits;
    const bool word_ends =
        j == text.size() || !(std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_');
    if (letters <= 2 && digits > 0 && word_ends) return true;
    while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_'))
      ++j;
    i = j;
  }
  return false;
}

}  // namespace

std::optional<int64_t> eval_size_expr(std::string_view text,
                                      const std::vector<std::pair<std::string, int64_t>>& symbols) {
  return SizeExpr(text, symbols).evaluate();
}

bool has_symbolic_sizes(std::string_view kernel_json) {
  return kernel_json.find("\"symbolic\":true") != std::string_view::npos;
}

std::string bind_symbols(std::string_view kernel_json, std::string_view symbols_json) {
  std::vector<std::pair<std::string, int64_t>> symbols;
  {
    thread_local dom::parser parser;
    dom::object object;
    if (parser.parse(symbols_json.data(), symbols_json.size()).get(object) != simdjson::SUCCESS) {
      return {};
    }
    for (auto [key, value] : object) {
      int64_t v;
      if (value.get_int64().get(v) != simdjson::SUCCESS) return {};
      symbols.emplace_back(std::string(key), v);
    }
  }
  std::string out;
  out.reserve(kernel_json.size());
  for (size_t i = 0; i < kernel_json.size();) {
    if (kernel_json[i] != '"') {
      out += kernel_json[i++];
      continue;
    }
    size_t end = i + 1;
    bool escaped = false;
    while (end < kernel_json.size() && kernel_json[end] != '"') {
      if (kernel_json[end] == '\\') {
        escaped = true;
        ++end;
      }
      ++end;
    }
    if (end >= kernel_json.size()) return {};  // not JSON
    const std::string_view token = kernel_json.substr(i, end + 1 - i);
    const std::string_view content = token.substr(1, token.size() - 2);
    size_t next = end + 1;
    while (next < kernel_json.size() && kernel_json[next] == ' ') ++next;
    const bool is_key = next < kernel_json.size() && kernel_json[next] == ':';
    if (!is_key && !escaped) {
      if (const std::optional<int64_t> v = eval_size_expr(content, symbols)) {
        out += std::to_string(*v);
        i = end + 1;
        continue;
      }
      if (names_a_symbol(content)) return {};  // a size this call's symbols do not give
    }
    out += token;
    i = end + 1;
  }
  // Every size is a number now: the tensors are no longer symbolic (compiled_kernel_cost).
  for (std::string_view flag : {",\"symbolic\":true", "\"symbolic\":true,"}) {
    for (size_t at = out.find(flag); at != std::string::npos; at = out.find(flag, at)) {
      out.erase(at, flag.size());
    }
  }
  return out;
}

}  // namespace pyprof::models
