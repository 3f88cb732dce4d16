// Randomized property test of the marker decoders: real and hand-written markers of every
// dialect, mutated at random, must never crash, and whatever JSON the decoders hand out must be
// valid. Runs for a fixed time; PYPROF_FUZZ_SECONDS changes it (total over the tests here) and
// PYPROF_FUZZ_SEED replays or varies the random stream (the seed is printed on failure).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "parse/fuzz_test_util.h"
#include "parse/markers.h"
#include "parse/py_literal.h"

namespace pyprof::parse {
namespace {

using namespace std::string_literals;

constexpr uint64_t kDefaultSeed = 0x5eed'd00d'cafe'f00dULL;

uint64_t fuzz_seed() { return parse::fuzz_seed(kDefaultSeed); }

std::string escaped(std::string_view s) { return parse::escaped(s, 2000); }

const std::vector<std::string>& seeds() {
  static const std::vector<std::string> kSeeds = {
      // pyprof markers
      R"({"v":1,"op":"aten::conv2d","overload":"Tensor","id":42,"seq":7,"tid":1,"scope":"function","stack":"train.py:12","args":{"input":{"shape":[8,3,32,32],"dtype":"float32","stride":[3072,1024,32,1],"device":"cpu"},"weight":{"shape":[16,3,5,5],"dtype":"float32","stride":[75,25,5,1],"device":"cpu"},"bias":{"shape":[16],"dtype":"float32","stride":[1],"device":"cpu"},"stride":[2,2],"padding":[1,1],"dilation":[1,1],"groups":1}})",
      R"({"v":1,"op":"ConvolutionBackward0","id":97,"seq":7,"tid":1,"fwd_tid":1,"scope":"backward","args":{"0":{"shape":[8,16,14,14],"dtype":"float32","stride":[3136,196,14,1],"device":"cpu"}}})",
      R"({"v":1,"op":"aten::add","id":9,"seq":3,"tid":1,"scope":"function","args":{"other":"inf","eps":1e-05,"name":"caf\u00e9 \ud83d\ude00 \"q\"","d":{"dict":[["k",{"real":1.0,"imag":2.0}]]},"none":null,"flag":true,"list":[1,2,"...+62"]},"args_dropped":2})",
      R"({"v":1,"op":"## forward ##","id":5,"seq":-1,"tid":1,"scope":"user","args":{}})",
      R"({"v":1,"op":"autograd::engine::evaluate_function: AddmmBackward0","id":6,"seq":-1,"tid":2,"scope":"function","args":{}})",
      R"({"v":1,"module":"LeNet.conv1","type":"Conv2d"})",
      // emit_nvtx, every era
      "aten::addmm, seq = 10, op_id = 7, sizes = [[5], [2, 64], [64, 5], [], []], input_op_ids = "
      "[(0,-1), (14,0), (16,0), (0,-1), (0,-1)]",
      "aten::linear, seq = 10, op_id = 6",
      "AddmmBackward0, seq = 3, op_id = 38",
      "aten::conv2d, seq = 0",
      "embedding, seq = 65",
      "torch::autograd::GraphRoot, seq = 129",
      "addmm, seq=10",
      "AddmmBackward, stashed seq=10",
      ", sizes = [[2, 3]]",
      "aten::relu",
      "## forward ##, op_id = 3",
      "Optimizer.step#SGD.step, op_id = 9",
      // legacy PyProf
      "{'mod': 'torch.nn.functional', 'op': 'embedding', 'args': [{'name': '', 'type': 'tensor', "
      "'shape': (35, 20), 'dtype': 'int64'}, {'name': '', 'type': 'NoneType', 'value': None}, "
      "{'name': '', 'type': 'float', 'value': 2.0}, {'name': '', 'type': 'bool', 'value': "
      "False}]}",
      "{'mod': 'torch.nn.functional', 'op': 'conv2d', 'args': [{'name': 'stride', 'type': 'tuple', "
      "'value': (2, 2)}, {'name': 'eps', 'type': 'float', 'value': 1e-05}, {'name': 's', 'type': "
      "'str', 'value': \"it's \\x01\\u00e9\"}]}",
      "{'traceMarker': ['dummy_network.py:42', 'dummy_network.py:25'], 'funcStack': "
      "'/<module>/dummy_network::forward/relu'}",
      "{'mod': 'LSTMCell', 'strRepr': '512, 1024'}",
      "{1: 'one', None: 2, (3, 4): [], 'k': ((),), 'f': -.5e+3, 'i': 123456789012345678901234}",
      // user ranges
      "layer:MLP",
      "{\"model_config\": {\"emit_nvtx\": true}}",
      "Fusion::resetTvUses",
  };
  return kSeeds;
}

// Fragments that steer mutations into the decoders' interesting corners.
const std::vector<std::string>& tokens() {
  static const std::vector<std::string> kTokens = {
      "\"",
      "'",
      "\\",
      "{",
      "}",
      "[",
      "]",
      "(",
      ")",
      ",",
      ":",
      "\0"s,
      "0",
      "-",
      ".",
      "e",
      "1e999",
      "-0",
      "99999999999999999999999",
      "\\u",
      "\\x",
      "\\ud83d",
      "\\U",
      "\xff",
      "\xc3",
      "\xed\xa0\x80",
      "None",
      "True",
      "nan",
      "inf",
      ", seq = ",
      ", stashed seq=",
      ", op_id = ",
      ", sizes = ",
      ", input_op_ids = ",
      "Backward0",
      "aten::",
      "torch::autograd::",
      "\"args\":",
      "\"op\":",
      "'mod': ",
      "'op': ",
      "'args': ",
      "'traceMarker': ",
      "\n",
      " ",
  };
  return kTokens;
}

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  size_t below(size_t n) {
    return n == 0 ? 0 : std::uniform_int_distribution<size_t>(0, n - 1)(rng_);
  }

  std::string random_bytes() {
    std::string s(below(64), '\0');
    for (char& c : s) c = static_cast<char>(below(256));
    return s;
  }

  std::string next() {
    if (below(16) == 0) return random_bytes();
    std::string s = seeds()[below(seeds().size())];
    // Mostly one mutation, so that most inputs still reach the decoders' deeper paths.
    const size_t rounds = below(4) == 0 ? 2 + below(8) : 1;
    for (size_t r = 0; r < rounds; ++r) mutate(s);
    return s;
  }

  void mutate(std::string& s) {
    switch (below(8)) {
      case 0:  // flip a byte
        if (!s.empty()) s[below(s.size())] ^= static_cast<char>(1 + below(255));
        break;
      case 1:  // truncate
        s.resize(below(s.size() + 1));
        break;
      case 2:  // insert a token
        s.insert(below(s.size() + 1), tokens()[below(tokens().size())]);
        break;
      case 3:  // delete a span
        if (!s.empty()) {
          const size_t at = below(s.size());
          s.erase(at, 1 + below(std::min<size_t>(16, s.size() - at)));
        }
        break;
      case 4: {  // splice with another seed
        const std::string& other = seeds()[below(seeds().size())];
        const size_t cut = below(s.size() + 1);
        const size_t from = below(other.size() + 1);
        s = s.substr(0, cut) + other.substr(from);
        break;
      }
      case 5: {  // repeat a span (nesting, long lists)
        if (s.empty() || s.size() > 200000) break;
        const size_t at = below(s.size());
        const std::string span = s.substr(at, 1 + below(std::min<size_t>(8, s.size() - at)));
        const size_t times = 1 + below(below(4) == 0 ? 5000 : 20);
        std::string repeated;
        for (size_t k = 0; k < times; ++k) repeated += span;
        s.insert(at, repeated);
        break;
      }
      case 6:  // insert digits
        s.insert(below(s.size() + 1),
                 std::string(1 + below(30), static_cast<char>('0' + below(10))));
        break;
      default:  // replace a byte with a random one
        if (!s.empty()) s[below(s.size())] = static_cast<char>(below(256));
        break;
    }
  }

 private:
  std::mt19937_64 rng_;
};

bool valid_json(simdjson::dom::parser& parser, const std::string& json) {
  simdjson::dom::element root;
  return parser.parse(json).get(root) == simdjson::SUCCESS;
}

bool same(const Marker& a, const Marker& b) {
  return a.kind == b.kind && a.dialect == b.dialect && a.name == b.name &&
         a.overload == b.overload && a.module_type == b.module_type &&
         a.legacy_mod == b.legacy_mod && a.stack == b.stack && a.args == b.args &&
         a.trace == b.trace && a.op_id == b.op_id && a.seq == b.seq && a.tid == b.tid &&
         a.fwd_tid == b.fwd_tid && a.args_dropped == b.args_dropped && a.error == b.error;
}

// The invariants every decoded marker must satisfy. Returns an empty string when they hold.
std::string check(std::string_view text, const Marker& m, simdjson::dom::parser& parser) {
  if (m.dialect == Dialect::kUser) {
    if (m.kind != MarkerKind::kUser) return "dialect user but kind not user";
    if (m.name != text) return "user range does not keep the whole text";
    if (!m.args.empty()) return "user range with args";
  }
  if (m.kind == MarkerKind::kTrace && m.dialect != Dialect::kLegacyPyprof) {
    return "trace marker outside the legacy dialect";
  }
  if (!m.args.empty()) {
    if (!valid_json(parser, m.args)) return "args are not valid JSON";
    const char open = m.dialect == Dialect::kLegacyPyprof ? '[' : '{';
    if (m.args.front() != open) return "args have the wrong JSON type";
  }
  return {};
}

TEST(MarkersFuzz, DecodeMarkerNeverBreaks) {
  const uint64_t seed = fuzz_seed();
  Mutator mutator(seed);
  simdjson::dom::parser parser;
  Marker reused;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(fuzz_seconds() * 2.0 / 3.0);
  size_t iterations = 0;
  size_t decoded[4] = {};
  while (std::chrono::steady_clock::now() < deadline) {
    for (int batch = 0; batch < 64; ++batch, ++iterations) {
      const std::string text = mutator.next();
      for (const MarkerDomain domain :
           {MarkerDomain::kPyprof, MarkerDomain::kDefault, MarkerDomain::kOther}) {
        decode_marker(text, domain, reused);
        Marker fresh;
        decode_marker(text, domain, fresh);
        ++decoded[int(fresh.dialect)];
        const std::string problem = check(text, fresh, parser);
        ASSERT_TRUE(problem.empty()) << problem << "\nseed " << seed << ", iteration " << iterations
                                     << ", domain " << static_cast<int>(domain)
                                     << " (0 default, 1 pyprof, 2 other)\ninput: " << escaped(text)
                                     << "\nargs: " << escaped(fresh.args);
        ASSERT_TRUE(same(reused, fresh))
            << "a reused Marker decodes differently\nseed " << seed << ", iteration " << iterations
            << "\ninput: " << escaped(text);
      }
    }
  }
  std::printf(
      "[ fuzz     ] %zu inputs (seed %llu): user %zu, pyprof %zu, emit_nvtx %zu, legacy %zu\n",
      iterations, static_cast<unsigned long long>(seed), decoded[0], decoded[1], decoded[2],
      decoded[3]);
  // The mutations must keep reaching every decoder, or the test proves little.
  EXPECT_GT(decoded[int(Dialect::kPyprof)], 0u);
  EXPECT_GT(decoded[int(Dialect::kEmitNvtx)], 0u);
  EXPECT_GT(decoded[int(Dialect::kLegacyPyprof)], 0u);
}

TEST(MarkersFuzz, PythonLiteralOutputIsValidJson) {
  const uint64_t seed = fuzz_seed() ^ 0x9e3779b97f4a7c15ULL;
  Mutator mutator(seed);
  simdjson::dom::parser parser;
  std::string json, error;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(fuzz_seconds() / 3.0);
  size_t iterations = 0, converted = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    for (int batch = 0; batch < 64; ++batch, ++iterations) {
      const std::string text = mutator.next();
      if (python_literal_to_json(text, json, error)) {
        ++converted;
        ASSERT_TRUE(valid_json(parser, json))
            << "seed " << seed << ", iteration " << iterations << "\ninput: " << escaped(text)
            << "\noutput: " << escaped(json);
        ASSERT_TRUE(error.empty());
      } else {
        ASSERT_TRUE(json.empty()) << escaped(text);
        ASSERT_FALSE(error.empty()) << escaped(text);
      }
    }
  }
  std::printf("[ fuzz     ] %zu literals (seed %llu), %zu converted\n", iterations,
              static_cast<unsigned long long>(seed), converted);
  EXPECT_GT(converted, 0u);
}

}  // namespace
}  // namespace pyprof::parse
