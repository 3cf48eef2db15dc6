#include "tools/trace.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "backend_sim/sim_backend.h"
#include "model/trace_keywords.h"
#include "tools/name_map.h"
#include "tools/tool_protocols.h"
#include "tools/trace_interpreter.h"

namespace streamcheck::tools {

// ----------------------------------------------------------------- parsing

namespace {

/// A word of the line being parsed: a view into the trace's text, which
/// outlives the parse (a std::string per word was a fifth of parsing).
struct Token {
  std::string_view text;
  int col;  // 1-based
};

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

enum class NameKind : std::uint8_t { Stream, Event, Thread, Buffer, Mutex, Channel, Graph };

std::string with_article(NameKind k);

std::string_view to_string(NameKind k) {
  switch (k) {
    case NameKind::Stream:
      return "stream";
    case NameKind::Event:
      return "event";
    case NameKind::Thread:
      return "thread";
    case NameKind::Buffer:
      return "buffer";
    case NameKind::Mutex:
      return "mutex";
    case NameKind::Channel:
      return "channel";
    case NameKind::Graph:
      return "graph";
  }
  return "?";
}

std::string with_article(NameKind k) { return fmt::format("{} {}", k == NameKind::Event ? "an" : "a", to_string(k)); }

constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";

/// What lines parsed before parsed to, found by the line's text: a trace
/// is mostly a loop (a training step, a pipeline's rounds), so most of its
/// lines are one of a few texts, and parsing a line again at the same
/// Parser::generation() gives the same statement (only its line differs).
/// A slot keeps the line (`Line`: a copy, or a view of a text that outlives
/// the memo) and what the caller keeps of its statement (`Kept`). One slot
/// a hash value, the newest line wins.
template <typename Line, typename Kept>
class LineMemo {
 public:
  struct Slot {
    Line line;
    Kept kept{};
    std::uint64_t generation = 0;
    std::uint32_t followed_by = kNoSlot;  // the slot of the line read after this one, last time
    bool valid = false;
  };
  /// The slot holding what `line` parsed to at `generation`, or null.
  Slot* find(std::string_view line, std::uint64_t generation) {
    // A loop's lines come in the order they came last time: the line after
    // the last one is tried first, with no hash computed.
    if (last_ != kNoSlot) {
      const std::uint32_t guess = slots_[last_].followed_by;
      if (guess != kNoSlot && holds(slots_[guess], line, generation)) {
        last_ = guess;
        return &slots_[guess];
      }
    }
    const std::uint32_t at = slot_index(line);
    if (!holds(slots_[at], line, generation)) return nullptr;
    follow(at);
    return &slots_[at];
  }
  /// The slot `line` goes to, emptied, its line `line` (a copy, for a
  /// std::string): the caller parses that and, when keep() says the parse
  /// may be reused, fills `kept`.
  Slot& take(std::string_view line) {
    const std::uint32_t at = slot_index(line);
    Slot& s = slots_[at];
    s.valid = false;
    s.followed_by = kNoSlot;
    s.line = line;
    follow(at);
    return s;
  }
  /// Whether `slot`'s parse, which took the parser's generation from
  /// `before` to `after`, may be reused, and if so marks it valid: a
  /// statement that changed what later lines parse to is never looked up
  /// again.
  static bool keep(Slot& slot, std::uint64_t before, std::uint64_t after) {
    if (before != after) return false;
    slot.generation = after;
    slot.valid = true;
    return true;
  }

 private:
  static constexpr std::uint32_t kNoSlot = ~std::uint32_t{0};
  static constexpr std::uint32_t kSlots = 1024;
  static bool holds(const Slot& s, std::string_view line, std::uint64_t generation) {
    return s.valid && s.generation == generation && s.line == line;
  }
  static std::uint32_t slot_index(std::string_view line) {
    return static_cast<std::uint32_t>(std::hash<std::string_view>{}(line) & (kSlots - 1));
  }
  /// `at` is the slot of the line just read: the one before it learns so.
  void follow(std::uint32_t at) {
    if (last_ != kNoSlot) slots_[last_].followed_by = at;
    last_ = at;
  }
  std::vector<Slot> slots_ = std::vector<Slot>(kSlots);
  std::uint32_t last_ = kNoSlot;  // the slot of the line read last, if it has one
};

class Parser {
 public:
  /// `streamed`: the trace is read a statement at a time (TraceReader), so
  /// what a streamed check cannot run is an error at its line.
  Parser(std::string_view text, std::string file, bool streamed = false)
      : text_(text), file_(std::move(file)), streamed_(streamed) {
    trace_.file = file_;
    declare(kMainThread, NameKind::Thread);
    main_thread_ = names_.find(kMainThread)->value.name;
    declare(kPlainAllocationStream, NameKind::Stream);  // R8: every trace has the legacy stream
    declare(kPerThreadStream, NameKind::Stream);        // and each host thread its own
  }

  Trace parse() {
    // One statement a line at most: growing the vector moved every
    // statement parsed so far again and again.
    trace_.statements.reserve(static_cast<std::size_t>(std::count(text_.begin(), text_.end(), '\n')) + 1);
    std::size_t start = 0;
    int line_no = 0;
    WholeTraceMemo memo;
    while (start <= text_.size()) {
      const std::size_t end = std::min(text_.find('\n', start), text_.size());
      ++line_no;
      parse_line_or_reuse(memo, text_.substr(start, end - start), line_no);
      if (end == text_.size()) break;
      start = end + 1;
    }
    check_whole_trace(!trace_.statements.empty());
    for (Statement& st : trace_.statements)
      if (auto* decl = std::get_if<ast::ThreadDecl>(&st)) decl->starts_at_spawn = spawned_.contains(decl->name);
    return std::move(trace_);
  }

  /// What only the whole trace shows: it has statements (`any_statement`),
  /// and one that runs; no block or capture is left open; no thread ends
  /// holding a mutex.
  void check_whole_trace(bool any_statement) {
    // A CI job pointed at the wrong file must not pass: nothing to check is
    // an input error, not a clean verdict.
    if (!any_statement)
      throw TraceError(TraceError::Kind::NoStatements, file_,
                       "the trace has no statements (the file is empty or holds only comments and blank lines)");
    if (!blocks_.empty()) {
      line_ = blocks_.back().if_line;
      fail(1, "'if' without its 'end': close the block with a line 'end'");
    }
    for (const auto& [thread, c] : captures_) {
      line_ = c.begin_line;
      fail(c.begin_col, fmt::format("the capture of {} is never ended: end it with 'capture end {} graph NAME'",
                                    c.origin, c.origin));
    }
    if (!first_run_line_)
      throw TraceError(TraceError::Kind::NoStatements, file_,
                       "the trace has no statement that runs, only declarations (stream, event, thread, mutex, "
                       "channel, policy, resource): nothing to check");
    // A thread that ends holding a mutex would leave every later lock of
    // it waiting forever: the trace is wrong, not the schedule.
    for (const auto& [thread, held] : held_)
      for (const auto& [mutex, at] : held)
        throw TraceError(file_, at.first, at.second,
                         fmt::format("thread {} ends holding mutex {} (locked here): unlock it", thread, mutex));
  }

  /// The text a statement on `line` has (ast::Source::text): its words,
  /// without the comment (statement_texts, for the lines a streamed check
  /// names).
  std::string statement_text(std::string_view line) {
    tokenize(line);
    std::string text(joined_bytes(), ' ');
    write_joined(text.data());
    return text;
  }

  Trace& trace() { return trace_; }
  /// The line of the first statement that is not a declaration, once parsed.
  std::optional<int> first_run_line() const { return first_run_line_; }
  /// Counts the statements parsed that may change what a later line parses
  /// to: every one but those leaves_parse_state_alone names (a `buffer`
  /// line that declares its buffer again as it was included). Two parses
  /// of one line at the same generation give the same statement
  /// (LineMemo).
  std::uint64_t generation() const { return generation_; }
  /// Statements whose parse only reads the parser's state (names, buffers,
  /// devices), or changes it only the first time, as a default stream's
  /// first use does: launch, record, wait, sync, copy, free; and `buffer`,
  /// which counts a generation itself when it changes what the parser
  /// knows of its buffer (declared_as_before).
  static bool leaves_parse_state_alone(trace_language::StatementKeyword k) {
    using K = trace_language::StatementKeyword;
    return k == K::Launch || k == K::Record || k == K::Wait || k == K::Sync || k == K::Copy || k == K::Free ||
           k == K::Buffer;
  }
  /// `statement`, parsed from a line before, is what `line` parses to
  /// (LineMemo): its line set to `line`, and a `buffer`'s declaration line,
  /// which only messages quote, moved there as a parse would have moved it.
  void reparsed_at(Statement& statement, int line) {
    std::visit([&](ast::Source& src) { src.line = line; }, statement);
    if (const auto* buffer = std::get_if<ast::BufferDecl>(&statement)) buffers_.at(buffer->name).line = line;
  }

  void parse_line(std::string_view line, int line_no) {
    line_ = line_no;
    tokenize(line);
    if (toks_.empty()) return;
    ast::Source src;
    src.line = line_no;
    src.thread = main_thread_;
    thread_ = src.thread;
    if (toks_[0].text[0] == '@') {
      const Token t = toks_[0];
      const std::string name(t.text.substr(1));
      const auto* it = names_.find(name);
      if (it == nullptr)
        fail(t.col,
             fmt::format("unknown thread '{}' (declare it with 'thread {}')", shown_input(name), shown_input(name)));
      if (it->value.kind != NameKind::Thread)
        fail(t.col, fmt::format("'{}' is {}, not a thread", name, with_article(it->value.kind)));
      src.thread = it->value.name;
      thread_ = src.thread;
      ++pos_;
      if (at_end()) fail(end_col_, fmt::format("expected a statement after '{}'", shown_input(t.text)));
    }
    const Token kw = toks_[pos_++];
    if (streamed_) {
      // A streamed statement runs before the next line is read, and no
      // report reads its text (statement_texts reads the lines it names
      // again): its words stay views into the line.
      kept_words_.resize(toks_.size());
      for (std::size_t i = 0; i < toks_.size(); ++i) kept_words_[i] = toks_[i].text;
    } else {
      // The words joined, written straight into the store: no copy of the
      // line made first.
      src.text = trace_.texts->keep_written(joined_bytes(), [&](char* out) { write_joined(out); });
    }
    const auto keyword = trace_language::statement_keyword(kw.text);
    if (!keyword) {
      std::string hint;
      for (const auto& s : trace_language::kStatementWords)
        if (edit_distance(kw.text, s.word) <= 2) hint = fmt::format(" (did you mean '{}'?)", s.word);
      fail(kw.col, fmt::format("unknown statement '{}'{}", shown_input(kw.text), hint));
    }
    if (!leaves_parse_state_alone(*keyword)) ++generation_;
    if (streamed_) refuse_unstreamable(*keyword, kw, src.thread);
    if (!blocks_.empty()) inside_block(*keyword, kw, src.thread);
    Statement st = statement(*keyword, kw, std::move(src));
    expect_end();
    declare_pending_name();
    capture_rules(st);
    if (!is_declaration(*keyword) && !first_run_line_) first_run_line_ = line_no;
    trace_.statements.push_back(std::move(st));
  }

 private:
  /// The whole trace's memo: a line's text is a view of the trace's, and
  /// what it parsed to the index of its statement, whose words view the
  /// trace's store, as a copy of it may.
  using WholeTraceMemo = LineMemo<std::string_view, std::size_t>;
  /// parse_line, or a copy of the statement a line of the same text parsed
  /// to at this generation, while no `if` block and no capture is open
  /// (inside one a statement's parse reads and changes what is open).
  void parse_line_or_reuse(WholeTraceMemo& memo, std::string_view line, int line_no) {
    if (!blocks_.empty() || !captures_.empty() || !capturing_.empty()) return parse_line(line, line_no);
    if (const WholeTraceMemo::Slot* seen = memo.find(line, generation_)) {
      trace_.statements.push_back(trace_.statements[seen->kept]);
      reparsed_at(trace_.statements.back(), line_no);
      return;
    }
    WholeTraceMemo::Slot& slot = memo.take(line);
    const std::uint64_t before = generation_;
    const std::size_t index = trace_.statements.size();
    parse_line(line, line_no);
    if (trace_.statements.size() > index && WholeTraceMemo::keep(slot, before, generation_)) slot.kept = index;
  }

  /// The line's words joined by one space (none before a comma): how many
  /// bytes, and written at `out`, each word's place noted in kept_words_.
  bool spaced(std::size_t i) const { return i > 0 && toks_[i].text != ","; }
  std::size_t joined_bytes() const {
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < toks_.size(); ++i) bytes += toks_[i].text.size() + (spaced(i) ? 1 : 0);
    return bytes;
  }
  void write_joined(char* out) {
    kept_words_.resize(toks_.size());
    for (std::size_t i = 0; i < toks_.size(); ++i) {
      if (spaced(i)) *out++ = ' ';
      kept_words_[i] = std::string_view(out, toks_[i].text.size());
      out = std::copy(toks_[i].text.begin(), toks_[i].text.end(), out);
    }
  }

  /// A streamed check (TraceReader) runs each statement once, as it is
  /// read, on the main thread, with the resource and pool made before the
  /// first statement runs: what needs more is an error at its line.
  void refuse_unstreamable(trace_language::StatementKeyword keyword, const Token& kw, const Name& thread) const {
    using K = trace_language::StatementKeyword;
    constexpr std::string_view kWithout = "; check the trace without --stream";
    if (thread != main_thread_)
      fail(toks_[0].col, fmt::format("a streamed check runs the trace on one host thread, in file order: '{}' is a "
                                     "statement of thread {}{}",
                                     shown_input(toks_[0].text), thread, kWithout));
    switch (keyword) {
      case K::Thread:
      case K::Spawn:
      case K::Join:
      case K::Lock:
      case K::Unlock:
      case K::Send:
      case K::Receive:
      case K::Mutex:
      case K::Channel:
        fail(kw.col, fmt::format("a streamed check runs the trace on one host thread, in file order: '{}' is for "
                                 "host threads (R6){}",
                                 kw.text, kWithout));
      case K::If:
      case K::Else:
      case K::End:
        fail(kw.col, fmt::format("a streamed check runs each statement once, as it is read: '{}' belongs to an "
                                 "'if done' block (R11), whose statements a run may skip or read on another "
                                 "branch{}",
                                 kw.text, kWithout));
      case K::Capture:
        fail(kw.col, fmt::format("a streamed check forgets each statement once it has run: a graph capture (R14) "
                                 "is run again at each 'launch graph'{}",
                                 kWithout));
      case K::Policy:
      case K::Resource:
        if (first_run_line_)
          fail(kw.col, fmt::format("in a streamed check, '{}' lines come before the first statement that runs "
                                   "(line {}): the pool and the resource are made before it runs",
                                   kw.text, *first_run_line_));
        return;
      default:
        return;
    }
  }

  struct BufferInfo;  // what the parser knows of a buffer (below)
  [[noreturn]] void fail(int col, const std::string& message) const { throw TraceError(file_, line_, col, message); }

  const Token& next(const char* what) {
    if (pos_ >= toks_.size()) fail(end_col_, fmt::format("expected {} at the end of the line", what));
    return toks_[pos_++];
  }
  bool peek(std::string_view word) const { return pos_ < toks_.size() && toks_[pos_].text == word; }
  bool at_end() const { return pos_ >= toks_.size(); }
  // The messages below are made only when they are said: a statement's
  // words are read a million times in a large trace.
  void expect(std::string_view word) {
    if (at_end()) fail(end_col_, fmt::format("expected '{}' at the end of the line", word));
    const Token& t = toks_[pos_++];
    if (t.text != word) fail(t.col, fmt::format("expected '{}', found '{}'", word, shown_input(t.text)));
  }
  void expect_end() {
    if (!at_end())
      fail(toks_[pos_].col, fmt::format("unexpected '{}' at the end of the statement", shown_input(toks_[pos_].text)));
  }

  /// What a declared name is, and its Name in the trace's table (one
  /// lookup finds both).
  struct Declared {
    NameKind kind;
    Name name;
  };
  void declare(std::string_view text, NameKind kind) { names_.insert_or_assign(text, Declared{kind, intern(text)}); }
  Name intern(std::string_view text) { return trace_.names->intern(text); }

  Name new_name(NameKind kind) {
    if (at_end()) fail(end_col_, fmt::format("expected {} name at the end of the line", to_string(kind)));
    const Token& t = toks_[pos_++];
    check_name_syntax(t);
    predeclared(t);
    const auto* it = names_.find(t.text);
    // A buffer may be made again; a stream or event once its `destroy` came (R9).
    const bool again =
        it != nullptr && it->value.kind == kind && (kind == NameKind::Buffer || destroyed_.contains(t.text));
    if (it != nullptr && !again)
      fail(t.col, fmt::format("'{}' is already declared as {}{}", shown_input(t.text), with_article(it->value.kind),
                              kind == it->value.kind ? fmt::format(" (destroy {} {} first to make a new one)",
                                                                   to_string(kind), shown_input(t.text))
                                                     : ""));
    // Declared once the whole statement has parsed (declare_pending_name):
    // until then the line's own references see the names as they were
    // before it, so 'suballoc X 8 from X[0:8]' cannot find the X it makes.
    if (pending_name_)  // a statement declares one name
      throw std::logic_error(fmt::format("internal: line {} declares both '{}' and '{}'", line_, pending_name_->name,
                                         shown_input(t.text)));
    pending_name_ = PendingName{it != nullptr ? it->value.name : intern(t.text), kind};
    return pending_name_->name;
  }
  void declare_pending_name() {
    if (!pending_name_) return;
    destroyed_.erase(pending_name_->name);
    names_.insert_or_assign(pending_name_->name, Declared{pending_name_->kind, pending_name_->name});
    pending_name_.reset();
  }
  void check_name_syntax(const Token& t) const {
    const std::string_view s = t.text;
    const bool ok = !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_') &&
                    std::all_of(s.begin(), s.end(), [](char c) {
                      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
                    });
    if (!ok)
      fail(t.col, fmt::format("'{}' is not a valid name (letters, digits, _ . -; starting with a letter or _)",
                              shown_input(s)));
    if (s.size() > kMaxNameBytes)
      fail(t.col,
           fmt::format("the name '{}' is too long (names have at most {} characters)", shown_input(s), kMaxNameBytes));
    if (trace_language::is_keyword(s)) fail(t.col, fmt::format("'{}' is a keyword and cannot be used as a name", s));
  }
  /// The names every trace declares before its first line cannot be
  /// declared again; say what they are.
  void predeclared(const Token& t) const {
    if (t.text == kPlainAllocationStream)
      fail(t.col, fmt::format("'{}' is the legacy default stream (stream 0), which every trace has: use it as it "
                              "is ('launch K on {}'), and choose another name for a stream of your own",
                              t.text, t.text));
    if (t.text == kPerThreadStream)
      fail(t.col, fmt::format("'{}' is the per-thread default stream of the thread that names it "
                              "(cudaStreamPerThread), which every trace has: use it as it is, and choose another "
                              "name for a stream of your own",
                              t.text));
    if (t.text == kMainThread)
      fail(t.col, fmt::format("'{}' is the host thread the trace starts on, which every trace has: choose another "
                              "name",
                              t.text));
  }
  Name use_name(NameKind kind, const char* what) {
    const Token& t = next(what);
    const auto* it = names_.find(t.text);
    if (it == nullptr)
      fail(t.col, fmt::format("unknown {} '{}' (declare it with '{} {}{}')", to_string(kind), shown_input(t.text),
                              to_string(kind), shown_input(t.text), kind == NameKind::Buffer ? " BYTES" : ""));
    if (it->value.kind != kind)
      fail(t.col,
           fmt::format("'{}' is {}, not {}", shown_input(t.text), with_article(it->value.kind), with_article(kind)));
    if (kind == NameKind::Buffer) made_in_both_branches(t.text, t.col);
    if (kind == NameKind::Stream && t.text == kPerThreadStream)  // R8: the running thread's, R13: on its device
      return default_stream(fmt::format("{}{}{}", kPerThreadStream, kThreadMark, thread_), StreamKind::Blocking,
                            current_device());
    if (kind == NameKind::Stream && t.text == kPlainAllocationStream) return legacy_of(current_device());
    return it->value.name;
  }
  /// How reports call default stream `name` on `device`; notes its first use.
  Name default_stream(const std::string& name, StreamKind kind, DeviceNumber device) {
    std::string reported = on_device(name, device);
    if (reported == kPlainAllocationStream) return intern(reported);  // device 0's legacy stream: always made first
    auto& used = trace_.default_streams;
    if (std::none_of(used.begin(), used.end(), [&](const auto& d) { return d.name == reported; })) {
      used.push_back(Trace::DefaultStream{reported, kind, device});
      stream_device_[reported] = device;
    }
    return intern(reported);
  }
  /// The legacy default stream of `device` (R13), which plain `buffer` and
  /// `free` run on.
  Name legacy_of(DeviceNumber device) {
    if (device == 0) return names_.find(kPlainAllocationStream)->value.name;  // declared by the constructor
    return default_stream(std::string(kPlainAllocationStream), StreamKind::LegacyDefault, device);
  }
  /// The running thread's current device (R13: `device N`; 0 until then).
  DeviceNumber current_device() const {
    if (thread_device_.empty()) return 0;  // no `device N` yet: no name hashed for nothing
    auto it = thread_device_.find(thread_);
    return it == thread_device_.end() ? 0 : it->second;
  }
  /// The device of a stream as use_name returns it (R13).
  DeviceNumber device_of(const std::string& stream) const {
    // No `device N` yet: every stream so far was made on device 0.
    if (thread_device_.empty()) return 0;
    auto it = stream_device_.find(stream);
    return it == stream_device_.end() ? 0 : it->second;
  }
  /// The column of the next token (the end of the line after the last).
  int next_col() const { return pos_ < toks_.size() ? toks_[pos_].col : end_col_; }
  /// The value of number token `t`, or nullopt when it is larger than
  /// `max`; fails when `t` is not a number.
  std::optional<std::uint64_t> number_up_to(const Token& t, std::uint64_t max) const {
    const ParsedNumber n = parse_number(t.text, max);
    if (n.problem == NumberProblem::NotANumber) fail(t.col, fmt::format("'{}' is not a number", shown_input(t.text)));
    if (n.problem == NumberProblem::TooLarge) return std::nullopt;
    return n.value;
  }
  std::uint64_t number(const Token& t) const {
    const auto v = number_up_to(t, UINT64_MAX);
    if (!v)
      fail(t.col,
           fmt::format("number '{}' is too large (the largest is 2^64-1 = {})", shown_input(t.text), UINT64_MAX));
    return *v;
  }
  /// The byte count of `buffer` or `allocate`: 1 .. kMaxBufferBytes.
  std::uint64_t size_arg() {
    const Token& t = next("a byte count");
    const auto n = number_up_to(t, kMaxBufferBytes);
    if (!n)
      fail(t.col, fmt::format("a buffer of '{}' bytes is too large: the largest accepted size is {} bytes (2^48, "
                              "256 TiB)",
                              shown_input(t.text), kMaxBufferBytes));
    if (*n == 0) fail(t.col, "a buffer needs at least 1 byte");
    return *n;
  }
  Name stream_after_on() {
    expect(trace_language::word::kOn);
    return use_name(NameKind::Stream, "a stream after 'on'");
  }
  /// A buffer reference and what the parser knows of its buffer (one
  /// lookup for the caller and the range check).
  struct KnownRef {
    BufferRef ref;
    const BufferInfo* info;  // into buffers_, never null
  };
  BufferRef ref() { return known_ref().ref; }
  KnownRef known_ref() {
    const Token& t = next("a buffer");
    BufferRef r;
    const auto bracket = t.text.find('[');
    const std::string_view buffer = t.text.substr(0, bracket);
    const auto* it = names_.find(buffer);
    // A declared name is no keyword (declarations refuse keywords), so only
    // a name not found is searched among the keywords, for a clearer error.
    if (it == nullptr && trace_language::is_keyword(t.text))
      fail(t.col, fmt::format("expected a buffer, found the keyword '{}' (',' separates the buffers of one access: "
                              "'reads A, B writes C')",
                              t.text));
    if (it == nullptr)
      fail(t.col, fmt::format("unknown buffer '{}' (declare it with 'buffer {} BYTES')", shown_input(buffer),
                              shown_input(buffer)));
    if (it->value.kind != NameKind::Buffer)
      fail(t.col, fmt::format("'{}' is {}, not a buffer", shown_input(buffer), with_article(it->value.kind)));
    r.buffer = it->value.name;
    made_in_both_branches(r.buffer, t.col);
    const BufferInfo& b = buffers_.at(r.buffer);
    if (bracket == std::string::npos) return {std::move(r), &b};
    const int col = t.col + static_cast<int>(bracket);
    const auto colon = t.text.find(':', bracket);
    if (t.text.back() != ']' || colon == std::string::npos)
      fail(col, fmt::format("a byte range is written [LO:HI], found '{}'", shown_input(t.text.substr(bracket))));
    r.lo = number(Token{t.text.substr(bracket + 1, colon - bracket - 1), col + 1});
    r.hi =
        number(Token{t.text.substr(colon + 1, t.text.size() - colon - 2), col + static_cast<int>(colon - bracket) + 1});
    if (*r.hi <= r.lo) fail(col, fmt::format("byte range [{}:{}] is empty or reversed", r.lo, *r.hi));
    const std::uint64_t size = b.bytes;
    if (*r.hi > size)
      fail(col, fmt::format("byte range [{}:{}] goes past the end of {} ({} bytes)", r.lo, *r.hi, r.buffer, size));
    return {std::move(r), &b};
  }
  /// Who touches the buffers of an access list (R12): a kernel touches
  /// device memory and pinned host memory, the host (and a host function)
  /// host memory only.
  enum class Toucher : std::uint8_t { Device, Host };
  /// A buffer of an access list, which `who` may touch (R12).
  BufferRef touched_ref(Toucher who, DeviceNumber kernel_device) {
    const int col = next_col();
    auto [r, info] = known_ref();
    const BufferInfo& b = *info;
    if (who == Toucher::Device && !b.host() && b.device != kernel_device)
      fail(col, fmt::format("'{}' is memory of device {} (line {}) but the kernel runs on device {}: peer access is "
                            "not modelled; copy the bytes to a buffer of device {} ('copy')",
                            r.buffer, b.device, b.line, kernel_device, kernel_device));
    if (who == Toucher::Device && b.memory == BufferInfo::Memory::Pageable)
      fail(col, fmt::format("'{}' is pageable host memory (line {}): a kernel cannot touch it; declare it 'pinned' "
                            "(cudaMallocHost) or copy it to a device buffer",
                            r.buffer, b.line));
    if (who == Toucher::Host && !b.host())
      fail(col, fmt::format("'{}' is device memory (line {}): the host cannot touch it; copy it to a host buffer "
                            "('buffer NAME BYTES pinned') and touch that",
                            r.buffer, b.line));
    return r;
  }
  /// R12: `thread` touches host memory itself, so it gets a host stream.
  void touches_host_memory(std::string_view thread) {
    if (std::find(trace_.host_threads.begin(), trace_.host_threads.end(), thread) == trace_.host_threads.end())
      trace_.host_threads.emplace_back(thread);
  }
  /// The bytes `r` names, as offsets into its buffer.
  std::pair<std::uint64_t, std::uint64_t> range_of(const BufferRef& r) const {
    return {r.lo, r.hi.value_or(buffers_.at(r.buffer).bytes)};
  }
  std::string describe(const BufferRef& r) const {
    const auto [lo, hi] = range_of(r);
    return fmt::format("{}[{}:{}]", r.buffer, lo, hi);
  }
  /// The accesses after a kernel's stream; `launch` may have none (a kernel
  /// that touches no buffer the trace knows still runs on its stream), `run`
  /// needs one (the resource brackets the blocks it uses).
  AccessList accesses(bool may_be_empty, Toucher who, DeviceNumber kernel_device = 0) {
    // Gathered in a vector the parser keeps, then copied into the store.
    std::vector<BufferAccess>& out = access_scratch_;
    out.clear();
    while (!at_end()) {
      const Token& t = next("an access");
      Access a;
      if (t.text == trace_language::word::kReads)
        a = Access::Read;
      else if (t.text == trace_language::word::kWrites)
        a = Access::Write;
      else if (t.text == trace_language::word::kReadWrites)
        a = Access::ReadWrite;
      else
        fail(t.col, fmt::format("expected 'reads', 'writes' or 'readwrites', found '{}'", shown_input(t.text)));
      out.push_back(BufferAccess{a, touched_ref(who, kernel_device)});
      while (peek(",")) {
        ++pos_;
        out.push_back(BufferAccess{a, touched_ref(who, kernel_device)});
      }
    }
    if (out.empty() && !may_be_empty) fail(end_col_, "expected 'reads', 'writes' or 'readwrites' and the blocks used");
    return trace_.texts->keep_array(std::span<const BufferAccess>(out));
  }
  Access access_word() {
    const Token& t = next("an access (read, write or read_write)");
    if (t.text == trace_language::word::kRead) return Access::Read;
    if (t.text == trace_language::word::kWrite) return Access::Write;
    if (t.text == trace_language::word::kReadWrite) return Access::ReadWrite;
    fail(t.col, fmt::format("expected 'read', 'write' or 'read_write', found '{}'", shown_input(t.text)));
  }
  void need_resource(const Token& t) const {
    if (!trace_.uses_resource) fail(t.col, fmt::format("'{}' needs a 'resource' line before it", t.text));
  }

  void tokenize(std::string_view line) {
    toks_.clear();
    pos_ = 0;
    std::size_t i = 0;
    end_col_ = 1;
    // A UTF-8 byte order mark (some editors write one) is not a word;
    // columns still count it, as they count bytes.
    if (line_ == 1 && line.starts_with(kUtf8ByteOrderMark)) i = kUtf8ByteOrderMark.size();
    while (i < line.size()) {
      const CharClass c = char_class(line[i]);
      if (c == CharClass::Comment) break;
      if (c == CharClass::Blank) {
        ++i;
        continue;
      }
      if (c == CharClass::Punct) {
        toks_.push_back(Token{line.substr(i, 1), static_cast<int>(i) + 1});
        ++i;
        end_col_ = static_cast<int>(i) + 1;
        continue;
      }
      const std::size_t start = i;
      while (i < line.size() && char_class(line[i]) == CharClass::Word) ++i;
      toks_.push_back(Token{line.substr(start, i - start), static_cast<int>(start) + 1});
      end_col_ = static_cast<int>(i) + 1;
    }
  }
  /// What a byte is to the tokenizer: one table lookup, not six compares a
  /// byte in its inner loop.
  enum class CharClass : std::uint8_t { Word, Blank, Punct, Comment };
  static CharClass char_class(char c) {
    static constexpr std::array<CharClass, 256> kClasses = [] {
      std::array<CharClass, 256> t{};  // CharClass::Word
      t[' '] = t['\t'] = t['\r'] = CharClass::Blank;
      t[','] = t['='] = CharClass::Punct;  // a word of its own
      t['#'] = CharClass::Comment;         // the rest of the line
      return t;
    }();
    return kClasses[static_cast<unsigned char>(c)];
  }

  /// Parses the rest of a statement that starts with `keyword`.
  Statement statement(trace_language::StatementKeyword keyword, const Token& kw, ast::Source src) {
    using K = trace_language::StatementKeyword;
    switch (keyword) {
      case K::Stream: {
        ast::StreamDecl st{std::move(src), new_name(NameKind::Stream)};
        if (peek(trace_language::word::kNonBlocking)) {
          ++pos_;
          st.kind = StreamKind::NonBlocking;
        }
        if (peek(trace_language::word::kHandle)) {  // R9c
          ++pos_;
          const int col = next_col();
          const Name older = use_name(NameKind::Stream, "a destroyed stream");
          if (older == st.name)
            fail(col, fmt::format("'stream {}' declared again after its destroy already stands for a stream with "
                                  "{}'s handle (R9): drop 'handle {}'",
                                  st.name, older, older));
          if (!destroyed_.contains(older))
            fail(col, fmt::format("stream {} is not destroyed: a handle comes back only after 'destroy stream {}'",
                                  older, older));
          st.handle_of = older;
        }
        st.device = current_device();
        stream_device_[st.name] = st.device;
        trace_.streams.push_back(st.name);
        return st;
      }
      case K::Event: {
        ast::EventDecl st{std::move(src), new_name(NameKind::Event)};
        st.device = current_device();
        return st;
      }
      case K::Capture:
        return capture(std::move(src));
      case K::Device: {
        const Token& t = next("a device number");
        const auto n = number_up_to(t, kMaxDevices - 1);
        if (!n)
          fail(t.col, fmt::format("device '{}' is out of range: a trace uses devices 0 to {}", shown_input(t.text),
                                  kMaxDevices - 1));
        thread_device_[std::string(thread_)] = static_cast<DeviceNumber>(*n);
        ast::SetDevice st{std::move(src)};
        st.device = static_cast<DeviceNumber>(*n);
        return st;
      }
      case K::Thread:
        return ast::ThreadDecl{std::move(src), new_name(NameKind::Thread), false};
      case K::Mutex:
        return ast::MutexDecl{std::move(src), new_name(NameKind::Mutex)};
      case K::Channel:
        return ast::ChannelDecl{std::move(src), new_name(NameKind::Channel)};
      case K::Spawn:
      case K::Join:
        return thread_control(keyword == K::Spawn, std::move(src));
      case K::Lock:
      case K::Unlock:
        return mutex_use(keyword == K::Lock, std::move(src));
      case K::Send:
        return ast::Send{std::move(src), use_name(NameKind::Channel, "a channel")};
      case K::Receive:
        return ast::Receive{std::move(src), use_name(NameKind::Channel, "a channel")};
      case K::Policy:
        // The pool's switches hold for the whole run: one after the first
        // statement that runs would silently apply to the ops before it too.
        if (first_run_line_)
          fail(kw.col, fmt::format("'policy' must come before the first statement that runs (line {}): the pool's "
                                   "switches hold for the whole run",
                                   *first_run_line_));
        pool_switch();
        return ast::PoolSwitch{std::move(src)};
      case K::Buffer: {
        ast::BufferDecl st{std::move(src), new_name(NameKind::Buffer), size_arg(), std::nullopt};
        if (peek(trace_language::word::kPageable) || peek(trace_language::word::kPinned)) {
          ++generation_;  // host buffers: not memoized
          const bool pinned = toks_[pos_++].text == trace_language::word::kPinned;
          made_in_branch(st.name, BufferInfo::MadeBy::HostBuffer);
          buffers_.insert_or_assign(st.name,
                                    BufferInfo{st.bytes, line_, BufferInfo::MadeBy::HostBuffer,
                                               pinned ? BufferInfo::Memory::Pinned : BufferInfo::Memory::Pageable});
          touches_host_memory(st.thread);
          return ast::HostBuffer{static_cast<const ast::Source&>(st), st.name, st.bytes, pinned};
        }
        const std::optional<BufferInfo> before = known_buffer(st.name);
        made_in_branch(st.name, BufferInfo::MadeBy::Buffer);
        buffers_.insert_or_assign(st.name, BufferInfo{st.bytes, line_, BufferInfo::MadeBy::Buffer});
        if (!at_end()) st.stream = stream_after_on();
        st.device = st.stream ? device_of(*st.stream) : current_device();
        if (!st.stream) legacy_of(st.device);
        buffers_.at(st.name).device = st.device;
        if (!declared_as_before(before, buffers_.at(st.name))) ++generation_;
        return st;
      }
      case K::Free: {
        ast::Free st{std::move(src), buffer_made_by(BufferInfo::MadeBy::Buffer, kw.text), std::nullopt};
        if (const BufferInfo& b = buffers_.at(st.buffer); b.host()) {
          if (!at_end())
            fail(next_col(), fmt::format("'{}' is host memory (line {}): the host frees it ('free {}': free or "
                                         "cudaFreeHost), on no stream",
                                         st.buffer, b.line, st.buffer));
          touches_host_memory(st.thread);
          return ast::HostFree{static_cast<const ast::Source&>(st), st.buffer};
        }
        if (!at_end()) st.stream = stream_after_on();
        st.device = buffers_.at(st.buffer).device;
        if (!st.stream) legacy_of(st.device);  // R13: cudaFree runs on the buffer's device
        return st;
      }
      case K::Host: {
        touches_host_memory(src.thread);
        return ast::HostAccess{std::move(src), accesses(/*may_be_empty=*/false, Toucher::Host)};
      }
      case K::Callback: {
        ast::Callback st{std::move(src), intern(kernel_name("a host function's name")), {}, {}};
        st.stream = stream_after_on();
        st.accesses = accesses(/*may_be_empty=*/true, Toucher::Host);
        return st;
      }
      case K::SubAlloc:
        return suballoc(std::move(src));
      case K::If: {
        const Token& word = next("'done'");
        if (word.text != trace_language::word::kDone)
          fail(word.col, fmt::format("expected 'done' after 'if', found '{}' (the condition is an event's query: "
                                     "'if done E')",
                                     shown_input(word.text)));
        ast::IfDone st{std::move(src), use_name(NameKind::Event, "an event"), 0, 0};
        blocks_.push_back(Block{line_, std::string(st.thread), trace_.statements.size(), std::nullopt, {}, {}, {}});
        return st;
      }
      case K::Else: {
        if (blocks_.empty()) fail(kw.col, "'else' without an 'if done E' before it");
        Block& b = blocks_.back();
        if (b.else_index)
          fail(kw.col, fmt::format("a second 'else' for the 'if' at line {} (its first is at line {})", b.if_line,
                                   source(trace_.statements[*b.else_index]).line));
        b.else_index = trace_.statements.size();
        return ast::Else{std::move(src), 0};
      }
      case K::End:
        if (blocks_.empty()) fail(kw.col, "'end' without an 'if done E' before it");
        close_block();
        return ast::End{std::move(src)};
      case K::SubFree: {
        ast::SubFree st{std::move(src), buffer_made_by(BufferInfo::MadeBy::SubAlloc, kw.text), {}};
        st.stream = stream_after_on();
        return st;
      }
      case K::RecordStream: {
        ast::RecordStream st{std::move(src), buffer_made_by(BufferInfo::MadeBy::SubAlloc, kw.text), {}};
        st.stream = stream_after_on();
        return st;
      }
      case K::Launch: {
        if (peek(trace_language::word::kGraph)) {  // `launch graph G on S` (R14b)
          ++pos_;
          ast::GraphLaunch st{std::move(src), use_name(NameKind::Graph, "a graph"), {}};
          st.stream = stream_after_on();
          if (device_of(st.stream) != graphs_.at(st.graph).device)
            fail(col_of(st.stream),
                 fmt::format("graph {} was captured on device {} (line {}) but {} is a stream of device {}: "
                             "cudaGraphLaunch needs a stream of the graph's device",
                             st.graph, graphs_.at(st.graph).device, graphs_.at(st.graph).line, st.stream,
                             device_of(st.stream)));
          return st;
        }
        ast::Launch st{std::move(src), kernel_name("a kernel name"), {}, {}};
        st.stream = stream_after_on();
        st.accesses = accesses(/*may_be_empty=*/true, Toucher::Device, device_of(st.stream));
        return st;
      }
      case K::Run: {
        need_resource(kw);
        ast::Run st{std::move(src), kernel_name("a kernel name"), {}, {}};
        st.stream = stream_after_on();
        st.accesses = accesses(/*may_be_empty=*/false, Toucher::Device, device_of(st.stream));
        return st;
      }
      case K::Copy: {
        ast::Copy st{std::move(src), intern(kernel_name("a copy name")), {}, {}, {}};
        st.stream = stream_after_on();
        expect(trace_language::word::kFrom);
        st.from = ref();
        expect(trace_language::word::kTo);
        const int to_col = next_col();
        st.to = ref();
        copy_sizes_match(st, to_col);
        st.host_to_host = buffers_.at(st.from->buffer).host() && buffers_.at(st.to->buffer).host();
        return st;
      }
      case K::Record: {
        ast::Record st{std::move(src), use_name(NameKind::Event, "an event"), {}};
        st.stream = stream_after_on();
        return st;
      }
      case K::Wait: {
        ast::Wait st{std::move(src), {}, use_name(NameKind::Event, "an event")};
        st.stream = stream_after_on();
        return st;
      }
      case K::Sync: {
        const Token& what = next("'stream', 'event' or 'device'");
        if (what.text == trace_language::keyword(K::Stream))
          return ast::SyncStream{std::move(src), use_name(NameKind::Stream, "a stream")};
        if (what.text == trace_language::keyword(K::Event))
          return ast::SyncEvent{std::move(src), use_name(NameKind::Event, "an event")};
        if (what.text == trace_language::word::kDevice) {
          ast::SyncDevice st{std::move(src)};
          st.device = current_device();  // R13c
          return st;
        }
        fail(what.col, fmt::format("expected 'stream', 'event' or 'device' after 'sync', found '{}'", what.text));
      }
      case K::Query:
        return ast::Query{std::move(src), use_name(NameKind::Event, "an event")};
      case K::Destroy:
        return destroy(std::move(src));
      case K::Resource:
        resource_options(kw);
        return ast::ResourceDecl{std::move(src)};
      case K::Allocate: {
        need_resource(kw);
        ast::Allocate st{std::move(src), new_name(NameKind::Buffer), size_arg(), {}};
        made_in_branch(st.buffer, BufferInfo::MadeBy::Allocate);
        buffers_.insert_or_assign(st.buffer, BufferInfo{st.bytes, line_, BufferInfo::MadeBy::Allocate});
        st.stream = stream_after_on();
        buffers_.at(st.buffer).device = device_of(st.stream);
        return st;
      }
      case K::Deallocate:
        need_resource(kw);
        return ast::Deallocate{std::move(src), use_name(NameKind::Buffer, "a buffer")};
      case K::Prepare:
        return block_use<ast::Prepare>(kw, std::move(src));
      case K::Finish:
        return block_use<ast::Finish>(kw, std::move(src));
      case K::Reap:
        need_resource(kw);
        return ast::Reap{std::move(src)};
    }
    fail(kw.col, fmt::format("unknown statement '{}'", kw.text));
  }

  // --- stream capture (R14)

  /// What the parser knows of the open capture of one host thread.
  struct OpenCapture {
    Name origin;
    int begin_line = 0;
    int begin_col = 0;
    std::vector<Name> branches;            // origin first, then each stream that joined
    std::map<std::string, int> last_node;  // per branch: the line of its last captured op or wait
    std::set<std::string> joined_back;     // forked branches whose work the origin waited for since
    std::map<std::string, std::pair<std::string, int>> recorded;  // event -> (stream, line), recorded in it
  };
  struct GraphInfo {
    DeviceNumber device = 0;
    int line = 0;
  };

  /// `capture begin S` / `capture end S graph G`.
  Statement capture(ast::Source src) {
    const Token& what = next("'begin' or 'end'");
    const bool begin = what.text == trace_language::word::kBegin;
    if (!begin && what.text != trace_language::keyword(trace_language::StatementKeyword::End))
      fail(what.col, fmt::format("expected 'begin' or 'end' after 'capture', found '{}'", shown_input(what.text)));
    const int col = next_col();
    Name stream = use_name(NameKind::Stream, "a stream");
    auto open = captures_.find(thread_);
    if (begin) {
      if (trace_name_of(stream) == kPlainAllocationStream)
        fail(col,
             "the legacy default stream cannot be captured (cudaStreamBeginCapture refuses stream 0): capture "
             "a stream of your own");
      if (open != captures_.end())
        fail(col, fmt::format("thread {} already captures {} (line {}): end that capture first (one capture at a "
                              "time per thread)",
                              thread_, open->second.origin, open->second.begin_line));
      not_captured_elsewhere(stream, col);
      OpenCapture c{stream, line_, col, {stream}, {}, {}, {}};
      captures_.emplace(thread_, std::move(c));
      capturing_[stream] = thread_;
      return ast::CaptureBegin{std::move(src), std::move(stream)};
    }
    if (open == captures_.end())
      fail(col, fmt::format("no capture is open on this thread ('capture begin {}' first)", stream));
    OpenCapture& c = open->second;
    if (stream != c.origin)
      fail(col, fmt::format("the capture began on {} (line {}): end it on {} (cudaStreamEndCapture takes the stream "
                            "that began it)",
                            c.origin, c.begin_line, c.origin));
    for (const std::string& branch : c.branches)
      if (branch != c.origin && !c.joined_back.contains(branch))
        fail(col, fmt::format("{} joined the capture but its work is not joined back into {}: "
                              "cudaStreamEndCapture fails (cudaErrorStreamCaptureUnjoined); record an event on {} "
                              "after its last captured work and wait for it on {} before this line",
                              branch, c.origin, branch, c.origin));
    expect(trace_language::word::kGraph);
    ast::CaptureEnd st{std::move(src), std::move(stream), new_name(NameKind::Graph), c.begin_line,
                       trace_.texts->keep_array(std::span<const Name>(c.branches))};
    graphs_[st.graph] = GraphInfo{device_of(st.stream), line_};
    for (const std::string& branch : c.branches) capturing_.erase(branch);
    captures_.erase(open);
    return st;
  }
  /// A stream another thread captures cannot be used here.
  /// `col`: where to point at when it is; the column of the stream's
  /// name in the statement when not given (found only then).
  void not_captured_elsewhere(const std::string& stream, std::optional<int> col = std::nullopt) const {
    if (auto it = capturing_.find(stream); it != capturing_.end() && it->second != thread_)
      fail(col ? *col : col_of(stream),
           fmt::format("{} is being captured by thread {} (line {}): another thread cannot use it before that "
                       "thread's 'capture end'",
                       stream, it->second, captures_.at(it->second).begin_line));
  }
  /// The column of the first token after the statement word that names `name`.
  int col_of(const std::string& name) const {
    const std::string written = trace_name_of(name);
    for (std::size_t i = 1; i < toks_.size(); ++i)
      if (toks_[i].text == written || toks_[i].text.rfind(written + "[", 0) == 0) return toks_[i].col;
    return 1;
  }
  /// R14a: what a statement does while its thread has a capture open: work
  /// on a capturing stream is captured (Source::captured_by), a wait on a
  /// captured event from another stream makes that stream join the
  /// capture, and what CUDA refuses during a capture is an error.
  void capture_rules(Statement& statement) {
    // No capture open on any thread: no rule below applies (each needs this
    // thread's capture or a stream being captured), and no name is hashed.
    if (captures_.empty() && capturing_.empty()) return;
    const std::string_view thread = source(statement).thread;
    OpenCapture* c = nullptr;
    if (auto it = captures_.find(thread); it != captures_.end()) c = &it->second;
    const auto capturing = [&](const std::string& stream) {
      return c && capturing_.contains(stream) && capturing_.at(stream) == thread;
    };
    const auto refuse = [&](const std::string& name, const std::string& why) { fail(col_of(name), why); };
    std::visit(
        [&](auto& st) {
          using S = std::decay_t<decltype(st)>;
          if constexpr (requires { st.stream; }) {
            if constexpr (std::is_same_v<std::decay_t<decltype(st.stream)>, Name>)
              not_captured_elsewhere(st.stream);
            else if (st.stream)
              not_captured_elsewhere(*st.stream);
          }
          if constexpr (std::is_same_v<S, ast::Launch> || std::is_same_v<S, ast::Copy> ||
                        std::is_same_v<S, ast::Callback>) {
            if (!capturing(st.stream)) return;
            if constexpr (std::is_same_v<S, ast::Copy>)
              if (st.host_to_host)
                refuse(st.stream,
                       "a copy between two host buffers cannot be captured (it is synchronous with the "
                       "host): make it before 'capture begin' or after 'capture end'");
            st.captured_by = c->begin_line;
            c->last_node[st.stream] = line_;
            c->joined_back.erase(st.stream);
          } else if constexpr (std::is_same_v<S, ast::Record>) {
            if (capturing(st.stream)) {
              st.captured_by = c->begin_line;
              c->recorded[st.event] = {st.stream, line_};
            } else if (c) {
              c->recorded.erase(st.event);  // recorded again outside the capture
            }
          } else if constexpr (std::is_same_v<S, ast::Wait>) {
            const bool captured_event = c && c->recorded.contains(st.event);
            if (capturing(st.stream) && !captured_event)
              refuse(st.event, fmt::format("{} was not recorded in this capture: a captured stream waits only for "
                                           "work of its own capture (cudaErrorStreamCaptureIsolation); wait before "
                                           "'capture begin' (line {})",
                                           st.event, c->begin_line));
            if (!captured_event) return;
            if (!capturing(st.stream)) {  // R14a: the stream joins the capture
              c->branches.push_back(st.stream);
              capturing_[st.stream] = thread;
            }
            st.captured_by = c->begin_line;
            const auto& [from, at] = c->recorded.at(st.event);
            if (st.stream == c->origin && from != c->origin && at >= c->last_node[from]) c->joined_back.insert(from);
            if (st.stream != c->origin) {
              c->last_node[st.stream] = line_;
              c->joined_back.erase(st.stream);
            }
          } else if constexpr (std::is_same_v<S, ast::SyncStream>) {
            if (capturing(st.stream))
              refuse(st.stream, fmt::format("{} is being captured (line {}): it cannot be synchronized "
                                            "(cudaErrorStreamCaptureUnsupported); end the capture first",
                                            st.stream, c->begin_line));
          } else if constexpr (std::is_same_v<S, ast::SyncDevice>) {
            if (c)
              fail(1, fmt::format("'sync device' during the capture of {} (line {}) is refused "
                                  "(cudaErrorStreamCaptureUnsupported) and invalidates the capture; end it first",
                                  c->origin, c->begin_line));
          } else if constexpr (std::is_same_v<S, ast::SyncEvent> || std::is_same_v<S, ast::Query> ||
                               std::is_same_v<S, ast::IfDone>) {
            if (c && c->recorded.contains(st.event))
              refuse(st.event, fmt::format("{} was last recorded in the capture of {} (line {}): it cannot be "
                                           "synchronized or queried (cudaErrorCapturedEvent)",
                                           st.event, c->origin, c->begin_line));
          } else if constexpr (std::is_same_v<S, ast::BufferDecl> || std::is_same_v<S, ast::Free>) {
            if (st.stream && capturing(*st.stream))
              refuse(*st.stream, fmt::format("a stream-ordered allocation or free on {} inside its capture would be "
                                             "a graph memory node, which traces do not model: make it before "
                                             "'capture begin' (line {}) or after 'capture end'",
                                             *st.stream, c->begin_line));
            if (!st.stream && c)
              fail(1, fmt::format("a plain '{}' (cudaMalloc / cudaFree) during the capture of {} (line {}) is "
                                  "refused in global capture mode; make it before or after the capture",
                                  source(statement).text.substr(0, source(statement).text.find(' ')), c->origin,
                                  c->begin_line));
          } else if constexpr (std::is_same_v<S, ast::DestroyStream>) {
            if (capturing(st.stream))
              refuse(st.stream, fmt::format("{} is being captured (line {}): end the capture before destroying it",
                                            st.stream, c->begin_line));
          } else if constexpr (std::is_same_v<S, ast::GraphLaunch>) {
            if (capturing(st.stream))
              refuse(st.stream,
                     "launching a graph into a capture (a child graph) is not modelled: launch it "
                     "after 'capture end'");
          } else if constexpr (std::is_same_v<S, ast::Allocate> || std::is_same_v<S, ast::Deallocate> ||
                               std::is_same_v<S, ast::Prepare> || std::is_same_v<S, ast::Finish> ||
                               std::is_same_v<S, ast::Reap> || std::is_same_v<S, ast::Run>) {
            if (c)
              fail(1, fmt::format("the resource's calls cannot run during the capture of {} (line {}) (they "
                                  "synchronize and query events): call it before or after the capture",
                                  c->origin, c->begin_line));
          }
        },
        statement);
  }

  /// `destroy stream S` / `destroy event E` (R9): of a declared stream or
  /// event, never of `legacy`. Using the name afterwards is a finding at run
  /// time (other threads may still run before the destroy); declaring it
  /// again makes a new one.
  Statement destroy(ast::Source src) {
    using K = trace_language::StatementKeyword;
    const Token& what = next("'stream' or 'event'");
    const bool stream = what.text == trace_language::keyword(K::Stream);
    if (!stream && what.text != trace_language::keyword(K::Event))
      fail(what.col, fmt::format("expected 'stream' or 'event' after 'destroy', found '{}' (a buffer is given back "
                                 "with 'free')",
                                 shown_input(what.text)));
    const int col = next_col();
    Name name = stream ? use_name(NameKind::Stream, "a stream") : use_name(NameKind::Event, "an event");
    if (stream && trace_name_of(name) == kPlainAllocationStream)
      fail(col, "the legacy default stream cannot be destroyed (cudaStreamDestroy of stream 0 is an error)");
    if (stream && trace_name_of(name) == kPerThreadStream)
      fail(col, "a per-thread default stream cannot be destroyed (cudaStreamPerThread is not a stream you made)");
    destroyed_.insert(name);
    if (stream) return ast::DestroyStream{std::move(src), std::move(name)};
    return ast::DestroyEvent{std::move(src), std::move(name)};
  }

  /// What the parser knows of buffer `name` now, if it is one.
  std::optional<BufferInfo> known_buffer(Name name) const {
    const auto* it = names_.find(name);
    if (it == nullptr || it->value.kind != NameKind::Buffer || !buffers_.contains(name)) return std::nullopt;
    return buffers_.at(name);
  }
  /// Whether a `buffer` line left the parser as it found it, but for the
  /// declaration's line (which only messages quote): the name was a buffer
  /// already, made by `buffer` with the same size, memory and device, and
  /// outside `if` blocks (whose bookkeeping a declaration changes). Then
  /// every later line parses as it did before it, and the line itself
  /// parses to the same statement again (LineMemo: a loop that gives a
  /// buffer back and makes it again is parsed once).
  bool declared_as_before(const std::optional<BufferInfo>& before, const BufferInfo& now) const {
    return before && blocks_.empty() && maybe_made_.empty() && before->bytes == now.bytes &&
           before->made_by == now.made_by && before->memory == now.memory && before->device == now.device;
  }

  /// What the parser knows of each buffer name: its newest declaration.
  struct BufferInfo {
    std::uint64_t bytes = 0;
    int line = 0;
    /// Which statement made it, and so which one gives it back: `free`
    /// (buffer), `deallocate` (a resource block), `subfree` (a sub-block).
    enum class MadeBy : std::uint8_t { Buffer, Allocate, SubAlloc, HostBuffer } made_by = MadeBy::Buffer;
    /// Where it lives (R12): who may touch it.
    enum class Memory : std::uint8_t { Device, Pageable, Pinned } memory = Memory::Device;
    bool host() const { return memory != Memory::Device; }
    DeviceNumber device = 0;  // whose memory it is, for device memory (R13)
  };

  // --- `if done E` blocks (R11)

  /// The rules of a line inside a block: it runs on the block's thread, and
  /// declares nothing (a name declared in one branch would exist in only one
  /// of them) nor orders host threads (lock, send, spawn ...: the parser
  /// checks those along straight-line code).
  void inside_block(trace_language::StatementKeyword k, const Token& kw, std::string_view thread) const {
    using K = trace_language::StatementKeyword;
    const Block& b = blocks_.back();
    if (thread != b.thread)
      fail(1, fmt::format("this line runs on thread {}, inside the 'if' of thread {} at line {}: a block's lines run "
                          "on its thread (close it with 'end' first)",
                          thread, b.thread, b.if_line));
    const bool host_order = k == K::Spawn || k == K::Join || k == K::Lock || k == K::Unlock || k == K::Send ||
                            k == K::Receive || k == K::Capture;
    if (is_declaration(k) || host_order || k == K::Destroy)
      fail(kw.col, fmt::format("'{}' cannot be inside an 'if' block (the 'if' at line {}): declare and destroy "
                               "streams and events, set the device, capture, and order host threads outside of "
                               "blocks",
                               kw.text, b.if_line));
  }
  /// Notes that the current branch makes buffer `name` (before buffers_ is updated).
  void made_in_branch(const std::string& name, BufferInfo::MadeBy made_by) {
    const bool existed = buffers_.contains(name) && !maybe_made_.contains(name);
    maybe_made_.erase(name);
    if (blocks_.empty()) return;
    Block& b = blocks_.back();
    (b.else_index ? b.made_not_done : b.made_done)[name] = made_by;
    if (existed) b.made_before.insert(name);
  }
  /// Closes the innermost block at its `end`: fills the lines of its `if`
  /// and `else`, and marks the buffers only one branch made.
  void close_block() {
    Block b = std::move(blocks_.back());
    blocks_.pop_back();
    auto& if_done = std::get<ast::IfDone>(trace_.statements[b.if_index]);
    if_done.end_line = line_;
    if (b.else_index) {
      if_done.else_line = source(trace_.statements[*b.else_index]).line;
      std::get<ast::Else>(trace_.statements[*b.else_index]).end_line = line_;
    }
    const auto unsure = [&](const std::string& name, std::string why, bool only_giving_back) {
      maybe_made_[name] = Unsure{std::move(why), only_giving_back};
      if (blocks_.empty()) return;
      Block& outer = blocks_.back();
      (outer.else_index ? outer.made_not_done : outer.made_done).erase(name);
    };
    for (const auto* one : {&b.made_done, &b.made_not_done}) {
      const auto* other = one == &b.made_done ? &b.made_not_done : &b.made_done;
      for (const auto& [name, made_by] : *one) {
        auto there = other->find(name);
        if (there == other->end() && !b.made_before.contains(name))
          unsure(name,
                 fmt::format("is made in only one branch of the 'if' at line {}: make it in both branches, or "
                             "before the 'if'",
                             b.if_line),
                 false);
        else if (there != other->end() && there->second != made_by)
          unsure(name,
                 fmt::format("is made by '{}' in one branch of the 'if' at line {} and by '{}' in the other: give it "
                             "back inside each branch",
                             maker(made_by), b.if_line, maker(there->second)),
                 true);
      }
    }
  }
  /// A buffer not made alike on every path through a closed block: made in
  /// one branch only (using it after the `end` is an error), or by two
  /// statements that give back differently (giving it back after the `end`
  /// is an error).
  void made_in_both_branches(std::string_view name, int col, bool giving_back = false) const {
    if (maybe_made_.empty()) return;  // outside 'if' blocks: no name hashed for nothing
    if (auto it = maybe_made_.find(name); it != maybe_made_.end() && (giving_back || !it->second.only_giving_back))
      fail(col, fmt::format("'{}' {}", shown_input(name), it->second.why));
  }

  /// `suballoc X N from P[LO:HI] on S` (R10): a user-space allocator hands
  /// out bytes [LO, HI) of buffer P as block X, of which X's N bytes are
  /// used (N <= HI - LO: the rest is the allocator's rounding). P is a
  /// `buffer` or another sub-block, never a resource block (the resource
  /// tracks its blocks itself).
  Statement suballoc(ast::Source src) {
    ast::SubAlloc st{std::move(src), new_name(NameKind::Buffer), size_arg(), {}, {}};
    expect(trace_language::word::kFrom);
    const int col = next_col();
    // The block is what this line declares: it cannot be its own parent,
    // whether X is new (ref would call it unknown) or made again.
    if (!at_end() && toks_[pos_].text.substr(0, toks_[pos_].text.find('[')) == st.name)
      fail(col,
           fmt::format("'{}' cannot be sub-allocated from itself: name the buffer its bytes are carved from", st.name));
    auto [block, parent_info] = known_ref();
    st.block = std::move(block);
    const BufferInfo& parent = *parent_info;
    if (parent.made_by == BufferInfo::MadeBy::Allocate)
      fail(col, fmt::format("'{}' was made by 'allocate' (line {}): a resource block cannot be sub-allocated (the "
                            "resource tracks its blocks itself); sub-allocate from a 'buffer'",
                            st.block->buffer, parent.line));
    if (parent.host())
      fail(col, fmt::format("'{}' is host memory (line {}): sub-allocate from a device 'buffer'", st.block->buffer,
                            parent.line));
    const auto [lo, hi] = range_of(*st.block);
    st.block->hi = hi;
    if (st.bytes > hi - lo)
      fail(col, fmt::format("the block {} holds {} bytes, fewer than the {} bytes of {}", describe(*st.block), hi - lo,
                            st.bytes, st.name));
    made_in_branch(st.name, BufferInfo::MadeBy::SubAlloc);
    const DeviceNumber parent_device = parent.device;
    buffers_.insert_or_assign(st.name, BufferInfo{st.bytes, line_, BufferInfo::MadeBy::SubAlloc});
    buffers_.at(st.name).device = parent_device;  // a block is memory of its parent's device (R13)
    st.stream = stream_after_on();
    return st;
  }

  /// `spawn T` / `join T`: T is another declared thread, not main; a
  /// thread is spawned at most once.
  Statement thread_control(bool spawn, ast::Source src) {
    const int col = next_col();
    Name target = use_name(NameKind::Thread, "a thread");
    const char* verb = spawn ? "spawn" : "join";
    if (target == "main") fail(col, fmt::format("main cannot be {}ed: it is the thread the trace starts on", verb));
    if (target == src.thread) fail(col, fmt::format("thread {} cannot {} itself", target, verb));
    if (!spawn) return ast::Join{std::move(src), std::move(target)};
    if (auto [it, fresh] = spawned_.emplace(target, line_); !fresh)
      fail(col, fmt::format("thread {} is already spawned at line {} (a thread starts once)", target, it->second));
    return ast::Spawn{std::move(src), std::move(target)};
  }

  /// `lock M` / `unlock M`. Each thread's statements are one straight line,
  /// so what it holds is known here: a lock of a mutex the thread holds
  /// (mutexes are not recursive) and an unlock of one it does not hold are
  /// errors, as is a thread that ends holding one (parse()).
  Statement mutex_use(bool lock, ast::Source src) {
    const int col = next_col();
    Name mutex = use_name(NameKind::Mutex, "a mutex");
    auto& held = held_[std::string(src.thread)];
    if (lock) {
      if (auto it = held.find(mutex); it != held.end())
        fail(col, fmt::format("thread {} already holds mutex {} (locked at line {}): mutexes are not recursive, "
                              "so this lock would wait forever",
                              src.thread, mutex, it->second.first));
      held.emplace(mutex, std::pair{line_, col});
      return ast::Lock{std::move(src), std::move(mutex)};
    }
    if (held.erase(mutex) == 0)
      fail(col, fmt::format("thread {} does not hold mutex {}: only the thread that locked a mutex unlocks it",
                            src.thread, mutex));
    if (held.empty()) held_.erase(std::string(src.thread));
    return ast::Unlock{std::move(src), std::move(mutex)};
  }

  /// `prepare|finish BUFFER on STREAM ACCESS`.
  template <class Use>
  Use block_use(const Token& kw, ast::Source src) {
    need_resource(kw);
    Use st{std::move(src), use_name(NameKind::Buffer, "a buffer"), {}, {}};
    st.stream = stream_after_on();
    st.access = access_word();
    return st;
  }

  /// cudaMemcpyAsync moves one byte count: the source and the destination
  /// must be the same size, and (memcpy) must not overlap.
  void copy_sizes_match(const ast::Copy& st, int to_col) const {
    const auto [from_lo, from_hi] = range_of(*st.from);
    const auto [to_lo, to_hi] = range_of(*st.to);
    if (from_hi - from_lo != to_hi - to_lo)
      fail(to_col, fmt::format("copy {} reads {} bytes ({}) but writes {} bytes ({}): the source and the destination "
                               "of a copy are the same size",
                               st.name, from_hi - from_lo, describe(*st.from), to_hi - to_lo, describe(*st.to)));
    if (st.from->buffer == st.to->buffer && from_lo < to_hi && to_lo < from_hi)
      fail(to_col, fmt::format("copy {}: the source {} and the destination {} overlap (a copy between overlapping "
                               "bytes is undefined)",
                               st.name, describe(*st.from), describe(*st.to)));
  }

  /// The trace's own copy of the name (a view into its TextStore, which
  /// outlives the parse; the token views the text being parsed).
  std::string_view kernel_name(const char* what) {
    const Token& n = next(what);
    check_name_syntax(n);
    return kept_words_[pos_ - 1];
  }

  void pool_switch() {
    const Token& sw = next("a pool switch");
    expect("=");
    const Token& v = next("a value");
    const auto problem = set_pool_switch(trace_.policy, sw.text, v.text, [&](std::string_view) { return number(v); });
    if (problem == PoolSwitchProblem::ValueNotOnOff)
      fail(v.col, fmt::format("expected 'on' or 'off', found '{}'", shown_input(v.text)));
    if (problem == PoolSwitchProblem::UnknownSwitch)
      fail(sw.col, fmt::format("unknown pool switch '{}' ({})", shown_input(sw.text), kPoolSwitchNames));
  }

  void resource_options(const Token& kw) {
    if (trace_.uses_resource) fail(kw.col, "'resource' may appear only once");
    int pool_mutant_col = 0;
    trace_.uses_resource = true;
    trace_.resource_line = line_;
    while (!at_end()) {
      const Token& opt = next("'budget', 'mutant', 'pool' or 'debug'");
      if (opt.text == trace_language::word::kPool) {
        trace_.pool = true;
      } else if (opt.text == trace_language::word::kDebug) {
        trace_.debug = true;
      } else if (opt.text == trace_language::word::kBudget) {
        trace_.budget = number(next("a byte budget"));
      } else if (opt.text == trace_language::word::kMutant) {
        const Token& m = next("a mutant id (M1..M18, M22, or PM1..PM5 with 'pool')");
        trace_.mutant = parse_mutant(m.text);
        if (!trace_.mutant) {
          trace_.pool_mutant = parse_pool_mutant(m.text);
          if (!trace_.pool_mutant)
            fail(m.col,
                 fmt::format("unknown mutant '{}' (M1..M18, M22, or PM1..PM5 with 'pool')", shown_input(m.text)));
          pool_mutant_col = m.col;
        }
        // A build without every variant (tools/tool_protocols.h) refuses
        // the others here, with the position, before anything runs.
        if ((trace_.mutant && !tools_have(*trace_.mutant)) || (trace_.pool_mutant && !tools_have(*trace_.pool_mutant)))
          fail(m.col, mutant_not_built(m.text));
      } else {
        fail(opt.col, fmt::format("expected 'budget', 'mutant', 'pool' or 'debug', found '{}'", shown_input(opt.text)));
      }
      if (trace_.debug && (trace_.pool || trace_.budget || trace_.mutant || trace_.pool_mutant))
        fail(opt.col, "'resource debug' takes no other option (the debug tier runs over the correct core)");
      if (trace_.pool && (trace_.budget || trace_.mutant))
        fail(opt.col,
             "'resource pool' takes no 'budget' or core mutant (the core over the pool runs the correct protocol; "
             "a pool mutant PMk may be named)");
    }
    // A pool mutant breaks the pool: without `pool` there is none to break.
    if (trace_.pool_mutant && !trace_.pool) fail(pool_mutant_col, "a pool mutant (PM1..PM5) needs 'resource pool'");
  }

  static bool is_declaration(trace_language::StatementKeyword k) {
    using K = trace_language::StatementKeyword;
    return k == K::Stream || k == K::Event || k == K::Thread || k == K::Mutex || k == K::Channel || k == K::Policy ||
           k == K::Resource || k == K::Device;
  }

  std::string_view text_;
  std::string file_;
  bool streamed_ = false;
  Trace trace_;
  FlatNameMap<Declared> names_;
  std::vector<BufferAccess> access_scratch_;  // the access list being parsed (accesses)
  /// The statement that makes a buffer of kind `made_by`, and the one that
  /// gives it back.
  struct MadeAndGivenBack {
    trace_language::StatementKeyword made, given_back;
  };
  static MadeAndGivenBack statements_of(BufferInfo::MadeBy made_by) {
    using K = trace_language::StatementKeyword;
    switch (made_by) {
      case BufferInfo::MadeBy::Allocate:
        return {K::Allocate, K::Deallocate};
      case BufferInfo::MadeBy::SubAlloc:
        return {K::SubAlloc, K::SubFree};
      case BufferInfo::MadeBy::Buffer:
      case BufferInfo::MadeBy::HostBuffer:  // R12a: `buffer … pageable|pinned`, given back by `free`
        break;
    }
    return {K::Buffer, K::Free};
  }
  static std::string_view maker(BufferInfo::MadeBy made_by) {
    return trace_language::keyword(statements_of(made_by).made);
  }
  static std::string_view giver_back(BufferInfo::MadeBy made_by) {
    return trace_language::keyword(statements_of(made_by).given_back);
  }
  /// The buffer the next token names, which `made_by` must have made (for
  /// `free`, `subfree`, `record_stream`): say which statement takes it if not.
  Name buffer_made_by(BufferInfo::MadeBy made_by, std::string_view statement) {
    const int col = next_col();
    Name name = use_name(NameKind::Buffer, "a buffer");
    made_in_both_branches(name, col, /*giving_back=*/true);
    if (const BufferInfo& b = buffers_.at(name);
        statements_of(b.made_by).given_back != statements_of(made_by).given_back)
      fail(col, fmt::format("'{}' was made by '{}' (line {}): give it back with '{} {}' ('{}' takes buffers made by "
                            "'{}')",
                            name, maker(b.made_by), b.line, giver_back(b.made_by), name, statement, maker(made_by)));
    return name;
  }
  NameIndexed<BufferInfo> buffers_{*trace_.names};
  NameMap<DeviceNumber> thread_device_;                       // R13: each thread's current device (`device N`)
  std::map<std::string, OpenCapture, std::less<>> captures_;  // R14: each thread's open capture
  NameMap<std::string> capturing_;                            // R14: stream -> the thread whose capture holds it
  std::map<std::string, GraphInfo> graphs_;                   // R14: each graph, from its `capture end`
  NameMap<DeviceNumber> stream_device_;                       // R13: each stream's device, by the name use_name returns
  std::uint64_t generation_ = 0;                              // generation()
  std::optional<int> first_run_line_;                         // the first statement that is not a declaration
  std::map<std::string, int, std::less<>> spawned_;           // thread -> the line of its `spawn`
  /// What the parser knows of an open `if` block.
  struct Block {
    int if_line = 0;
    std::string thread;
    std::size_t if_index = 0;                                            // into trace_.statements
    std::optional<std::size_t> else_index;                               // its `else`, once seen
    std::map<std::string, BufferInfo::MadeBy> made_done, made_not_done;  // buffers each branch makes
    std::set<std::string> made_before;  // of those, buffers that existed before the `if`
  };
  std::vector<Block> blocks_;  // the open `if` blocks, innermost last (R11)
  /// A buffer not there alike on every path through a closed block, and why.
  struct Unsure {
    std::string why;
    bool only_giving_back = false;  // made on every path, by statements that give back differently
  };
  NameMap<Unsure> maybe_made_;
  NameSet destroyed_;  // streams and events destroyed, not declared again (R9)
  struct PendingName {
    Name name;
    NameKind kind;
  };
  std::optional<PendingName> pending_name_;  // what this line declares (new_name)
  /// The thread of the statement being parsed: its Source::thread's text.
  std::string_view thread_ = kMainThread;
  Name main_thread_;  // kMainThread's Name (declared by the constructor)
  /// Per thread, the mutexes it holds at this point of its statements, with
  /// the line and column of their `lock`.
  std::map<std::string, std::map<std::string, std::pair<int, int>>> held_;
  std::vector<Token> toks_;
  std::vector<std::string_view> kept_words_;  // toks_ as the statement's text in the store keeps them
  std::size_t pos_ = 0;
  int line_ = 0;
  int end_col_ = 1;
};

}  // namespace

ParsedNumber parse_number(std::string_view text, std::uint64_t max) {
  std::uint64_t scale = 1;
  if (!text.empty() && (text.back() == 'K' || text.back() == 'M')) {
    scale = text.back() == 'K' ? 1024 : 1024 * 1024;
    text.remove_suffix(1);
  }
  std::uint64_t base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty()) return {0, NumberProblem::NotANumber};
  std::uint64_t v = 0;
  bool too_large = false;
  for (const char ch : text) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    std::uint64_t d = base;
    if (c >= '0' && c <= '9') d = static_cast<std::uint64_t>(c - '0');
    if (base == 16 && c >= 'a' && c <= 'f') d = static_cast<std::uint64_t>(10 + c - 'a');
    if (d >= base) return {0, NumberProblem::NotANumber};
    too_large = too_large || d > max || v > (max - d) / base;
    if (!too_large) v = v * base + d;
  }
  if (too_large || v > max / scale) return {0, NumberProblem::TooLarge};
  return {v * scale, std::nullopt};
}

std::string_view TextStore::keep(std::string_view text) {
  return keep_written(text.size(), [&](char* out) { std::memcpy(out, text.data(), text.size()); });
}

void TextStore::clear_kept() {
  if (chunks_.size() == 1 && chunks_.front().get() == filling_) {  // a streamed read: one chunk, refilled
    next_ = filling_;
    left_ = kChunkBytes;
    return;
  }
  std::unique_ptr<char[]> filling;
  for (auto& chunk : chunks_)
    if (chunk.get() == filling_) filling = std::move(chunk);
  chunks_.clear();
  if (filling) {
    chunks_.push_back(std::move(filling));
    next_ = filling_;
    left_ = kChunkBytes;
  } else {
    next_ = filling_ = nullptr;
    left_ = 0;
  }
}

char* TextStore::room_for(std::size_t bytes, std::size_t align) {
  const std::size_t pad = (align - reinterpret_cast<std::uintptr_t>(next_) % align) % align;
  if (pad + bytes > left_) {
    // A long text gets a block of its own, and the chunk being filled
    // stays the one filled (its bytes never move: next_ stays valid).
    if (bytes > kChunkBytes / 4) return chunks_.emplace_back(std::make_unique_for_overwrite<char[]>(bytes)).get();
    chunks_.push_back(std::make_unique_for_overwrite<char[]>(kChunkBytes));
    next_ = filling_ = chunks_.back().get();  // aligned for any type (operator new[])
    left_ = kChunkBytes;
  } else {
    next_ += pad;
    left_ -= pad;
  }
  char* at = next_;
  next_ += bytes;
  left_ -= bytes;
  return at;
}

Trace parse_trace(std::string_view text, const std::string& file) { return Parser(text, file).parse(); }

std::span<const Statement> statements_at(const Trace& trace, int line) {
  struct ByLine {
    bool operator()(const Statement& st, int l) const { return source(st).line < l; }
    bool operator()(int l, const Statement& st) const { return l < source(st).line; }
  };
  const auto [first, last] = std::equal_range(trace.statements.begin(), trace.statements.end(), line, ByLine{});
  return {first, last};
}

namespace {

/// A trace file read through POSIX calls, so that every failure (a missing
/// file, a directory, no permission) comes with the OS's own reason.
class TraceFile {
 public:
  explicit TraceFile(const std::string& path) : path_(path), fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) throw unreadable(errno);
  }
  ~TraceFile() { ::close(fd_); }
  /// The file's size when it is a regular file (0 otherwise: a pipe).
  std::size_t size() const {
    struct stat st {};
    return ::fstat(fd_, &st) == 0 && S_ISREG(st.st_mode) ? static_cast<std::size_t>(st.st_size) : 0;
  }
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;
  /// Reads up to `bytes` bytes of the file into `out`: how many, 0 at its end.
  std::size_t read_some(char* out, std::size_t bytes) {
    for (;;) {
      const ssize_t n = ::read(fd_, out, bytes);
      if (n >= 0) return static_cast<std::size_t>(n);
      if (errno != EINTR) throw unreadable(errno);
    }
  }
  /// Appends up to `bytes` more bytes of the file to `out`; false at its end.
  bool read_more(std::string& out, std::size_t bytes) {
    const std::size_t had = out.size();
    out.resize(had + bytes);
    std::size_t n = 0;
    try {
      n = read_some(out.data() + had, bytes);
    } catch (...) {
      out.resize(had);
      throw;
    }
    out.resize(had + n);
    return n > 0;
  }

 private:
  TraceError unreadable(int error) const {
    return TraceError(TraceError::Kind::Unreadable, path_,
                      fmt::format("cannot read the trace: {}", std::strerror(error)));
  }
  std::string path_;
  int fd_;
};

/// The lines of a trace file one at a time, read in blocks: a streamed
/// check holds one block of the file, not the file. The buffer is never
/// zero-filled (a std::string's resize would write every block twice), and
/// a block is small enough that the lines parsed from it are still in the
/// cache the read brought them to.
class LineReader {
 public:
  explicit LineReader(const std::string& path) : file_(path) {}
  /// The next line (without its newline), valid until the next call;
  /// nullopt after the last. Lines are numbered from 1 (line()).
  std::optional<std::string_view> next() {
    for (;;) {
      const char* from = buffer_.get() + at_;
      if (const void* end = std::memchr(from, '\n', filled_ - at_))
        return line_at(static_cast<std::size_t>(static_cast<const char*>(end) - buffer_.get()), 1);
      if (!ended_ && read_block()) continue;
      ended_ = true;
      // The last line has no newline; a file that ends with one has no
      // line after it, but a file with nothing at all is one empty line.
      if (at_ < filled_ || (line_ == 0 && !given_last_)) {
        given_last_ = true;
        return line_at(filled_, 0);
      }
      return std::nullopt;
    }
  }
  int line() const { return line_; }

 private:
  std::string_view line_at(std::size_t end, std::size_t newline) {
    const std::string_view line(buffer_.get() + at_, end - at_);
    at_ = end + newline;
    ++line_;
    return line;
  }
  /// Moves the unread rest to the front and reads more after it, the
  /// buffer doubled when the rest fills it (a line longer than a block);
  /// false at the end of the file.
  bool read_block() {
    const std::size_t rest = filled_ - at_;
    if (rest == capacity_) {
      capacity_ *= 2;
      auto bigger = std::make_unique_for_overwrite<char[]>(capacity_);
      std::memcpy(bigger.get(), buffer_.get() + at_, rest);
      buffer_ = std::move(bigger);
    } else if (at_ > 0) {
      std::memmove(buffer_.get(), buffer_.get() + at_, rest);
    }
    at_ = 0;
    filled_ = rest;
    const std::size_t n = file_.read_some(buffer_.get() + filled_, capacity_ - filled_);
    filled_ += n;
    return n > 0;
  }
  static constexpr std::size_t kBlockBytes = std::size_t{1} << 16;
  TraceFile file_;
  std::size_t capacity_ = kBlockBytes;
  std::unique_ptr<char[]> buffer_ = std::make_unique_for_overwrite<char[]>(kBlockBytes);
  std::size_t at_ = 0;      // where the unread part of buffer_ starts
  std::size_t filled_ = 0;  // how much of buffer_ holds the file's bytes
  int line_ = 0;
  bool ended_ = false;
  bool given_last_ = false;
};

}  // namespace

Trace load_trace(const std::string& path) {
  TraceFile file(path);
  std::string text;
  // Read whole into room made once: grown by doubling, a 60 MB trace was
  // copied again and again, and faulted in twice (docs/PERFORMANCE.md).
  text.reserve(file.size() + 1);
  for (;;) {
    const std::size_t room = text.capacity() - text.size();  // the rest of the file, then 1 byte to see its end
    if (!file.read_more(text, room > 0 ? room : std::size_t{1} << 16)) break;
  }
  return parse_trace(text, path);
}

/// A streamed statement as the reader's memo keeps it: its words view the
/// slot's copy of the line, and a launch's access list, moved out of the
/// trace's TextStore (cleared for every statement), is kept here.
struct StreamedStatement {
  Statement statement;
  std::vector<BufferAccess> accesses;
};
using StreamedMemo = LineMemo<std::string, StreamedStatement>;

struct TraceReader::Impl {
  explicit Impl(const std::string& path) : lines(path), parser({}, path, /*streamed=*/true) {}
  LineReader lines;
  Parser parser;
  StreamedMemo memo;
  std::deque<Statement> ahead;  // read_declarations' statements, not handed out yet
  Statement current;            // what next() handed out last
  std::uint64_t handed_out = 0;
  bool any_statement = false;
  bool ended = false;
  std::function<void(const Statement&)> observe;  // observe_statements

  /// Parses lines until one makes a statement: the parser's only one
  /// (Trace::statements), or a memo slot's (LineMemo), its line set to this
  /// one (no copy made); null at the end of the file (after the whole trace's
  /// checks). Valid until the next call.
  Statement* parse_statement() {
    if (ended) return nullptr;
    std::vector<Statement>& made = parser.trace().statements;
    made.clear();
    while (const auto line = lines.next()) {
      if (StreamedMemo::Slot* seen = memo.find(*line, parser.generation())) {
        parser.reparsed_at(seen->kept.statement, lines.line());
        any_statement = true;
        return &seen->kept.statement;
      }
      StreamedMemo::Slot& slot = memo.take(*line);
      const std::uint64_t before = parser.generation();
      parser.parse_line(slot.line, lines.line());
      if (made.empty()) continue;
      if (StreamedMemo::keep(slot, before, parser.generation())) {
        slot.kept.statement = made.back();
        if (auto* launch = std::get_if<ast::Launch>(&slot.kept.statement)) {
          slot.kept.accesses.assign(launch->accesses.begin(), launch->accesses.end());
          launch->accesses = AccessList(slot.kept.accesses);
        }
      }
      any_statement = true;
      return &made.back();
    }
    ended = true;
    parser.check_whole_trace(any_statement);
    return nullptr;
  }
};

TraceReader::TraceReader(const std::string& path) : impl_(std::make_unique<Impl>(path)) {}
TraceReader::~TraceReader() = default;

const Trace& TraceReader::trace() const { return impl_->parser.trace(); }

void TraceReader::read_declarations() {
  Impl& r = *impl_;
  while (!r.parser.first_run_line())
    if (const Statement* st = r.parse_statement())
      r.ahead.push_back(*st);
    else
      break;
}

const Statement* TraceReader::next() {
  Impl& r = *impl_;
  const Statement* st = nullptr;
  if (!r.ahead.empty()) {  // read ahead: their texts stay until the last is handed out
    r.current = std::move(r.ahead.front());
    r.ahead.pop_front();
    st = &r.current;
  } else {
    // The statement handed out last, and its texts, go; the next one is the
    // parser's own or a memo slot's, handed out where it is (parse_statement).
    r.parser.trace().texts->clear();
    st = r.parse_statement();
    if (st == nullptr) return nullptr;
  }
  ++r.handed_out;
  if (r.observe) r.observe(*st);
  return st;
}

void TraceReader::observe_statements(std::function<void(const Statement&)> observe) {
  impl_->observe = std::move(observe);
}

std::uint64_t TraceReader::statements_read() const { return impl_->handed_out; }

void StatementTexts::add(int line, std::string_view text) {
  if (!lines_.empty() && line <= lines_.back())
    throw std::logic_error("StatementTexts::add: internal error: lines must ascend");
  lines_.push_back(line);
  texts_.append(text);
  ends_.push_back(texts_.size());
}

std::optional<std::string_view> StatementTexts::find(int line) const {
  const auto it = std::lower_bound(lines_.begin(), lines_.end(), line);
  if (it == lines_.end() || *it != line) return std::nullopt;
  const auto i = static_cast<std::size_t>(it - lines_.begin());
  const std::size_t begin = i == 0 ? 0 : ends_[i - 1];
  return std::string_view(texts_).substr(begin, ends_[i] - begin);
}

StatementTexts statement_texts(const std::string& path, std::span<const int> lines) {
  StatementTexts out;
  if (lines.empty()) return out;
  LineReader reader(path);
  Parser words({}, path);
  std::size_t wanted = 0;  // the first of `lines` not yet passed
  while (const auto line = reader.next()) {
    while (wanted < lines.size() && lines[wanted] < reader.line()) ++wanted;
    if (wanted == lines.size()) break;
    if (lines[wanted] != reader.line()) continue;
    const std::string text = words.statement_text(*line);
    if (!text.empty()) out.add(reader.line(), text);
  }
  return out;
}

std::optional<PoolSwitchProblem> set_pool_switch(PoolPolicy& policy, std::string_view name, std::string_view value,
                                                 const std::function<std::uint64_t(std::string_view)>& number) {
  if (name == "release_threshold") {
    policy.release_threshold = number(value);
    return std::nullopt;
  }
  if (value != "on" && value != "off") return PoolSwitchProblem::ValueNotOnOff;
  const bool on = value == "on";
  if (name == "follow_event_dependencies")
    policy.follow_event_dependencies = on;
  else if (name == "opportunistic")
    policy.opportunistic = on;
  else if (name == "internal_dependencies")
    policy.internal_dependencies = on;
  else
    return PoolSwitchProblem::UnknownSwitch;
  return std::nullopt;
}

// ----------------------------------------------------------------- running

namespace {

/// The simulated device and backend of one run of a trace, as `options` say.
struct SimulatedRun {
  /// `kept_query_answers`: how many the backend keeps (a streamed run
  /// lists a few).
  SimulatedRun(sim::Chooser& chooser, const TraceRunOptions& options,
               std::size_t kept_query_answers = std::numeric_limits<std::size_t>::max())
      : model(std::make_unique<sim::DeviceModel>(chooser, options.policy, options.progress)),
        backend(*model, backend_options(options, kept_query_answers)) {
    model->set_compact_every(options.compact_every);
    if (!options.value_oracle) model->skip_value_oracle();
  }
  static sim::SimBackendOptions backend_options(const TraceRunOptions& options, std::size_t kept_query_answers) {
    sim::SimBackendOptions bo;
    bo.max_kept_query_answers = kept_query_answers;
    bo.max_explored_faults = options.faults ? 1 : 0;
    bo.retain_only_named = options.retain_only_named;
    return bo;
  }
  /// A long run's retention passes keep the allocations `interpreter`'s
  /// buffer names are bound to; off again once it ran (the interpreter may
  /// go first).
  template <class Run>
  Execution run_binding_names(TraceInterpreter<sim::SimBackend>& interpreter, Run&& run) {
    backend.name_allocations_with(
        [&interpreter](std::vector<std::uint32_t>& out) { interpreter.add_bound_allocations(out); });
    Execution exec = run();
    backend.name_allocations_with(nullptr);
    return exec;
  }
  /// What the run record takes from the backend and the chooser once the
  /// statements ran: the plain allocations' stream, the choices with their
  /// lines, the queries' answers; then the model.
  void record_into(Execution& exec, StreamId plain_alloc_stream, const sim::Chooser& chooser) {
    if (const auto plain = backend.resolve_stream(plain_alloc_stream)) exec.set_plain_alloc_stream(*plain);
    std::vector<ChoicePoint> choices;
    const auto& starts = backend.line_starts();
    std::size_t next_start = 0;
    int line = 0;
    for (const sim::Choice& c : chooser.taken()) {
      for (; next_start < starts.size() && starts[next_start].first_choice <= choices.size(); ++next_start)
        line = starts[next_start].line;
      choices.push_back(ChoicePoint{c.kind, c.options, c.taken, line});
    }
    std::vector<QueryAnswer> queries;
    for (const auto& q : backend.query_answers()) queries.push_back(QueryAnswer{q.line, q.done, q.after_choices});
    exec.set_choices(std::move(choices), std::move(queries));
  }
  std::unique_ptr<sim::DeviceModel> model;
  sim::SimBackend backend;
};

}  // namespace

Execution run_on_simulator(const Trace& trace, sim::Chooser& chooser, const TraceRunOptions& options,
                           const std::function<void(const sim::DeviceModel&)>& on_model) {
  // Partial-order reduction over the trace's host threads (R6): sound only
  // where the device moves on observation, so that every other choice is
  // made inside a host statement whose footprint covers it.
  if (options.sleep_sets && options.progress == sim::DeviceProgress::OnObservation) chooser.enable_sleep_sets();
  SimulatedRun sim(chooser, options);
  sim::SimBackend& backend = sim.backend;
  if (on_model) on_model(*sim.model);
  TraceInterpreter<sim::SimBackend> interpreter(trace, backend);
  Execution exec = sim.run_binding_names(interpreter, [&] { return interpreter.run(); });
  sim.record_into(exec, interpreter.plain_alloc_stream(), chooser);
  // Line -> statement text, indexed by line (a map of a million lines was a
  // tree walk per op: docs/PERFORMANCE.md, "HB checking").
  struct LineTexts {
    std::vector<const std::string_view*> by_line;
    const std::string_view* at(int line) const {
      const auto i = static_cast<std::size_t>(line);
      if (i >= by_line.size() || by_line[i] == nullptr) throw std::out_of_range("no statement at that line");
      return by_line[i];
    }
  } text;
  // One pass over the statements (lines ascend in a parsed trace, so the
  // table grows once per statement at most, amortized).
  text.by_line.reserve(trace.statements.empty() ? 1
                                                : static_cast<std::size_t>(source(trace.statements.back()).line) + 1);
  for (const auto& st : trace.statements) {
    const auto line = static_cast<std::size_t>(source(st).line);
    if (line >= text.by_line.size()) text.by_line.resize(line + 1, nullptr);
    text.by_line[line] = &source(st).text;
  }
  // R14b: a graph's op is its captured statement, run by a launch: say which.
  for (const auto& [op, launch] : backend.op_launches())
    exec.set_origin(op, OpOrigin{backend.op_origin(op).value_or(0),
                                 fmt::format("{}; run by line {}: {}", *text.at(backend.op_origin(op).value_or(0)),
                                             launch, *text.at(launch)),
                                 launch});
  std::vector<Execution::LogStart> log_starts;
  log_starts.reserve(backend.log_line_starts().size());  // one a statement: grown by doubling, it was two copies
  for (const auto& start : backend.log_line_starts()) {
    (void)text.at(start.line);  // a line the trace has
    log_starts.push_back({start.first_entry, start.line});
  }
  exec.set_log_starts(std::move(log_starts));
  exec.set_origins(backend.op_origins(), std::move(text.by_line));
  exec.set_model(std::move(sim.model));
  return exec;
}

Execution run_streamed_on_simulator(TraceReader& reader, sim::Chooser& chooser, const TraceRunOptions& options,
                                    const std::function<void(const sim::DeviceModel&)>& on_model) {
  // The run makes a choice each `buffer` that could reuse, millions in a
  // long trace, and its report lists a few: listed here as they are made
  // and counted, none kept (a kept choice was about 60 bytes).
  ChoiceSummary choices;
  std::uint64_t query_choices = 0;
  chooser.keep_no_choices();
  chooser.observe([&](std::uint64_t, const sim::Choice& c) {
    const ChoicePoint p{c.kind, c.options, c.taken, chooser.line()};
    if (c.kind == sim::ChoiceKind::PoolRange)
      choices.list(choices.pool_reuse, p);
    else if (c.kind == sim::ChoiceKind::Fault)
      choices.list(choices.faults, p);
    else if (c.kind == sim::ChoiceKind::QueryAnswer)
      ++query_choices;  // the queries are listed below, each with its answer
    else
      ++choices.device_steps;
  });
  SimulatedRun sim(chooser, options, kMaxListedChoices);
  if (on_model) on_model(*sim.model);
  TraceInterpreter<sim::SimBackend> interpreter(reader.trace(), sim.backend);
  Execution exec =
      sim.run_binding_names(interpreter, [&] { return interpreter.run_streamed([&] { return reader.next(); }); });
  chooser.observe(nullptr);
  if (const auto plain = sim.backend.resolve_stream(interpreter.plain_alloc_stream()))
    exec.set_plain_alloc_stream(*plain);
  // A run whose device executes each op at once answers every query done
  // (check_streamed's coverage lists them all as not explored); one whose
  // device progresses on observation lists them as check_trace's summary
  // does (summarize): only when some answer could have been another.
  if (options.progress == sim::DeviceProgress::AtOnce || choices.device_steps > 0 || query_choices > 0) {
    for (const auto& q : sim.backend.query_answers())
      choices.queries.push_back(QueryAnswer{q.line, q.done, q.after_choices});
    choices.not_listed += sim.backend.query_count() - choices.queries.size();
  }
  exec.set_choice_summary(std::move(choices));
  exec.set_origins(sim.backend.op_origins(), {});  // the texts come later (set_origin_texts)
  exec.set_model(std::move(sim.model));
  return exec;
}

const sim::DeviceModel& Execution::model() const {
  if (!model_) throw std::logic_error("Execution::model(): this run had no simulated device (a GPU replay)");
  return *model_;
}

OpOrigin Execution::origin_at(int line) const {
  const auto i = static_cast<std::size_t>(line);
  if (i < line_texts_.size() && line_texts_[i] != nullptr) return OpOrigin{line, texts_(*line_texts_[i])};
  if (const auto text = origin_texts_.find(line)) return OpOrigin{line, texts_(*text)};
  throw std::logic_error("Execution: internal error: no statement at line " + std::to_string(line));
}

std::optional<OpOrigin> Execution::origin(sim::OpRef op) const {
  if (auto it = special_origins_.find(op); it != special_origins_.end()) return it->second;
  if (auto line = origin_lines_.get(op)) return origin_at(*line);
  return std::nullopt;
}

std::optional<OpOrigin> Execution::log_origin(std::size_t entry) const {
  // The last start at or before `entry` (starts with no entries share a
  // first_entry with the next one; upper_bound skips them).
  auto after = std::upper_bound(log_starts_.begin(), log_starts_.end(), entry,
                                [](std::size_t e, const LogStart& s) { return e < s.first_entry; });
  if (after == log_starts_.begin()) return std::nullopt;
  return origin_at(std::prev(after)->line);
}

std::set<int> Execution::executed_lines() const {
  std::set<int> out;
  for (const LogStart& s : log_starts_)
    if (s.line != 0) out.insert(s.line);
  return out;
}

std::vector<NamedBytes> Execution::name_bytes(sim::ByteRange bytes, std::optional<std::uint32_t> prefer) const {
  struct Held {
    const std::string* name;
    const TraceBuffer* buffer;
    sim::ByteRange allocation;  // the buffer's bytes and the pool's padding after them
  };
  std::vector<Held> held;
  for (const auto& [name, b] : buffers_) {
    if (!b.allocation) continue;
    const sim::ByteRange a = model().allocation_range(sim::AllocationIndex{*b.allocation});
    if (a.lo == b.ptr && a.lo < bytes.hi && bytes.lo < a.hi) held.push_back(Held{&name, &b, a});
  }
  std::vector<NamedBytes> out;
  std::uint64_t at = bytes.lo;
  while (at < bytes.hi) {
    // The smallest buffer that holds `at` names it -- a sub-block rather
    // than the buffer it was carved from (R10a) -- and of those `prefer`,
    // else the first by name (a reused range is held by every buffer ever
    // made there); bytes in none stay addresses, up to where the next
    // buffer starts.
    auto holder = held.end();
    for (auto h = held.begin(); h != held.end(); ++h) {
      if (h->allocation.lo > at || at >= h->allocation.hi) continue;
      const bool smaller = holder == held.end() || h->allocation.size() < holder->allocation.size();
      const bool preferred_tie = holder != held.end() && h->allocation.size() == holder->allocation.size() && prefer &&
                                 h->buffer->allocation == prefer;
      if (smaller || preferred_tie) holder = h;
    }
    if (holder == held.end()) {
      std::uint64_t next = bytes.hi;
      for (const Held& h : held)
        if (h.allocation.lo > at) next = std::min(next, h.allocation.lo);
      out.push_back(NamedBytes{{at, next}, std::nullopt});
      at = next;
      continue;
    }
    const std::uint64_t end = std::min(bytes.hi, holder->allocation.hi);
    const std::uint64_t size = holder->buffer->bytes;
    const std::uint64_t lo = at - holder->buffer->ptr;
    if (lo < size)  // bytes of the pool's padding only are no bytes of the buffer
      out.push_back(NamedBytes{{at, end}, BufferBytes{*holder->name, lo, std::min(end - holder->buffer->ptr, size)}});
    at = end;
  }
  if (out.empty()) out.push_back(NamedBytes{bytes, std::nullopt});  // padding only
  return out;
}

}  // namespace streamcheck::tools
