// FLOP tables (models/flop_table.h, docs/formats.md §5): the reader's errors, each with its line;
// op_cost() with a table installed: the call found by its args text, its bytes the record's
// tensors plus the table's out_bytes, other calls and ops pyprof models untouched.
#include "models/flop_table.h"

#include <gtest/gtest.h>

#include <string>

#include "models/op_model.h"

namespace pyprof::models {
namespace {

constexpr std::string_view kHeader = "{\"pyprof_flop_table\":1}\n";
// The args text of a call as net.dict holds it, and the same call's entry (args as a string).
constexpr std::string_view kArgs =
    R"({"x":{"shape":[4,32],"dtype":"float32","stride":[32,1],"device":"cpu"},"w":{"shape":[32,16],"dtype":"float32","stride":[16,1],"device":"cpu"},"scale":0.5})";
constexpr std::string_view kEntry =
    R"({"op":"flopreg::gated_mm","args":"{\"x\":{\"shape\":[4,32],\"dtype\":\"float32\",\"stride\":[32,1],\"device\":\"cpu\"},\"w\":{\"shape\":[32,16],\"dtype\":\"float32\",\"stride\":[16,1],\"device\":\"cpu\"},\"scale\":0.5}","flops":4352,"out_bytes":256,"source":"torch.utils.flop_counter"})";

std::string load_error(const std::string& text) {
  FlopTable table;
  std::string error;
  if (table.add_text(text, "t.flops", error)) return "";
  EXPECT_EQ(table.size(), 0u);  // nothing of a bad file is kept
  return error;
}

TEST(FlopTableFile, ReadsItsEntriesByOpAndArgsText) {
  FlopTable table;
  std::string error;
  ASSERT_TRUE(table.add_text(std::string(kHeader) + std::string(kEntry) + "\n\n", "t", error))
      << error;
  ASSERT_EQ(table.size(), 1u);
  const FlopTableEntry* e = table.find("flopreg::gated_mm", kArgs);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->flops, 4352);
  EXPECT_EQ(e->out_bytes, 256);
  EXPECT_EQ(e->params, "registry=torch.utils.flop_counter");
  EXPECT_EQ(e->where, "t:2");
  // Byte for byte: the same call written with a space is another key.
  EXPECT_EQ(table.find("flopreg::gated_mm", std::string(kArgs).replace(1, 0, " ")), nullptr);
  EXPECT_EQ(table.find("flopreg::other", kArgs), nullptr);
}

TEST(FlopTableFile, EachErrorNamesTheFileAndLine) {
  const std::string h(kHeader);
  EXPECT_EQ(load_error(""),
            "t.flops: empty: no {\"pyprof_flop_table\":1} header (docs/formats.md §5)");
  EXPECT_EQ(load_error("{\"op\":\"a::b\"}\n"),
            "t.flops:1: no {\"pyprof_flop_table\":1} header: not a FLOP table (pyprof prof "
            "--flop-registry writes them, docs/formats.md §5)");
  EXPECT_EQ(load_error("{\"pyprof_flop_table\":2}\n"),
            "t.flops:1: FLOP table version 2: this pyprof reads version 1");
  EXPECT_EQ(load_error(h + "{\"op\":\"a::b\",\"args\":\"{}\",\"flops\":1\n"),
            "t.flops:2: not a JSON object (a FLOP table has one object per line, docs/formats.md "
            "§5)");
  EXPECT_EQ(load_error(h + "{\"op\":\"a::b\",\"args\":\"{}\"}\n"),
            "t.flops:2: an entry needs `op`, `args` and `flops`; it lacks `flops`");
  EXPECT_EQ(load_error(h + "{\"op\":\"a::b\",\"args\":{},\"flops\":1}\n"),
            "t.flops:2: `args` is no string (the record's args JSON as text)");
  EXPECT_EQ(load_error(h + "{\"op\":\"a::b\",\"args\":\"{}\",\"flops\":-1}\n"),
            "t.flops:2: `flops` is no count (a finite number, 0 or more)");
  EXPECT_EQ(load_error(h + "{\"op\":\"a::b\",\"args\":\"{}\",\"flop\":1}\n"),
            "t.flops:2: unknown key 'flop' (keys: op, args, flops, out_bytes, source)");
  EXPECT_EQ(load_error(h + "{\"op\":\"a::b\",\"args\":\"{}\",\"flops\":1}\n" +
                       "{\"op\":\"a::b\",\"args\":\"{}\",\"flops\":2}\n"),
            "t.flops:3: op a::b: the same call given other FLOPs at t.flops:2");
  // The same call with the same FLOPs (two runs' tables put together) is kept once.
  EXPECT_EQ(load_error(h + "{\"op\":\"a::b\",\"args\":\"{}\",\"flops\":1}\n" +
                       "{\"op\":\"a::b\",\"args\":\"{}\",\"flops\":1}\n"),
            "");
}

TEST(FlopTableCost, OpCostFindsTheCallAndCountsTheRecordsTensors) {
  FlopTable table;
  std::string error;
  ASSERT_TRUE(table.add_text(std::string(kHeader) + std::string(kEntry) +
                                 "\n{\"op\":\"aten::mm\",\"args\":\"{}\",\"flops\":7}\n",
                             "t", error))
      << error;
  // pyprof models aten::mm: its entry is dropped, pyprof's model wins.
  EXPECT_EQ(table.drop_modelled_ops(), std::vector<std::string>{"aten::mm"});
  install_flop_table(std::move(table));
  const OpArgs args = OpArgs::from_json(kArgs);
  OpCost c = op_cost("flopreg::gated_mm", args, kArgs);
  EXPECT_TRUE(c.modeled);
  EXPECT_EQ(c.flops, 4352);
  // x [4,32] and w [32,16] float32 (512 + 2048 bytes) plus the output's 256.
  EXPECT_EQ(c.bytes, 4 * 32 * 4 + 32 * 16 * 4 + 256);
  EXPECT_EQ(c.params, "registry=torch.utils.flop_counter");
  EXPECT_EQ(c.dtype, "float32");
  EXPECT_EQ(c.family, "user");
  EXPECT_FALSE(c.tc_eligible);
  // Another call of the op (another shape) is not in the table: no model.
  EXPECT_FALSE(op_cost("flopreg::gated_mm", args, "{}").modeled);
  EXPECT_FALSE(op_cost("flopreg::gated_mm", args).modeled);
  install_flop_table(FlopTable{});
  EXPECT_EQ(installed_flop_table(), nullptr);
  EXPECT_FALSE(op_cost("flopreg::gated_mm", args, kArgs).modeled);
}

}  // namespace
}  // namespace pyprof::models
