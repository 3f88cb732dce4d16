#include "op_marker.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <vector>

namespace pyprof {
namespace {

const c10::FunctionSchema& schema_of(const char* name, const char* overload) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload).schema();
}

simdjson::dom::element parse(simdjson::dom::parser& parser, const std::string& json) {
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << "invalid JSON: " << json;
  return doc;
}

TEST(OpMarker, Conv2dArgumentsAreKeyedBySchemaName) {
  const OpInfo info = make_op_info("aten::conv2d", "", &schema_of("aten::conv2d", ""));
  const std::vector<c10::IValue> inputs = {at::zeros({8, 3, 32, 32}),
                                           at::zeros({16, 3, 5, 5}),
                                           at::zeros({16}),
                                           c10::List<int64_t>({2, 2}),
                                           c10::List<int64_t>({1, 1}),
                                           c10::List<int64_t>({1, 1}),
                                           int64_t{1}};
  OpInstance op;
  op.id = 42;
  op.seq = 7;
  op.tid = 1;
  op.call_site = "train.py:12";
  std::string buffer;
  const std::string out(build_op_message(
      buffer, info, op, c10::ArrayRef<const c10::IValue>(inputs.data(), inputs.size())));
  EXPECT_EQ(
      out,
      R"({"v":1,"op":"aten::conv2d","id":42,"seq":7,"tid":1,"scope":"function",)"
      R"("stack":"train.py:12","args":{)"
      R"("input":{"shape":[8,3,32,32],"dtype":"float32","stride":[3072,1024,32,1],"device":"cpu"},)"
      R"("weight":{"shape":[16,3,5,5],"dtype":"float32","stride":[75,25,5,1],"device":"cpu"},)"
      R"("bias":{"shape":[16],"dtype":"float32","stride":[1],"device":"cpu"},)"
      R"("stride":[2,2],"padding":[1,1],"dilation":[1,1],"groups":1}})");
}

TEST(OpMarker, OverloadAndDtypeArguments) {
  const OpInfo info = make_op_info("aten::to", "dtype", &schema_of("aten::to", "dtype"));
  const std::vector<c10::IValue> inputs = {at::zeros({4}), static_cast<int64_t>(at::kBFloat16),
                                           false, false, c10::IValue()};
  OpInstance op;
  op.id = 1;
  op.seq = -1;
  op.tid = 3;
  std::string buffer;
  const std::string out(build_op_message(
      buffer, info, op, c10::ArrayRef<const c10::IValue>(inputs.data(), inputs.size())));
  simdjson::dom::parser parser;
  auto doc = parse(parser, out);
  std::string_view s;
  ASSERT_EQ(doc["overload"].get(s), simdjson::SUCCESS);
  EXPECT_EQ(s, "dtype");
  ASSERT_EQ(doc["args"]["dtype"].get(s), simdjson::SUCCESS);
  EXPECT_EQ(s, "bfloat16");
  bool b = true;
  ASSERT_EQ(doc["args"]["non_blocking"].get(b), simdjson::SUCCESS);
  EXPECT_FALSE(b);
  EXPECT_TRUE(doc["args"]["memory_format"].is_null());
}

TEST(OpMarker, BackwardNodeHasForwardThreadAndPositionalArguments) {
  const OpInfo info = make_op_info("AddmmBackward0", "", nullptr);
  const std::vector<c10::IValue> inputs = {at::ones({2, 5})};
  OpInstance op;
  op.id = 9;
  op.seq = 3;
  op.tid = 2;
  op.fwd_tid = 1;
  op.scope = at::RecordScope::BACKWARD_FUNCTION;
  std::string buffer;
  const std::string out(build_op_message(
      buffer, info, op, c10::ArrayRef<const c10::IValue>(inputs.data(), inputs.size())));
  EXPECT_EQ(out,
            R"({"v":1,"op":"AddmmBackward0","id":9,"seq":3,"tid":2,"fwd_tid":1,"scope":"backward",)"
            R"("args":{"0":{"shape":[2,5],"dtype":"float32","stride":[5,1],"device":"cpu"}}})");
}

TEST(OpMarker, HostileNamesAreEscaped) {
  const OpInfo info = make_op_info("we\"ird\n名\x01", "", nullptr);
  OpInstance op;
  op.scope = at::RecordScope::USER_SCOPE;
  std::string buffer;
  const std::string out(build_op_message(buffer, info, op, {}));
  simdjson::dom::parser parser;
  auto doc = parse(parser, out);
  std::string_view name;
  ASSERT_EQ(doc["op"].get(name), simdjson::SUCCESS);
  EXPECT_EQ(name, "we\"ird\n名\x01");
}

TEST(OpMarker, MessageIsBoundedAndDroppedArgumentsAreCounted) {
  // Eight lists of 256 tensors with 60-dim shapes: far past the message limit.
  std::vector<int64_t> shape(60, 1);
  std::vector<at::Tensor> many(256, at::zeros(shape));
  std::vector<c10::IValue> inputs(8, c10::List<at::Tensor>(many));
  const OpInfo info = make_op_info("aten::_foreach_add_", "List", nullptr);
  OpInstance op;
  std::string buffer;
  const std::string out(build_op_message(
      buffer, info, op, c10::ArrayRef<const c10::IValue>(inputs.data(), inputs.size())));
  EXPECT_LE(out.size(), kMaxMessageBytes + 64);
  simdjson::dom::parser parser;
  auto doc = parse(parser, out);
  uint64_t dropped = 0;
  ASSERT_EQ(doc["args_dropped"].get(dropped), simdjson::SUCCESS);
  simdjson::dom::object args;
  ASSERT_EQ(doc["args"].get(args), simdjson::SUCCESS);
  EXPECT_EQ(args.size() + dropped, inputs.size());
  EXPECT_GT(dropped, 0u);
}

TEST(OpMarker, MoreInputsThanSchemaArgumentsFallBackToPositions) {
  const OpInfo info = make_op_info("aten::relu", "", &schema_of("aten::relu", ""));
  const std::vector<c10::IValue> inputs = {at::zeros({1}), int64_t{5}};
  OpInstance op;
  std::string buffer;
  const std::string out(build_op_message(
      buffer, info, op, c10::ArrayRef<const c10::IValue>(inputs.data(), inputs.size())));
  EXPECT_NE(out.find(R"("self":{)"), std::string::npos);
  EXPECT_NE(out.find(R"("1":5)"), std::string::npos);
}

}  // namespace
}  // namespace pyprof
