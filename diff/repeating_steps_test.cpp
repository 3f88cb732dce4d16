// The repeating-op-sequence detector (repeating_steps.h) on hand-made sequences whose period,
// anchor and repetitions are known: windows cut at different points of one loop, an irregular
// call, a loop of identical blocks, no loop at all, a CPU profile's nested calls, a second
// thread.
#include "diff/repeating_steps.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace pyprof::prof {
namespace {

// A GPU profile built call by call: each call one op instance launching one kernel, 1 µs of CPU
// time apart on thread `tid`.
struct Builder {
  ReadResult d;
  int64_t clock = 1'000'000;
  int64_t instance = 0;
  void call(const std::string& op, int64_t tid = 7, Dir dir = Dir::kFprop) {
    ProfRecord r;
    r.kind = Kind::kKernel;
    r.dir = dir;
    r.op = d.strings.intern(op);
    r.name = d.strings.intern(op + "_kernel");
    r.shapes = d.strings.intern("[8,8]");
    r.instance = ++instance;
    r.tid = tid;
    r.launch_start = clock;
    r.start = clock + 5'000;  // the GPU runs it later
    r.duration = 2'000;
    clock += 1'000;
    d.records.push_back(r);
  }
  void calls(const std::vector<std::string>& ops, int times = 1) {
    for (int i = 0; i < times; ++i) {
      for (const std::string& op : ops) call(op);
    }
  }
};

const std::vector<std::string> kLoop = {"aten::conv2d", "aten::relu", "aten::linear",
                                        "aten::mse_loss", "aten::add_"};

TEST(RepeatingSteps, WindowCutMidIterationKeepsTheWholeRepetitions) {
  Builder b;
  b.calls({"aten::linear", "aten::mse_loss", "aten::add_"});  // the tail of an iteration
  b.calls(kLoop, 4);
  b.calls({"aten::conv2d", "aten::relu"});  // the window ends inside one
  RepeatingSteps s = detect_repeating_steps(b.d);
  ASSERT_TRUE(s.found) << s.text;
  EXPECT_EQ(s.period, 5u);
  // The first evenly called op in the window is aten::linear: repetitions start there.
  EXPECT_EQ(s.anchor, "aten::linear fprop [8,8]");
  EXPECT_EQ(s.repetitions, 4u);  // linear at calls 0, 5, 10, 15, 20
  EXPECT_EQ(s.identical, 4u);
  EXPECT_EQ(s.calls, 25u);
  EXPECT_EQ(s.calls_before, 0u);
  EXPECT_EQ(s.calls_after, 5u);  // linear, loss, add_ and the cut conv2d, relu
  ASSERT_EQ(s.spans.size(), 4u);
  EXPECT_EQ(s.spans[0], std::make_pair(int64_t{1'000'000}, int64_t{1'005'000}));
  EXPECT_EQ(s.step_of_record[0], 0);
  EXPECT_EQ(s.step_of_record[4], 0);
  EXPECT_EQ(s.step_of_record[5], 1);
  EXPECT_EQ(s.step_of_record[19], 3);
  EXPECT_EQ(s.step_of_record[20], -1);
  EXPECT_EQ(s.records_outside, 5u);
  EXPECT_NE(s.text.find("4 whole repetitions of a 5-call op sequence"), std::string::npos)
      << s.text;
}

TEST(RepeatingSteps, ThePreferredAnchorAlignsTwoWindows) {
  Builder b;
  b.calls({"aten::mse_loss", "aten::add_"});
  b.calls(kLoop, 3);
  RepeatingSteps s = detect_repeating_steps(b.d, "aten::conv2d fprop [8,8]");
  ASSERT_TRUE(s.found) << s.text;
  EXPECT_EQ(s.anchor, "aten::conv2d fprop [8,8]");
  EXPECT_EQ(s.repetitions, 2u);  // conv2d at calls 2, 7, 12
  EXPECT_EQ(s.calls_before, 2u);
  EXPECT_EQ(s.calls_after, 5u);
  // An anchor this profile does not call evenly is not forced on it.
  RepeatingSteps t = detect_repeating_steps(b.d, "aten::nonexistent fprop [8,8]");
  ASSERT_TRUE(t.found);
  EXPECT_EQ(t.anchor, "aten::mse_loss fprop [8,8]");
}

TEST(RepeatingSteps, AnIrregularCallIsToleratedOnceInALongPeriod) {
  // 60 calls an iteration; one iteration logs a loss (`aten::item`) besides.
  std::vector<std::string> loop;
  for (int i = 0; i < 60; ++i) loop.push_back("aten::op" + std::to_string(i));
  Builder b;
  b.calls(loop, 2);
  b.call("aten::item");
  b.calls(loop, 3);
  RepeatingSteps s = detect_repeating_steps(b.d);
  ASSERT_TRUE(s.found) << s.text;
  EXPECT_EQ(s.period, 60u);
  EXPECT_EQ(s.repetitions, 4u);
  EXPECT_EQ(s.identical, 3u);  // the one with aten::item differs by that call
  // Ten irregular calls in one iteration are other work: nothing is found.
  Builder c;
  c.calls(loop, 2);
  for (int i = 0; i < 10; ++i) c.call("aten::item");
  c.calls(loop, 3);
  RepeatingSteps none = detect_repeating_steps(c.d);
  EXPECT_FALSE(none.found) << none.text;
  EXPECT_NE(none.text.find("no repeating op sequence"), std::string::npos) << none.text;
  // (The ten aten::item calls repeat among themselves, every call, but cover 10 of 310 calls.)
  EXPECT_NE(none.text.find("only in a part of them"), std::string::npos) << none.text;
}

TEST(RepeatingSteps, IdenticalBlocksAreNotMistakenForTheIteration) {
  // An inference loop: embedding, six identical blocks (same op, same shapes, no module names:
  // an emit_nvtx capture), a head. The blocks repeat inside a forward, but a block's op is not
  // called evenly (2 calls apart in a forward, 4 across the head and the next embedding): the
  // period is the forward, 14 calls.
  std::vector<std::string> forward = {"aten::embedding"};
  for (int i = 0; i < 6; ++i) {
    forward.push_back("aten::linear");
    forward.push_back("aten::gelu");
  }
  forward.push_back("aten::softmax");
  Builder b;
  b.calls(forward, 4);
  RepeatingSteps s = detect_repeating_steps(b.d);
  ASSERT_TRUE(s.found) << s.text;
  EXPECT_EQ(s.period, 14u);
  EXPECT_EQ(s.repetitions, 3u);
}

TEST(RepeatingSteps, NoLoopNoSteps) {
  Builder b;
  uint32_t x = 12345;  // a fixed pseudo-random choice among five ops: no period
  for (int i = 0; i < 60; ++i) {
    x = x * 1103515245u + 12345u;
    b.call("aten::op" + std::to_string((x >> 16) % 5));
  }
  RepeatingSteps s = detect_repeating_steps(b.d);
  EXPECT_FALSE(s.found) << s.text;
  EXPECT_TRUE(s.step_of_record.empty());
  EXPECT_FALSE(s.text.empty());
  RepeatingSteps empty = detect_repeating_steps(ReadResult{});
  EXPECT_FALSE(empty.found);
  EXPECT_EQ(empty.text, "no op calls to find a repeating sequence in");
}

TEST(RepeatingSteps, CpuProfilesRepeatTheirTopLevelCalls) {
  // A CPU profile: each top-level op holds a nested one (records of their own); the nested
  // ones are not calls of the sequence, but they fall into their root's repetition.
  ReadResult d;
  d.cpu_only = true;
  int64_t clock = 0;
  for (int it = 0; it < 4; ++it) {
    for (const char* op : {"aten::conv2d", "aten::relu", "aten::sum"}) {
      ProfRecord root;
      root.kind = Kind::kOp;
      root.dir = Dir::kFprop;
      root.op = d.strings.intern(op);
      root.name = root.op;
      root.tid = 3;
      root.start = clock;
      root.duration = 900;
      root.instance = static_cast<int64_t>(d.records.size()) + 1;
      d.records.push_back(root);
      ProfRecord child = root;
      child.op = child.name = d.strings.intern("aten::empty");
      child.parent = static_cast<int32_t>(d.records.size()) - 1;
      child.start = clock + 100;
      child.duration = 50;
      child.instance = static_cast<int64_t>(d.records.size()) + 1;
      d.records.push_back(child);
      clock += 1'000;
    }
  }
  RepeatingSteps s = detect_repeating_steps(d);
  ASSERT_TRUE(s.found) << s.text;
  EXPECT_EQ(s.period, 3u);
  EXPECT_EQ(s.calls, 12u);  // the 12 top-level calls; the nested aten::empty are not calls
  EXPECT_EQ(s.anchor, "aten::conv2d fprop");
  EXPECT_EQ(s.repetitions, 3u);
  EXPECT_EQ(s.step_of_record[1], 0);    // conv2d's nested aten::empty: with its root
  EXPECT_EQ(s.step_of_record[18], -1);  // the last iteration is not whole (no conv2d after it)
}

TEST(RepeatingSteps, OtherThreadsFallIntoTheRepetitionsByTime) {
  // The forward on thread 7, each iteration's backward on the autograd thread 9 (fewer calls).
  Builder b;
  for (int it = 0; it < 4; ++it) {
    b.calls({"aten::linear", "aten::relu", "aten::mse_loss"});
    b.call("aten::linear", 9, Dir::kBprop);
    b.call("aten::add_");
  }
  RepeatingSteps s = detect_repeating_steps(b.d);
  ASSERT_TRUE(s.found) << s.text;
  EXPECT_EQ(s.tid, 7);
  EXPECT_EQ(s.period, 4u);
  EXPECT_EQ(s.repetitions, 3u);
  EXPECT_EQ(s.step_of_record[3], 0);  // the backward of iteration 0, on thread 9
  EXPECT_EQ(s.step_of_record[8], 1);
}

TEST(RepeatingSteps, RepetitionsStartWhereNoForwardIsCutFromItsBackward) {
  // forward f0 f1 f2, backward of f2 f1 f0 (bprop, the forward call's op id), an optimizer
  // call; the window starts at f2. Anchored at f1 or f2 a repetition would hold the backward
  // of forward calls made in the one before (and the first one, of calls before the window);
  // at the optimizer's call or f0, none.
  Builder b;
  int64_t op_id = 0;
  auto forward = [&](const std::string& op) {
    b.call(op);
    b.d.records.back().op_id = ++op_id;
  };
  auto backward = [&](const std::string& op, int64_t forward_id) {
    b.call(op, 7, Dir::kBprop);
    b.d.records.back().op_id = forward_id;
  };
  forward("aten::f2");
  backward("aten::f2", 1);
  backward("aten::f1", 0);  // the forward calls before the window: unpaired
  backward("aten::f0", 0);
  b.call("aten::opt");
  for (int it = 0; it < 3; ++it) {
    forward("aten::f0");
    forward("aten::f1");
    forward("aten::f2");
    backward("aten::f2", op_id);
    backward("aten::f1", op_id - 1);
    backward("aten::f0", op_id - 2);
    b.call("aten::opt");
  }
  RepeatingSteps s = detect_repeating_steps(b.d);
  ASSERT_TRUE(s.found) << s.text;
  EXPECT_EQ(s.period, 7u);
  EXPECT_EQ(s.anchor, "aten::opt fprop [8,8]");  // of opt and f0 (none cut), the first called
  EXPECT_EQ(s.repetitions, 3u);
  // BASE anchored at f0: so is this window, f0 crossing no pair either.
  RepeatingSteps aligned = detect_repeating_steps(b.d, "aten::f0 fprop [8,8]");
  EXPECT_EQ(aligned.anchor, "aten::f0 fprop [8,8]");
  EXPECT_EQ(aligned.repetitions, 2u);
  // A preferred anchor that cuts pairs is not taken: f2's calls fall inside f0's and f1's.
  RepeatingSteps not_f2 = detect_repeating_steps(b.d, "aten::f2 fprop [8,8]");
  EXPECT_EQ(not_f2.anchor, "aten::opt fprop [8,8]");
}

TEST(RepeatingSteps, UnpairedBackwardAtTheWindowStartDoesNotHideTheLoop) {
  // A capture that began in the middle of a forward pass: parse cannot pair the backward of
  // the forward calls made before it and names those calls by their backward op. Anchored at
  // any forward op after the first, the first repetition holds them and differs from the
  // others by 6 calls: only the phases that cut no (forward, backward) pair find the loop.
  Builder b;
  int64_t op_id = 0;
  std::vector<int64_t> ids(6);
  auto forward = [&](int k) {
    b.call("aten::f" + std::to_string(k));
    b.d.records.back().op_id = ids[k] = ++op_id;
  };
  auto backward = [&](int k, bool paired) {
    b.call(paired ? "aten::f" + std::to_string(k) : "aten::mm", 7, Dir::kBprop);
    b.d.records.back().op_id = paired ? ids[k] : ++op_id;
  };
  for (int k = 2; k < 6; ++k) forward(k);
  for (int k = 5; k >= 0; --k) backward(k, k >= 2);
  b.call("aten::opt");
  for (int it = 0; it < 3; ++it) {
    for (int k = 0; k < 6; ++k) forward(k);
    for (int k = 5; k >= 0; --k) backward(k, true);
    b.call("aten::opt");
  }
  RepeatingSteps s = detect_repeating_steps(b.d);
  ASSERT_TRUE(s.found) << s.text;
  EXPECT_EQ(s.period, 13u);
  EXPECT_EQ(s.anchor, "aten::opt fprop [8,8]");
  EXPECT_EQ(s.repetitions, 3u);
  EXPECT_EQ(s.identical, 3u);
  EXPECT_EQ(s.calls_before, 10u);  // the cut iteration's forward and backward
}

}  // namespace
}  // namespace pyprof::prof
