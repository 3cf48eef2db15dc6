#include "tools/trace.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <sstream>

#include "backend_sim/explain.h"
#include "backend_sim/sim_backend.h"
#include "model/budget_resource.h"
#include "model/launch_recorder.h"
#include "model/resource.h"

namespace streamcheck::tools {

// ----------------------------------------------------------------- parsing

namespace {

struct Token {
  std::string text;
  int col;  // 1-based
};

const std::set<std::string, std::less<>> kStatements = {
    "stream", "event", "thread",   "policy",   "buffer",     "free",    "launch", "copy", "record", "wait",
    "sync",   "query", "resource", "allocate", "deallocate", "prepare", "finish", "reap", "run"};
const std::set<std::string, std::less<>> kKeywords = {
    "stream",     "event",  "thread", "policy", "buffer",   "free",     "launch",     "copy",
    "record",     "wait",   "sync",   "query",  "resource", "allocate", "deallocate", "prepare",
    "finish",     "reap",   "run",    "on",     "from",     "to",       "reads",      "writes",
    "readwrites", "device", "budget", "mutant", "read",     "write",    "read_write"};

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

enum class NameKind : std::uint8_t { Stream, Event, Thread, Buffer };

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
  }
  return "?";
}

std::string with_article(NameKind k) { return (k == NameKind::Event ? "an " : "a ") + std::string(to_string(k)); }

class Parser {
 public:
  Parser(std::string_view text, std::string file) : text_(text), file_(std::move(file)) {
    trace_.file = file_;
    names_["main"] = NameKind::Thread;
  }

  Trace parse() {
    std::size_t start = 0;
    int line_no = 0;
    while (start <= text_.size()) {
      const std::size_t end = std::min(text_.find('\n', start), text_.size());
      ++line_no;
      parse_line(text_.substr(start, end - start), line_no);
      if (end == text_.size()) break;
      start = end + 1;
    }
    return std::move(trace_);
  }

 private:
  [[noreturn]] void fail(int col, const std::string& message) const { throw TraceError(file_, line_, col, message); }

  const Token& next(const char* what) {
    if (pos_ >= toks_.size()) fail(end_col_, std::string("expected ") + what + " at the end of the line");
    return toks_[pos_++];
  }
  bool peek(std::string_view word) const { return pos_ < toks_.size() && toks_[pos_].text == word; }
  bool at_end() const { return pos_ >= toks_.size(); }
  void expect(std::string_view word) {
    const Token& t = next(("'" + std::string(word) + "'").c_str());
    if (t.text != word) fail(t.col, "expected '" + std::string(word) + "', found '" + t.text + "'");
  }
  void expect_end() {
    if (!at_end()) fail(toks_[pos_].col, "unexpected '" + toks_[pos_].text + "' at the end of the statement");
  }

  std::string new_name(NameKind kind) {
    const Token& t = next((std::string(to_string(kind)) + " name").c_str());
    check_name_syntax(t);
    auto it = names_.find(t.text);
    if (it != names_.end() && !(kind == NameKind::Buffer && it->second == NameKind::Buffer))
      fail(t.col, "'" + t.text + "' is already declared as " + with_article(it->second));
    names_[t.text] = kind;
    return t.text;
  }
  void check_name_syntax(const Token& t) const {
    const std::string& s = t.text;
    const bool ok = !s.empty() && (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_') &&
                    std::all_of(s.begin(), s.end(), [](char c) {
                      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
                    });
    if (!ok) fail(t.col, "'" + s + "' is not a valid name (letters, digits, _ . -; starting with a letter or _)");
    if (kKeywords.contains(s)) fail(t.col, "'" + s + "' is a keyword and cannot be used as a name");
  }
  std::string use_name(NameKind kind, const char* what) {
    const Token& t = next(what);
    auto it = names_.find(t.text);
    if (it == names_.end())
      fail(t.col, "unknown " + std::string(to_string(kind)) + " '" + t.text + "' (declare it with '" +
                      (kind == NameKind::Buffer ? "buffer " + t.text + " BYTES"
                                                : std::string(to_string(kind)) + " " + t.text) +
                      "')");
    if (it->second != kind)
      fail(t.col, "'" + t.text + "' is " + with_article(it->second) + ", not " + with_article(kind));
    return t.text;
  }
  std::uint64_t number(const Token& t) const {
    std::string s = t.text;
    std::uint64_t scale = 1;
    if (!s.empty() && (s.back() == 'K' || s.back() == 'M')) {
      scale = s.back() == 'K' ? 1024 : 1024 * 1024;
      s.pop_back();
    }
    int base = 10;
    std::size_t i = 0;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      base = 16;
      i = 2;
    }
    if (i >= s.size()) fail(t.col, "'" + t.text + "' is not a number");
    std::uint64_t v = 0;
    for (; i < s.size(); ++i) {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
      int d = -1;
      if (c >= '0' && c <= '9') d = c - '0';
      if (base == 16 && c >= 'a' && c <= 'f') d = 10 + c - 'a';
      if (d < 0) fail(t.col, "'" + t.text + "' is not a number");
      if (v > (UINT64_MAX - static_cast<std::uint64_t>(d)) / static_cast<std::uint64_t>(base))
        fail(t.col, "number '" + t.text + "' is too large");
      v = v * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
    }
    if (v > UINT64_MAX / scale) fail(t.col, "number '" + t.text + "' is too large");
    return v * scale;
  }
  std::uint64_t size_arg() {
    const Token& t = next("a byte count");
    const std::uint64_t n = number(t);
    if (n == 0) fail(t.col, "a buffer needs at least 1 byte");
    return n;
  }
  std::string stream_after_on() {
    expect("on");
    return use_name(NameKind::Stream, "a stream after 'on'");
  }
  BufferRef ref() {
    const Token& t = next("a buffer");
    BufferRef r;
    const auto bracket = t.text.find('[');
    r.buffer = t.text.substr(0, bracket);
    auto it = names_.find(r.buffer);
    if (it == names_.end())
      fail(t.col, "unknown buffer '" + r.buffer + "' (declare it with 'buffer " + r.buffer + " BYTES')");
    if (it->second != NameKind::Buffer)
      fail(t.col, "'" + r.buffer + "' is " + with_article(it->second) + ", not a buffer");
    if (bracket == std::string::npos) return r;
    const int col = t.col + static_cast<int>(bracket);
    const auto colon = t.text.find(':', bracket);
    if (t.text.back() != ']' || colon == std::string::npos)
      fail(col, "a byte range is written [LO:HI], found '" + t.text.substr(bracket) + "'");
    r.lo = number(Token{t.text.substr(bracket + 1, colon - bracket - 1), col + 1});
    r.hi =
        number(Token{t.text.substr(colon + 1, t.text.size() - colon - 2), col + static_cast<int>(colon - bracket) + 1});
    if (*r.hi <= r.lo)
      fail(col, "byte range [" + std::to_string(r.lo) + ":" + std::to_string(*r.hi) + "] is empty or reversed");
    const std::uint64_t size = sizes_.at(r.buffer);
    if (*r.hi > size)
      fail(col, "byte range [" + std::to_string(r.lo) + ":" + std::to_string(*r.hi) + "] goes past the end of " +
                    r.buffer + " (" + std::to_string(size) + " bytes)");
    return r;
  }
  std::vector<AccessList> accesses(bool required) {
    std::vector<AccessList> out;
    while (!at_end()) {
      const Token& t = next("an access");
      Access a;
      if (t.text == "reads")
        a = Access::Read;
      else if (t.text == "writes")
        a = Access::Write;
      else if (t.text == "readwrites")
        a = Access::ReadWrite;
      else
        fail(t.col, "expected 'reads', 'writes' or 'readwrites', found '" + t.text + "'");
      AccessList list{a, {ref()}};
      while (peek(",")) {
        ++pos_;
        list.refs.push_back(ref());
      }
      out.push_back(std::move(list));
    }
    if (required && out.empty()) fail(end_col_, "expected 'reads', 'writes' or 'readwrites' and the buffers used");
    return out;
  }
  Access access_word() {
    const Token& t = next("an access (read, write or read_write)");
    if (t.text == "read") return Access::Read;
    if (t.text == "write") return Access::Write;
    if (t.text == "read_write") return Access::ReadWrite;
    fail(t.col, "expected 'read', 'write' or 'read_write', found '" + t.text + "'");
  }
  void need_resource(const Token& t) const {
    if (!trace_.uses_resource) fail(t.col, "'" + t.text + "' needs a 'resource' line before it");
  }

  void tokenize(std::string_view line) {
    toks_.clear();
    pos_ = 0;
    std::size_t i = 0;
    end_col_ = 1;
    while (i < line.size()) {
      const char c = line[i];
      if (c == '#') break;
      if (c == ' ' || c == '\t' || c == '\r') {
        ++i;
        continue;
      }
      if (c == ',' || c == '=') {
        toks_.push_back(Token{std::string(1, c), static_cast<int>(i) + 1});
        ++i;
        end_col_ = static_cast<int>(i) + 1;
        continue;
      }
      const std::size_t start = i;
      while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r' && line[i] != '#' &&
             line[i] != ',' && line[i] != '=')
        ++i;
      toks_.push_back(Token{std::string(line.substr(start, i - start)), static_cast<int>(start) + 1});
      end_col_ = static_cast<int>(i) + 1;
    }
  }

  void parse_line(std::string_view line, int line_no) {
    line_ = line_no;
    tokenize(line);
    if (toks_.empty()) return;
    Statement st;
    st.line = line_no;
    st.thread = "main";
    if (toks_[0].text[0] == '@') {
      const Token t = toks_[0];
      const std::string name = t.text.substr(1);
      auto it = names_.find(name);
      if (it == names_.end() || it->second != NameKind::Thread)
        fail(t.col, "unknown thread '" + name + "' (declare it with 'thread " + name + "')");
      st.thread = name;
      ++pos_;
      if (at_end()) fail(end_col_, "expected a statement after '" + t.text + "'");
    }
    const Token kw = toks_[pos_++];
    {
      std::string text;
      for (std::size_t i = 0; i < toks_.size(); ++i) text += (i && toks_[i].text != "," ? " " : "") + toks_[i].text;
      st.text = text;
    }
    const std::string& k = kw.text;
    if (k == "stream") {
      st.kind = StmtKind::Stream;
      st.name = new_name(NameKind::Stream);
      trace_.streams.push_back(st.name);
    } else if (k == "event") {
      st.kind = StmtKind::Event;
      st.name = new_name(NameKind::Event);
    } else if (k == "thread") {
      st.kind = StmtKind::Thread;
      st.name = new_name(NameKind::Thread);
    } else if (k == "policy") {
      st.kind = StmtKind::Policy;
      const Token& sw = next("a pool switch");
      expect("=");
      const Token& v = next("a value");
      if (sw.text == "release_threshold") {
        trace_.policy.release_threshold = number(v);
      } else {
        bool on;
        if (v.text == "on")
          on = true;
        else if (v.text == "off")
          on = false;
        else
          fail(v.col, "expected 'on' or 'off', found '" + v.text + "'");
        if (sw.text == "follow_event_dependencies")
          trace_.policy.follow_event_dependencies = on;
        else if (sw.text == "opportunistic")
          trace_.policy.opportunistic = on;
        else if (sw.text == "internal_dependencies")
          trace_.policy.internal_dependencies = on;
        else
          fail(sw.col, "unknown pool switch '" + sw.text +
                           "' (follow_event_dependencies, opportunistic, internal_dependencies, release_threshold)");
      }
    } else if (k == "buffer") {
      st.kind = StmtKind::Buffer;
      st.name = new_name(NameKind::Buffer);
      st.bytes = size_arg();
      sizes_[st.name] = st.bytes;
      if (!at_end()) st.stream = stream_after_on();
    } else if (k == "free") {
      st.kind = StmtKind::Free;
      st.name = use_name(NameKind::Buffer, "a buffer");
      if (!at_end()) st.stream = stream_after_on();
    } else if (k == "launch" || k == "run") {
      st.kind = k == "launch" ? StmtKind::Launch : StmtKind::Run;
      if (st.kind == StmtKind::Run) need_resource(kw);
      const Token& n = next("a kernel name");
      check_name_syntax(n);
      st.name = n.text;
      st.stream = stream_after_on();
      st.accesses = accesses(true);
    } else if (k == "copy") {
      st.kind = StmtKind::Copy;
      const Token& n = next("a copy name");
      check_name_syntax(n);
      st.name = n.text;
      st.stream = stream_after_on();
      expect("from");
      AccessList src{Access::Read, {ref()}};
      expect("to");
      AccessList dst{Access::Write, {ref()}};
      st.accesses = {src, dst};
    } else if (k == "record" || k == "wait") {
      st.kind = k == "record" ? StmtKind::Record : StmtKind::Wait;
      st.name = use_name(NameKind::Event, "an event");
      st.stream = stream_after_on();
    } else if (k == "sync") {
      const Token& what = next("'stream', 'event' or 'device'");
      if (what.text == "stream") {
        st.kind = StmtKind::SyncStream;
        st.stream = use_name(NameKind::Stream, "a stream");
      } else if (what.text == "event") {
        st.kind = StmtKind::SyncEvent;
        st.name = use_name(NameKind::Event, "an event");
      } else if (what.text == "device") {
        st.kind = StmtKind::SyncDevice;
      } else {
        fail(what.col, "expected 'stream', 'event' or 'device' after 'sync', found '" + what.text + "'");
      }
    } else if (k == "query") {
      st.kind = StmtKind::Query;
      st.name = use_name(NameKind::Event, "an event");
    } else if (k == "resource") {
      st.kind = StmtKind::Resource;
      if (trace_.uses_resource) fail(kw.col, "'resource' may appear only once");
      trace_.uses_resource = true;
      while (!at_end()) {
        const Token& opt = next("'budget' or 'mutant'");
        if (opt.text == "budget") {
          trace_.budget = number(next("a byte budget"));
        } else if (opt.text == "mutant") {
          const Token& m = next("a mutant id (M1..M11)");
          trace_.mutant = parse_mutant(m.text);
          if (!trace_.mutant) fail(m.col, "unknown mutant '" + m.text + "' (M1..M11)");
        } else {
          fail(opt.col, "expected 'budget' or 'mutant', found '" + opt.text + "'");
        }
      }
    } else if (k == "allocate") {
      st.kind = StmtKind::Allocate;
      need_resource(kw);
      st.name = new_name(NameKind::Buffer);
      st.bytes = size_arg();
      sizes_[st.name] = st.bytes;
      st.stream = stream_after_on();
    } else if (k == "deallocate") {
      st.kind = StmtKind::Deallocate;
      need_resource(kw);
      st.name = use_name(NameKind::Buffer, "a buffer");
    } else if (k == "prepare" || k == "finish") {
      st.kind = k == "prepare" ? StmtKind::Prepare : StmtKind::Finish;
      need_resource(kw);
      st.name = use_name(NameKind::Buffer, "a buffer");
      st.stream = stream_after_on();
      st.access = access_word();
    } else if (k == "reap") {
      st.kind = StmtKind::Reap;
      need_resource(kw);
    } else {
      std::string hint;
      for (const auto& s : kStatements)
        if (edit_distance(k, s) <= 2) hint = " (did you mean '" + s + "'?)";
      fail(kw.col, "unknown statement '" + k + "'" + hint);
    }
    expect_end();
    trace_.statements.push_back(std::move(st));
  }

  std::string_view text_;
  std::string file_;
  Trace trace_;
  std::map<std::string, NameKind, std::less<>> names_;
  std::map<std::string, std::uint64_t, std::less<>> sizes_;
  std::vector<Token> toks_;
  std::size_t pos_ = 0;
  int line_ = 0;
  int end_col_ = 1;
};

}  // namespace

Trace parse_trace(std::string_view text, const std::string& file) { return Parser(text, file).parse(); }

Trace load_trace(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path, 0, 0, "cannot read the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_trace(ss.str(), path);
}

// ----------------------------------------------------------------- running

struct TraceInterpreter {
  TraceRun& run;
  const Trace& trace;
  sim::DeviceModel& model;
  sim::SimBackend& backend;
  std::map<std::string, StreamId> streams;
  std::map<std::string, sim::EventIndex> events;
  std::map<std::string, sim::HostThread> threads;
  sim::StreamIndex sync_stream;  // hidden stream for cudaMalloc / cudaFree
  std::map<std::string, DeviceBlock> blocks;
  UnallocatedBuffers unallocated;

  sim::StreamIndex sref(const std::string& name) { return *backend.resolve_stream(streams.at(name)); }

  std::vector<KernelAccess> kernel_accesses(const Statement& st) {
    std::vector<KernelAccess> out;
    for (const auto& list : st.accesses)
      for (const auto& r : list.refs) {
        const auto& b = run.buffers_.at(r.buffer);
        const std::uint64_t hi = r.hi ? *r.hi : b.bytes;
        out.push_back(KernelAccess{b.ptr + r.lo, hi - r.lo, list.access, b.allocation.value});
      }
    return out;
  }

  void note(const Statement& st, std::string message) { run.notes_.push_back(Note{st.line, std::move(message)}); }

  template <class R, class P>
  void statement(const Statement& st, R* resource) {
    if (auto why = unallocated.skip(st)) {
      note(st, *why);
      return;
    }
    switch (st.kind) {
      case StmtKind::Stream:
        streams[st.name] = backend.add_stream(st.name);
        break;
      case StmtKind::Event:
        events[st.name] = model.create_event();
        break;
      case StmtKind::Thread:
        threads[st.name] = model.create_host_thread();
        break;
      case StmtKind::Policy:
      case StmtKind::Resource:
        break;
      case StmtKind::Buffer: {
        model.device_steps();
        const bool plain = st.stream.empty();
        const sim::StreamIndex s = plain ? sync_stream : sref(st.stream);
        auto a = model.alloc(s, st.bytes, "buffer " + st.name);
        if (!a) {
          note(st, "out of memory allocating " + st.name);
          unallocated.failed(st.name, "line " + std::to_string(st.line) + ": out of memory");
          break;
        }
        unallocated.made(st.name);
        run.buffers_[st.name] = TraceRun::Buffer{a->ptr, st.bytes, a->allocation};
        if (plain) model.sync_device();  // cudaMalloc returns memory ready for every stream
        break;
      }
      case StmtKind::Free: {
        model.device_steps();
        const bool plain = st.stream.empty();
        if (plain) model.sync_device();  // cudaFree waits for the device first
        const auto& b = run.buffers_.at(st.name);
        if (!model.free(plain ? sync_stream : sref(st.stream), b.ptr, "free " + st.name))
          note(st, "free of " + st.name + ", which is not a live allocation (double free?)");
        if (plain) model.sync_device();
        break;
      }
      case StmtKind::Launch:
      case StmtKind::Copy:
        model.device_steps();
        model.launch(sref(st.stream), kernel_accesses(st), st.name);
        break;
      case StmtKind::Record:
        model.device_steps();
        model.record(events.at(st.name), sref(st.stream));
        break;
      case StmtKind::Wait:
        model.device_steps();
        model.wait(sref(st.stream), events.at(st.name));
        break;
      case StmtKind::SyncStream:
        model.device_steps();
        model.sync_stream(sref(st.stream));
        break;
      case StmtKind::SyncEvent:
        model.device_steps();
        model.sync_event(events.at(st.name));
        break;
      case StmtKind::SyncDevice:
        model.device_steps();
        model.sync_device();
        break;
      case StmtKind::Query:
        model.device_steps();
        (void)model.query_event(events.at(st.name));
        break;
      case StmtKind::Allocate: {
        auto r = retried([&] { return resource->allocate(st.bytes, streams.at(st.stream), AllocTag{}); });
        if (!r) {
          refused(st, "allocate", r.error());
          unallocated.failed(st.name, "line " + std::to_string(st.line) + ": allocate refused");
          blocks.erase(st.name);
          break;
        }
        unallocated.made(st.name);
        blocks[st.name] = r.value();
        run.buffers_[st.name] =
            TraceRun::Buffer{r.value().ptr, st.bytes, sim::AllocationIndex{model.allocation_count() - 1}};
        break;
      }
      case StmtKind::Deallocate: {
        auto it = blocks.find(st.name);
        if (it == blocks.end()) {
          note(st, st.name + " was not made by 'allocate': deallocate takes resource blocks only");
          break;
        }
        if (auto s = retried([&] { return resource->deallocate(it->second); }); !s)
          refused(st, "deallocate", s.error());
        break;
      }
      case StmtKind::Prepare:
      case StmtKind::Finish: {
        auto it = blocks.find(st.name);
        if (it == blocks.end()) {
          note(st, st.name + " was not made by 'allocate': the resource does not track it");
          break;
        }
        const BlockId id = BlockId::of(it->second);
        Status s = retried([&] {
          return st.kind == StmtKind::Prepare ? resource->prepare_block_use(id, streams.at(st.stream), st.access)
                                              : resource->finish_block_use(id, streams.at(st.stream), st.access);
        });
        if (!s) refused(st, st.kind == StmtKind::Prepare ? "prepare" : "finish", s.error());
        break;
      }
      case StmtKind::Reap:
        if (auto s = retried([&] { return resource->reap_pending(); }); !s) refused(st, "reap", s.error());
        break;
      case StmtKind::Run: {
        LaunchRecorder<P> rec(streams.at(st.stream), RecorderMode::Strict);
        for (const auto& list : st.accesses)
          for (const auto& r : list.refs) {
            auto it = blocks.find(r.buffer);
            rec.use(it == blocks.end() ? nullptr : &it->second, list.access);
          }
        if (auto s = retried([&] { return rec.preflight(*resource); }); !s) {
          refused(st, "preflight", s.error());
          break;
        }
        backend.launch(sref(st.stream), kernel_accesses(st), st.name);
        if (auto s = retried([&] { return rec.commit(*resource); }); !s) {
          refused(st, "commit", s.error());
          rec.abandon();  // reported as a note; the destructor need not print it again
        }
        break;
      }
    }
  }

  static bool injected(const ResourceError& e) { return e.injected; }
  /// `--faults on` explores one transient driver failure per run. The trace
  /// program, like the built-in client, retries the resource call it hit:
  /// the fault has cleared, so the retry runs the call for real (P4 says the
  /// failed attempt changed nothing; the built-in explore checks that).
  template <class Call>
  static auto retried(Call&& call) {
    auto r = call();
    if (!r && injected(r.error())) r = call();
    return r;
  }
  void refused(const Statement& st, const char* call, const ResourceError& e) {
    note(st, std::string(call) + " refused: " + e.to_string());
  }

  template <class P>
  void run_all() {
    std::unique_ptr<Resource<sim::SimBackend, P>> res;
    std::unique_ptr<BudgetResource<Resource<sim::SimBackend, P>>> budget;
    if (trace.uses_resource) {
      res = std::make_unique<Resource<sim::SimBackend, P>>(backend);
      if (trace.budget) budget = std::make_unique<BudgetResource<Resource<sim::SimBackend, P>>>(*res, *trace.budget);
    }
    for (const auto& st : trace.statements) {
      model.set_host_thread(st.thread == "main" ? sim::HostThread{0} : threads.at(st.thread));
      std::vector<std::uint32_t> before;
      for (std::uint32_t s = 0; s < model.stream_count(); ++s) before.push_back(model.op_count(sim::StreamIndex{s}));
      if (budget)
        statement<BudgetResource<Resource<sim::SimBackend, P>>, P>(st, budget.get());
      else
        statement<Resource<sim::SimBackend, P>, P>(st, res.get());
      for (std::uint32_t s = 0; s < model.stream_count(); ++s)
        for (std::uint32_t i = s < before.size() ? before[s] : 0; i < model.op_count(sim::StreamIndex{s}); ++i)
          run.origins_[{sim::StreamIndex{s}, i}] = OpOrigin{st.line, st.text};
    }
    model.set_host_thread(sim::HostThread{0});
  }
};

TraceRun::TraceRun(const Trace& trace, sim::Chooser& chooser, const TraceRunOptions& options)
    : model_(std::make_unique<sim::DeviceModel>(chooser, options.policy)) {
  run(trace, options);
}

void TraceRun::run(const Trace& trace, const TraceRunOptions& options) {
  sim::SimBackendOptions bo;
  bo.max_explored_faults = options.faults ? 1 : 0;
  sim::SimBackend backend(*model_, bo);
  TraceInterpreter in{*this, trace, *model_, backend, {}, {}, {}, {}, {}, {}};
  in.sync_stream = model_->create_stream("legacy");
  with_protocol(trace.mutant, [&]<class P>() { in.run_all<P>(); });
  model_->finish();
}

std::optional<std::string> UnallocatedBuffers::skip(const Statement& st) const {
  const auto check = [&](const std::string& buffer) -> std::optional<std::string> {
    auto it = why_.find(buffer);
    if (it == why_.end()) return std::nullopt;
    return "skipped: " + buffer + " has no memory (" + it->second + ")";
  };
  switch (st.kind) {
    case StmtKind::Free:
    case StmtKind::Deallocate:
    case StmtKind::Prepare:
    case StmtKind::Finish:
      return check(st.name);
    case StmtKind::Launch:
    case StmtKind::Copy:
    case StmtKind::Run:
      for (const auto& list : st.accesses)
        for (const auto& r : list.refs)
          if (auto why = check(r.buffer)) return why;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

std::optional<OpOrigin> TraceRun::origin(sim::OpRef op) const {
  auto it = origins_.find(op);
  if (it == origins_.end()) return std::nullopt;
  return it->second;
}

std::optional<BufferBytes> TraceRun::buffer_bytes(sim::ByteRange bytes) const {
  for (const auto& [name, b] : buffers_) {
    if (bytes.lo >= b.ptr && bytes.hi <= b.ptr + std::max<std::uint64_t>(b.bytes, 256) &&
        model_->allocation_range(b.allocation).lo == b.ptr)
      return BufferBytes{name, bytes.lo - b.ptr, std::min(bytes.hi - b.ptr, b.bytes)};
  }
  return std::nullopt;
}

}  // namespace streamcheck::tools
