#include "models/user_expr.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "common/suggest.h"

namespace pyprof::models {

namespace {

using Op = UserExpr::Op;
using Instruction = UserExpr::Instruction;

// 'text' for a message. (Built with += rather than "'" + std::string(text) + "'", which GCC 12
// flags with a false -Wrestrict.)
std::string quoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '\'';
  out += text;
  out += '\'';
  return out;
}

bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The functions that take an argument name, and those that take expressions.
struct TensorFunction {
  std::string_view name;
  Op op;
};
constexpr TensorFunction kTensorFunctions[] = {{"numel", Op::kNumel},
                                               {"nbytes", Op::kNbytes},
                                               {"itemsize", Op::kItemsize},
                                               {"rank", Op::kRank},
                                               {"size", Op::kSize}};
const std::vector<std::string>& function_names() {
  static const std::vector<std::string> names = {"numel", "nbytes", "itemsize", "rank",
                                                 "size",  "min",    "max",      "ceil_div"};
  return names;
}

// Recursive descent over the text, emitting the stack program as it goes (operands before
// their operator), and tracking the stack's depth so that evaluation never outgrows it.
class Compiler {
 public:
  Compiler(std::string_view text, const std::vector<std::string>& params,
           std::vector<Instruction>& code)
      : text_(text), params_(params), code_(code) {}

  // The most values the program holds on its stack at once.
  int max_depth() const { return max_depth_; }

  bool run(std::string& error) {
    skip_space();
    if (at_end()) return fail("empty formula", error);
    if (!sum(error)) return false;
    skip_space();
    if (!at_end()) return fail("unexpected " + token_here() + " after the formula", error);
    return true;
  }

 private:
  bool sum(std::string& error) {
    if (!product(error)) return false;
    for (;;) {
      skip_space();
      if (peek() == '+' || peek() == '-') {
        Op op = peek() == '+' ? Op::kAdd : Op::kSub;
        ++pos_;
        if (!product(error)) return false;
        emit_binary(op);
      } else {
        return true;
      }
    }
  }

  bool product(std::string& error) {
    if (!unary(error)) return false;
    for (;;) {
      skip_space();
      Op op;
      if (peek() == '*' && peek(1) != '*') {
        op = Op::kMul;
        pos_ += 1;
      } else if (peek() == '/' && peek(1) == '/') {
        op = Op::kFloorDiv;
        pos_ += 2;
      } else if (peek() == '/') {
        op = Op::kDiv;
        pos_ += 1;
      } else if (peek() == '%') {
        op = Op::kMod;
        pos_ += 1;
      } else {
        return true;
      }
      if (!unary(error)) return false;
      emit_binary(op);
    }
  }

  bool unary(std::string& error) {
    skip_space();
    if (peek() == '-' || peek() == '+') {
      bool negate = peek() == '-';
      ++pos_;
      if (!unary(error)) return false;
      if (negate) code_.push_back({Op::kNeg});
      return true;
    }
    return power(error);
  }

  bool power(std::string& error) {
    if (!atom(error)) return false;
    skip_space();
    if (peek() == '*' && peek(1) == '*') {
      pos_ += 2;
      if (!unary(error)) return false;
      emit_binary(Op::kPow);
    }
    return true;
  }

  bool atom(std::string& error) {
    skip_space();
    if (at_end()) return fail("the formula ends where a value was expected", error);
    char c = peek();
    if (c == '(') {
      ++pos_;
      if (!sum(error)) return false;
      return expect(')', "')' to close '('", error);
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return number(error);
    if (!is_name_start(c)) return fail("unexpected " + token_here(), error);
    std::string_view name = read_name();
    skip_space();
    if (peek() != '(') return scalar_argument(name, error);
    ++pos_;
    for (const TensorFunction& f : kTensorFunctions) {
      if (name == f.name) return tensor_function(f, error);
    }
    if (name == "min" || name == "max") return min_max(name == "min" ? Op::kMin : Op::kMax, error);
    if (name == "ceil_div") {
      if (!sum(error) || !expect(',', "',' between ceil_div's two values", error) || !sum(error)) {
        return false;
      }
      emit_binary(Op::kCeilDiv);
      return expect(')', "')' after ceil_div's two values", error);
    }
    return fail("unknown function '" + std::string(name) + "'" +
                    did_you_mean(name, function_names()) +
                    " (functions: numel, nbytes, "
                    "itemsize, rank, size, min, max, ceil_div)",
                error);
  }

  bool number(std::string& error) {
    size_t start = pos_;
    while (!at_end() && (std::isdigit(static_cast<unsigned char>(peek())) || peek() == '.')) {
      ++pos_;
    }
    if (!at_end() && (peek() == 'e' || peek() == 'E')) {
      size_t mark = pos_++;
      if (!at_end() && (peek() == '+' || peek() == '-')) ++pos_;
      if (at_end() || !std::isdigit(static_cast<unsigned char>(peek()))) {
        pos_ = mark;
      } else {
        while (!at_end() && std::isdigit(static_cast<unsigned char>(peek()))) ++pos_;
      }
    }
    std::string_view digits = text_.substr(start, pos_ - start);
    double value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || end != digits.data() + digits.size() || !std::isfinite(value) ||
        (!at_end() && is_name_char(peek()))) {
      while (!at_end() && is_name_char(peek())) ++pos_;
      return fail(quoted(text_.substr(start, pos_ - start)) + " is no number", error);
    }
    code_.push_back({Op::kConst, 0, value});
    grow(1);
    return true;
  }

  bool scalar_argument(std::string_view name, std::string& error) {
    int32_t slot;
    if (!slot_of(name, slot, error)) return false;
    code_.push_back({Op::kScalar, slot});
    grow(1);
    return true;
  }

  bool tensor_function(const TensorFunction& f, std::string& error) {
    skip_space();
    if (at_end() || !is_name_start(peek())) {
      return fail(std::string(f.name) + "() takes an argument's name, not " + token_here(), error);
    }
    int32_t slot;
    if (!slot_of(read_name(), slot, error)) return false;
    if (f.op == Op::kSize) {
      skip_space();
      if (peek() != ',')
        return fail("size() takes an argument and a dimension: size(t, -1)", error);
      ++pos_;
      if (!sum(error)) return false;  // the dim, popped by kSize
      depth_ -= 1;
    }
    code_.push_back({f.op, slot});
    grow(1);
    return expect(')', "')' after " + std::string(f.name) + "'s argument", error);
  }

  bool min_max(Op op, std::string& error) {
    int32_t count = 0;
    for (;;) {
      if (!sum(error)) return false;
      ++count;
      skip_space();
      if (peek() != ',') break;
      ++pos_;
    }
    if (count < 2) {
      return fail(std::string(op == Op::kMin ? "min" : "max") + "() takes two values or more",
                  error);
    }
    code_.push_back({op, count});
    depth_ -= count - 1;
    return expect(')', "')' after the values", error);
  }

  bool slot_of(std::string_view name, int32_t& slot, std::string& error) {
    for (size_t i = 0; i < params_.size(); ++i) {
      if (params_[i] == name) {
        slot = static_cast<int32_t>(i);
        return true;
      }
    }
    for (const std::string& f : function_names()) {
      if (name == f) return fail(f + " is a function: " + f + "(...)", error);
    }
    std::string listed;
    for (const std::string& p : params_) listed += (listed.empty() ? "" : ", ") + p;
    return fail("unknown argument '" + std::string(name) + "'" +
                    did_you_mean_argument(name, params_) +
                    " (the op line names: " + (listed.empty() ? "none" : listed) + ")",
                error);
  }

  void emit_binary(Op op) {
    code_.push_back({op});
    depth_ -= 1;
  }
  void grow(int n) {
    depth_ += n;
    max_depth_ = std::max(max_depth_, depth_);
  }

  bool expect(char c, const std::string& what, std::string& error) {
    skip_space();
    if (peek() != c) return fail("expected " + what + ", found " + token_here(), error);
    ++pos_;
    return true;
  }

  bool fail(const std::string& message, std::string& error) {
    if (error.empty()) error = message;
    return false;
  }

  std::string token_here() const {
    if (at_end()) return "the end of the formula";
    size_t end = pos_ + 1;
    if (is_name_char(text_[pos_])) {
      while (end < text_.size() && is_name_char(text_[end])) ++end;
    }
    return quoted(text_.substr(pos_, end - pos_));
  }

  std::string_view read_name() {
    size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  void skip_space() {
    while (!at_end() && (peek() == ' ' || peek() == '\t')) ++pos_;
  }
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  std::string_view text_;
  const std::vector<std::string>& params_;
  std::vector<Instruction>& code_;
  size_t pos_ = 0;
  int depth_ = 0;
  int max_depth_ = 0;
};

std::string format_number(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  return std::to_string(v);
}

// The tensor a function reads, or the reason there is none.
const Tensor* tensor_of(const Value* v, const std::string& name, std::string_view function,
                        std::string& why) {
  if (v == nullptr) {
    why = "argument '" + name + "' missing";
  } else if (v->kind == Value::Kind::kTensor) {
    return &v->tensor;
  } else {
    why = std::string(function) + "(" + name + "): '" + name + "' is no tensor";
  }
  return nullptr;
}

int itemsize_of(const Tensor& t) {
  int size = dtype_size(t.dtype);
  return size > 0 ? size : 4;  // unknown dtype: float32, as tensor_bytes() counts it
}

}  // namespace

std::string did_you_mean_argument(std::string_view name, const std::vector<std::string>& args) {
  return name.size() < 3 ? "" : did_you_mean(name, args);
}

bool UserExpr::compile(std::string_view text, const std::vector<std::string>& params,
                       std::string& error) {
  code_.clear();
  error.clear();
  Compiler compiler(text, params, code_);
  if (!compiler.run(error)) {
    code_.clear();
    return false;
  }
  if (compiler.max_depth() > kMaxDepth) {
    code_.clear();
    error = "the formula nests deeper than " + std::to_string(kMaxDepth) + " values";
    return false;
  }
  return true;
}

bool UserExpr::uses(int32_t slot) const {
  for (const Instruction& in : code_) {
    if (in.op >= Op::kScalar && in.op <= Op::kSize && in.slot == slot) return true;
  }
  return false;
}

bool UserExpr::evaluate(std::span<const Value* const> slots, const std::vector<std::string>& params,
                        double& result, std::string& why) const {
  double stack[kMaxDepth];
  int top = 0;  // values on the stack
  for (const Instruction& in : code_) {
    switch (in.op) {
      case Op::kConst:
        stack[top++] = in.constant;
        break;
      case Op::kScalar: {
        const Value* v = slots[in.slot];
        const std::string& name = params[in.slot];
        if (v == nullptr) {
          why = "argument '" + name + "' missing";
          return false;
        }
        if (v->kind == Value::Kind::kInt || v->kind == Value::Kind::kBool) {
          stack[top++] = static_cast<double>(v->i);
        } else if (v->kind == Value::Kind::kDouble) {
          stack[top++] = v->d;
        } else {
          why = "argument '" + name + "' is no number";
          return false;
        }
        break;
      }
      case Op::kNumel:
      case Op::kNbytes: {
        const Value* v = slots[in.slot];
        const std::string& name = params[in.slot];
        std::string_view function = in.op == Op::kNumel ? "numel" : "nbytes";
        double total = 0;
        auto add = [&](const Tensor& t) {
          double n = static_cast<double>(t.numel());
          total += in.op == Op::kNumel ? n : n * itemsize_of(t);
        };
        if (v != nullptr && v->kind == Value::Kind::kNone) {
          // An optional tensor not passed (bias=None): nothing to count.
        } else if (v != nullptr && v->kind == Value::Kind::kTensorList) {
          for (const Tensor& t : v->tensors) add(t);
        } else if (const Tensor* t = tensor_of(v, name, function, why)) {
          add(*t);
        } else {
          return false;
        }
        stack[top++] = total;
        break;
      }
      case Op::kItemsize:
      case Op::kRank: {
        const std::string& name = params[in.slot];
        const Tensor* t =
            tensor_of(slots[in.slot], name, in.op == Op::kRank ? "rank" : "itemsize", why);
        if (t == nullptr) return false;
        stack[top++] = in.op == Op::kRank ? t->rank() : itemsize_of(*t);
        break;
      }
      case Op::kSize: {
        const std::string& name = params[in.slot];
        double dim = stack[--top];
        const Tensor* t = tensor_of(slots[in.slot], name, "size", why);
        if (t == nullptr) return false;
        if (dim != std::floor(dim)) {
          why = "size(" + name + ", " + std::to_string(dim) + "): the dimension is no integer";
          return false;
        }
        int r = t->rank();
        if (dim < -r || dim >= r) {
          why = "size(" + name + ", " + format_number(dim) + "): '" + name + "' has rank " +
                std::to_string(r);
          return false;
        }
        stack[top++] = static_cast<double>(t->dim(static_cast<int>(dim)));
        break;
      }
      case Op::kNeg:
        stack[top - 1] = -stack[top - 1];
        break;
      case Op::kMin:
      case Op::kMax: {
        double best = stack[top - in.slot];
        for (int k = top - in.slot + 1; k < top; ++k) {
          best = in.op == Op::kMin ? std::min(best, stack[k]) : std::max(best, stack[k]);
        }
        top -= in.slot;
        stack[top++] = best;
        break;
      }
      default: {
        double b = stack[--top];
        double a = stack[top - 1];
        double& out = stack[top - 1];
        bool divides = in.op == Op::kDiv || in.op == Op::kFloorDiv || in.op == Op::kMod ||
                       in.op == Op::kCeilDiv;
        if (divides && b == 0) {
          why = "division by zero";
          return false;
        }
        switch (in.op) {
          case Op::kAdd:
            out = a + b;
            break;
          case Op::kSub:
            out = a - b;
            break;
          case Op::kMul:
            out = a * b;
            break;
          case Op::kDiv:
            out = a / b;
            break;
          case Op::kFloorDiv:
            out = std::floor(a / b);
            break;
          case Op::kMod:
            out = a - b * std::floor(a / b);
            break;
          case Op::kCeilDiv:
            out = std::ceil(a / b);
            break;
          default:  // kPow
            out = std::pow(a, b);
            break;
        }
        if (!std::isfinite(out)) {
          why = "the formula's value is not a finite number";
          return false;
        }
      }
    }
  }
  result = stack[0];
  return true;
}

}  // namespace pyprof::models
