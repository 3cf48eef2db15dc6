// A seeded generator of raw-stream trace programs (docs/TRACES.md) for the
// fix-checking test: streams, events, buffers, launches and copies over byte
// ranges, records, waits and host syncs, every name declared before use, so
// every program parses. Races are common (nothing tries to order them); the
// frees at the end are ordered after everything, or race with the last uses.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace streamcheck::tools {

inline std::string generate_trace_program(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  const auto chance = [&](int percent) { return static_cast<int>(rng() % 100) < percent; };
  const std::size_t streams = 2 + pick(2), events = 1 + pick(3), buffers = 1 + pick(3);
  constexpr std::uint64_t kBytes = 256;
  std::string t = "# generated program, seed " + std::to_string(seed) + "\n";
  const auto stream = [](std::size_t i) { return "s" + std::to_string(i); };
  const auto event = [](std::size_t i) { return "e" + std::to_string(i); };
  const auto buffer = [](std::size_t i) { return "B" + std::to_string(i); };
  for (std::size_t i = 0; i < streams; ++i) t += "stream " + stream(i) + "\n";
  for (std::size_t i = 0; i < events; ++i) t += "event " + event(i) + "\n";
  std::vector<bool> on_stream(buffers);
  for (std::size_t i = 0; i < buffers; ++i) {
    on_stream[i] = chance(30);
    t += "buffer " + buffer(i) + " " + std::to_string(kBytes) + (on_stream[i] ? " on s0" : "") + "\n";
  }
  // A byte range of a buffer: all of it, or one of its four quarters.
  const auto quarter = [&](std::size_t b, std::uint64_t q) {
    return buffer(b) + "[" + std::to_string(q * kBytes / 4) + ":" + std::to_string((q + 1) * kBytes / 4) + "]";
  };
  const auto ref = [&]() {
    const std::size_t b = pick(buffers);
    return chance(50) ? buffer(b) : quarter(b, pick(4));
  };
  const std::size_t statements = 6 + pick(14);
  for (std::size_t k = 0; k < statements; ++k) {
    const std::string s = stream(pick(streams));
    const std::size_t what = pick(100);
    if (what < 45) {
      static const char* const kAccess[] = {"reads", "writes", "readwrites"};
      t += "launch k" + std::to_string(k) + " on " + s + " " + kAccess[pick(3)] + " " + ref();
      if (chance(30)) t += std::string(" ") + kAccess[pick(3)] + " " + ref();
      t += "\n";
    } else if (what < 55) {
      // Source and destination of one size, never the same bytes.
      const std::size_t from = pick(buffers), to = pick(buffers);
      const std::uint64_t q = pick(4), r = (q + 1 + pick(3)) % 4;
      const bool whole = from != to && chance(50);
      t += "copy c" + std::to_string(k) + " on " + s + " from " + (whole ? buffer(from) : quarter(from, q)) + " to " +
           (whole ? buffer(to) : quarter(to, from == to ? r : pick(4))) + "\n";
    } else if (what < 75) {
      t += "record " + event(pick(events)) + " on " + s + "\n";
    } else if (what < 93) {
      t += "wait " + event(pick(events)) + " on " + s + "\n";
    } else if (what < 97) {
      t += "sync stream " + s + "\n";
    } else {
      t += "sync event " + event(pick(events)) + "\n";
    }
  }
  if (chance(70)) t += "sync device\n";
  for (std::size_t i = 0; i < buffers; ++i) t += "free " + buffer(i) + (on_stream[i] ? " on s0" : "") + "\n";
  return t;
}

/// A seeded program that makes the host observe the device (issue 12): the
/// pool's three reuse switches drawn, stream-ordered buffers freed and new
/// ones allocated mid-program (pool reuse choices), `query` statements, and
/// in one program of four the tracked Resource (allocate / prepare / finish
/// / deallocate / reap: its allocation events, reaps and deferred frees).
/// Small: the naive enumeration of every device step must often finish.
inline std::string generate_observing_program(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  const auto chance = [&](int percent) { return static_cast<int>(rng() % 100) < percent; };
  const auto on_off = [&] { return chance(50) ? "on" : "off"; };
  const std::size_t streams = 2 + pick(2), events = 1 + pick(2);
  const bool resource = pick(4) == 0;
  std::string t = "# generated observing program, seed " + std::to_string(seed) + "\n";
  t += std::string("policy follow_event_dependencies = ") + on_off() + "\n";
  t += std::string("policy opportunistic = ") + on_off() + "\n";
  t += std::string("policy internal_dependencies = ") + on_off() + "\n";
  if (resource) t += "resource\n";
  const auto stream = [](std::size_t i) { return "s" + std::to_string(i); };
  const auto event = [](std::size_t i) { return "e" + std::to_string(i); };
  for (std::size_t i = 0; i < streams; ++i) t += "stream " + stream(i) + "\n";
  for (std::size_t i = 0; i < events; ++i) t += "event " + event(i) + "\n";
  struct Buffer {
    std::string name;
    std::string stream;
    bool tracked;  // made by `allocate`
  };
  std::vector<Buffer> live;
  std::size_t made = 0;
  const auto make = [&] {
    const std::string name = "B" + std::to_string(made++);
    const std::string s = stream(pick(streams));
    const bool tracked = resource && chance(60);
    t += (tracked ? "allocate " : "buffer ") + name + " 256 on " + s + "\n";
    live.push_back(Buffer{name, s, tracked});
  };
  const auto drop = [&](std::size_t i) {
    const Buffer b = live[i];
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    t += b.tracked ? "deallocate " + b.name + "\n"
                   : "free " + b.name + " on " + (chance(70) ? b.stream : stream(pick(streams))) + "\n";
  };
  make();
  const std::size_t statements = 4 + pick(7);
  for (std::size_t k = 0; k < statements; ++k) {
    const std::string s = stream(pick(streams));
    const std::size_t what = pick(100);
    if (live.empty() || what < 12) {
      make();
    } else if (what < 40) {
      const Buffer& b = live[pick(live.size())];
      static const char* const kAccess[] = {"reads", "writes"};
      const char* access = kAccess[pick(2)];
      if (b.tracked) {
        const std::string use = access[0] == 'r' ? "read" : "write";
        t += "prepare " + b.name + " on " + s + " " + use + "\n";
        t += "launch k" + std::to_string(k) + " on " + s + " " + access + " " + b.name + "\n";
        t += "finish " + b.name + " on " + s + " " + use + "\n";
      } else {
        t += "launch k" + std::to_string(k) + " on " + s + " " + access + " " + b.name + "\n";
      }
    } else if (what < 52) {
      drop(pick(live.size()));
    } else if (what < 64) {
      t += "record " + event(pick(events)) + " on " + s + "\n";
    } else if (what < 74) {
      t += "wait " + event(pick(events)) + " on " + s + "\n";
    } else if (what < 90) {
      t += "query " + event(pick(events)) + "\n";
    } else if (resource && what < 95) {
      t += "reap\n";
    } else {
      t += "sync stream " + s + "\n";
    }
  }
  if (chance(50)) t += "sync device\n";
  while (!live.empty()) drop(live.size() - 1);
  if (resource) t += "reap\n";
  return t;
}

}  // namespace streamcheck::tools
