// The formulas of user op models (docs/ops.md "Adding your own models"): a small expression
// language over an op's arguments, compiled once, when the file is loaded, into a stack program
// whose arguments are slots (the argument's place in the op line's list), so that costing a call
// looks no name up and parses nothing.
//
//   expression := sum
//   sum        := product (("+" | "-") product)*
//   product    := unary (("*" | "/" | "//" | "%") unary)*
//   unary      := ("-" | "+") unary | power
//   power      := atom ("**" unary)?                     (right-associative, as in Python)
//   atom       := NUMBER | ARG | "(" sum ")" | FUNCTION "(" arguments ")"
//
// FUNCTION: numel(t) nbytes(t) itemsize(t) rank(t) size(t, dim) (t an argument name), and
// min(a, b, ...) max(a, b, ...) ceil_div(a, b) over expressions. An ARG outside a function is a
// scalar argument (int, float, bool). Arithmetic is in double precision, as the FLOP and byte
// counts are: / is true division, // floors and % is Python's modulo.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "models/op_model.h"

namespace pyprof::models {

// " (did you mean 'weight'?)" for a mistyped argument name, "" when none is close or the name
// is shorter than 3 letters (a one-letter name is "close" to every other).
std::string did_you_mean_argument(std::string_view name, const std::vector<std::string>& args);

class UserExpr {
 public:
  // Compiles `text`; each argument name must be one of `params` (its slot is its index there).
  // False with `error` ("unknown function 'numl' (did you mean numel?)") when it is no
  // expression of the language.
  bool compile(std::string_view text, const std::vector<std::string>& params, std::string& error);

  // The value under one call's arguments: `slots[i]` is the value of params[i], null when the
  // call did not record it. False with `why` ("argument 'b' missing", "size(a, 2): a has rank
  // 2") when the call does not fit the formula.
  bool evaluate(std::span<const Value* const> slots, const std::vector<std::string>& params,
                double& result, std::string& why) const;

  // Whether the formula reads argument slot `slot`.
  bool uses(int32_t slot) const;

  // The deepest stack a program may use: deeper expressions are refused when compiled.
  static constexpr int kMaxDepth = 64;

  enum class Op : uint8_t {
    kConst,     // push constant
    kScalar,    // push argument `slot` as a number
    kNumel,     // push numel(slot)
    kNbytes,    // push nbytes(slot)
    kItemsize,  // push itemsize(slot)
    kRank,      // push rank(slot)
    kSize,      // pop dim, push size(slot, dim)
    kNeg,
    kAdd,
    kSub,
    kMul,
    kDiv,
    kFloorDiv,
    kMod,
    kPow,
    kCeilDiv,
    kMin,  // pop `count`, push the least
    kMax,
  };
  struct Instruction {
    Op op;
    int32_t slot = 0;  // kScalar..kSize: the argument; kMin/kMax: how many operands
    double constant = 0;
  };

 private:
  std::vector<Instruction> code_;
};

}  // namespace pyprof::models
