// The one net.dict reader (prof/dict_reader.h): each key in its slot by the schema's type, the
// null rule, the header first, the compact form's args resolved, strict JSON for export, and a
// line read again. prof/records_test.cpp covers blocks, long lines and escapes through read_dict.
#include "prof/dict_reader.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace pyprof::prof {
namespace {

using dict::Key;

// A reader over `text`, which must outlive it.
struct Read {
  explicit Read(const std::string& text, bool strict = false)
      : file(fmemopen(const_cast<char*>(text.data()), text.size(), "r")),
        reader(std::make_unique<DictReader>(file, DictReadOptions{strict})) {}
  ~Read() {
    reader.reset();
    std::fclose(file);
  }
  std::FILE* file;
  std::unique_ptr<DictReader> reader;
};

constexpr char kHeader[] = R"({"pyprof_dict":2,"source":"net.sqlite","records":"gpu"})"
                           "\n";

TEST(DictReader, EachKeyIsReadAsTheSchemaTypesIt) {
  const std::string text =
      std::string(kHeader) +
      R"({"kind":"kernel","name":"k\"1\u00e9","device":0,"grid":[4, 1, 1],"start":100,)"
      R"("duration":null,"self_duration":1.5,"tid":null,"seq":"x","launch":{"api":"cudaLaunchKernel",)"
      R"("start":90,"duration":null,"negative_duration":-3},"op":null,"dir":"fprop",)"
      R"("user_ranges":["a","b\\c",3,"layer:d"],"paired":true,"before_trace":false,)"
      R"("module":5,"new_key":{"nested":[1,2]},"args":{"0":{"shape":[2]}},"range":7})"
      "\n"
      R"({"kind":"range","range":"op","id":3,"name":"aten::mm"})"
      "\n";
  Read read(text);
  DictLine* l = read.reader->next_line();
  ASSERT_NE(l, nullptr) << read.reader->failure();
  EXPECT_TRUE(l->header());
  EXPECT_EQ(read.reader->header().source, "net.sqlite");
  EXPECT_EQ(read.reader->header().version, 2);

  l = read.reader->next_line();
  ASSERT_NE(l, nullptr) << read.reader->failure();
  EXPECT_EQ(l->line, 2);
  EXPECT_EQ(l->kind(), dict::LineKind::kKernel);
  EXPECT_EQ(l->str(Key::name), "k\"1\xc3\xa9");  // escapes resolved
  EXPECT_EQ(l->num(Key::device, -1), 0);
  EXPECT_EQ(l->raw(Key::grid), "[4, 1, 1]");
  EXPECT_EQ(l->num(Key::start, -1), 100);
  // The null rule: null is absent.
  EXPECT_FALSE(l->has(Key::duration));
  EXPECT_FALSE(l->has(Key::tid));
  EXPECT_FALSE(l->has(Key::op));
  EXPECT_EQ(l->str(Key::dir), "fprop");
  // A time that is no integer: absent, and said.
  EXPECT_FALSE(l->has(Key::self_duration));
  EXPECT_EQ(l->unreadable_time, "self_duration");
  // An integer key holding a string is there without a value; a string key holding a number
  // is absent.
  EXPECT_TRUE(l->has(Key::seq));
  EXPECT_EQ(l->num(Key::seq, -7), -7);
  EXPECT_FALSE(l->number(Key::seq).has_value());
  EXPECT_FALSE(l->has(Key::module));
  const DictLine::Launch* launch = l->launch();
  ASSERT_NE(launch, nullptr);
  EXPECT_EQ(launch->api, "cudaLaunchKernel");
  EXPECT_EQ(launch->start, 90);
  EXPECT_FALSE(launch->duration.has_value());
  EXPECT_EQ(launch->negative_duration, -3);
  EXPECT_EQ(l->strings(Key::user_ranges),
            (std::vector<std::string_view>{"a", "b\\c", "layer:d"}));  // the number skipped
  EXPECT_TRUE(l->flag(Key::paired));
  EXPECT_TRUE(l->has(Key::before_trace));
  EXPECT_FALSE(l->flag(Key::before_trace));
  EXPECT_EQ(l->raw(Key::args), R"({"0":{"shape":[2]}})");
  // `range`: a CPU record's id here, a range line's kind below.
  EXPECT_EQ(l->num(Key::range, -1), 7);
  EXPECT_EQ(l->str(Key::range), "");

  l = read.reader->next_line();
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->kind(), dict::LineKind::kRange);
  EXPECT_EQ(l->str(Key::range), "op");
  EXPECT_EQ(l->num(Key::range, -1), -1);
  EXPECT_FALSE(l->launch());
  EXPECT_TRUE(l->strings(Key::user_ranges).empty());  // nothing left from the line before
  EXPECT_EQ(read.reader->next_line(), nullptr);
  EXPECT_EQ(read.reader->failure(), "");
  EXPECT_EQ(read.reader->lines(), 3);
}

// Every int64 is a value: the extremes read as themselves, not as absent (a start of -2^63 is a
// time prof flags bad, prof/records.cpp), while a value that is no integer is present without one.
TEST(DictReader, EveryInt64IsAValueAndNoIntegerIsNone) {
  const std::string text = std::string(kHeader) +
                           R"({"kind":"kernel","name":"k","start":-9223372036854775808,)"
                           R"("duration":9223372036854775807,"seq":"x","correlation":null})"
                           "\n";
  Read read(text);
  ASSERT_NE(read.reader->next_line(), nullptr);
  const DictLine* l = read.reader->next_line();
  ASSERT_NE(l, nullptr) << read.reader->failure();
  EXPECT_EQ(l->number(Key::start), std::optional<int64_t>(INT64_MIN));
  EXPECT_EQ(l->num(Key::start, 0), INT64_MIN);
  EXPECT_EQ(l->num(Key::duration, 0), INT64_MAX);
  EXPECT_TRUE(l->has(Key::seq));
  EXPECT_EQ(l->number(Key::seq), std::nullopt);
  EXPECT_EQ(l->num(Key::seq, -1), -1);
  EXPECT_FALSE(l->has(Key::correlation));
}

TEST(DictReader, AnEscapedKeyIsFound) {
  const std::string text = std::string(kHeader) + R"({"kind":"op","na\u006de":"x"})"
                                                  "\n";
  Read read(text);
  read.reader->next_line();
  DictLine* l = read.reader->next_line();
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->str(Key::name), "x");
}

TEST(DictReader, TheHeaderComesFirst) {
  struct Case {
    std::string text, failure;
  } cases[] = {
      {"", "empty input (expected the output of `pyprof parse`)"},
      {"\n\n", "no pyprof_dict header (is this the output of `pyprof parse`?)"},
      {"\n{\"kind\":\"op\"}\n",
       "line 2: no pyprof_dict header (is this the output of `pyprof parse`?)"},
      {"not json\n" + std::string(kHeader),
       "line 1: not a JSON object; expected the pyprof_dict header (is this the output of "
       "`pyprof parse`?)"},
  };
  for (const Case& c : cases) {
    Read read(c.text);
    EXPECT_EQ(read.reader->next_line(), nullptr) << c.text;
    EXPECT_EQ(read.reader->failure(), c.failure) << c.text;
  }
}

TEST(DictReader, AnUnreadableLineAfterTheHeaderIsHandedOnMarked) {
  const std::string text = std::string(kHeader) + "garbage\n" +
                           R"({"kind":"op"})"
                           "\n";
  Read read(text);
  read.reader->next_line();
  DictLine* l = read.reader->next_line();
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->line, 2);
  EXPECT_EQ(l->unreadable, "not a JSON object");
  l = read.reader->next_line();
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->kind(), dict::LineKind::kOp);
}

TEST(DictReader, ArgsLinesAreKeptAndReferencesResolved) {
  const std::string text = std::string(kHeader) +
                           R"({"kind":"args","id":0,"args":{"self":{"shape":[3]}}})"
                           "\n"
                           R"({"kind":"kernel","name":"k","args_ref":0,"bwd_args_ref":0})"
                           "\n"
                           R"({"kind":"range","range":"op","name":"r","args_ref":0})"
                           "\n";
  Read read(text);
  read.reader->next_line();
  DictLine* l = read.reader->next_line();  // the args line is not handed on
  ASSERT_NE(l, nullptr) << read.reader->failure();
  EXPECT_EQ(l->line, 3);
  EXPECT_EQ(l->raw(Key::args), R"({"self":{"shape":[3]}})");
  EXPECT_EQ(l->raw(Key::bwd_args), R"({"self":{"shape":[3]}})");
  EXPECT_EQ(l->num(Key::args_ref, -1), 0);
  l = read.reader->next_line();
  ASSERT_NE(l, nullptr);
  const std::string range(l->text);
  EXPECT_EQ(l->raw(Key::args), R"({"self":{"shape":[3]}})");
  EXPECT_EQ(read.reader->next_line(), nullptr);
  // Kept as text and read again: its reference resolves as before.
  DictLine again;
  ASSERT_TRUE(read.reader->read_again(range, 4, again));
  EXPECT_EQ(again.line, 4);
  EXPECT_EQ(again.str(Key::name), "r");
  EXPECT_EQ(again.raw(Key::args), R"({"self":{"shape":[3]}})");
}

TEST(DictReader, AMalformedArgsLineOrReferenceEndsTheRead) {
  struct Case {
    std::string lines, failure;
  } cases[] = {
      {R"({"kind":"args","id":-1,"args":{}})",
       "line 2: an \"args\" line needs an \"id\" (a non-negative integer) and \"args\" (an object "
       "or array)"},
      {R"({"kind":"args","id":0,"args":"x"})",
       "line 2: an \"args\" line needs an \"id\" (a non-negative integer) and \"args\" (an object "
       "or array)"},
      {"{\"kind\":\"args\",\"id\":0,\"args\":{}}\n{\"kind\":\"args\",\"id\":0,\"args\":[]}",
       "line 3: args id 0 is defined twice"},
      {R"({"kind":"op","args_ref":"a"})", "line 2: \"args_ref\" is not a non-negative integer"},
      {R"({"kind":"op","bwd_args_ref":4})",
       "line 2: \"bwd_args_ref\": 4 names no \"args\" line before it"},
  };
  for (const Case& c : cases) {
    const std::string text = std::string(kHeader) + c.lines + "\n";
    Read read(text);
    while (read.reader->next_line() != nullptr) {
    }
    EXPECT_EQ(read.reader->failure(), c.failure) << c.lines;
  }
}

TEST(DictReader, StrictJsonMakesATokenOnDemandLetsPassUnreadable) {
  // A value no key of the schema reads: On-Demand never looks at it.
  const std::string text = std::string(kHeader) + R"({"kind":"kernel","name":"k","unread":nan})"
                                                  "\n";
  {
    Read read(text);
    read.reader->next_line();
    DictLine* l = read.reader->next_line();
    ASSERT_NE(l, nullptr);
    EXPECT_EQ(l->unreadable, "");
    EXPECT_EQ(l->str(Key::name), "k");
  }
  Read strict(text, true);
  strict.reader->next_line();
  DictLine* l = strict.reader->next_line();
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->unreadable.substr(0, 16), "not valid JSON (");
  EXPECT_TRUE(l->unreadable.ends_with("; a damaged net.dict?)")) << l->unreadable;
  EXPECT_FALSE(l->has(Key::name));
}

TEST(DictReader, TheHeaderIsParsedWhole) {
  const std::string text =
      R"({"pyprof_dict":3,"source":"s","format":"pyprof","version":"0.1","records":"op",)"
      R"("rank":1,"world_size":2,"backend":"gloo","base_time_ns":7,"torch_settings":)"
      R"({"cudnn.benchmark":true,"matmul":"high"},"devices":[{"id":0,"name":"H100",)"
      R"("sm_count":132,"clock_hz":1980000000,"memory_bandwidth":3350000000000,)"
      R"("total_memory":85,"compute_capability":[9,0]}],"iterations":{"rule":"user_range",)"
      R"("range":"step N","count":2,"steps":[{"index":0,"name":"step 0","start":0,"end":10},)"
      R"({"index":1,"start":10,"end":20,"cut":true}]}})"
      "\n";
  Read read(text);
  ASSERT_NE(read.reader->next_line(), nullptr) << read.reader->failure();
  const DictHeader& h = read.reader->header();
  EXPECT_EQ(h.text, text.substr(0, text.size() - 1));
  EXPECT_EQ(h.version, 3);
  EXPECT_EQ(h.tool_version, "0.1");
  EXPECT_EQ(h.records, "op");
  EXPECT_EQ(h.rank, 1);
  EXPECT_EQ(h.world_size, 2);
  EXPECT_EQ(h.backend, "gloo");
  EXPECT_EQ(h.base_time_ns, 7);
  ASSERT_EQ(h.torch_settings.size(), 2u);
  EXPECT_EQ(h.torch_settings[0], (std::pair<std::string, std::string>{"cudnn.benchmark", "true"}));
  EXPECT_EQ(h.torch_settings[1], (std::pair<std::string, std::string>{"matmul", "\"high\""}));
  ASSERT_EQ(h.devices.size(), 1u);
  EXPECT_EQ(h.devices[0].name, "H100");
  EXPECT_EQ(h.devices[0].sm_count, 132);
  EXPECT_EQ(h.devices[0].compute_major, 9);
  EXPECT_EQ(h.devices[0].compute_minor, 0);
  EXPECT_TRUE(h.has_iterations);
  EXPECT_EQ(h.iterations_problem, "");
  EXPECT_EQ(h.iteration_rule, "user_range");
  ASSERT_EQ(h.steps.size(), 2u);
  EXPECT_EQ(h.steps[1].name, "step 1");
  EXPECT_TRUE(h.steps[1].cut);
  EXPECT_EQ(h.steps[1].end, 20);
}

TEST(DictReader, MalformedIterationsAreSaidAndDropped) {
  const std::string text =
      R"({"pyprof_dict":2,"iterations":{"rule":"user_range","steps":[{"index":1,"start":0,"end":1}]}})"
      "\n";
  Read read(text);
  ASSERT_NE(read.reader->next_line(), nullptr);
  EXPECT_TRUE(read.reader->header().has_iterations);
  EXPECT_EQ(read.reader->header().iterations_problem,
            "step 0 has index 1 (expected 0..N-1 in order)");
  EXPECT_TRUE(read.reader->header().steps.empty());
  const std::string not_object = R"({"pyprof_dict":2,"iterations":"x"})"
                                 "\n";
  Read read2(not_object);
  ASSERT_NE(read2.reader->next_line(), nullptr);
  EXPECT_EQ(read2.reader->header().iterations_problem, "not an object");
}

}  // namespace
}  // namespace pyprof::prof
