// A decorator that writes every call it forwards as a line of a trace
// program (docs/TRACES.md), so that a logged run can be read back with
// parse_trace and explored by streamcheck (seed 002's logging decorator).
//
// What is written:
//   construction        resource [budget N] [mutant Mk]   (budget: when Inner
//                       has limit(), i.e. a BudgetResource)
//   a StreamId's first  stream s<id>                      (lazily, just before
//   use in a statement                                     the statement using it)
//   allocate            allocate b<generation> <bytes> on s<id>
//   deallocate          deallocate b<generation>
//   prepare_block_use   prepare b<generation> on s<id> read|write|read_write
//   finish_block_use    finish b<generation> on s<id> read|write|read_write
//   record_block_use    finish b<generation> on s<id> read
//   reap_pending        reap
//   note_launch         launch K on s<id> reads b.. writes b.. readwrites b..
// A refused call leaves no trace statement: it is written as a comment,
// "# <statement> failed: <error>", and declares no stream. A call the trace
// language cannot name (a block this log never saw allocated, a launch with
// no block uses) is written as a comment too, so the log always parses.
// Every keyword written, and the reserved words a kernel name is kept
// from, come from the parser's own table (model/trace_keywords.h).
//
// Thread safety: each call is forwarded and logged under one mutex, so the
// order of the lines is the order in which the calls took effect and lines
// never interleave. This serialises the calls into Inner; the trace language
// replays one host thread's program order anyway (no @THREAD prefixes are
// written).
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "model/guarded.h"
#include "model/memory_resource.h"
#include "model/mutants.h"
#include "model/trace_keywords.h"
#include "model/types.h"

namespace streamcheck {

template <MemoryResource Inner>
class LoggingResource {
 public:
  using Mutex = typename Inner::Mutex;

  /// Writes the `resource` line at once. `mutant` names the protocol variant
  /// Inner was built with, so the read-back trace runs the same variant.
  LoggingResource(Inner& inner, std::ostream& out, std::optional<MutantId> mutant = std::nullopt)
      : inner_(inner), log_(out) {
    std::string line = kw(K::Resource);
    if constexpr (requires(const Inner& r) {
                    { r.limit() } -> std::convertible_to<std::size_t>;
                  }) {
      line += " " + std::string(trace_language::word::kBudget) + " " + std::to_string(inner_.limit());
    }
    if (mutant) line += " " + std::string(trace_language::word::kMutant) + " " + std::string(info(*mutant).name);
    log_.lock()->emit(line + "\n");
  }
  LoggingResource(const LoggingResource&) = delete;
  LoggingResource& operator=(const LoggingResource&) = delete;

  Result<DeviceBlock> allocate(std::size_t bytes, StreamId stream, AllocTag tag = {}) {
    auto log = log_.lock();
    auto r = inner_.allocate(bytes, stream, tag);
    std::string text;
    if (r) {
      log->known.insert(r.value().generation.value);
      log->declare(text, stream);
      text +=
          kw(K::Allocate) + " " + block_name(r.value().generation) + " " + std::to_string(bytes) + on(stream) + "\n";
    } else {
      text += "# " + kw(K::Allocate) + " " + std::to_string(bytes) + on(stream) +
              " failed: " + one_line(r.error().to_string()) + "\n";
    }
    log->emit(text);
    return r;
  }

  Status deallocate(const DeviceBlock& block) {
    auto log = log_.lock();
    Status s = inner_.deallocate(block);
    log->statement(kw(K::Deallocate) + " " + block_name(block.generation), block.generation, std::nullopt, s);
    return s;
  }

  Status prepare_block_use(BlockId id, StreamId stream, Access access) {
    auto log = log_.lock();
    Status s = inner_.prepare_block_use(id, stream, access);
    log->statement(kw(K::Prepare) + " " + block_name(id.generation) + on(stream) + " " + std::string(to_string(access)),
                   id.generation, stream, s);
    return s;
  }

  Status finish_block_use(BlockId id, StreamId stream, Access access) {
    auto log = log_.lock();
    Status s = inner_.finish_block_use(id, stream, access);
    log->statement(kw(K::Finish) + " " + block_name(id.generation) + on(stream) + " " + std::string(to_string(access)),
                   id.generation, stream, s);
    return s;
  }

  /// Logged as what it is: finish(Read).
  Status record_block_use(const DeviceBlock& block, StreamId stream) {
    auto log = log_.lock();
    Status s = inner_.record_block_use(block, stream);
    log->statement(kw(K::Finish) + " " + block_name(block.generation) + on(stream) + " " +
                       std::string(trace_language::word::kRead),
                   block.generation, stream, s);
    return s;
  }

  Status reap_pending() {
    auto log = log_.lock();
    Status s = inner_.reap_pending();
    log->emit(s ? kw(K::Reap) + "\n" : "# " + kw(K::Reap) + " failed: " + one_line(s.error().to_string()) + "\n");
    return s;
  }

  /// Logs a kernel the client launched itself (work the resource does not
  /// see): `launch KERNEL on s<id> reads b.. writes b.. readwrites b..`.
  /// A kernel name that is not a trace NAME is rewritten to one (invalid
  /// characters become '_', a keyword gets a trailing '_'); the original
  /// follows in a comment.
  void note_launch(const std::string& kernel, StreamId stream,
                   const std::vector<std::pair<const DeviceBlock*, Access>>& uses) {
    auto log = log_.lock();
    const std::string name = trace_name(kernel);
    std::string stmt = kw(K::Launch) + " " + name + on(stream);
    std::string unnameable;
    for (Access kind : {Access::Read, Access::Write, Access::ReadWrite}) {
      std::string refs;
      for (const auto& [block, access] : uses) {
        if (access != kind) continue;
        if (!block) {
          unnameable = "a null block";
          continue;
        }
        if (!log->known.contains(block->generation.value))
          unnameable = block_name(block->generation) + " was not allocated through this log";
        refs += (refs.empty() ? "" : ",") + block_name(block->generation);
      }
      if (refs.empty()) continue;
      stmt += " " +
              std::string(kind == Access::Read    ? trace_language::word::kReads
                          : kind == Access::Write ? trace_language::word::kWrites
                                                  : trace_language::word::kReadWrites) +
              " ";
      stmt += refs;
    }
    if (uses.empty()) unnameable = "no block uses";
    std::string text;
    if (!unnameable.empty()) {
      text = "# " + stmt + " (not replayable: " + unnameable + ")";
    } else {
      log->declare(text, stream);
      text += stmt;
    }
    if (name != kernel) text += "  # kernel " + quoted(kernel);
    log->emit(text + "\n");
  }

  bool supports_block_use_tracking() const { return inner_.supports_block_use_tracking(); }
  std::size_t bytes_outstanding() const { return inner_.bytes_outstanding(); }
  std::uint32_t device_ordinal() const { return inner_.device_ordinal(); }

 private:
  using K = trace_language::StatementKeyword;
  static std::string kw(K k) { return std::string(trace_language::keyword(k)); }
  static std::string stream_name(StreamId s) { return "s" + std::to_string(s.value); }
  /// " on s<id>".
  static std::string on(StreamId s) { return " " + std::string(trace_language::word::kOn) + " " + stream_name(s); }
  static std::string block_name(Generation g) { return "b" + std::to_string(g.value); }

  static std::string one_line(std::string s) {
    for (char& c : s)
      if (c == '\n' || c == '\r') c = ' ';
    return s;
  }
  static std::string quoted(const std::string& s) { return "\"" + one_line(s) + "\""; }

  /// `[A-Za-z_][A-Za-z0-9_.-]*`, not a keyword.
  static std::string trace_name(const std::string& s) {
    auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
    auto rest = [&](char c) { return alpha(c) || (c >= '0' && c <= '9') || c == '.' || c == '-'; };
    std::string out;
    for (char c : s) out += rest(c) ? c : '_';
    if (out.empty() || !alpha(out.front())) out.insert(out.begin(), '_');
    if (trace_language::is_keyword(out)) out += '_';
    return out;
  }

  /// What the log writes to and remembers; reached only under the lock that
  /// also serialises the forwarded call, so the log's order is the calls'.
  struct Log {
    explicit Log(std::ostream& o) : out(&o) {}
    std::ostream* out;
    std::unordered_set<std::uint32_t> declared;
    // Generations this log wrote an `allocate` for (kept after deallocate,
    // so a later use of a freed block still reads back as that block).
    std::unordered_set<std::uint64_t> known;

    /// Appends `stream s<id>` the first time a statement uses `s`.
    void declare(std::string& text, StreamId s) {
      if (declared.insert(s.value).second) text += kw(K::Stream) + " " + stream_name(s) + "\n";
    }

    /// A statement naming block `g` (and stream `s`, if any): written as is
    /// when the call succeeded and the block is one this log allocated,
    /// otherwise as a comment.
    void statement(const std::string& stmt, Generation g, std::optional<StreamId> s, const Status& status) {
      std::string text;
      if (!status) {
        text = "# " + stmt + " failed: " + one_line(status.error().to_string());
      } else if (!known.contains(g.value)) {
        text = "# " + stmt + " (not replayable: " + block_name(g) + " was not allocated through this log)";
      } else {
        if (s) declare(text, *s);
        text += stmt;
      }
      emit(text + "\n");
    }

    void emit(const std::string& text) { *out << text << std::flush; }
  };

  Inner& inner_;
  Guarded<Log, Mutex> log_;
};

static_assert(MemoryResource<LoggingResource<MemoryResourceArchetype>>,
              "LoggingResource<Inner> must satisfy the streamcheck::MemoryResource concept (model/memory_resource.h)");

}  // namespace streamcheck
