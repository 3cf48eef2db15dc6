// Schedules: the list of choices one simulated run made, and the sources
// that make them (seeded random, replay of a string, depth-first search).
//
// Every nondeterministic step of the simulator asks a Chooser for an index
// in [0, n). A run is fully determined by the program and the sequence of
// answers, so the sequence printed as a string reproduces the run exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace streamcheck::sim {

enum class ChoiceKind : std::uint8_t {
  DeviceStep,  // which ready stream head completes next, or none (0)
  PoolRange,   // which range the pool returns: fresh or a reusable one
  Fault,       // whether an injected fault fires at this backend call
  Client,      // a choice made by a client workload (tests, explorer)
};

struct Choice {
  ChoiceKind kind;
  std::uint32_t options;  // n >= 2; forced choices are not recorded
  std::uint32_t taken;
};

/// Thrown when a schedule does not fit the program it is replayed on.
class ScheduleMismatch : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Encodes chosen indexes: base-36 digits, `(n)` for 36 and above.
std::string encode_schedule(const std::vector<Choice>& choices);
/// Parses what encode_schedule wrote; throws std::invalid_argument with the
/// offending position on malformed input.
std::vector<std::uint32_t> decode_schedule(std::string_view text);

class Chooser {
 public:
  virtual ~Chooser() = default;
  /// Returns an index in [0, options). Calls with options < 2 return 0 and
  /// are not recorded.
  std::uint32_t choose(ChoiceKind kind, std::uint32_t options);
  const std::vector<Choice>& taken() const { return taken_; }
  std::string schedule() const { return encode_schedule(taken_); }

 protected:
  virtual std::uint32_t pick(ChoiceKind kind, std::uint32_t options) = 0;

 private:
  std::vector<Choice> taken_;
};

/// Deterministic across platforms: splitmix64, not <random> distributions.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next();
  std::uint32_t below(std::uint32_t n) { return n == 0 ? 0 : static_cast<std::uint32_t>(next() % n); }
  bool chance(std::uint32_t percent) { return below(100) < percent; }

 private:
  std::uint64_t state_;
};

struct RandomChooserOptions {
  /// Percent chance that a device-step choice completes some stream head
  /// rather than letting the host go on.
  std::uint32_t device_step_percent = 50;
  /// Percent chance that a fault choice fires.
  std::uint32_t fault_percent = 5;
};

class RandomChooser final : public Chooser {
 public:
  explicit RandomChooser(std::uint64_t seed, RandomChooserOptions options = {}) : rng_(seed), options_(options) {}

 protected:
  std::uint32_t pick(ChoiceKind kind, std::uint32_t options) override;

 private:
  SplitMix64 rng_;
  RandomChooserOptions options_;
};

/// Follows a recorded sequence exactly; past its end, always 0.
class ReplayChooser final : public Chooser {
 public:
  explicit ReplayChooser(std::vector<std::uint32_t> script) : script_(std::move(script)) {}
  explicit ReplayChooser(std::string_view schedule) : script_(decode_schedule(schedule)) {}
  bool exhausted() const { return next_ >= script_.size(); }

 protected:
  std::uint32_t pick(ChoiceKind kind, std::uint32_t options) override;

 private:
  std::vector<std::uint32_t> script_;
  std::size_t next_ = 0;
};

/// Answers from a byte string generated (and shrunk) by a property-testing
/// library: byte mod options, 0 once the bytes run out.
class ByteChooser final : public Chooser {
 public:
  explicit ByteChooser(std::vector<std::uint8_t> bytes) : bytes_(std::move(bytes)) {}

 protected:
  std::uint32_t pick(ChoiceKind kind, std::uint32_t options) override;

 private:
  std::vector<std::uint8_t> bytes_;
  std::size_t next_ = 0;
};

/// Stateless depth-first enumeration of every schedule of a deterministic
/// program: run it once per schedule with the chooser next_run() returns,
/// then finished(), until done().
class DfsEnumerator {
 public:
  class RunChooser final : public Chooser {
   public:
    explicit RunChooser(std::vector<std::uint32_t> prefix) : prefix_(std::move(prefix)) {}

   protected:
    std::uint32_t pick(ChoiceKind kind, std::uint32_t options) override;

   private:
    std::vector<std::uint32_t> prefix_;
    std::size_t next_ = 0;
  };

  /// The chooser for the next schedule; call finished() after the run.
  RunChooser next_run() const { return RunChooser(prefix_); }
  /// Moves to the next unexplored schedule; false when all were explored.
  bool finished(const Chooser& run);
  bool done() const { return done_; }
  std::size_t explored() const { return explored_; }

 private:
  std::vector<std::uint32_t> prefix_;
  bool done_ = false;
  std::size_t explored_ = 0;
};

}  // namespace streamcheck::sim
