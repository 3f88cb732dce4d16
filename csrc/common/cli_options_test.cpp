#include "cli_options.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <vector>

namespace pyprof {
namespace {

struct Listed {
  std::vector<std::string> names;
  bool takes_value = false, positional = false, hidden = false;
  std::string default_text;
};

// The options of `app` as the Python fronts read them: options_json() parsed by simdjson.
std::vector<Listed> listed(const CLI::App& app, std::string& tool) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  const std::string json = options_json(app);
  EXPECT_EQ(json.back(), '\n');
  EXPECT_EQ(parser.parse(json).get(doc), simdjson::SUCCESS) << json;
  std::string_view name;
  EXPECT_EQ(doc["tool"].get(name), simdjson::SUCCESS);
  tool = std::string(name);
  std::vector<Listed> out;
  for (simdjson::dom::element option : doc["options"].get_array()) {
    Listed l;
    for (simdjson::dom::element n : option["names"].get_array()) {
      l.names.emplace_back(std::string_view(n));
    }
    l.takes_value = bool(option["takes_value"]);
    l.positional = bool(option["positional"]);
    l.hidden = bool(option["hidden"]);
    l.default_text = std::string(std::string_view(option["default"]));
    out.push_back(l);
  }
  return out;
}

const Listed* find(const std::vector<Listed>& all, const std::string& name) {
  for (const Listed& l : all) {
    for (const std::string& n : l.names) {
      if (n == name) return &l;
    }
  }
  return nullptr;
}

TEST(CliOptions, ListsEachOptionWithItsNamesAndWhetherItTakesAValue) {
  CLI::App app{"a tool", "pyprof demo"};
  std::string output = "out", label;
  int top = 0;
  bool quiet = false, csv = false;
  std::vector<std::string> inputs;
  app.add_option("input", inputs, "inputs");
  app.add_option("-o,--output", output, "where")->default_str("out");
  app.add_option("--top", top, "how many");
  app.add_flag("-q,--quiet", quiet, "quiet");
  app.add_flag("--csv", csv, "csv");
  app.add_option("--label", label)->group("");

  std::string tool;
  const std::vector<Listed> all = listed(app, tool);
  EXPECT_EQ(tool, "pyprof demo");
  ASSERT_EQ(all.size(), 7u);  // --help, too

  const Listed* o = find(all, "--output");
  ASSERT_NE(o, nullptr);
  EXPECT_EQ(o->names, (std::vector<std::string>{"-o", "--output"}));
  EXPECT_TRUE(o->takes_value);
  EXPECT_FALSE(o->positional);
  EXPECT_EQ(o->default_text, "out");
  EXPECT_TRUE(find(all, "--top")->takes_value);
  EXPECT_TRUE(find(all, "--label")->takes_value);
  EXPECT_TRUE(find(all, "--label")->hidden);
  EXPECT_FALSE(find(all, "--top")->hidden);
  for (const char* flag : {"-q", "--csv", "--help", "-h"}) {
    ASSERT_NE(find(all, flag), nullptr) << flag;
    EXPECT_FALSE(find(all, flag)->takes_value) << flag;
  }
  const Listed* input = find(all, "input");
  ASSERT_NE(input, nullptr);
  EXPECT_TRUE(input->positional);
}

TEST(CliOptions, AnsweredOnlyWhenAskedBeforeTheCommandsOwnArguments) {
  CLI::App app{"a tool", "pyprof demo"};
  EXPECT_EQ(list_options_if_asked(app, {"-o", "x", "net.dict"}), -1);
  // After `--`, the words are a command's (`pyprof profile -- CMD --list-options`).
  EXPECT_EQ(list_options_if_asked(app, {"--", "python", "--list-options"}), -1);
  testing::internal::CaptureStdout();
  EXPECT_EQ(list_options_if_asked(app, {"--list-options"}), 0);
  const std::string printed = testing::internal::GetCapturedStdout();
  EXPECT_EQ(printed, options_json(app));
}

}  // namespace
}  // namespace pyprof
