#include "backend_sim/redundancy.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace streamcheck::sim {

namespace {

/// How many ops of each stream a clock is ordered after (its stream
/// components only: host components order no op), and for each stream the
/// log entry through which this clock came to be ordered after them.
class TracedClock {
 public:
  explicit TracedClock(std::uint32_t streams) : count_(streams, 0), through_(streams, 0) {}

  std::uint32_t count(std::uint32_t stream) const { return count_[stream]; }
  std::size_t through(std::uint32_t stream) const { return through_[stream]; }
  bool holds_work() const {
    return std::any_of(count_.begin(), count_.end(), [](std::uint32_t c) { return c > 0; });
  }
  /// Joins `other` in; what it raises came through log entry `via`, or
  /// through `other`'s own entries when `via` is nullopt.
  void join(const TracedClock& other, std::optional<std::size_t> via) {
    for (std::size_t u = 0; u < count_.size(); ++u)
      if (other.count_[u] > count_[u]) {
        count_[u] = other.count_[u];
        through_[u] = via ? *via : other.through_[u];
      }
  }
  /// This clock's count of `stream` alone, through nothing: what stream
  /// order (R1) gives every later op of that stream.
  TracedClock on_stream_only(std::uint32_t stream) const {
    TracedClock out(static_cast<std::uint32_t>(count_.size()));
    out.count_[stream] = count_[stream];
    return out;
  }
  /// R1: one more op on `stream`.
  void tick(std::uint32_t stream) { ++count_[stream]; }
  /// True when this clock is ordered after every op `other` is.
  bool covers(const TracedClock& other) const {
    for (std::size_t u = 0; u < count_.size(); ++u)
      if (other.count_[u] > count_[u]) return false;
    return true;
  }

 private:
  std::vector<std::uint32_t> count_;
  std::vector<std::size_t> through_;
};

struct Capture {
  TracedClock clock;
  std::size_t record;    // the log entry of the record (R2)
  std::uint32_t stream;  // the stream it was recorded on
  /// The capture holds work of its own stream: a record before any op on it
  /// orders nothing of that stream (a near-miss, not redundant).
  bool holds_own_work() const { return clock.count(stream) > 0; }
};

/// The entries of `by` that order the ops of `target`, or nullopt when `by`
/// misses one of them. The entries named are those that ordered the work of
/// `primary` (the stream synchronized, or the one the event was recorded on)
/// when the target holds some; else those of every stream it holds work of
/// (a device sync). Work of other streams came with it and needs no name.
std::optional<std::vector<std::size_t>> covering_entries(const TracedClock& target, const TracedClock& by,
                                                         std::optional<std::uint32_t> primary, std::uint32_t streams) {
  std::vector<std::size_t> out;
  for (std::uint32_t u = 0; u < streams; ++u) {
    if (target.count(u) == 0) continue;
    if (by.count(u) < target.count(u)) return std::nullopt;
    out.push_back(by.through(u));
  }
  if (primary && target.count(*primary) > 0) out = {by.through(*primary)};
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

std::vector<RedundantSync> find_redundant_syncs(const Log& log, const std::vector<StreamShape>& stream_shapes) {
  const auto stream_count = static_cast<std::uint32_t>(stream_shapes.size());
  std::set<HostThread> threads;
  for (const LogEntry& e : log) threads.insert(e.host());
  const bool one_host_thread = threads.size() <= 1;

  const TracedClock none(stream_count);
  std::vector<TracedClock> streams(stream_count, none);  // the clock of each stream's next op
  std::map<HostThread, TracedClock> hosts;               // the log does not record thread creation:
                                                         // a thread starts with no history (fewer flags)
  std::map<EventIndex, Capture> captures;
  std::map<std::size_t, TracedClock> released;  // HostRelease entry -> the releasing host's clock
  std::vector<RedundantSync> out;

  for (std::size_t i = 0; i < log.size(); ++i) {
    const LogEntry& e = log[i];
    TracedClock& host = hosts.try_emplace(e.host(), none).first->second;
    // O2: a sync whose target the host already follows.
    const auto host_sync = [&](const TracedClock& target, std::optional<std::uint32_t> primary,
                               std::optional<std::size_t> record) {
      if (auto by = covering_entries(target, host, primary, stream_count))
        out.push_back(RedundantSync{OversyncRule::O2CoveredSync, i, std::move(*by), false, record});
      host.join(target, i);  // R4
    };
    switch (e.kind()) {
      case LogEntry::Kind::Enqueue: {
        TracedClock& s = streams.at(e.stream.value);
        s.join(host, std::nullopt);  // R5: through the host's syncs
        s.tick(e.stream.value);      // R1
        break;
      }
      case LogEntry::Kind::Record: {
        TracedClock& s = streams.at(e.stream.value);
        s.join(host, std::nullopt);                                           // R5
        captures.insert_or_assign(e.event(), Capture{s, i, e.stream.value});  // R2: replaced, never merged
        break;
      }
      case LogEntry::Kind::Wait: {
        TracedClock& s = streams.at(e.stream.value);
        const auto capture = captures.find(e.event());
        if (one_host_thread && capture != captures.end() && capture->second.holds_own_work()) {
          // O1: the capture's work on the waiting stream itself is first by
          // stream order (R1); the rest must be covered by s's clock or by
          // the host, whose past the next op on s joins anyway (R5).
          const Capture& c = capture->second;
          TracedClock known = s;
          known.join(host, std::nullopt);
          known.join(c.clock.on_stream_only(e.stream.value), std::nullopt);
          if (auto by = covering_entries(c.clock, known, c.stream, stream_count)) {
            const bool same_stream = c.stream == e.stream.value;
            if (same_stream) by->clear();
            out.push_back(RedundantSync{OversyncRule::O1CoveredWait, i, std::move(*by), same_stream, c.record});
          }
        }
        s.join(host, std::nullopt);                                       // R5
        if (capture != captures.end()) s.join(capture->second.clock, i);  // R3
        break;
      }
      case LogEntry::Kind::SyncStream:
        if (streams.at(e.stream.value).holds_work()) host_sync(streams.at(e.stream.value), e.stream.value, {});
        break;
      case LogEntry::Kind::SyncEvent:
        if (auto capture = captures.find(e.event()); capture != captures.end() && capture->second.holds_own_work())
          host_sync(capture->second.clock, capture->second.stream, capture->second.record);
        break;
      case LogEntry::Kind::SyncDevice: {
        TracedClock all = none;
        for (std::uint32_t u = 0; u < stream_count; ++u)
          if (stream_shapes[u].device == e.device()) all.join(streams[u], std::nullopt);  // R13c: one device's
        host_sync(all, std::nullopt, std::nullopt);
        break;
      }
      case LogEntry::Kind::QueryDone:  // holds in this schedule only: counts for nothing here
      case LogEntry::Kind::QueryNotDone:
        break;
      case LogEntry::Kind::HostRelease:
        released.insert_or_assign(i, host);
        break;
      case LogEntry::Kind::HostAcquire:
        host.join(released.at(*e.released_by()), std::nullopt);  // R6
        break;
    }
  }
  return out;
}

}  // namespace streamcheck::sim
