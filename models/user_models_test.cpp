// User op models (models/user_models.h, models/user_expr.h): the file's errors, each with its
// line; the formulas' values against hand-computed numbers; calls a model cannot cost; op_cost()
// with user models installed.
#include "models/user_models.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "models/op_model.h"
#include "models/user_expr.h"

namespace pyprof::models {
namespace {

// The error of loading `text` as the file "m.txt" ("" when it loads).
std::string load_error(std::string_view text) {
  UserModels models;
  std::string error;
  if (models.add_text(text, "m.txt", error)) return "";
  EXPECT_FALSE(error.empty());
  EXPECT_TRUE(models.empty());  // nothing of a bad file is kept
  return error;
}

// The value of `formula` over the arguments `args_json` (parse's args) named `params`.
struct Evaluated {
  bool ok = false;
  double value = 0;
  std::string why;
};
Evaluated evaluate(std::string_view formula, std::string_view args_json,
                   const std::vector<std::string>& params) {
  UserExpr expr;
  std::string error;
  EXPECT_TRUE(expr.compile(formula, params, error)) << formula << ": " << error;
  OpArgs args = OpArgs::from_json(args_json);
  std::vector<const Value*> slots;
  for (size_t i = 0; i < params.size(); ++i) slots.push_back(args.arg(params[i], i));
  Evaluated out;
  out.ok = expr.evaluate(slots, params, out.value, out.why);
  return out;
}

double value_of(std::string_view formula) {
  Evaluated e = evaluate(formula, "{}", {});
  EXPECT_TRUE(e.ok) << formula << ": " << e.why;
  return e.value;
}

// ---- the file's errors ----------------------------------------------------------------------

TEST(UserModelsFile, EachErrorNamesTheFileAndLine) {
  const std::string head = "# my models\n\nop mylib::gate(a, b)\n";  // the op on line 3
  const std::string ok = "flops = numel(a)\nbytes = nbytes(a) + nbytes(b)\n";
  EXPECT_EQ(load_error(head + ok), "");
  struct Case {
    std::string text;
    std::string error;
  };
  const std::vector<Case> cases = {
      {head + "flop = numel(a)\n" + ok,
       "m.txt:4: unknown key 'flop' (did you mean 'flops'?) (keys: flops, bytes, family, dtype)"},
      {head + "flops = numl(a)\nbytes = 0\n",
       "m.txt:4: op mylib::gate: flops: unknown function 'numl' (did you mean 'numel'?) "
       "(functions: numel, nbytes, itemsize, rank, size, min, max, ceil_div)"},
      {head + "flops = numel(c)\nbytes = 0\n",
       "m.txt:4: op mylib::gate: flops: unknown argument 'c' (the op line names: a, b)"},
      {"op mylib::gate(input, weight)\nflops = numel(weigth)\nbytes = 0\n",
       "m.txt:2: op mylib::gate: flops: unknown argument 'weigth' (did you mean 'weight'?) (the "
       "op line names: input, weight)"},
      {head + "flops = 2 * scale\nbytes = 0\n",
       "m.txt:4: op mylib::gate: flops: unknown argument 'scale' (the op line names: a, b)"},
      {head + "flops = 1\nbytes = (numel(a) + 1\n",
       "m.txt:5: op mylib::gate: bytes: expected ')' to close '(', found the end of the formula"},
      {head + "flops = 2 +\nbytes = 0\n",
       "m.txt:4: op mylib::gate: flops: the formula ends where a value was expected"},
      {head + "flops = 2 3\nbytes = 0\n",
       "m.txt:4: op mylib::gate: flops: unexpected '3' after the formula"},
      {head + "flops =\nbytes = 0\n", "m.txt:4: op mylib::gate: flops: empty formula"},
      {head + "flops = 1.2.3\nbytes = 0\n", "m.txt:4: op mylib::gate: flops: '1.2.3' is no number"},
      {head + "flops = 2x\nbytes = 0\n", "m.txt:4: op mylib::gate: flops: '2x' is no number"},
      {head + "flops = numel(2)\nbytes = 0\n",
       "m.txt:4: op mylib::gate: flops: numel() takes an argument's name, not '2'"},
      {head + "flops = size(a)\nbytes = 0\n",
       "m.txt:4: op mylib::gate: flops: size() takes an argument and a dimension: size(t, -1)"},
      {head + "flops = max(1)\nbytes = 0\n",
       "m.txt:4: op mylib::gate: flops: max() takes two values or more"},
      {head + "flops = numel\nbytes = 0\n",
       "m.txt:4: op mylib::gate: flops: numel is a function: numel(...)"},
      {head + "flops = 1 $ 2\nbytes = 0\n",
       "m.txt:4: op mylib::gate: flops: unexpected '$' after the formula"},
      {head + "flops = 1\nflops = 2\nbytes = 0\n",
       "m.txt:5: op mylib::gate: flops given twice (first at line 4)"},
      {head + "flops = 1\n",
       "m.txt:3: op mylib::gate has no `bytes = ...` line (every op needs "
       "a flops and a bytes formula; 0 where there is none)"},
      {head + ok + "family = point wise\n",
       "m.txt:6: op mylib::gate: family 'point wise' is no name (a word: pointwise, matmul, ...)"},
      {head + ok + "dtype = c\n",
       "m.txt:6: op mylib::gate: dtype = 'c' is none of the op's arguments"},
      {"flops = 1\n", "m.txt:1: `flops = ...` before any `op NAME(ARGS)` line"},
      {"op gate(a)\n",
       "m.txt:1: 'gate' is no qualified op name (namespace::name or "
       "namespace::name.overload, as the trace names it: mylib::fused_gate)"},
      {"op mylib::gate\n",
       "m.txt:1: op mylib::gate: expected its argument names in the schema's "
       "order after the name, in parentheses: op mylib::gate(a, b, out), or () "
       "for none"},
      {"op mylib::gate(Tensor a)\n",
       "m.txt:1: op mylib::gate: 'Tensor a' is no argument name "
       "(letters, digits and _, as the op's schema names it)"},
      {"op mylib::gate(a, a)\n", "m.txt:1: op mylib::gate: argument 'a' named twice"},
      {"op mylib::gate(a,)\n", "m.txt:1: op mylib::gate: an argument name is missing after ','"},
      {head + ok + "\nop mylib::gate(x)\nflops = 1\nbytes = 1\n",
       "m.txt:7: op mylib::gate defined twice (first at m.txt:3)"},
      {head + ok + "numel(a) * 2\n",
       "m.txt:6: expected `op NAME(ARGS)` or `KEY = VALUE`, found 'numel(a) * 2'"},
      {head + ok + "flops\x01 = 1\n",
       "m.txt:6: a control character in the line (not a text file?)"},
  };
  for (const Case& c : cases) EXPECT_EQ(load_error(c.text), c.error) << c.text;
}

TEST(UserModelsFile, TooDeepAFormulaIsRefused) {
  std::string deep = "op m::x()\nflops = ";
  for (int i = 0; i < UserExpr::kMaxDepth; ++i) deep += "1 + (";
  deep += "1";
  for (int i = 0; i < UserExpr::kMaxDepth; ++i) deep += ")";
  EXPECT_EQ(load_error(deep + "\nbytes = 0\n"),
            "m.txt:2: op m::x: flops: the formula nests deeper than 64 values");
  // 64 values deep is allowed: the evaluator's stack holds them.
  std::string fits = "op m::x()\nflops = ";
  for (int i = 0; i < UserExpr::kMaxDepth - 1; ++i) fits += "1 + (";
  fits += "1";
  for (int i = 0; i < UserExpr::kMaxDepth - 1; ++i) fits += ")";
  EXPECT_EQ(load_error(fits + "\nbytes = 0\n"), "");
}

TEST(UserModelsFile, AnOpDefinedInTwoFilesIsAnError) {
  UserModels models;
  std::string error;
  ASSERT_TRUE(models.add_text("op a::b()\nflops = 1\nbytes = 2\n", "one.txt", error)) << error;
  EXPECT_FALSE(models.add_text("\nop a::b()\nflops = 1\nbytes = 2\n", "two.txt", error));
  EXPECT_EQ(error, "two.txt:2: op a::b defined twice (first at one.txt:1)");
  EXPECT_EQ(models.models().size(), 1u);
}

TEST(UserModelsFile, CommentsBlankLinesTabsAndCarriageReturnsAreFine) {
  UserModels models;
  std::string error;
  ASSERT_TRUE(models.add_text(
      "# header\r\n\top  ns::sub::op.out ( x ,y )  # trailing\r\n\t flops=numel(x)#c\r\n"
      "   bytes =   nbytes( y )\r\n   family = matmul\n   dtype = y\n",
      "/some/dir/models.txt", error))
      << error;
  const UserModel* m = models.find("ns::sub::op.out");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->args, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(m->family, "matmul");
  EXPECT_EQ(m->where, "/some/dir/models.txt:2");
  EXPECT_EQ(m->params, "user=models.txt:2");
  EXPECT_EQ(m->dtype_arg, 1);
}

// ---- the formulas' values -------------------------------------------------------------------

TEST(UserExpr, ArithmeticAsPythonComputesIt) {
  // Each value as Python 3 prints it for the same expression.
  EXPECT_EQ(value_of("2 + 3 * 4"), 14);
  EXPECT_EQ(value_of("(2 + 3) * 4"), 20);
  EXPECT_EQ(value_of("10 - 4 - 3"), 3);  // left-associative
  EXPECT_EQ(value_of("7 / 2"), 3.5);
  EXPECT_EQ(value_of("7 // 2"), 3);
  EXPECT_EQ(value_of("-7 // 2"), -4);  // floors
  EXPECT_EQ(value_of("7 % 3"), 1);
  EXPECT_EQ(value_of("-7 % 3"), 2);         // Python's modulo
  EXPECT_EQ(value_of("2 ** 3 ** 2"), 512);  // right-associative
  EXPECT_EQ(value_of("-2 ** 2"), -4);       // ** binds tighter than unary minus
  EXPECT_EQ(value_of("2 ** -1"), 0.5);
  EXPECT_EQ(value_of("2 * 3 ** 2"), 18);
  EXPECT_EQ(value_of("--3"), 3);
  EXPECT_EQ(value_of("+4"), 4);
  EXPECT_EQ(value_of("ceil_div(7, 2)"), 4);
  EXPECT_EQ(value_of("ceil_div(8, 2)"), 4);
  EXPECT_EQ(value_of("min(5, 2 + 1, 4)"), 3);
  EXPECT_EQ(value_of("max(5, 2 * 4, 4)"), 8);
  EXPECT_EQ(value_of("1.5e3 + .5"), 1500.5);
  EXPECT_EQ(value_of("1e3"), 1000);
}

TEST(UserExpr, TensorFunctionsAndScalars) {
  const std::string args =
      R"({"a":{"shape":[16,64],"dtype":"bfloat16"},"b":{"shape":[64,128],"dtype":"float32"},)"
      R"("eps":0.5,"k":3,"flag":true,"bias":null,"xs":[{"shape":[2,3],"dtype":"float16"},)"
      R"({"shape":[4],"dtype":"float16"}],"u":{"shape":[5]},"mode":"mean"})";
  const std::vector<std::string> params = {"a", "b", "eps", "k", "flag", "bias", "xs", "u", "mode"};
  auto v = [&](std::string_view f) {
    Evaluated e = evaluate(f, args, params);
    EXPECT_TRUE(e.ok) << f << ": " << e.why;
    return e.value;
  };
  EXPECT_EQ(v("numel(a)"), 1024);
  EXPECT_EQ(v("size(a, 0)"), 16);
  EXPECT_EQ(v("size(a, -1)"), 64);
  EXPECT_EQ(v("size(b, 1 - 2)"), 128);
  EXPECT_EQ(v("rank(b)"), 2);
  EXPECT_EQ(v("itemsize(a)"), 2);
  EXPECT_EQ(v("itemsize(b)"), 4);
  EXPECT_EQ(v("itemsize(u)"), 4);  // no dtype recorded: float32, as pyprof's own models
  EXPECT_EQ(v("nbytes(a) + nbytes(b)"), 2048 + 32768);
  EXPECT_EQ(v("numel(xs)"), 10);  // a tensor list: all its tensors
  EXPECT_EQ(v("nbytes(xs)"), 20);
  EXPECT_EQ(v("numel(bias) + nbytes(bias)"), 0);  // an optional tensor not passed
  EXPECT_EQ(v("eps * k"), 1.5);
  EXPECT_EQ(v("flag"), 1);
  // flash attention's forward, by hand: 4 * B*H * Sq * Sk * D = 4 * 16 * 64 * 64 * 128.
  EXPECT_EQ(v("4 * size(a, 0) * size(b, 0) * size(b, 0) * size(b, 1)"), 4.0 * 16 * 64 * 64 * 128);
  EXPECT_EQ(v("2 * numel(a) * size(b, -1)"), 2.0 * 1024 * 128);
}

TEST(UserExpr, CallsThatDoNotFitSayWhy) {
  const std::string args =
      R"({"a":{"shape":[16,64],"dtype":"bfloat16"},"k":0,"mode":"mean","bias":null})";
  const std::vector<std::string> params = {"a", "k", "mode", "bias", "absent"};
  auto why = [&](std::string_view f) {
    Evaluated e = evaluate(f, args, params);
    EXPECT_FALSE(e.ok) << f << " = " << e.value;
    return e.why;
  };
  EXPECT_EQ(why("size(a, 2)"), "size(a, 2): 'a' has rank 2");
  EXPECT_EQ(why("size(a, -3)"), "size(a, -3): 'a' has rank 2");
  EXPECT_EQ(why("numel(absent)"), "argument 'absent' missing");
  EXPECT_EQ(why("absent * 2"), "argument 'absent' missing");
  EXPECT_EQ(why("numel(k)"), "numel(k): 'k' is no tensor");
  EXPECT_EQ(why("rank(bias)"), "rank(bias): 'bias' is no tensor");
  EXPECT_EQ(why("mode + 1"), "argument 'mode' is no number");
  EXPECT_EQ(why("a + 1"), "argument 'a' is no number");
  EXPECT_EQ(why("numel(a) / k"), "division by zero");
  EXPECT_EQ(why("numel(a) % k"), "division by zero");
  EXPECT_EQ(why("ceil_div(1, k)"), "division by zero");
  EXPECT_EQ(why("10 ** 400"), "the formula's value is not a finite number");
}

// ---- op_cost with user models -----------------------------------------------------------------

// Installs the models of `text` for one test, and removes them after it.
class Installed : public ::testing::Test {
 protected:
  void install(std::string_view text) {
    UserModels models;
    std::string error;
    ASSERT_TRUE(models.add_text(text, "/x/my_models.txt", error)) << error;
    install_user_models(std::move(models));
  }
  void TearDown() override { install_user_models(UserModels{}); }
};

constexpr std::string_view kGate =
    "op mylib::fused_gate(x, w, out)\n"
    "flops = 2 * numel(x) * size(w, -1)\n"
    "bytes = nbytes(x) + nbytes(w) + nbytes(out)\n"
    "family = matmul\n"
    "dtype = x\n";

TEST_F(Installed, CostIsTheFormulasByNameAndByPosition) {
  install(kGate);
  // x [8,32] bf16, w [32,16] bf16, out [8,16] bf16: 2*256*16 = 8192 FLOPs; 512 + 1024 + 256.
  OpArgs named = OpArgs::from_json(
      R"({"x":{"shape":[8,32],"dtype":"bfloat16"},"w":{"shape":[32,16],"dtype":"bfloat16"},)"
      R"("out":{"shape":[8,16],"dtype":"bfloat16"}})");
  OpCost c = op_cost("mylib::fused_gate", named);
  ASSERT_TRUE(c.modeled) << c.params;
  EXPECT_EQ(c.flops, 8192);
  EXPECT_EQ(c.bytes, 1792);
  EXPECT_EQ(c.family, "matmul");
  EXPECT_EQ(c.dtype, "bfloat16");
  EXPECT_EQ(c.params, "user=my_models.txt:1");
  EXPECT_FALSE(c.tc_eligible);
  // torch.profiler's records: arguments by position.
  OpArgs positional = OpArgs::from_json(
      R"({"0":{"shape":[8,32],"dtype":"bfloat16"},"1":{"shape":[32,16],"dtype":"bfloat16"},)"
      R"("2":{"shape":[8,16],"dtype":"bfloat16"}})");
  OpCost p = op_cost("mylib::fused_gate.default", positional);  // an overload finds the op
  ASSERT_TRUE(p.modeled) << p.params;
  EXPECT_EQ(p.flops, 8192);
  EXPECT_EQ(p.bytes, 1792);
  // Another namespace's op of the same bare name is not this one.
  EXPECT_FALSE(op_cost("other::fused_gate", named).modeled);
}

TEST_F(Installed, ACallThatDoesNotFitIsNotModelledWithItsReason) {
  install(kGate);
  OpArgs rank1 = OpArgs::from_json(
      R"({"x":{"shape":[8,32],"dtype":"bfloat16"},"w":{"shape":[],"dtype":"bfloat16"},)"
      R"("out":{"shape":[8,16],"dtype":"bfloat16"}})");
  OpCost c = op_cost("mylib::fused_gate", rank1);
  EXPECT_FALSE(c.modeled);
  EXPECT_EQ(c.problem, CostProblem::kUserModel);
  EXPECT_EQ(c.params, "/x/my_models.txt:1: flops: size(w, -1): 'w' has rank 0");
  EXPECT_EQ(c.flops, 0);
  OpArgs missing = OpArgs::from_json(R"({"x":{"shape":[8,32]},"w":{"shape":[32,16]}})");
  c = op_cost("mylib::fused_gate", missing);
  EXPECT_FALSE(c.modeled);
  EXPECT_EQ(c.params, "/x/my_models.txt:1: bytes: argument 'out' missing");
  install("op m::neg(a)\nflops = 1 - numel(a)\nbytes = 0\n");
  c = op_cost("m::neg", OpArgs::from_json(R"({"a":{"shape":[4]}})"));
  EXPECT_FALSE(c.modeled);
  EXPECT_EQ(c.params, "/x/my_models.txt:1: flops: negative (-3)");
}

TEST_F(Installed, AUserModelReplacesPyprofsAndOnlyWhileInstalled) {
  // aten::mm [4,8] x [8,2] fp32: pyprof's model 2*4*2*8 = 128 FLOPs; the user's says 1.
  OpArgs mm = OpArgs::from_json(
      R"({"self":{"shape":[4,8],"dtype":"float32"},"mat2":{"shape":[8,2],"dtype":"float32"}})");
  EXPECT_EQ(op_cost("aten::mm", mm).flops, 128);
  install("op aten::mm(self, mat2)\nflops = 1\nbytes = numel(self)\n");
  OpCost c = op_cost("aten::mm", mm);
  ASSERT_TRUE(c.modeled);
  EXPECT_EQ(c.flops, 1);
  EXPECT_EQ(c.bytes, 32);
  EXPECT_EQ(c.family, "user");
  install_user_models(UserModels{});
  EXPECT_EQ(op_cost("aten::mm", mm).flops, 128);
}

TEST_F(Installed, OverflowAndNegativeDimensionsAreCheckedAsForPyprofsModels) {
  install("op m::big(a)\nflops = numel(a) * numel(a)\nbytes = 0\n");
  OpCost c = op_cost("m::big", OpArgs::from_json(R"({"a":{"shape":[4294967296,4]}})"));
  EXPECT_FALSE(c.modeled);
  EXPECT_EQ(c.problem, CostProblem::kOverflow);
  c = op_cost("m::big", OpArgs::from_json(R"({"a":{"shape":[-1,4]}})"));
  EXPECT_FALSE(c.modeled);
  EXPECT_EQ(c.problem, CostProblem::kNegativeDimension);
}

// ---- loading files: --op-models and $PYPROF_OP_MODELS -----------------------------------------

class Files : public Installed {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("user_models_test." + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    Installed::TearDown();
    unsetenv(kOpModelsEnv);
    std::filesystem::remove_all(dir_);
  }
  std::string write(const std::string& name, std::string_view text) {
    std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(Files, TheEnvironmentsFilesThenTheOptionsAreLoaded) {
  std::string a = write("a.txt", "op m::a(x)\nflops = 1\nbytes = 2\n");
  std::string b = write("b.txt", "op aten::relu(self)\nflops = 3\nbytes = 4\n");
  std::string c = write("c.txt", "op m::c(x)\nflops = 5\nbytes = 6\n");
  setenv(kOpModelsEnv, (a + "::" + b).c_str(), 1);  // an empty entry is skipped
  std::vector<std::string> notes;
  std::string error;
  ASSERT_TRUE(load_user_models({c}, notes, error)) << error;
  const UserModels* models = installed_user_models();
  ASSERT_NE(models, nullptr);
  EXPECT_EQ(models->models().size(), 3u);
  EXPECT_EQ(op_cost("m::c", OpArgs{}).bytes, 6);
  EXPECT_EQ(op_cost("aten::relu", OpArgs::from_json(R"({"self":{"shape":[2]}})")).flops, 3);
  // One note, for the op pyprof models itself.
  EXPECT_EQ(notes,
            std::vector<std::string>{b + ":1: op aten::relu has a model in pyprof; this file's "
                                         "formulas replace it"});
}

TEST_F(Files, AFileThatCannotBeReadIsAnErrorAndInstallsNothing) {
  std::vector<std::string> notes;
  std::string error;
  std::string missing = (dir_ / "none.txt").string();
  EXPECT_FALSE(load_user_models({missing}, notes, error));
  EXPECT_EQ(error, "cannot read op models file " + missing + ": no such file");
  EXPECT_FALSE(load_user_models({dir_.string()}, notes, error));
  EXPECT_EQ(error, "cannot read op models file " + dir_.string() + ": a folder");
  std::string good = write("good.txt", "op m::a(x)\nflops = 1\nbytes = 2\n");
  std::string bad = write("bad.txt", "op m::b(x)\nflops = numel(y)\nbytes = 2\n");
  setenv(kOpModelsEnv, good.c_str(), 1);
  EXPECT_FALSE(load_user_models({bad}, notes, error));
  EXPECT_EQ(error, bad + ":2: op m::b: flops: unknown argument 'y' (the op line names: x)");
  EXPECT_EQ(installed_user_models(), nullptr);
}

}  // namespace
}  // namespace pyprof::models
