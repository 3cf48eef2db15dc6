// Schedules: the list of choices one simulated run made, and the sources
// that make them (seeded random, replay of a string, depth-first search).
//
// Every nondeterministic step of the simulator asks a Chooser for an index
// in [0, n). A run is fully determined by the program and the sequence of
// answers, so the sequence printed as a string reproduces the run exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backend_sim/footprint.h"
#include "backend_sim/ids.h"

namespace streamcheck::sim {

enum class ChoiceKind : std::uint8_t {
  DeviceStep,  // which ready stream head completes next, or none (0)
  PoolRange,   // which range the pool returns: fresh or a reusable one
  Fault,       // whether an injected fault fires at this backend call
  Client,      // a choice made by a client workload (tests, explorer)
  /// Whether a `query` finds its event's work done (0: not done, 1: done);
  /// asked only when the device makes progress on observation
  /// (DeviceProgress::OnObservation), where no device step came first.
  QueryAnswer,
  /// Which host thread takes the next step (R6): option 0 is the thread
  /// that took the last step when it may go on (so a deviation here is a
  /// preemption), then the other threads that may step, in thread order.
  HostStep,
};

/// "device step", "pool range", "fault point", "client choice", "query answer".
std::string_view to_string(ChoiceKind kind);

/// Which options of a HostStep choice were asleep (Choice::asleep): 32
/// bits, so that a Choice is 16 bytes (a random run of a million-statement
/// trace records a million choices). An option past the last bit is never
/// marked: it is explored, as without sleep sets -- fewer runs pruned,
/// never a run missed.
using SleepMask = std::uint32_t;
inline constexpr std::uint32_t kSleepMaskOptions = 32;

struct Choice {
  ChoiceKind kind;
  std::uint32_t options;  // n >= 2; forced choices are not recorded
  std::uint32_t taken;
  /// HostStep choices of a run with sleep sets: bit i set when option i was
  /// asleep (its subtree only reorders commuting steps of a subtree explored
  /// before); DFS never enters it. Options past 31 are never marked.
  SleepMask asleep = 0;
};
static_assert(sizeof(Choice) <= 16, "a Choice is recorded per choice of a run: keep it at 16 bytes");

/// Where a replayed schedule stopped fitting the program: choice `choice`
/// (0-based) of kind `kind`, asked at trace line `line` (0: no line, e.g.
/// while the device drains after the last statement) with `options`
/// options. `given` is the schedule's answer, nullopt when the schedule had
/// already ended; `surplus` counts the choices left over when the program
/// finished first (then kind/options/given say nothing).
struct Divergence {
  std::uint64_t choice = 0;
  ChoiceKind kind = ChoiceKind::DeviceStep;
  std::uint32_t options = 0;
  std::optional<std::uint32_t> given;
  int line = 0;
  std::uint64_t surplus = 0;
};

/// Thrown when a schedule does not fit the program it is replayed on; the
/// message says where (tools rewrap it with the statement's text).
class ScheduleMismatch : public std::runtime_error {
 public:
  explicit ScheduleMismatch(Divergence where);
  ScheduleMismatch(Divergence where, const std::string& message) : std::runtime_error(message), where_(where) {}
  const Divergence& where() const { return where_; }

 private:
  Divergence where_;
};

/// The options, besides the program, that decide which choices a run asks:
/// schedule text version 2 carries them in its header, so a schedule always
/// replays the run it was recorded from.
struct ScheduleHeader {
  /// --faults on: one injected fault per run is explored (a Fault choice at
  /// every resource backend call until one fires).
  bool faults = false;
  /// `observed`: the device made progress only where the host observed it
  /// (DeviceProgress::OnObservation: exhaustive exploration of executions);
  /// absent, every device step was a choice.
  bool observed = false;
  /// Pool switches that differ from the program's own, SWITCH=VALUE as
  /// --policy takes them (tools check the names; here they are text).
  std::vector<std::pair<std::string, std::string>> policy;
  bool operator==(const ScheduleHeader&) const = default;
};

/// `count` equal answers in a row (schedule bodies are run-length coded).
struct ChoiceRun {
  std::uint32_t choice = 0;
  std::uint64_t count = 0;
};

/// A schedule string, parsed: its header (nullopt: a headerless schedule,
/// as streamcheck wrote before version 2) and its answers.
struct ScheduleText {
  std::optional<ScheduleHeader> header;
  std::vector<ChoiceRun> runs;
  std::uint64_t choices() const;
};

/// The answers as schedule body text: base-36 digits 0-9a-z, `_n_` for 36
/// and above, a run of 16 or more equal answers as the answer followed by
/// `.count.`, and `-` for no answers at all. Shell-safe: letters, digits and
/// `_ . - , = :` only.
std::string encode_schedule(const std::vector<Choice>& choices);
/// The full schedule text: `v2` `,faults` `,SWITCH=VALUE`... `:` body.
std::string encode_schedule(const ScheduleHeader& header, const std::vector<Choice>& choices);
/// Parses a schedule text, with or without header (docs/TRACES.md
/// "Schedules"); throws std::invalid_argument naming the offending position.
ScheduleText parse_schedule(std::string_view text);
/// The answers of a schedule text, one per choice (for short schedules:
/// the runs are expanded).
std::vector<std::uint32_t> decode_schedule(std::string_view text);

/// One of `count` disjoint parts of an exploration (`--shard I/N`).
/// Random and Pct run only their runs r with r % count == index, seeded as
/// the whole exploration seeds run r; Dfs and DeviationDfs split the tree of
/// choices by prefixes (ShardSet). The parts together run what one
/// exploration runs, each run counted by exactly one part.
struct Shard {
  std::uint32_t index = 0;
  std::uint32_t count = 1;
};

/// The shards that own a subtree of the choice tree, when a depth-first
/// exploration is split by prefixes: the members start, start + stride, ...
/// (`size` of them). Every shard owns the root. At a choice of n options,
/// option j goes to the members whose place p among them has p % n == j when
/// there are at least n members, else to member j % size alone. A complete
/// run belongs to the first member of the set its choices narrow to, so
/// each run has exactly one owner, and a shard never needs to enter a
/// subtree whose set does not contain it.
struct ShardSet {
  std::uint64_t start = 0;
  std::uint64_t stride = 1;
  std::uint64_t size = 1;
  static ShardSet all(std::uint32_t count) { return ShardSet{0, 1, count}; }
  bool contains(std::uint32_t shard) const;
  ShardSet narrow(std::uint32_t options, std::uint32_t option) const;
  std::uint64_t owner() const { return start; }
};

class Chooser {
 public:
  virtual ~Chooser() = default;
  /// Returns an index in [0, options). Calls with options < 2 return 0 and
  /// are not recorded.
  /// Throws ScheduleMismatch when the answer is not below `options`.
  std::uint32_t choose(ChoiceKind kind, std::uint32_t options);
  /// Which of `steps` goes next (an index into it): a ChoiceKind::HostStep
  /// choice when there are several, the running thread first.
  /// Call it before every host step while several host threads live, even
  /// with one step on offer: with sleep sets each step wakes the sleeping
  /// threads it conflicts with. Throws std::invalid_argument on no steps.
  /// `first_continues`: steps[0] is the thread that took the last step,
  /// able to go on (taking another option is then a preemption).
  std::uint32_t choose_host_step(const std::vector<HostStep>& steps, bool first_continues);
  /// At most `bound` preemptions per run (CHESS): past it, a HostStep choice
  /// whose first option continues the running thread is forced to it. A
  /// bound turns sleep sets off (they are not sound together: the one run a
  /// sleep set keeps of equivalent runs may be one the bound excludes).
  void set_preemption_bound(std::optional<std::uint32_t> bound) { preemption_bound_ = bound; }
  /// Partial-order reduction over host threads for this run (sleep sets):
  /// choosers that enumerate (DFS) then never enter a subtree that only
  /// swaps commuting host steps of one they enter first. Only for runs
  /// whose other choices come from the host steps themselves
  /// (DeviceProgress::OnObservation): a device step between two host steps
  /// does not commute with what footprints say.
  void enable_sleep_sets() { sleep_sets_ = true; }
  /// Lock-aware reduction (HostStep::lock): the critical section that
  /// `thread` opened on mutex `mutex` has ended, having touched `section`.
  /// A thread asleep before a lock of the same mutex wakes when its own
  /// section (known from the sibling run that took it) conflicts with this
  /// one. `choice`: the HostStep choice that chose the lock step, whose
  /// section an enumerating chooser keeps for later siblings (sections()).
  void section_ended(std::uint32_t thread, std::uint32_t mutex, const Footprint& section,
                     std::optional<std::size_t> choice);
  /// The critical sections this run opened by a recorded HostStep choice:
  /// (the choice's place, what the section touched).
  const std::vector<std::pair<std::size_t, Footprint>>& sections() const { return sections_; }
  /// The run reached a host step where every thread that could step was
  /// asleep: every run of this subtree is equivalent to one explored
  /// elsewhere. Such a run is not counted(); its runner may stop early.
  bool sleep_blocked() const { return blocked_at_.has_value(); }
  /// The choices DFS may vary: all of them, or those made before the run
  /// was sleep-blocked.
  std::size_t explorable_choices() const { return blocked_at_ ? *blocked_at_ : choice_count_; }
  /// Every choice recorded, in order (none after keep_no_choices()).
  const std::vector<Choice>& taken() const { return taken_; }
  /// How many choices the run recorded: taken().size() while it keeps them.
  std::size_t choice_count() const { return choice_count_; }
  /// A long run that lists a few of its choices and counts the rest (a
  /// streamed check makes one a `buffer` that could reuse, millions): from
  /// now on taken() keeps none; observe() still sees each and
  /// choice_count() counts each. Only for choosers that never read taken()
  /// back (RandomChooser): replay, DFS and shards do.
  void keep_no_choices() { keep_taken_ = false; }
  bool keeps_choices() const { return keep_taken_; }
  /// Whether option `option` of a HostStep choice was asleep (Choice::asleep).
  static bool is_asleep(SleepMask asleep, std::uint32_t option) {
    return option < kSleepMaskOptions && (asleep >> option) & 1u;
  }
  std::string schedule() const { return encode_schedule(taken_); }
  /// The program position asking the next choices: a trace line, 0 for none
  /// (the device draining after the last statement). Divergences name it.
  void set_line(int line) { line_ = line; }
  int line() const { return line_; }
  /// Called with each recorded choice (its index, the choice), before the
  /// program acts on it: `streamcheck explain` reads the device state there.
  void observe(std::function<void(std::uint64_t, const Choice&)> observer) { observer_ = std::move(observer); }
  /// What the next DeviceStep choice offers, said by the device model just
  /// before it asks: the ready stream heads, and whether answer 0 lets the
  /// host go on (then answer k completes heads[k - 1], else heads[k]).
  /// Choosers that schedule by agent (PctChooser) read it; `heads` must
  /// outlive the choose() call that follows.
  void offer_device_step(const std::vector<StreamIndex>& heads, bool host_may_go_on) {
    offered_heads_ = &heads;
    host_may_go_on_ = host_may_go_on;
  }
  /// Which run of its exploration this is (sim::explore sets it for Random
  /// and Pct: the run's place in the whole exploration, sharded or not).
  void set_run_number(std::uint64_t n) { run_number_ = n; }
  std::uint64_t run_number() const { return run_number_; }
  /// False for a run made only to learn something (a shard's copy of the
  /// PCT probe, counted by shard 0; a DFS run another shard owns): the RunFn
  /// leaves it out of reports.
  void set_counted(bool counted) { counted_ = counted; }
  bool counted() const { return counted_ && !blocked_at_ && (!shard_ || owners_.owner() == shard_->index); }
  /// A depth-first run made for part `shard` of a split exploration: each
  /// choice narrows the shards that own the run (ShardSet), and counted()
  /// holds only for the run's owner.
  void set_shard(Shard shard);

 protected:
  virtual std::uint32_t pick(ChoiceKind kind, std::uint32_t options) = 0;
  /// Where choice number choice_count() of kind `kind` is being asked.
  Divergence here(ChoiceKind kind, std::uint32_t options) const;
  /// The heads of the DeviceStep choice being asked (offer_device_step).
  const std::vector<StreamIndex>* offered_heads() const { return offered_heads_; }
  bool host_may_go_on() const { return host_may_go_on_; }
  /// Whether answering `option` of `options` at the next choice keeps this
  /// run in its shard's part (always, when not split by set_shard).
  bool keeps_shard(std::uint32_t options, std::uint32_t option) const {
    return !shard_ || owners_.narrow(options, option).contains(shard_->index);
  }
  /// A HostStep choice of `options` options, those with a bit in `asleep`
  /// asleep (always 0 without sleep sets). Choosers that enumerate never
  /// pick an asleep option past their prefix; the default asks pick().
  virtual std::uint32_t pick_host_step(std::uint32_t options, SleepMask asleep) {
    (void)asleep;
    return pick(ChoiceKind::HostStep, options);
  }
  /// Choosers that enumerate (DFS, trying the options of a choice in
  /// order) keep sleep sets.
  virtual bool enumerates() const { return false; }
  /// What the critical section opened by option `option` of choice number
  /// `choice` touched, in every run of that option's subtree explored before
  /// (lock-aware reduction); null when unknown (taken as touching all).
  virtual const Footprint* explored_section(std::size_t choice, std::uint32_t option) const {
    (void)choice;
    (void)option;
    return nullptr;
  }

 private:
  std::uint32_t record(ChoiceKind kind, std::uint32_t options, std::uint32_t taken, SleepMask asleep);

  std::vector<Choice> taken_;
  std::size_t choice_count_ = 0;
  bool keep_taken_ = true;
  bool sleep_sets_ = false;
  /// A thread asleep, with the step it would take and, for a lock step
  /// (HostStep::lock), what the critical section it opens touches (none:
  /// unknown, taken as everything).
  struct Sleeper {
    HostStep step;
    std::optional<Footprint> section;
  };
  /// Whether running `step` may lead somewhere new for `sleeper` (wakes it).
  static bool wakes(const HostStep& step, const Sleeper& sleeper);
  std::vector<Sleeper> sleep_;
  std::vector<std::pair<std::size_t, Footprint>> sections_;
  std::optional<std::size_t> blocked_at_;  // choice_count_ when the run was sleep-blocked
  std::optional<std::uint32_t> preemption_bound_;
  std::uint32_t preemptions_ = 0;
  std::optional<Shard> shard_;
  ShardSet owners_;
  const std::vector<StreamIndex>* offered_heads_ = nullptr;
  bool host_may_go_on_ = false;
  std::uint64_t run_number_ = 0;
  bool counted_ = true;
  int line_ = 0;
  std::function<void(std::uint64_t, const Choice&)> observer_;
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

/// Probabilistic concurrency testing (Burckhardt et al., ASPLOS 2010) over
/// the device's agents: the host and every stream. Each agent gets a random
/// priority the first time it is offered; at each device step the ready
/// agent of highest priority runs (the host "runs" by going on). At `depth`
/// - 1 change points, steps drawn uniformly from 1..`steps`, the agent that
/// just ran drops below every initial priority. A run so finds any bug of
/// depth d <= `depth` (d ordering constraints between steps) with
/// probability >= 1 / (n * k^(d-1)), n agents and k steps. Pool, fault,
/// client and query choices are drawn as RandomChooser draws them.
class PctChooser final : public Chooser {
 public:
  PctChooser(std::uint64_t seed, std::uint32_t depth, std::uint64_t steps, RandomChooserOptions options = {});
  /// Device steps this run scheduled, and the agents it saw (host included).
  std::uint64_t steps() const { return step_; }
  std::uint32_t agents() const { return static_cast<std::uint32_t>(priority_.size()); }

 protected:
  std::uint32_t pick(ChoiceKind kind, std::uint32_t options) override;

 private:
  /// Agent 0 is the host; stream s is agent s + 1.
  std::uint64_t& priority(std::uint32_t agent);

  SplitMix64 rng_;
  RandomChooserOptions options_;
  std::uint32_t depth_;
  std::vector<std::uint64_t> change_points_;  // the i-th drops its agent to priority i + 1
  std::vector<std::uint64_t> priority_;       // per agent; 0: not seen yet
  std::uint64_t step_ = 0;
};

/// Follows a recorded sequence exactly. Past its end it answers 0
/// (AnswerZero: tests that script a prefix) or throws ScheduleMismatch
/// (Refuse: replaying a schedule, which must fit the program exactly; the
/// caller also checks remaining() == 0 once the program has finished).
class ReplayChooser final : public Chooser {
 public:
  enum class PastTheEnd : std::uint8_t { AnswerZero, Refuse };
  explicit ReplayChooser(std::vector<std::uint32_t> script, PastTheEnd past_end = PastTheEnd::AnswerZero);
  explicit ReplayChooser(std::string_view schedule, PastTheEnd past_end = PastTheEnd::AnswerZero)
      : ReplayChooser(parse_schedule(schedule).runs, past_end) {}
  ReplayChooser(std::vector<ChoiceRun> runs, PastTheEnd past_end) : runs_(std::move(runs)), past_end_(past_end) {}
  bool exhausted() const { return remaining() == 0; }
  /// Answers of the script not asked for yet.
  std::uint64_t remaining() const;

 protected:
  std::uint32_t pick(ChoiceKind kind, std::uint32_t options) override;

 private:
  std::vector<ChoiceRun> runs_;
  PastTheEnd past_end_;
  std::size_t run_ = 0;     // the run the next answer comes from
  std::uint64_t used_ = 0;  // answers already taken from runs_[run_]
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
/// then finished(), until done(). Made for one shard of a split
/// exploration, it enters only the subtrees that shard owns (ShardSet), and
/// only the runs the shard owns are counted() by their choosers.
class DfsEnumerator {
 public:
  explicit DfsEnumerator(Shard shard = {}) : shard_(shard) {}
  class RunChooser final : public Chooser {
   public:
    /// `owner`: the enumerator whose explored sections the sleep sets read
    /// (none: sections unknown).
    explicit RunChooser(std::vector<std::uint32_t> prefix, const DfsEnumerator* owner = nullptr)
        : prefix_(std::move(prefix)), owner_(owner) {}

   protected:
    std::uint32_t pick(ChoiceKind kind, std::uint32_t options) override;
    std::uint32_t pick_host_step(std::uint32_t options, SleepMask asleep) override;
    bool enumerates() const override { return true; }
    const Footprint* explored_section(std::size_t choice, std::uint32_t option) const override;

   private:
    std::vector<std::uint32_t> prefix_;
    const DfsEnumerator* owner_;
    std::size_t next_ = 0;
  };

  /// The chooser for the next schedule; call finished() after the run.
  RunChooser next_run() const;
  /// Moves to the next unexplored schedule; false when all were explored.
  bool finished(const Chooser& run);
  bool done() const { return done_; }
  std::size_t explored() const { return explored_; }

 private:
  Shard shard_;
  std::vector<std::uint32_t> prefix_;
  /// Per choice along the prefix: the critical sections its explored
  /// options opened (lock-aware reduction), each the union over the runs of
  /// that option's subtree.
  std::vector<std::vector<std::pair<std::uint32_t, Footprint>>> sections_;
  bool done_ = false;
  std::size_t explored_ = 0;
};

/// The sets of shards that own each prefix of `run` when its exploration
/// is split in `count` shards: element i owns the choices before choice i
/// (element 0 is every shard, the last the owners of the whole run).
std::vector<ShardSet> owners_along(const std::vector<Choice>& run, std::uint32_t count);

}  // namespace streamcheck::sim
