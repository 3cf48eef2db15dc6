// Log fidelity: the LoggingResource's output, read back line by line against
// the calls the client made through it (SPEC §2: "a logging decorator that
// writes every call as a trace line", a trace source of §7). The expected
// lines are derived from the calls and the trace language as docs/TRACES.md
// and the decorator's header comment specify it, with literal words, not the
// writer's keyword table: a writer that names a call wrongly, drops or
// doubles a line, declares a stream twice or not at all, or logs a refused
// call as a statement is caught here, as a property of every logged run.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/types.h"

namespace streamcheck::props {

/// One call the client made through the logging layer, and its outcome.
struct LoggedCall {
  enum class Kind : std::uint8_t { Allocate, Deallocate, Prepare, Finish, Record, Reap, Launch };
  Kind kind = Kind::Reap;
  std::size_t bytes = 0;    // Allocate: the request
  StreamId stream{};        // all but Deallocate and Reap
  Generation generation{};  // the block (Allocate: the new one, when it succeeded)
  Access access = Access::Read;
  std::optional<std::string> error;                                // the refusal's to_string(), when refused
  std::string kernel;                                              // Launch: the name the client gave
  std::vector<std::pair<std::optional<Generation>, Access>> uses;  // Launch; nullopt: a null block
};

/// Reads a log incrementally: each advance() matches the lines written
/// since the last one against the calls journaled since.
class LogReader {
 public:
  /// `mutant`: the protocol's mutant name and `budget` the limit of the
  /// BudgetResource under the log, which the `resource` line names.
  LogReader(std::optional<std::string> mutant, std::optional<std::size_t> budget)
      : mutant_(std::move(mutant)), budget_(budget) {}

  /// The first difference between the unread lines of `log` and the
  /// unmatched calls of `journal`, if any.
  std::optional<std::string> advance(std::string_view log, const std::vector<LoggedCall>& journal) {
    std::vector<std::string> expected;
    if (!header_read_) {
      expected.push_back(fmt::format("resource{}{}", budget_ ? fmt::format(" budget {}", *budget_) : "",
                                     mutant_ ? " mutant " + *mutant_ : ""));
      header_read_ = true;
    }
    for (; matched_ < journal.size(); ++matched_) expect(journal[matched_], expected);
    for (const std::string& want : expected) {
      const std::size_t end = log.find('\n', offset_);
      if (end == std::string_view::npos)
        return fmt::format("the log lacks the line `{}` (it ends after {} lines)", want, lines_read_);
      const std::string_view got = log.substr(offset_, end - offset_);
      ++lines_read_;
      if (got != want) return fmt::format("log line {} is `{}`, expected `{}`", lines_read_, got, want);
      offset_ = end + 1;
    }
    if (offset_ != log.size())
      return fmt::format("the log has a line no call explains after line {}: `{}`", lines_read_,
                         log.substr(offset_, log.find('\n', offset_) - offset_));
    return std::nullopt;
  }

 private:
  static std::string block(Generation g) { return fmt::format("b{}", g.value); }
  static std::string stream(StreamId s) { return fmt::format("s{}", s.value); }
  static std::string_view access_word(Access a) {
    return a == Access::Read ? "read" : a == Access::Write ? "write" : "read_write";
  }
  static std::string one_line(std::string s) {
    for (char& c : s)
      if (c == '\n' || c == '\r') c = ' ';
    return s;
  }

  /// `stream sN` before the first statement that uses sN.
  void declare(StreamId s, std::vector<std::string>& out) {
    if (declared_.insert(s.value).second) out.push_back("stream " + stream(s));
  }

  /// A statement about a block: as is when it succeeded on a block this
  /// log allocated, else a comment that says why it cannot be replayed.
  void statement(const LoggedCall& c, const std::string& text, bool names_stream, std::vector<std::string>& out) {
    if (c.error) {
      out.push_back("# " + text + " failed: " + one_line(*c.error));
    } else if (!known_.contains(c.generation.value)) {
      out.push_back("# " + text + " (not replayable: " + block(c.generation) + " was not allocated through this log)");
    } else {
      if (names_stream) declare(c.stream, out);
      out.push_back(text);
    }
  }

  void expect(const LoggedCall& c, std::vector<std::string>& out) {
    using K = LoggedCall::Kind;
    switch (c.kind) {
      case K::Allocate:
        if (c.error) {
          out.push_back(fmt::format("# allocate {} on {} failed: {}", c.bytes, stream(c.stream), one_line(*c.error)));
        } else {
          known_.insert(c.generation.value);
          declare(c.stream, out);
          out.push_back(fmt::format("allocate {} {} on {}", block(c.generation), c.bytes, stream(c.stream)));
        }
        return;
      case K::Deallocate:
        statement(c, "deallocate " + block(c.generation), false, out);
        return;
      case K::Prepare:
      case K::Finish:
        statement(c,
                  fmt::format("{} {} on {} {}", c.kind == K::Prepare ? "prepare" : "finish", block(c.generation),
                              stream(c.stream), access_word(c.access)),
                  true, out);
        return;
      case K::Record:
        statement(c, fmt::format("finish {} on {} read", block(c.generation), stream(c.stream)), true, out);
        return;
      case K::Reap:
        out.push_back(c.error ? "# reap failed: " + one_line(*c.error) : std::string("reap"));
        return;
      case K::Launch:
        launch(c, out);
        return;
    }
  }

  /// `launch NAME on sN reads b.. writes b.. readwrites b..`; a kernel name
  /// that is not a trace NAME is rewritten and the original follows.
  void launch(const LoggedCall& c, std::vector<std::string>& out) {
    const std::string name = trace_name(c.kernel);
    std::string text = fmt::format("launch {} on {}", name, stream(c.stream));
    std::string unnameable;
    for (Access kind : {Access::Read, Access::Write, Access::ReadWrite}) {
      std::string refs;
      for (const auto& [g, a] : c.uses) {
        if (a != kind) continue;
        if (!g) {
          unnameable = "a null block";
          continue;
        }
        if (!known_.contains(g->value)) unnameable = block(*g) + " was not allocated through this log";
        refs += (refs.empty() ? "" : ",") + block(*g);
      }
      if (!refs.empty())
        text += fmt::format(" {} {}",
                            kind == Access::Read    ? "reads"
                            : kind == Access::Write ? "writes"
                                                    : "readwrites",
                            refs);
    }
    if (c.uses.empty()) unnameable = "no block uses";
    std::string line;
    if (!unnameable.empty()) {
      line = "# " + text + " (not replayable: " + unnameable + ")";
    } else {
      declare(c.stream, out);
      line = text;
    }
    if (name != c.kernel) line += "  # kernel \"" + one_line(c.kernel) + "\"";
    out.push_back(line);
  }

  /// docs/TRACES.md: a NAME is `[A-Za-z_][A-Za-z0-9_.-]*` and no reserved word.
  static std::string trace_name(const std::string& s) {
    static constexpr std::array<std::string_view, 31> kReserved = {
        "allocate",   "buffer",  "copy",   "deallocate", "event",  "finish",   "free",      "launch",
        "policy",     "prepare", "query",  "reap",       "record", "resource", "run",       "stream",
        "sync",       "thread",  "wait",   "on",         "from",   "to",       "reads",     "writes",
        "readwrites", "device",  "budget", "mutant",     "read",   "write",    "read_write"};
    auto alpha = [](char ch) { return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_'; };
    std::string out;
    for (char ch : s) out += alpha(ch) || (ch >= '0' && ch <= '9') || ch == '.' || ch == '-' ? ch : '_';
    if (out.empty() || !alpha(out.front())) out.insert(out.begin(), '_');
    for (auto word : kReserved)
      if (out == word) return out + '_';
    return out;
  }

  std::optional<std::string> mutant_;
  std::optional<std::size_t> budget_;
  bool header_read_ = false;
  std::size_t offset_ = 0;      // the log's bytes read so far
  std::size_t lines_read_ = 0;  // for messages
  std::size_t matched_ = 0;     // journal entries matched so far
  std::set<std::uint32_t> declared_;
  std::set<std::uint64_t> known_;
};

}  // namespace streamcheck::props
