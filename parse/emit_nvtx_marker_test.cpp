#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "parse/marker_test_util.h"
#include "parse/markers.h"

namespace pyprof::parse {
namespace {

using namespace std::string_literals;

TEST(EmitNvtx, CurrentFormatWithShapes) {
  const Marker m = decode(
      "aten::addmm, seq = 10, op_id = 7, sizes = [[5], [2, 64], [64, 5], [], []], "
      "input_op_ids = [(0,-1), (14,0), (16,0), (0,-1), (0,-1)]");
  EXPECT_EQ(m.kind, MarkerKind::kOp);
  EXPECT_EQ(m.dialect, Dialect::kEmitNvtx);
  EXPECT_EQ(m.name, "aten::addmm");
  EXPECT_EQ(m.seq, 10);
  EXPECT_EQ(m.op_id, 7);
  EXPECT_EQ(m.args,
            R"({"0":{"shape":[5]},"1":{"shape":[2,64]},"2":{"shape":[64,5]},"3":{"shape":[]},)"
            R"("4":{"shape":[]}})");
  EXPECT_EQ(m.error, "");
  EXPECT_TRUE(is_valid_json(m.args));
}

TEST(EmitNvtx, EveryEra) {
  struct Case {
    const char* text;
    MarkerKind kind;
    const char* name;
    int64_t seq;
    int64_t op_id;
    const char* args;
  };
  const Case cases[] = {
      // 1.13 and later (PyProf's synthetic database with modern strings)
      {"aten::linear, seq = 10, op_id = 6", MarkerKind::kOp, "aten::linear", 10, 6, ""},
      {"aten::empty, op_id = 5", MarkerKind::kOp, "aten::empty", -1, 5, ""},
      {"AddmmBackward0, seq = 3, op_id = 38", MarkerKind::kBackwardNode, "AddmmBackward0", 3, 38,
       ""},
      {"aten::sum, seq = 12, op_id = 9, sizes = [[32, 256], []]", MarkerKind::kOp, "aten::sum", 12,
       9, R"({"0":{"shape":[32,256]},"1":{"shape":[]}})"},
      // 1.10, DLProf LeNet capture
      {"aten::conv2d, seq = 0", MarkerKind::kOp, "aten::conv2d", 0, 0, ""},
      {"aten::cudnn_convolution, seq = 5", MarkerKind::kOp, "aten::cudnn_convolution", 5, 0, ""},
      {"aten::max_pool2d_with_indices, seq = 4", MarkerKind::kOp, "aten::max_pool2d_with_indices",
       4, 0, ""},
      {"aten::resize_", MarkerKind::kOp, "aten::resize_", -1, 0, ""},
      {"aten::as_strided", MarkerKind::kOp, "aten::as_strided", -1, 0, ""},
      // ~1.4, apex PyProf word-LM capture: no namespaces yet
      {"embedding, seq = 65", MarkerKind::kOp, "embedding", 65, 0, ""},
      {"_fused_dropout, seq = 102", MarkerKind::kOp, "_fused_dropout", 102, 0, ""},
      {"nll_loss_backward, seq = 0", MarkerKind::kOp, "nll_loss_backward", 0, 0, ""},
      {"AddBackward0, seq = 103", MarkerKind::kBackwardNode, "AddBackward0", 103, 0, ""},
      {"TBackward, seq = 105", MarkerKind::kBackwardNode, "TBackward", 105, 0, ""},
      {"torch::autograd::GraphRoot, seq = 129", MarkerKind::kBackwardNode,
       "torch::autograd::GraphRoot", 129, 0, ""},
      // 1.0
      {"addmm, seq=10", MarkerKind::kOp, "addmm", 10, 0, ""},
      {"AddmmBackward, stashed seq=10", MarkerKind::kBackwardNode, "AddmmBackward", 10, 0, ""},
      {"CopyBackwards, stashed seq=4", MarkerKind::kBackwardNode, "CopyBackwards", 4, 0, ""},
      // legacy: the name was dropped when seq < 0 and shapes were recorded
      {", sizes = [[2, 3]]", MarkerKind::kOp, "<unnamed>", -1, 0, R"({"0":{"shape":[2,3]}})"},
      {", sizes = []", MarkerKind::kOp, "<unnamed>", -1, 0, "{}"},
      // plain names
      {"aten::relu", MarkerKind::kOp, "aten::relu", -1, 0, ""},
      {"prim::Constant", MarkerKind::kOp, "prim::Constant", -1, 0, ""},
      {"c10d::allreduce_", MarkerKind::kOp, "c10d::allreduce_", -1, 0, ""},
      {"torchvision::nms", MarkerKind::kOp, "torchvision::nms", -1, 0, ""},
      {"aten::convolution_backward", MarkerKind::kOp, "aten::convolution_backward", -1, 0, ""},
      {"AddmmBackward0", MarkerKind::kBackwardNode, "AddmmBackward0", -1, 0, ""},
      {"torch::autograd::AccumulateGrad", MarkerKind::kBackwardNode,
       "torch::autograd::AccumulateGrad", -1, 0, ""},
      // record_function labels and the engine's wrapper: user ranges, still emit_nvtx
      {"## forward ##, op_id = 3", MarkerKind::kUser, "## forward ##", -1, 3, ""},
      {"Optimizer.step#SGD.step, op_id = 9", MarkerKind::kUser, "Optimizer.step#SGD.step", -1, 9,
       ""},
      {"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__, op_id = 2", MarkerKind::kUser,
       "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", -1, 2, ""},
      {"autograd::engine::evaluate_function: AddmmBackward0, op_id = 5", MarkerKind::kUser,
       "autograd::engine::evaluate_function: AddmmBackward0", -1, 5, ""},
      {"Fusion::resetTvUses, op_id = 4", MarkerKind::kUser, "Fusion::resetTvUses", -1, 4, ""},
  };
  for (const Case& c : cases) {
    const Marker m = decode(c.text);
    EXPECT_EQ(m.kind, c.kind) << c.text;
    EXPECT_EQ(m.dialect, Dialect::kEmitNvtx) << c.text;
    EXPECT_EQ(m.name, c.name) << c.text;
    EXPECT_EQ(m.seq, c.seq) << c.text;
    EXPECT_EQ(m.op_id, c.op_id) << c.text;
    EXPECT_EQ(m.args, c.args) << c.text;
    EXPECT_EQ(m.error, "") << c.text;
  }
}

TEST(EmitNvtx, StringsThatOnlyLookLikeFieldsAreUserRanges) {
  for (const std::string& text :
       {"foo, seq of things"s, "my label, op_id = x"s, "label, sizes = [[1, a]]"s,
        "step, seq = 3, extra"s, "x, seq = 1, op_id = 2, sizes = [[1]], input_op_ids = (1)"s,
        "a b, sizes = [[1], [2]"s}) {
    const Marker m = decode(text);
    EXPECT_EQ(m.kind, MarkerKind::kUser) << text;
    EXPECT_EQ(m.dialect, Dialect::kUser) << text;
    EXPECT_EQ(m.name, text);
    EXPECT_EQ(m.error, "") << text;
  }
}

TEST(EmitNvtx, BrokenFieldsOfAKnownOpKeepTheOp) {
  // Cut off by a length limit in the middle of a long sizes list.
  Marker m = decode("aten::cat, seq = 3, op_id = 9, sizes = [[1, 2], [3, 4], [5");
  EXPECT_EQ(m.kind, MarkerKind::kOp);
  EXPECT_EQ(m.dialect, Dialect::kEmitNvtx);
  EXPECT_EQ(m.name, "aten::cat");
  EXPECT_EQ(m.seq, 3);
  EXPECT_EQ(m.op_id, 9);
  EXPECT_TRUE(m.args.empty());
  EXPECT_NE(m.error.find("sizes"), std::string::npos);

  m = decode("MulBackward0, seq = x");
  EXPECT_EQ(m.kind, MarkerKind::kBackwardNode);
  EXPECT_EQ(m.seq, -1);
  EXPECT_FALSE(m.error.empty());
}

TEST(EmitNvtx, AbsurdNumbers) {
  Marker m = decode("aten::mul, seq = 99999999999999999999999, op_id = 4");
  EXPECT_EQ(m.kind, MarkerKind::kOp);
  EXPECT_EQ(m.name, "aten::mul");
  EXPECT_EQ(m.seq, -1);
  EXPECT_EQ(m.op_id, 4);
  EXPECT_NE(m.error.find("seq"), std::string::npos);

  m = decode("aten::mul, seq = 2, op_id = 18446744073709551616");
  EXPECT_EQ(m.seq, 2);
  EXPECT_EQ(m.op_id, 0);
  EXPECT_NE(m.error.find("op_id"), std::string::npos);

  m = decode("aten::mul, seq = 2, sizes = [[3, 99999999999999999999999], [1]]");
  EXPECT_EQ(m.seq, 2);
  EXPECT_TRUE(m.args.empty());
  EXPECT_NE(m.error.find("sizes"), std::string::npos);

  m = decode("aten::mul, seq = -9223372036854775808, sizes = [[007, -1]]");
  EXPECT_EQ(m.seq, INT64_MIN);
  EXPECT_EQ(m.args, R"({"0":{"shape":[7,-1]}})");
  EXPECT_EQ(m.error, "");
}

TEST(EmitNvtx, HugeSizesList) {
  std::string text = "aten::cat, seq = 1, op_id = 2, sizes = [";
  std::string expected = "{";
  for (int i = 0; i < 100000; ++i) {
    if (i > 0) {
      text += ", ";
      expected += ',';
    }
    text += "[32, 128]";
    expected += '"';
    expected += std::to_string(i);
    expected += R"(":{"shape":[32,128]})";
  }
  text += "]";
  expected += "}";
  const Marker m = decode(text);
  EXPECT_EQ(m.kind, MarkerKind::kOp);
  EXPECT_EQ(m.args, expected);
  EXPECT_TRUE(is_valid_json(m.args));

  const Marker deep = decode("aten::cat, seq = 1, sizes = " + std::string(1000000, '['));
  EXPECT_EQ(deep.kind, MarkerKind::kOp);
  EXPECT_TRUE(deep.args.empty());
  EXPECT_FALSE(deep.error.empty());
}

}  // namespace
}  // namespace pyprof::parse
