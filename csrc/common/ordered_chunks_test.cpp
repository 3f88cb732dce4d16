#include "common/ordered_chunks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace pyprof {
namespace {

struct Slot {
  size_t prepared_for = SIZE_MAX;
  std::string text;
};

// Chunks formatted on several threads come out in chunk order, each prepared on the calling
// thread, in order, before a worker formats it; formats run on other threads at once.
TEST(OrderedChunks, ChunksComeOutInOrderPreparedInOrderOnTheCallingThread) {
  constexpr size_t kChunks = 500;
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<size_t> prepared, consumed;
  std::atomic<int> formats_elsewhere{0};
  process_chunks_in_order<Slot>(
      kChunks, 3,
      [&](size_t c, Slot& s) {
        EXPECT_EQ(std::this_thread::get_id(), caller);
        prepared.push_back(c);
        s.prepared_for = c;
      },
      [&](size_t c, Slot& s) {
        if (std::this_thread::get_id() != caller) ++formats_elsewhere;
        if (c % 7 == 0) std::this_thread::yield();  // finish out of order now and then
        ASSERT_EQ(s.prepared_for, c);
        s.text = std::to_string(c);
      },
      [&](size_t c, Slot& s) {
        EXPECT_EQ(std::this_thread::get_id(), caller);
        EXPECT_EQ(s.text, std::to_string(c));
        consumed.push_back(c);
        return true;
      });
  ASSERT_EQ(prepared.size(), kChunks);
  ASSERT_EQ(consumed.size(), kChunks);
  for (size_t c = 0; c < kChunks; ++c) {
    EXPECT_EQ(prepared[c], c);
    EXPECT_EQ(consumed[c], c);
  }
  EXPECT_EQ(formats_elsewhere.load(), int{kChunks});
}

TEST(OrderedChunks, OneThreadOrOneChunkRunsOnTheCallingThread) {
  for (auto [chunks, threads] : {std::pair<size_t, unsigned>{5, 1}, {1, 4}, {0, 4}}) {
    std::vector<size_t> consumed;
    const std::thread::id caller = std::this_thread::get_id();
    process_chunks_in_order<Slot>(
        chunks, threads, [](size_t, Slot&) {},
        [&](size_t c, Slot& s) {
          EXPECT_EQ(std::this_thread::get_id(), caller);
          s.text = std::to_string(c);
        },
        [&](size_t c, Slot& s) {
          EXPECT_EQ(s.text, std::to_string(c));
          consumed.push_back(c);
          return true;
        });
    EXPECT_EQ(consumed.size(), chunks);
  }
}

// A format that throws stops the run; its exception reaches the caller as it was thrown, and
// nothing after the failing chunk is consumed.
TEST(OrderedChunks, AFormatErrorStopsTheRunAndReachesTheCaller) {
  for (unsigned threads : {1u, 2u, 4u}) {
    std::vector<size_t> consumed;
    auto run = [&] {
      process_chunks_in_order<Slot>(
          100, threads, [](size_t, Slot&) {},
          [](size_t c, Slot&) {
            if (c == 40) throw std::runtime_error("chunk 40 is bad");
            if (c == 41) throw std::bad_alloc();
          },
          [&](size_t c, Slot&) {
            consumed.push_back(c);
            return true;
          });
    };
    try {
      run();
      ADD_FAILURE() << "no exception, threads " << threads;
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "chunk 40 is bad") << threads;
    } catch (const std::bad_alloc&) {
      // Chunk 41 may fail first on another worker: it keeps its type.
      EXPECT_GT(threads, 1u);
    }
    ASSERT_LE(consumed.size(), 40u) << threads;
    for (size_t c = 0; c < consumed.size(); ++c) EXPECT_EQ(consumed[c], c);
  }
}

// A consume that fails (a write error) stops the run at once; so does a prepare that throws,
// whose exception reaches the caller once the workers have stopped.
TEST(OrderedChunks, AFailedConsumeOrAThrowingPrepareStopsTheRun) {
  size_t consumed = 0;
  process_chunks_in_order<Slot>(
      100, 2, [](size_t, Slot&) {}, [](size_t, Slot&) {},
      [&](size_t c, Slot&) {
        ++consumed;
        return c < 10;
      });
  EXPECT_EQ(consumed, 11u);

  size_t formatted_max = 0;
  std::mutex mutex;
  EXPECT_THROW(process_chunks_in_order<Slot>(
                   100, 2,
                   [](size_t c, Slot&) {
                     if (c == 20) throw std::runtime_error("prepare failed");
                   },
                   [&](size_t c, Slot&) {
                     std::lock_guard<std::mutex> lock(mutex);
                     formatted_max = std::max(formatted_max, c);
                   },
                   [](size_t, Slot&) { return true; }),
               std::runtime_error);
  EXPECT_LT(formatted_max, 20u);  // only prepared chunks were formatted
}

}  // namespace
}  // namespace pyprof
