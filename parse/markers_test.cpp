#include "parse/markers.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "parse/marker_test_util.h"
#include "parse/sqlite_db.h"

namespace pyprof::parse {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

// Parses JSON text with the DOM API, which checks all of it.
simdjson::dom::element parse_json(simdjson::dom::parser& parser, const std::string& json) {
  simdjson::dom::element root;
  const simdjson::error_code err = parser.parse(json).get(root);
  EXPECT_EQ(err, simdjson::SUCCESS) << simdjson::error_message(err) << " in: " << json;
  return root;
}

// ---------------------------------------------------------------------------------------------
// Backward node names

TEST(BackwardNodeName, AutogradNodeNamesOfEveryEra) {
  for (const char* name :
       {"AddmmBackward0", "AddmmBackward", "MulBackward1", "CudnnConvolutionBackward",
        "_ConvBackward", "TBackward", "NllLossBackward", "ConvolutionBackward0",
        "MyFunctionBackward", "torch::autograd::AccumulateGrad", "torch::autograd::CopySlices",
        "torch::autograd::GraphRoot", "torch::autograd::CopyBackwards"}) {
    EXPECT_TRUE(is_backward_node_name(name)) << name;
  }
}

TEST(BackwardNodeName, OpsAndOtherTextAreNotNodes) {
  for (const char* name :
       {"", "Backward", "Backward0", "aten::convolution_backward", "thnn_conv2d_backward",
        "nll_loss_backward", "AddmmBackward0x", "Addmm Backward0", "my::AddmmBackward0",
        "torch::autograd::", "autograd::engine::evaluate_function: AddmmBackward0",
        "AddmmBackward0, seq = 3", "aten::addmm"}) {
    EXPECT_FALSE(is_backward_node_name(name)) << name;
  }
}

// ---------------------------------------------------------------------------------------------
// pyprof markers (docs/formats.md §1)

TEST(PyprofMarker, OpMarkerFromTheFormatDoc) {
  const std::string args =
      R"({"input":{"shape":[8,3,32,32],"dtype":"float32","stride":[3072,1024,32,1],"device":"cpu"},)"
      R"("weight":{"shape":[16,3,5,5],"dtype":"float32","stride":[75,25,5,1],"device":"cpu"},)"
      R"("bias":{"shape":[16],"dtype":"float32","stride":[1],"device":"cpu"},)"
      R"("stride":[2,2],"padding":[1,1],"dilation":[1,1],"groups":1})";
  const Marker m = decode(R"({"v":1,"op":"aten::conv2d","overload":"Tensor","id":42,"seq":7,)"
                          R"("tid":1,"scope":"function","stack":"train.py:12","args":)" +
                              args + "}",
                          true);
  EXPECT_EQ(m.kind, MarkerKind::kOp);
  EXPECT_EQ(m.dialect, Dialect::kPyprof);
  EXPECT_EQ(m.name, "aten::conv2d");
  EXPECT_EQ(m.overload, "Tensor");
  EXPECT_EQ(m.op_id, 42);
  EXPECT_EQ(m.seq, 7);
  EXPECT_EQ(m.tid, 1);
  EXPECT_EQ(m.fwd_tid, -1);
  EXPECT_EQ(m.stack, "train.py:12");
  EXPECT_EQ(m.args, args);
  EXPECT_EQ(m.args_dropped, 0);
  EXPECT_TRUE(m.module_type.empty());
  EXPECT_TRUE(m.legacy_mod.empty());
  EXPECT_TRUE(m.trace.empty());
  EXPECT_EQ(m.error, "");
}

TEST(PyprofMarker, SettingsMark) {
  const std::string settings = R"({"torch":"2.13.0","cudnn.benchmark":false,"num_threads":2})";
  const Marker m = decode(R"({"v":1,"settings":)" + settings + "}", true);
  EXPECT_EQ(m.kind, MarkerKind::kSettings);
  EXPECT_EQ(m.dialect, Dialect::kPyprof);
  EXPECT_EQ(m.args, settings);
  EXPECT_EQ(m.error, "");
  // Not an object: a user range with the error said, as for other malformed markers.
  const Marker bad = decode(R"({"v":1,"settings":[1,2]})", true);
  EXPECT_EQ(bad.kind, MarkerKind::kUser);
  EXPECT_NE(bad.error.find("\"settings\" is not an object"), std::string::npos) << bad.error;
}

TEST(PyprofMarker, BackwardNode) {
  const std::string args =
      R"({"0":{"shape":[8,16,14,14],"dtype":"float32","stride":[3136,196,14,1],"device":"cpu"}})";
  const Marker m = decode(R"({"v":1,"op":"ConvolutionBackward0","id":97,"seq":7,"tid":2,)"
                          R"("fwd_tid":1,"scope":"backward","args":)" +
                              args + "}",
                          true);
  EXPECT_EQ(m.kind, MarkerKind::kBackwardNode);
  EXPECT_EQ(m.dialect, Dialect::kPyprof);
  EXPECT_EQ(m.name, "ConvolutionBackward0");
  EXPECT_EQ(m.op_id, 97);
  EXPECT_EQ(m.seq, 7);
  EXPECT_EQ(m.tid, 2);
  EXPECT_EQ(m.fwd_tid, 1);
  EXPECT_EQ(m.args, args);
  EXPECT_EQ(m.error, "");
}

TEST(PyprofMarker, InternedMarkersTakeIdAndSeqFromTheRange) {
  // Version 2 (docs/formats.md §1.1, interned form): no "id"/"seq" in the text; the reader fills
  // them from the range's payload and category (trace.cpp).
  const Marker m = decode(R"({"v":2,"op":"ConvolutionBackward0","tid":2,"fwd_tid":1,)"
                          R"("scope":"backward","args":{}})",
                          true);
  EXPECT_EQ(m.kind, MarkerKind::kBackwardNode);
  EXPECT_TRUE(m.interned);
  EXPECT_EQ(m.op_id, 0);
  EXPECT_EQ(m.seq, -1);
  EXPECT_EQ(m.error, "");
  EXPECT_FALSE(
      decode(R"({"v":1,"op":"aten::add","id":3,"seq":-1,"scope":"function"})", true).interned);
  EXPECT_FALSE(decode(R"({"v":2,"module":"Net.fc","type":"Linear"})", true).interned);
}

TEST(PyprofMarker, RecordFunctionScopesAreUserRanges) {
  Marker m = decode(
      R"({"v":1,"op":"## forward ##","id":5,"seq":-1,"tid":1,"scope":"user","args":{}})", true);
  EXPECT_EQ(m.kind, MarkerKind::kUser);
  EXPECT_EQ(m.dialect, Dialect::kPyprof);
  EXPECT_EQ(m.name, "## forward ##");
  EXPECT_EQ(m.op_id, 5);
  EXPECT_EQ(m.seq, -1);
  EXPECT_EQ(m.args, "{}");

  // The engine's wrapper around each node is a FUNCTION-scope RecordFunction but no op.
  for (const char* scope : {"user", "function"}) {
    m = decode(R"({"v":1,"op":"autograd::engine::evaluate_function: AddmmBackward0","id":6,)"
               R"("seq":-1,"tid":2,"scope":")"s +
                   scope + R"(","args":{}})",
               true);
    EXPECT_EQ(m.kind, MarkerKind::kUser) << scope;
    EXPECT_EQ(m.name, "autograd::engine::evaluate_function: AddmmBackward0");
    EXPECT_EQ(m.error, "");
  }
}

TEST(PyprofMarker, OtherScopesAreClassifiedByName) {
  EXPECT_EQ(decode(R"({"v":1,"op":"aten::mm","scope":"other"})", true).kind, MarkerKind::kOp);
  EXPECT_EQ(decode(R"({"v":1,"op":"MulBackward0","scope":"other"})", true).kind,
            MarkerKind::kBackwardNode);
  EXPECT_EQ(decode(R"({"v":1,"op":"MyModule.forward","scope":"torchscript"})", true).kind,
            MarkerKind::kUser);
  EXPECT_EQ(decode(R"({"v":1,"op":"aten::mm"})", true).kind, MarkerKind::kOp);
}

TEST(PyprofMarker, ModuleMarker) {
  const Marker m = decode(R"({"v":1,"module":"LeNet.conv1","type":"Conv2d"})", true);
  EXPECT_EQ(m.kind, MarkerKind::kModule);
  EXPECT_EQ(m.dialect, Dialect::kPyprof);
  EXPECT_EQ(m.name, "LeNet.conv1");
  EXPECT_EQ(m.module_type, "Conv2d");
  EXPECT_EQ(m.op_id, 0);
  EXPECT_EQ(m.seq, -1);
  EXPECT_TRUE(m.args.empty());
  EXPECT_EQ(m.error, "");
}

TEST(PyprofMarker, ArgsKeptByteForByte) {
  // Unicode escapes, non-finite floats as strings, nested lists and dicts, dropped arguments.
  const std::string args =
      R"({"self":{"shape":[2,3],"dtype":"float16","stride":[3,1],"device":"cuda:0"},)"
      R"("other":"inf","alpha":"-inf","beta":"nan","eps":1e-05,"scale":-0.5,)"
      R"("name":"caf\u00e9 \ud83d\ude00 \"q\" \\ \n","nested":[[1,[2,[3]]],[]],)"
      R"("d":{"dict":[["k",{"real":1.0,"imag":2.0}]]},"none":null,"flag":true,)"
      R"("list":[1,2,"...+62"],"gen":"<Generator>"})";
  const Marker m = decode(R"({"v":1,"op":"aten::add","overload":"Tensor","id":9,"seq":3,"tid":1,)"
                          R"("scope":"function","args":)" +
                              args + R"(,"args_dropped":2})",
                          true);
  EXPECT_EQ(m.kind, MarkerKind::kOp);
  EXPECT_EQ(m.args, args);
  EXPECT_EQ(m.args_dropped, 2);
  EXPECT_EQ(m.error, "");
  EXPECT_TRUE(is_valid_json(m.args));
}

TEST(PyprofMarker, EscapedStringsAreUnescaped) {
  const Marker m = decode(
      R"({"v":1,"op":"my\u00e9op \"x\"","scope":"user","stack":"d\u00efr/t.py:3","args":{}})",
      true);
  EXPECT_EQ(m.name, "my\xc3\xa9op \"x\"");
  EXPECT_EQ(m.stack, "d\xc3\xafr/t.py:3");
}

TEST(PyprofMarker, UnknownKeysAndNewerVersionsAreDecoded) {
  const Marker m =
      decode(R"({"v":7,"future":{"a":[1,{"b":null}]},"op":"aten::relu","id":3,"seq":1,"tid":0,)"
             R"("scope":"function","extra":[[[]]],"args":{"self":null},"more":"x"})",
             true);
  EXPECT_EQ(m.kind, MarkerKind::kOp);
  EXPECT_EQ(m.dialect, Dialect::kPyprof);
  EXPECT_EQ(m.name, "aten::relu");
  EXPECT_EQ(m.op_id, 3);
  EXPECT_EQ(m.args, R"({"self":null})");
  EXPECT_EQ(m.error, "");
}

TEST(PyprofMarker, WhitespaceAroundTokens) {
  const Marker m = decode(
      " { \"v\" : 1 , \"op\" : \"aten::mm\" , \"args\" : { \"a\" : [ 1 , 2 ] } \n,"
      " \"scope\" : \"function\" } \n",
      true);
  EXPECT_EQ(m.kind, MarkerKind::kOp);
  EXPECT_EQ(m.args, R"({ "a" : [ 1 , 2 ] })");
  EXPECT_EQ(m.error, "");
}

TEST(PyprofMarker, BadNumbersKeepDefaultsAndDecodeTheRest) {
  const Marker m = decode(R"({"v":1,"op":"aten::mm","id":18446744073709551615,"seq":1.5,"tid":"1",)"
                          R"("fwd_tid":99999999999999999999,"args_dropped":[1],"scope":"function",)"
                          R"("stack":"a.py:1","args":{"x":1}})",
                          true);
  EXPECT_EQ(m.kind, MarkerKind::kOp);
  EXPECT_EQ(m.dialect, Dialect::kPyprof);
  EXPECT_EQ(m.name, "aten::mm");
  EXPECT_EQ(m.op_id, 0);
  EXPECT_EQ(m.seq, -1);
  EXPECT_EQ(m.tid, -1);
  EXPECT_EQ(m.fwd_tid, -1);
  EXPECT_EQ(m.args_dropped, 0);
  EXPECT_EQ(m.stack, "a.py:1");
  EXPECT_EQ(m.args, R"({"x":1})");
  EXPECT_NE(m.error.find("\"id\""), std::string::npos) << m.error;
  EXPECT_NE(m.error.find("\"seq\""), std::string::npos) << m.error;
  EXPECT_NE(m.error.find("\"tid\""), std::string::npos) << m.error;
  EXPECT_NE(m.error.find("\"fwd_tid\""), std::string::npos) << m.error;
  EXPECT_NE(m.error.find("\"args_dropped\""), std::string::npos) << m.error;
}

TEST(PyprofMarker, WrongTypesAreErrors) {
  Marker m = decode(R"({"v":1,"op":"aten::mm","scope":"function","args":[1,2]})", true);
  EXPECT_EQ(m.kind, MarkerKind::kOp);
  EXPECT_TRUE(m.args.empty());
  EXPECT_NE(m.error.find("args"), std::string::npos);

  m = decode(R"({"v":1,"op":5,"module":"M.fc","type":"Linear"})", true);
  EXPECT_EQ(m.kind, MarkerKind::kModule);
  EXPECT_EQ(m.name, "M.fc");
  EXPECT_NE(m.error.find("\"op\""), std::string::npos);

  m = decode(R"({"v":"one","op":"aten::mm","scope":"function"})", true);
  EXPECT_EQ(m.kind, MarkerKind::kOp);
  EXPECT_NE(m.error.find("\"v\""), std::string::npos);
}

TEST(PyprofMarker, InvalidMarkersAreUserRangesWithAnError) {
  const std::string cases[] = {
      "",
      "hello",
      "[1,2]",
      "\"text\"",
      R"({"v":1,"op":"aten::mm","args":{"x":1})",         // truncated
      R"({"v":1,"op":"aten::mm","args":{"x":1}} extra)",  // trailing text
      R"({"v":1,"op":"aten::mm","args":{"x":tru}})",      // bad literal inside args
      R"({"v":1,"op":"aten::mm","args":{"x":[1,]}})",
      R"({"v":1,"op":"aten::mm","args":{"x" 1}})",
      R"({"v":1,"op":"aten::mm","args":{"d":[["k":1.0}]]}})",  // found by the fuzz test
      R"({"v":1,"op":"aten::mm","args":{"d":[1}}})",
      R"({"v":1,"op":"aten::mm","args":{"x":1e999}})",
      R"({"v":1,"op":"aten::mm","args":{"x":123456789012345678901234567890}})",
      R"({"v":1,"op":"aten::mm","args":{"x":"\q"}})",
      "{\"v\":1,\"op\":\"aten::mm\",\"args\":{\"x\":\"a\x01\"}}",  // unescaped control char
      "{\"v\":1,\"op\":\"a\xff\"}",                                // invalid UTF-8
      R"({"v":1,"id":3})",                                         // neither op nor module
      R"({"v":1,"op":"aten::mm")",
  };
  for (const std::string& text : cases) {
    const Marker m = decode(text, true);
    EXPECT_EQ(m.kind, MarkerKind::kUser) << text;
    EXPECT_EQ(m.dialect, Dialect::kUser) << text;
    EXPECT_EQ(m.name, text);
    EXPECT_FALSE(m.error.empty()) << text;
    EXPECT_TRUE(m.args.empty()) << text;
    EXPECT_EQ(m.op_id, 0);
  }
  EXPECT_NE(decode(R"({"v":1,"op":"x")", true).error.find("invalid JSON in pyprof marker: "),
            std::string::npos);
}

TEST(PyprofMarker, JsonOutsideThePyprofDomainIsAUserRange) {
  const std::string text = R"({"v":1,"op":"aten::conv2d","id":42,"scope":"function"})";
  const Marker m = decode(text, false);
  EXPECT_EQ(m.kind, MarkerKind::kUser);
  EXPECT_EQ(m.dialect, Dialect::kUser);
  EXPECT_EQ(m.name, text);
  EXPECT_EQ(m.error, "");
}

TEST(PyprofMarker, DeepNesting) {
  // Inside args: refused (the walk that checks args is bounded); in a key we skip: harmless.
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  Marker m =
      decode(R"({"v":1,"op":"aten::mm","scope":"function","args":{"x":)" + deep + "}}", true);
  EXPECT_EQ(m.dialect, Dialect::kUser);
  EXPECT_FALSE(m.error.empty());

  m = decode(R"({"v":1,"op":"aten::mm","scope":"function","junk":)" + deep + "}", true);
  EXPECT_EQ(m.kind, MarkerKind::kOp);
  EXPECT_EQ(m.error, "");

  m = decode(R"({"v":1,"op":"aten::mm","junk":)" + std::string(1000000, '['), true);
  EXPECT_EQ(m.dialect, Dialect::kUser);
  EXPECT_FALSE(m.error.empty());

  // Our own markers never nest past a dozen levels; a hundred is still fine.
  const std::string nested = std::string(100, '[') + std::string(100, ']');
  m = decode(R"({"v":1,"op":"aten::mm","scope":"function","args":{"x":)" + nested + "}}", true);
  EXPECT_EQ(m.args, R"({"x":)" + nested + "}");
}

TEST(PyprofMarker, MegabyteMarker) {
  std::string args = R"({"tensors":[)";
  for (int i = 0; i < 40000; ++i) {
    if (i > 0) args += ',';
    args += R"({"shape":[32,128],"dtype":"float32"})";
  }
  args += "]}";
  ASSERT_GT(args.size(), 1000000u);
  const Marker m =
      decode(R"({"v":1,"op":"aten::cat","id":1,"scope":"function","args":)" + args + "}", true);
  EXPECT_EQ(m.kind, MarkerKind::kOp);
  EXPECT_EQ(m.args, args);
}

// ---------------------------------------------------------------------------------------------
// Legacy PyProf markers

TEST(LegacyPyprof, ArgsMarkerFromTheWordLanguageModel) {
  const Marker m = decode(
      "{'mod': 'torch.nn.functional', 'op': 'embedding', 'args': [{'name': '', 'type': 'tensor', "
      "'shape': (35, 20), 'dtype': 'int64'}, {'name': '', 'type': 'tensor', 'shape': (33278, 200), "
      "'dtype': 'float32'}, {'name': '', 'type': 'NoneType', 'value': None}, {'name': '', 'type': "
      "'NoneType', 'value': None}, {'name': '', 'type': 'float', 'value': 2.0}, {'name': '', "
      "'type': 'bool', 'value': False}, {'name': '', 'type': 'bool', 'value': False}]}");
  EXPECT_EQ(m.kind, MarkerKind::kOp);
  EXPECT_EQ(m.dialect, Dialect::kLegacyPyprof);
  EXPECT_EQ(m.name, "embedding");
  EXPECT_EQ(m.legacy_mod, "torch.nn.functional");
  EXPECT_EQ(m.error, "");
  EXPECT_EQ(m.args, R"([{"name":"","type":"tensor","shape":[35,20],"dtype":"int64"},)"
                    R"({"name":"","type":"tensor","shape":[33278,200],"dtype":"float32"},)"
                    R"({"name":"","type":"NoneType","value":null},)"
                    R"({"name":"","type":"NoneType","value":null},)"
                    R"({"name":"","type":"float","value":2.0},)"
                    R"({"name":"","type":"bool","value":false},)"
                    R"({"name":"","type":"bool","value":false}])");

  simdjson::dom::parser parser;
  const simdjson::dom::element args = parse_json(parser, m.args);
  ASSERT_TRUE(args.is_array());
  EXPECT_EQ(simdjson::dom::array(args).size(), 7u);
  EXPECT_EQ(int64_t(args.at(1)["shape"].at(0)), 33278);
  EXPECT_EQ(std::string_view(args.at(0)["dtype"]), "int64");
  EXPECT_TRUE(args.at(2)["value"].is_null());
  EXPECT_EQ(double(args.at(4)["value"]), 2.0);
  EXPECT_FALSE(bool(args.at(5)["value"]));
}

TEST(LegacyPyprof, ArgsMarkerWithTuplesKeywordsAndFloats) {
  const Marker m = decode(
      "{'mod': 'torch.nn.functional', 'op': 'conv2d', 'args': [{'name': '', 'type': 'tensor', "
      "'shape': (32, 3, 224, 224), 'dtype': 'float16'}, {'name': 'stride', 'type': 'tuple', "
      "'value': (2, 2)}, {'name': 'eps', 'type': 'float', 'value': 1e-05}, {'name': 'p', 'type': "
      "'float', 'value': 'inf'}, {'name': 'shape', 'type': 'tuple', 'value': (7,)}, {'name': 'n', "
      "'type': 'int', 'value': -1}, {'name': 's', 'type': 'str', 'value': \"it's\"}]}");
  EXPECT_EQ(m.kind, MarkerKind::kOp);
  EXPECT_EQ(m.name, "conv2d");
  EXPECT_EQ(m.error, "");
  simdjson::dom::parser parser;
  const simdjson::dom::element args = parse_json(parser, m.args);
  EXPECT_EQ(int64_t(args.at(0)["shape"].at(3)), 224);
  EXPECT_EQ(int64_t(args.at(1)["value"].at(1)), 2);
  EXPECT_EQ(double(args.at(2)["value"]), 1e-05);
  EXPECT_EQ(std::string_view(args.at(3)["value"]), "inf");
  EXPECT_EQ(simdjson::dom::array(args.at(4)["value"]).size(), 1u);
  EXPECT_EQ(int64_t(args.at(5)["value"]), -1);
  EXPECT_EQ(std::string_view(args.at(6)["value"]), "it's");
}

TEST(LegacyPyprof, TraceMarkerWithFuncStack) {
  const Marker m = decode(
      "{'traceMarker': ['dummy_network.py:42', "
      "'/home/mohanadodema/.local/lib/python3.6/site-packages/torch/nn/modules/module.py:1102', "
      "'dummy_network.py:25'], 'funcStack': "
      "'/<module>/dummy_network::_call_impl/dummy_network::forward/relu'}");
  EXPECT_EQ(m.kind, MarkerKind::kTrace);
  EXPECT_EQ(m.dialect, Dialect::kLegacyPyprof);
  EXPECT_EQ(m.name, "");
  EXPECT_EQ(m.trace, (std::vector<std::string>{
                         "dummy_network.py:42",
                         "/home/mohanadodema/.local/lib/python3.6/site-packages/torch/nn/modules/"
                         "module.py:1102",
                         "dummy_network.py:25"}));
  EXPECT_EQ(m.error, "");
}

TEST(LegacyPyprof, ModuleMarker) {
  const Marker m = decode("{'mod': 'LSTMCell', 'strRepr': '512, 1024'}");
  EXPECT_EQ(m.kind, MarkerKind::kModule);
  EXPECT_EQ(m.dialect, Dialect::kLegacyPyprof);
  EXPECT_EQ(m.name, "LSTMCell");
  EXPECT_EQ(m.module_type, "512, 1024");
  EXPECT_EQ(m.error, "");
}

TEST(LegacyPyprof, ArgsMarkerWithoutArgs) {
  const Marker m = decode("{'mod': 'torch', 'op': 'randn', 'args': []}");
  EXPECT_EQ(m.kind, MarkerKind::kOp);
  EXPECT_EQ(m.name, "randn");
  EXPECT_EQ(m.legacy_mod, "torch");
  EXPECT_EQ(m.args, "[]");
}

TEST(LegacyPyprof, BrokenMarkersAreUserRangesWithAnError) {
  for (const std::string& text :
       {"{'mod': 'torch', 'op': 'linear', 'args': [{'name': '', 'shape': (32, 12"s,
        "{'traceMarker': ['a.py:1', 'b.py:2'"s, "{'mod': 'torch'}"s,
        "{'mod': 'torch', 'op': 'x', 'args': [" + std::string(100000, '[') + "]}"}) {
    const Marker m = decode(text);
    EXPECT_EQ(m.kind, MarkerKind::kUser) << text.substr(0, 80);
    EXPECT_EQ(m.dialect, Dialect::kUser);
    EXPECT_EQ(m.name, text);
    EXPECT_FALSE(m.error.empty()) << text.substr(0, 80);
  }
}

TEST(LegacyPyprof, OtherDictsAndLayerRangesAreUserRanges) {
  for (const std::string& text :
       {"{\"model_config\": {\"emit_nvtx\": true}}"s, "{'a': 1}"s, "{}"s, "{"s, "{not python}"s,
        "layer:MLP"s, "layer:Conv1"s, "{'layer': 'x'}"s}) {
    const Marker m = decode(text);
    EXPECT_EQ(m.kind, MarkerKind::kUser) << text;
    EXPECT_EQ(m.dialect, Dialect::kUser) << text;
    EXPECT_EQ(m.name, text);
    EXPECT_EQ(m.error, "") << text;
  }
}

// ---------------------------------------------------------------------------------------------
// Plain user ranges and hostile input

TEST(UserRange, PlainTextIsKeptWhole) {
  for (const std::string& text :
       {"hello"s, ""s, "layer:MLP"s, "volta_sgemm_128x64_nn"s, "python language-model.py"s,
        "Fusion::resetTvUses"s, "GpuLower::Lower::validateIr"s,
        "transform_replay.cpp::getMatchedLeafPosWithoutReplayPasC"s,
        "fusion_executor::allocations::inferShape"s, "reuseMemoryAllocations"s, "aten::"s,
        "::relu"s, "aten::relu "s, "forward"s, "a\0b"s, "\xff\xfe\x00\x01"s}) {
    const Marker m = decode(text);
    EXPECT_EQ(m.kind, MarkerKind::kUser) << text;
    EXPECT_EQ(m.dialect, Dialect::kUser) << text;
    EXPECT_EQ(m.name, text);
    EXPECT_EQ(m.error, "");
  }
}

TEST(UserRange, NulBytesAreKept) {
  // Not an op name, so a label with fields.
  Marker m = decode("aten::relu\0hidden, seq = 1"s);
  EXPECT_EQ(m.kind, MarkerKind::kUser);
  EXPECT_EQ(m.dialect, Dialect::kEmitNvtx);
  EXPECT_EQ(m.name, "aten::relu\0hidden"s);
  EXPECT_EQ(m.seq, 1);

  const std::string json = "{\"v\":1,\"op\":\"aten::mm\"}\0{\"op\":1}"s;
  m = decode(json, true);
  EXPECT_EQ(m.dialect, Dialect::kUser);
  EXPECT_EQ(m.name, json);
  EXPECT_FALSE(m.error.empty());

  m = decode("{'mod': 'torch', 'op': 'a\0b', 'args': []}"s);
  EXPECT_EQ(m.kind, MarkerKind::kOp);
  EXPECT_EQ(m.name, "a\0b"s);
}

TEST(UserRange, MegabyteText) {
  std::string text(1 << 20, 'x');
  for (size_t i = 0; i < text.size(); i += 97) text[i] = ',';
  for (size_t i = 50; i < text.size(); i += 1001) text.replace(i, 6, ", seq ");
  const Marker m = decode(text);
  EXPECT_EQ(m.kind, MarkerKind::kUser);
  EXPECT_EQ(m.name, text);

  const Marker json = decode(text, true);
  EXPECT_EQ(json.name, text);
  EXPECT_FALSE(json.error.empty());
}

TEST(Marker, OtherLibrariesRangesAreUserRanges) {
  // Bare `namespace::name` in the default domain: an op only in one of PyTorch's namespaces.
  for (const char* text : {"executor_utils::bindInputs", "python_frontend::define_vector_fn",
                           "fusion_executor::allocations::inferShape", "onnx::Conv_239"}) {
    const Marker m = decode(text, MarkerDomain::kDefault);
    EXPECT_EQ(m.kind, MarkerKind::kUser) << text;
    EXPECT_EQ(m.dialect, Dialect::kUser) << text;
    EXPECT_EQ(m.name, text);
  }
  for (const char* text : {"aten::relu", "prim::DifferentiableGraph", "c10d::allreduce_",
                           "_c10d_functional::all_reduce", "torchvision::nms"}) {
    EXPECT_EQ(decode(text, MarkerDomain::kDefault).kind, MarkerKind::kOp) << text;
  }
  // With emit_nvtx's fields any namespace is an op (custom operators).
  EXPECT_EQ(decode("mylib::fused, seq = 3, op_id = 4", MarkerDomain::kDefault).kind,
            MarkerKind::kOp);
  // A named domain other than "pyprof" holds no emit_nvtx or legacy PyProf strings at all.
  for (const char* text : {"onnx::Conv_239", "aten::addmm, seq = 3, op_id = 7",
                           "AddmmBackward0, seq = 3", "{'mod': 'torch', 'op': 'x', 'args': []}"}) {
    const Marker m = decode(text, MarkerDomain::kOther);
    EXPECT_EQ(m.kind, MarkerKind::kUser) << text;
    EXPECT_EQ(m.dialect, Dialect::kUser) << text;
    EXPECT_EQ(m.name, text);
    EXPECT_EQ(m.error, "") << text;
  }
}

TEST(Marker, ReusedMarkerIsResetEveryTime) {
  Marker m;
  decode_marker(
      R"({"v":1,"op":"AddmmBackward0","overload":"o","id":3,"seq":4,"tid":5,)"
      R"("fwd_tid":6,"scope":"backward","stack":"s.py:1","args":{"a":1},"args_dropped":1})",
      MarkerDomain::kPyprof, m);
  decode_marker("{'traceMarker': ['a.py:1']}", MarkerDomain::kDefault, m);
  EXPECT_EQ(m.trace.size(), 1u);
  decode_marker("{'mod': 'torch', 'op': 'x', 'args': [1]", MarkerDomain::kDefault,
                m);  // broken: error
  EXPECT_FALSE(m.error.empty());
  decode_marker("{'mod': 'M', 'strRepr': 'r'}", MarkerDomain::kDefault, m);
  decode_marker("aten::relu", MarkerDomain::kDefault, m);
  const Marker fresh = decode("aten::relu");
  EXPECT_EQ(m.kind, fresh.kind);
  EXPECT_EQ(m.dialect, fresh.dialect);
  EXPECT_EQ(m.name, fresh.name);
  EXPECT_EQ(m.overload, "");
  EXPECT_EQ(m.module_type, "");
  EXPECT_EQ(m.legacy_mod, "");
  EXPECT_EQ(m.stack, "");
  EXPECT_EQ(m.args, "");
  EXPECT_TRUE(m.trace.empty());
  EXPECT_EQ(m.op_id, 0);
  EXPECT_EQ(m.seq, -1);
  EXPECT_EQ(m.tid, -1);
  EXPECT_EQ(m.fwd_tid, -1);
  EXPECT_EQ(m.args_dropped, 0);
  EXPECT_EQ(m.error, "");
}

// ---------------------------------------------------------------------------------------------
// Every message of the real captures in ../shared/traces

fs::path traces_dir() {
  if (const char* env = std::getenv("PYPROF_TRACES_DIR"); env && *env) return env;
  return fs::path(__FILE__).parent_path().parent_path().parent_path() / "shared" / "traces";
}

// Counts of "kind/dialect" over every string the query returns.
std::map<std::string, int> decode_all(const fs::path& path, const std::string& sql) {
  SqliteDb db;
  std::string error;
  std::map<std::string, int> counts;
  if (!db.open(path.string(), error)) {
    ADD_FAILURE() << error;
    return counts;
  }
  Statement stmt = db.prepare(sql, error);
  if (!stmt.valid()) {
    ADD_FAILURE() << error;
    return counts;
  }
  Marker m;
  simdjson::dom::parser parser;
  while (stmt.step() == SQLITE_ROW) {
    const std::string_view text = stmt.text(0);
    decode_marker(text, MarkerDomain::kDefault, m);
    EXPECT_EQ(m.error, "") << text;
    if (!m.args.empty()) {
      simdjson::dom::element root;
      EXPECT_EQ(parser.parse(m.args).get(root), simdjson::SUCCESS) << m.args;
    }
    static const char* const kKinds[] = {"user", "op", "node", "module", "trace"};
    static const char* const kDialects[] = {"user", "pyprof", "emit_nvtx", "legacy"};
    ++counts[std::string(kKinds[int(m.kind)]) + "/" + kDialects[int(m.dialect)]];
  }
  return counts;
}

// "real/x.sqlite" in the shared traces, else the repository's copy tests/data/x.sqlite.
fs::path trace_file(const std::string& rel) {
  fs::path shared = traces_dir() / rel;
  if (fs::exists(shared)) return shared;
  return fs::path(__FILE__).parent_path().parent_path() / "tests" / "data" /
         fs::path(rel).filename();
}

TEST(RealCaptures, EveryMessageDecodes) {
  for (const char* rel : {"real/nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite",
                          "real/nvprof-cuda10.1_pytorch-lm_apex-pyprof.sql",
                          "real/nsys-2024.6.2_nvfuser-nvtx_report1.sqlite",
                          "pyprof-legacy/synthetic_mlp_opid.nsys.sqlite"}) {
    if (!fs::exists(trace_file(rel))) GTEST_SKIP() << "no copy of " << rel;
  }
  struct {
    fs::path operator/(const std::string& rel) const { return trace_file(rel); }
  } dir;
  using Counts = std::map<std::string, int>;
  // PyTorch 1.10 emit_nvtx + DLProf's PyProf markers.
  EXPECT_EQ(
      decode_all(dir / "real/nsys-2022.1.3_dlprof-pytorch1.10-emit-nvtx_lenet.sqlite",
                 "SELECT text FROM NVTX_EVENTS WHERE text IS NOT NULL"),
      (Counts{{"op/emit_nvtx", 67}, {"op/legacy", 49}, {"trace/legacy", 49}, {"user/user", 1}}));
  // PyTorch ~1.4 emit_nvtx + apex PyProf; the string table also holds kernel names.
  EXPECT_EQ(decode_all(dir / "real/nvprof-cuda10.1_pytorch-lm_apex-pyprof.sql",
                       "SELECT value FROM StringTable"),
            (Counts{{"op/emit_nvtx", 124},
                    {"node/emit_nvtx", 63},
                    {"op/legacy", 82},
                    {"trace/legacy", 59},
                    {"user/user", 45}}));
  // nvFuser's own host ranges, "executor_utils::bindInputs" and the rest: none is an op.
  EXPECT_EQ(decode_all(dir / "real/nsys-2024.6.2_nvfuser-nvtx_report1.sqlite",
                       "SELECT text FROM NVTX_EVENTS WHERE text IS NOT NULL"),
            (Counts{{"user/user", 652}}));
  EXPECT_EQ(decode_all(dir / "pyprof-legacy/synthetic_mlp_opid.nsys.sqlite",
                       "SELECT text FROM NVTX_EVENTS WHERE text IS NOT NULL"),
            (Counts{{"op/emit_nvtx", 8},
                    {"node/emit_nvtx", 2},
                    {"op/legacy", 3},
                    {"trace/legacy", 3},
                    {"user/user", 1}}));
}

TEST(PyprofMarker, CompiledKernelMark) {
  const std::string kernel = R"({"nodes":[{"op":"aten::relu","args":{}}],"reads":[],"writes":[]})";
  const Marker m = decode(
      R"({"v":1,"compiled_kernel":"graph_3_cpp_fused_relu_0","kernel":)" + kernel + "}", true);
  EXPECT_EQ(m.kind, MarkerKind::kCompiledKernel);
  EXPECT_EQ(m.dialect, Dialect::kPyprof);
  EXPECT_EQ(m.name, "graph_3_cpp_fused_relu_0");
  EXPECT_EQ(m.args, kernel);
  EXPECT_EQ(m.error, "");
  for (const char* bad :
       {R"({"v":1,"compiled_kernel":"k"})", R"({"v":1,"compiled_kernel":"","kernel":{}})",
        R"({"v":1,"compiled_kernel":"k","kernel":[1]})"}) {
    const Marker b = decode(bad, true);
    EXPECT_EQ(b.kind, MarkerKind::kUser) << bad;
    EXPECT_NE(b.error, "") << bad;
  }
}

// A place of several (the C++ wrapper's shims): the graph key gets the pass and the place.
TEST(PyprofMarker, CompiledKernelCallSite) {
  const Marker m =
      decode(R"({"v":1,"compiled_kernel":"aoti_torch_cpu_mm_out","kernel":{},"call_site":2,)"
             R"("backward":true,"graph":"0/1"})",
             true);
  EXPECT_EQ(m.kind, MarkerKind::kCompiledKernel);
  EXPECT_EQ(m.overload, "0/1#b2");
  EXPECT_EQ(m.error, "");
  EXPECT_EQ(decode(R"({"v":1,"compiled_kernel":"k","kernel":{},"call_site":0,"backward":false,)"
                   R"("graph":"3/0"})",
                   true)
                .overload,
            "3/0#f0");
  // Half of a place, or a place without its graph: the plain graph key, and an error.
  for (const char* bad :
       {R"({"v":1,"compiled_kernel":"k","kernel":{},"call_site":1,"graph":"0/0"})",
        R"({"v":1,"compiled_kernel":"k","kernel":{},"backward":true,"graph":"0/0"})",
        R"({"v":1,"compiled_kernel":"k","kernel":{},"call_site":1,"backward":true})",
        R"({"v":1,"compiled_kernel":"k","kernel":{},"call_site":1,"backward":1,"graph":"0/0"})"}) {
    const Marker b = decode(bad, true);
    EXPECT_EQ(b.kind, MarkerKind::kCompiledKernel) << bad;
    EXPECT_EQ(b.overload.find('#'), std::string::npos) << bad;
    EXPECT_NE(b.error, "") << bad;
  }
}

}  // namespace
}  // namespace pyprof::parse
