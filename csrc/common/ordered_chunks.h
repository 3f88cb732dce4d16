// Work cut into chunks whose output must come out in chunk order (prof's table rows, parse's
// records), formatted on several threads.
//
// The calling thread prepares each chunk, in order: whatever carries over from one chunk to the
// next (numbering, definitions written before their first use) is settled there, without locks.
// Worker threads then format prepared chunks in any order, and the calling thread consumes the
// results in chunk order. At most 2 × `threads` chunks are in flight, each in a Slot of its own
// that is reused, so memory stays a few chunks' worth whatever the input's size.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace pyprof {

// The worker threads to format with on this machine: its hardware threads, 1 to `most`.
inline unsigned format_threads(unsigned most = 4) {
  return std::clamp(std::thread::hardware_concurrency(), 1u, most);
}

// prepare(c, slot) and consume(c, slot) run on the calling thread for c = 0, 1, ..., chunks - 1;
// format(c, slot) runs on a worker between the two (on the calling thread when `threads` is 1 or
// there is one chunk). A false from consume() stops the run. An exception from any of the three
// stops the run too and reaches the caller, once the workers have stopped: the first one a
// format() threw, as it was thrown (std::bad_alloc stays std::bad_alloc).
template <class Slot, class Prepare, class Format, class Consume>
void process_chunks_in_order(size_t chunks, unsigned threads, Prepare&& prepare, Format&& format,
                             Consume&& consume) {
  if (threads <= 1 || chunks < 2) {
    Slot slot;
    for (size_t c = 0; c < chunks; ++c) {
      prepare(c, slot);
      format(c, slot);
      if (!consume(c, slot)) break;
    }
    return;
  }

  const size_t slots = 2 * size_t{threads};
  // Each slot on cache lines of its own: two workers appending to neighbouring strings would
  // otherwise pass the line holding both sizes back and forth on every append.
  struct alignas(64) Padded {
    Slot slot;
  };
  std::vector<Padded> padded(slots);
  auto slot_of = [&](size_t c) -> Slot& { return padded[c % slots].slot; };
  std::vector<char> formatted(slots, 0);  // by slot: its chunk is ready to consume
  std::mutex mutex;
  std::condition_variable changed;
  size_t prepared = 0;        // chunks [0, prepared) may be formatted
  size_t next_to_format = 0;  // the next chunk a worker takes
  bool stop = false;
  std::exception_ptr failure;

  auto work = [&] {
    for (;;) {
      size_t c;
      {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return stop || next_to_format < prepared; });
        if (stop) return;
        c = next_to_format++;
      }
      std::exception_ptr thrown;
      try {
        format(c, slot_of(c));
      } catch (...) {
        thrown = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (thrown) {
          if (!failure) failure = thrown;
          stop = true;
        }
        formatted[c % slots] = 1;
      }
      changed.notify_all();
    }
  };
  std::vector<std::thread> workers;
  // Stops and joins the workers however this function is left.
  struct Joiner {
    std::vector<std::thread>& workers;
    std::mutex& mutex;
    std::condition_variable& changed;
    bool& stop;
    ~Joiner() {
      {
        std::lock_guard<std::mutex> lock(mutex);
        stop = true;
      }
      changed.notify_all();
      for (std::thread& t : workers) t.join();
    }
  } joiner{workers, mutex, changed, stop};
  for (unsigned i = 0; i < threads; ++i) workers.emplace_back(work);

  size_t to_prepare = 0;
  for (size_t c = 0; c < chunks; ++c) {
    // Every chunk whose slot is free: chunk p reuses the slot of chunk p - slots, consumed
    // once p < c + slots.
    while (to_prepare < chunks && to_prepare < c + slots) {
      prepare(to_prepare, slot_of(to_prepare));
      {
        std::lock_guard<std::mutex> lock(mutex);
        prepared = ++to_prepare;
      }
      changed.notify_all();
    }
    {
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait(lock, [&] { return stop || formatted[c % slots]; });
      if (stop) break;
    }
    const bool ok = consume(c, slot_of(c));
    std::lock_guard<std::mutex> lock(mutex);
    formatted[c % slots] = 0;
    if (!ok) break;
  }
  std::exception_ptr thrown;
  {
    std::lock_guard<std::mutex> lock(mutex);
    thrown = failure;
  }
  // Unwinding from here stops and joins the workers (joiner) before the caller sees it.
  if (thrown) std::rethrow_exception(thrown);
}

}  // namespace pyprof
