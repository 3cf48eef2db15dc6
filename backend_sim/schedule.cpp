#include "backend_sim/schedule.h"

#include <algorithm>
#include <set>
#include <stdexcept>

namespace streamcheck::sim {

namespace {

constexpr std::string_view kDigits = "0123456789abcdefghijklmnopqrstuvwxyz";
/// Runs shorter than this stay written out: "00000000" reads at a glance.
constexpr std::uint64_t kShortestCodedRun = 16;
constexpr std::string_view kVersion2 = "v2";

void append_choice(std::string& out, std::uint32_t choice) {
  if (choice < kDigits.size())
    out.push_back(kDigits[choice]);
  else
    out += "_" + std::to_string(choice) + "_";
}

[[noreturn]] void malformed(std::size_t at, const std::string& what, const std::string& hint = {}) {
  throw std::invalid_argument("schedule: " + what + " at position " + std::to_string(at) + hint);
}

/// A body parser: `offset` is where the body starts in the whole text, so
/// errors name positions in what the user typed.
class BodyParser {
 public:
  BodyParser(std::string_view body, std::size_t offset) : text_(body), offset_(offset) {}

  std::vector<ChoiceRun> runs() {
    std::vector<ChoiceRun> out;
    if (text_ == "-" || text_.empty()) return out;
    while (i_ < text_.size()) {
      const std::uint32_t choice = next_choice();
      std::uint64_t count = 1;
      if (i_ < text_.size() && text_[i_] == '.') {
        const std::size_t open = i_++;
        count = number_until('.', open, "run .count.");
        if (count == 0) fail(open, "a run of 0 choices");
      }
      if (!out.empty() && out.back().choice == choice)
        out.back().count += count;
      else
        out.push_back(ChoiceRun{choice, count});
    }
    return out;
  }

 private:
  std::uint32_t next_choice() {
    const char ch = text_[i_];
    if (ch == '_' || ch == '(') {  // `(n)`: schedules written before version 2
      const std::size_t open = i_++;
      return static_cast<std::uint32_t>(number_until(ch == '_' ? '_' : ')', open, ch == '_' ? "_n_" : "(n)"));
    }
    const auto pos = kDigits.find(ch);
    if (pos == std::string_view::npos)
      fail(i_, "unexpected character '" + std::string(1, ch) + "'", " (expected 0-9, a-z, _n_ or a run .count.)");
    ++i_;
    return static_cast<std::uint32_t>(pos);
  }

  /// Decimal digits from i_ up to `close`; moves past `close`.
  std::uint64_t number_until(char close, std::size_t open, const char* what) {
    std::uint64_t v = 0;
    const std::size_t start = i_;
    for (; i_ < text_.size() && text_[i_] != close; ++i_) {
      if (text_[i_] < '0' || text_[i_] > '9') fail(i_, std::string("non-digit inside ") + what);
      v = v * 10 + static_cast<std::uint64_t>(text_[i_] - '0');
      if (v > 0xffffffffu) fail(open, std::string(what) + ": number too large");
    }
    if (i_ >= text_.size() || i_ == start) fail(open, std::string("unterminated ") + what);
    ++i_;
    return v;
  }

  [[noreturn]] void fail(std::size_t at, const std::string& what, const std::string& hint = {}) const {
    malformed(offset_ + at, what, hint);
  }

  std::string_view text_;
  std::size_t offset_;
  std::size_t i_ = 0;
};

/// The header's length (0: none) and what it says.
std::pair<std::size_t, std::optional<ScheduleHeader>> parse_header(std::string_view text) {
  // "v" then a version number then ',' or ':' is a header; a headerless
  // body never holds ',' or ':'.
  std::size_t i = 1;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
  if (text.empty() || text[0] != 'v' || i == 1 || i >= text.size() || (text[i] != ',' && text[i] != ':'))
    return {0, std::nullopt};
  if (text.substr(0, i) != kVersion2)
    throw std::invalid_argument("schedule: version " + std::string(text.substr(1, i - 1)) +
                                " is not one this streamcheck reads (version 2, or a headerless schedule)");
  ScheduleHeader h;
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) malformed(i, "header without ':'", " (v2,OPTION,...:CHOICES)");
  std::set<std::string> seen;
  while (i < colon) {
    const std::size_t start = i + 1;  // past ','
    if (text[i] != ',') malformed(i, "expected ',' between header options");
    std::size_t end = text.find_first_of(",:", start);
    const std::string_view option = text.substr(start, end - start);
    if (option.empty()) malformed(start, "empty header option");
    const auto eq = option.find('=');
    const std::string name(option.substr(0, eq));
    if (!seen.insert(name).second) malformed(start, "header option '" + name + "' given twice");
    if (eq == std::string_view::npos) {
      if (name == "faults")
        h.faults = true;
      else if (name == "observed")
        h.observed = true;
      else
        malformed(start, "unknown header option '" + name + "' (faults, observed, or SWITCH=VALUE)");
    } else {
      const std::string value(option.substr(eq + 1));
      const auto bad_name = name.find_first_not_of("abcdefghijklmnopqrstuvwxyz_");
      const auto bad_value = value.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ");
      if (name.empty() || bad_name != std::string::npos || value.empty() || bad_value != std::string::npos)
        malformed(start, "header option '" + std::string(option) + "' is not SWITCH=VALUE");
      h.policy.emplace_back(name, value);
    }
    i = end;
  }
  return {colon + 1, h};
}

}  // namespace

std::string_view to_string(ChoiceKind kind) {
  switch (kind) {
    case ChoiceKind::DeviceStep:
      return "device step";
    case ChoiceKind::PoolRange:
      return "pool range";
    case ChoiceKind::Fault:
      return "fault point";
    case ChoiceKind::Client:
      return "client choice";
    case ChoiceKind::QueryAnswer:
      return "query answer";
    case ChoiceKind::HostStep:
      return "host step";
  }
  return "choice";
}

ScheduleMismatch::ScheduleMismatch(Divergence where)
    : std::runtime_error([&] {
        if (where.surplus > 0)
          return "the program finished after " + std::to_string(where.choice) + " choices, but the schedule has " +
                 std::to_string(where.surplus) + " more: it was recorded for another program or other options";
        const std::string asked = "choice " + std::to_string(where.choice + 1) +
                                  (where.line > 0 ? " (asked at line " + std::to_string(where.line) + ")"
                                                  : " (asked while the device drains)") +
                                  " has " + std::to_string(where.options) + " options";
        if (!where.given) return "the schedule ended before " + asked;
        return asked + ", the schedule gives " + std::to_string(*where.given) +
               ": it was recorded for another program or other options";
      }()),
      where_(where) {}

std::uint64_t ScheduleText::choices() const {
  std::uint64_t n = 0;
  for (const auto& r : runs) n += r.count;
  return n;
}

std::string encode_schedule(const std::vector<Choice>& choices) {
  std::string out;
  out.reserve(choices.size());
  for (std::size_t i = 0; i < choices.size();) {
    std::size_t j = i + 1;
    while (j < choices.size() && choices[j].taken == choices[i].taken) ++j;
    const std::uint64_t count = j - i;
    if (count >= kShortestCodedRun) {
      append_choice(out, choices[i].taken);
      out += "." + std::to_string(count) + ".";
    } else {
      for (std::size_t k = i; k < j; ++k) append_choice(out, choices[k].taken);
    }
    i = j;
  }
  return out.empty() ? std::string("-") : out;
}

std::string encode_schedule(const ScheduleHeader& header, const std::vector<Choice>& choices) {
  std::string out(kVersion2);
  if (header.faults) out += ",faults";
  if (header.observed) out += ",observed";
  for (const auto& [name, value] : header.policy) out += "," + name + "=" + value;
  return out + ":" + encode_schedule(choices);
}

ScheduleText parse_schedule(std::string_view text) {
  const auto [length, header] = parse_header(text);
  return ScheduleText{header, BodyParser(text.substr(length), length).runs()};
}

std::vector<std::uint32_t> decode_schedule(std::string_view text) {
  std::vector<std::uint32_t> out;
  for (const auto& r : parse_schedule(text).runs) out.insert(out.end(), r.count, r.choice);
  return out;
}

Divergence Chooser::here(ChoiceKind kind, std::uint32_t options) const {
  return Divergence{.choice = choice_count_, .kind = kind, .options = options, .given = std::nullopt, .line = line_};
}

std::uint32_t Chooser::choose(ChoiceKind kind, std::uint32_t options) {
  if (options < 2) return 0;
  return record(kind, options, pick(kind, options), 0);
}

std::uint32_t Chooser::record(ChoiceKind kind, std::uint32_t options, std::uint32_t taken, SleepMask asleep) {
  if (taken >= options) {
    Divergence d = here(kind, options);
    d.given = taken;
    throw ScheduleMismatch(d);
  }
  const Choice made{kind, options, taken, asleep};
  if (keep_taken_) taken_.push_back(made);
  const std::size_t index = choice_count_++;
  if (shard_) owners_ = owners_.narrow(options, taken);
  if (observer_) observer_(index, made);
  return taken;
}

std::uint32_t Chooser::choose_host_step(const std::vector<HostStep>& steps, bool first_continues) {
  if (steps.empty()) throw std::invalid_argument("choose_host_step: no host thread can step (a deadlock)");
  auto options = static_cast<std::uint32_t>(steps.size());
  // The preemption bound (CHESS): once spent, the running thread goes on
  // whenever it can.
  if (first_continues && preemption_bound_ && preemptions_ >= *preemption_bound_) options = 1;
  // Sleep sets are off under a preemption bound: the run a sleep set keeps
  // for a class of equivalent runs may need more preemptions than the bound
  // allows, while the equivalent run within it is the one pruned.
  const bool sleeping = sleep_sets_ && enumerates() && !preemption_bound_;
  if (sleeping) {
    // Lock-aware: a thread asleep before a lock wakes as soon as another
    // thread could take a step its critical section conflicts with. Kept
    // asleep, such a step could land inside that section (after the
    // sleeper's lock, between two of its steps), an order the sibling run
    // that locked first cannot reach; awake, the lock is tried here.
    std::erase_if(sleep_, [&](const Sleeper& s) {
      if (!s.step.lock) return false;
      if (!s.section) return true;
      return std::any_of(steps.begin(), steps.end(), [&](const HostStep& o) {
        return o.thread != s.step.thread && o.footprint.conflicts_with(*s.section);
      });
    });
  }
  auto is_sleeping = [&](std::uint32_t thread) {
    return std::any_of(sleep_.begin(), sleep_.end(), [&](const Sleeper& s) { return s.step.thread == thread; });
  };
  SleepMask asleep = 0;
  bool all_asleep = sleeping;
  for (std::uint32_t i = 0; i < options; ++i) {
    const bool a = sleeping && is_sleeping(steps[i].thread);
    if (a && i < kSleepMaskOptions) asleep |= SleepMask{1} << i;
    all_asleep = all_asleep && a;
  }
  // Every thread that may step is asleep: each run below this point only
  // reorders commuting steps of a run explored before.
  if (all_asleep && !blocked_at_) blocked_at_ = choice_count_;
  if (blocked_at_) asleep = 0;
  std::uint32_t taken = 0;
  const std::size_t choice = choice_count_;
  if (options >= 2) taken = record(ChoiceKind::HostStep, options, pick_host_step(options, asleep), asleep);
  if (first_continues && taken != 0) ++preemptions_;
  if (sleeping && !blocked_at_) {
    // Sleep set of the child: the sleeping steps and the siblings explored
    // before this one (the lower options), less those the step taken
    // may lead somewhere new for.
    const HostStep& chosen = steps[taken];
    std::vector<Sleeper> next;
    for (Sleeper& s : sleep_)
      if (s.step.thread != chosen.thread && !wakes(chosen, s)) next.push_back(std::move(s));
    for (std::uint32_t i = 0; i < taken; ++i) {
      if (is_asleep(asleep, i)) continue;
      Sleeper s{steps[i], std::nullopt};
      if (s.step.lock)
        if (const Footprint* section = explored_section(choice, i)) s.section = *section;
      if (!wakes(chosen, s)) next.push_back(std::move(s));
    }
    sleep_ = std::move(next);
  }
  return taken;
}

bool Chooser::wakes(const HostStep& step, const Sleeper& sleeper) {
  if (!sleeper.step.lock) return step.footprint.conflicts_with(sleeper.step.footprint);
  // A lock of the same mutex: decided when its section ends (section_ended),
  // by what the two sections touch; until then the sleeper cannot step.
  if (step.lock == sleeper.step.lock) return false;
  if (!sleeper.section) return true;
  return step.footprint.conflicts_with(sleeper.step.footprint) || step.footprint.conflicts_with(*sleeper.section);
}

void Chooser::section_ended(std::uint32_t thread, std::uint32_t mutex, const Footprint& section,
                            std::optional<std::size_t> choice) {
  if (choice) sections_.emplace_back(*choice, section);
  std::erase_if(sleep_, [&](const Sleeper& s) {
    return s.step.lock == mutex && s.step.thread != thread && (!s.section || s.section->conflicts_with(section));
  });
}

void Chooser::set_shard(Shard shard) {
  if (shard.count == 0 || shard.index >= shard.count)
    throw std::invalid_argument("a shard I/N needs 0 <= I < N, got " + std::to_string(shard.index) + "/" +
                                std::to_string(shard.count));
  shard_ = shard;
  owners_ = ShardSet::all(shard.count);
  for (const Choice& c : taken_) owners_ = owners_.narrow(c.options, c.taken);
}

bool ShardSet::contains(std::uint32_t shard) const {
  return shard >= start && (shard - start) % stride == 0 && (shard - start) / stride < size;
}

ShardSet ShardSet::narrow(std::uint32_t options, std::uint32_t option) const {
  if (size >= options)  // the members p with p % options == option
    return ShardSet{start + option * stride, stride * options, (size - 1 - option) / options + 1};
  return ShardSet{start + (option % size) * stride, stride, 1};
}

std::vector<ShardSet> owners_along(const std::vector<Choice>& run, std::uint32_t count) {
  std::vector<ShardSet> out{ShardSet::all(count)};
  out.reserve(run.size() + 1);
  for (const Choice& c : run) out.push_back(out.back().narrow(c.options, c.taken));
  return out;
}

std::uint64_t SplitMix64::next() {
  std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint32_t RandomChooser::pick(ChoiceKind kind, std::uint32_t options) {
  switch (kind) {
    case ChoiceKind::DeviceStep:
      if (!rng_.chance(options_.device_step_percent)) return 0;
      return 1 + rng_.below(options - 1);
    case ChoiceKind::Fault:
      return rng_.chance(options_.fault_percent) ? 1 : 0;
    case ChoiceKind::PoolRange:
    case ChoiceKind::Client:
    case ChoiceKind::QueryAnswer:
    case ChoiceKind::HostStep:
      return rng_.below(options);
  }
  return 0;
}

PctChooser::PctChooser(std::uint64_t seed, std::uint32_t depth, std::uint64_t steps, RandomChooserOptions options)
    : rng_(seed), options_(options), depth_(depth) {
  if (depth == 0) throw std::invalid_argument("PCT: depth must be at least 1");
  for (std::uint32_t i = 1; i < depth; ++i) change_points_.push_back(1 + rng_.next() % (steps == 0 ? 1 : steps));
}

std::uint64_t& PctChooser::priority(std::uint32_t agent) {
  if (priority_.size() <= agent) priority_.resize(agent + 1, 0);
  // Initial priorities lie above the depth - 1 low ones the change points
  // hand out; 62 random bits make two agents' equal only by accident, and
  // then the lower agent number wins.
  if (priority_[agent] == 0) priority_[agent] = depth_ + (rng_.next() >> 2);
  return priority_[agent];
}

std::uint32_t PctChooser::pick(ChoiceKind kind, std::uint32_t options) {
  if (kind != ChoiceKind::DeviceStep || offered_heads() == nullptr) {
    switch (kind) {
      case ChoiceKind::Fault:
        return rng_.chance(options_.fault_percent) ? 1 : 0;
      default:
        return rng_.below(options);
    }
  }
  const std::vector<StreamIndex>& heads = *offered_heads();
  const std::uint32_t first = host_may_go_on() ? 1 : 0;  // the answer that completes heads[0]
  std::uint32_t best = 0;
  std::uint32_t best_agent = 0;
  std::uint64_t best_priority = 0;
  if (first == 1) best_priority = priority(0);  // the host may go on: answer 0
  for (std::size_t h = 0; h < heads.size() && first + h < options; ++h) {
    const std::uint32_t agent = heads[h].value + 1;
    if (const std::uint64_t p = priority(agent); p > best_priority) {
      best_priority = p;
      best = first + static_cast<std::uint32_t>(h);
      best_agent = agent;
    }
  }
  ++step_;
  for (std::size_t i = 0; i < change_points_.size(); ++i)
    if (change_points_[i] == step_) priority(best_agent) = i + 1;
  return best;
}

ReplayChooser::ReplayChooser(std::vector<std::uint32_t> script, PastTheEnd past_end) : past_end_(past_end) {
  for (const auto c : script) runs_.push_back(ChoiceRun{c, 1});
}

std::uint64_t ReplayChooser::remaining() const {
  std::uint64_t n = 0;
  for (std::size_t r = run_; r < runs_.size(); ++r) n += runs_[r].count;
  return n - (run_ < runs_.size() ? used_ : 0);
}

std::uint32_t ReplayChooser::pick(ChoiceKind kind, std::uint32_t options) {
  while (run_ < runs_.size() && used_ >= runs_[run_].count) {
    ++run_;
    used_ = 0;
  }
  if (run_ >= runs_.size()) {
    if (past_end_ == PastTheEnd::Refuse) throw ScheduleMismatch(here(kind, options));
    return 0;
  }
  ++used_;
  return runs_[run_].choice;
}

std::uint32_t ByteChooser::pick(ChoiceKind, std::uint32_t options) {
  if (next_ >= bytes_.size()) return 0;
  return bytes_[next_++] % options;
}

std::uint32_t DfsEnumerator::RunChooser::pick(ChoiceKind, std::uint32_t options) { return pick_host_step(options, 0); }

std::uint32_t DfsEnumerator::RunChooser::pick_host_step(std::uint32_t options, SleepMask asleep) {
  if (next_ < prefix_.size()) return prefix_[next_++];
  // Past the prefix: the first option awake whose subtree the shard owns
  // (0 when not split, or when the run already left the shard's part).
  for (std::uint32_t option = 0; option < options; ++option)
    if (!is_asleep(asleep, option) && keeps_shard(options, option)) return option;
  return 0;
}

const Footprint* DfsEnumerator::RunChooser::explored_section(std::size_t choice, std::uint32_t option) const {
  if (!owner_ || choice >= owner_->sections_.size()) return nullptr;
  for (const auto& [explored, section] : owner_->sections_[choice])
    if (explored == option) return &section;
  return nullptr;
}

DfsEnumerator::RunChooser DfsEnumerator::next_run() const {
  RunChooser run(prefix_, this);
  if (shard_.count > 1) run.set_shard(shard_);
  return run;
}

bool DfsEnumerator::finished(const Chooser& run) {
  ++explored_;
  const auto& taken = run.taken();
  // Keep what each lock step's critical section touched, per choice and
  // option, for the sleep sets of later siblings (lock-aware reduction).
  for (const auto& [choice, section] : run.sections()) {
    if (choice >= taken.size()) continue;
    if (sections_.size() <= choice) sections_.resize(choice + 1);
    auto& explored = sections_[choice];
    auto it =
        std::find_if(explored.begin(), explored.end(), [&](const auto& e) { return e.first == taken[choice].taken; });
    if (it == explored.end())
      explored.emplace_back(taken[choice].taken, section);
    else
      it->second.merge(section);
  }
  const bool split = shard_.count > 1;
  const std::vector<ShardSet> owners = split ? owners_along(taken, shard_.count) : std::vector<ShardSet>{};
  // Backtrack to the deepest choice with an untried alternative that the
  // shard owns and that was awake there (a sleep-blocked run's later
  // choices only reorder commuting steps: never varied).
  for (std::size_t i = run.explorable_choices(); i-- > 0;) {
    for (std::uint32_t option = taken[i].taken + 1; option < taken[i].options; ++option) {
      if (Chooser::is_asleep(taken[i].asleep, option)) continue;
      if (split && !owners[i].narrow(taken[i].options, option).contains(shard_.index)) continue;
      prefix_.clear();
      for (std::size_t j = 0; j < i; ++j) prefix_.push_back(taken[j].taken);
      prefix_.push_back(option);
      // Choices below i are made anew: their sections no longer apply.
      if (sections_.size() > i + 1) sections_.resize(i + 1);
      return true;
    }
  }
  done_ = true;
  return false;
}

}  // namespace streamcheck::sim
