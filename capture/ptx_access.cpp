#include "capture/ptx_access.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "capture/kernel_access.h"

namespace streamcheck::capture {

namespace {

// One PTX module's functions, parsed just far enough for the taint: each
// instruction is its opcode and its operands (split at top-level commas).
struct Instruction {
  std::string opcode;
  std::vector<std::string> operands;
};

struct Function {
  std::string name;
  bool is_entry = false;
  bool has_body = false;
  std::vector<std::string> params;
  std::vector<Instruction> body;
};

/// Parameters are tracked as bits of a word: a kernel with more than 64 is
/// left undecided as a whole.
constexpr std::size_t kMaxParams = 64;

/// What reaches a register: the parameters whose value flows into it
/// (through any arithmetic), the parameters whose param-space address does
/// (a `mov` of the parameter's name, for a generic load of it), and whether
/// it holds a value loaded from memory (an address no parameter names).
struct Taint {
  std::uint64_t value = 0;
  std::uint64_t param_address = 0;
  bool loaded = false;

  bool merge(const Taint& other) {
    const Taint before = *this;
    value |= other.value;
    param_address |= other.param_address;
    loaded = loaded || other.loaded;
    return before.value != value || before.param_address != param_address || before.loaded != loaded;
  }
  std::uint64_t params() const { return value | param_address; }
};

bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$' || c == '%';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())) != 0) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())) != 0) s.remove_suffix(1);
  return s;
}

std::string without_comments(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '"') {  // a string (.pragma "nounroll"): copied whole
      const std::size_t end = text.find('"', i + 1);
      const std::size_t stop = end == std::string_view::npos ? text.size() : end + 1;
      out.append(text.substr(i, stop - i));
      i = stop - 1;
    } else if (text.compare(i, 2, "//") == 0) {
      i = text.find('\n', i);
      if (i == std::string_view::npos) break;
      out.push_back('\n');
    } else if (text.compare(i, 2, "/*") == 0) {
      const std::size_t end = text.find("*/", i + 2);
      if (end == std::string_view::npos) break;
      out.push_back(' ');
      i = end + 1;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

/// Splits at commas outside brackets, braces and parentheses.
std::vector<std::string> split_operands(std::string_view text) {
  std::vector<std::string> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : ',';
    if (c == '[' || c == '{' || c == '(') ++depth;
    if (c == ']' || c == '}' || c == ')') --depth;
    if (c == ',' && depth <= 0) {
      const auto piece = trim(text.substr(start, i - start));
      if (!piece.empty()) out.emplace_back(piece);
      start = i + 1;
    }
  }
  return out;
}

/// The name of each `.param ... NAME[N]` in a parameter list.
std::vector<std::string> parameter_names(std::string_view list) {
  std::vector<std::string> names;
  for (const auto& piece : split_operands(list)) {
    std::string_view p = piece;
    if (const auto bracket = p.find('['); bracket != std::string_view::npos) p = p.substr(0, bracket);
    p = trim(p);
    std::size_t start = p.size();
    while (start > 0 && is_identifier_char(p[start - 1])) --start;
    if (start < p.size()) names.emplace_back(p.substr(start));
  }
  return names;
}

/// One statement of a body, without scope braces, labels and a predicate
/// guard; std::nullopt for a directive or an empty statement.
std::optional<Instruction> instruction_of(std::string_view statement) {
  std::string_view s = trim(statement);
  for (bool stripped = true; stripped && !s.empty();) {
    stripped = false;
    if (s.front() == '{' || s.front() == '}') {
      s = trim(s.substr(1));
      stripped = true;
      continue;
    }
    std::size_t n = 0;
    while (n < s.size() && is_identifier_char(s[n]) && s[n] != '%') ++n;
    if (n > 0 && n < s.size() && s[n] == ':' && (n + 1 >= s.size() || s[n + 1] != ':')) {
      s = trim(s.substr(n + 1));  // a label
      stripped = true;
    }
  }
  if (s.empty() || s.front() == '.') return std::nullopt;
  if (s.front() == '@') {  // @%p1 or @!%p1
    const std::size_t space = s.find_first_of(" \t\n");
    if (space == std::string_view::npos) return std::nullopt;
    s = trim(s.substr(space));
  }
  const std::size_t space = s.find_first_of(" \t\n");
  Instruction in;
  in.opcode = std::string(s.substr(0, space));
  if (space != std::string_view::npos) in.operands = split_operands(s.substr(space));
  return in;
}

std::vector<Function> parse_module(std::string_view ptx) {
  const std::string text = without_comments(ptx);
  if (text.find(".version") == std::string::npos) throw std::invalid_argument("not PTX text (no .version directive)");
  std::vector<Function> functions;
  int depth = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '{') ++depth;
    if (c == '}') --depth;
    if (depth != 0 || c != '.') continue;
    const bool entry = text.compare(i, 6, ".entry") == 0;
    const bool func = text.compare(i, 5, ".func") == 0;
    if (!entry && !func) continue;
    std::size_t p = i + (entry ? 6 : 5);
    if (p < text.size() && is_identifier_char(text[p])) continue;  // .entryfoo is not .entry
    auto skip_space = [&] {
      while (p < text.size() && std::isspace(static_cast<unsigned char>(text[p])) != 0) ++p;
    };
    auto group = [&](std::string_view what) {  // the text of a (...) group at p
      const std::size_t close = text.find(')', p);
      if (close == std::string::npos) throw std::invalid_argument(std::string(what) + " without its ')'");
      std::string inside = text.substr(p + 1, close - p - 1);
      p = close + 1;
      return inside;
    };
    Function f;
    f.is_entry = entry;
    skip_space();
    if (func && p < text.size() && text[p] == '(') (void)group("a return parameter list");
    skip_space();
    const std::size_t name_start = p;
    while (p < text.size() && is_identifier_char(text[p])) ++p;
    f.name = text.substr(name_start, p - name_start);
    if (f.name.empty()) throw std::invalid_argument("a function without a name");
    skip_space();
    if (p < text.size() && text[p] == '(') f.params = parameter_names(group("the parameter list of " + f.name));
    const std::size_t open = text.find_first_of("{;", p);
    if (open == std::string::npos) throw std::invalid_argument(f.name + " is cut off");
    if (text[open] == ';') {  // a declaration: the body is elsewhere, or nowhere
      functions.push_back(std::move(f));
      i = open;
      continue;
    }
    int body_depth = 0;
    std::size_t close = open;
    for (; close < text.size(); ++close) {
      if (text[close] == '{') ++body_depth;
      if (text[close] == '}' && --body_depth == 0) break;
    }
    if (close >= text.size()) throw std::invalid_argument("the body of " + f.name + " is cut off");
    f.has_body = true;
    const std::string_view body(text.data() + open + 1, close - open - 1);
    std::size_t start = 0;
    for (std::size_t k = 0; k < body.size(); ++k) {
      if (body[k] != ';') continue;
      if (auto in = instruction_of(body.substr(start, k - start))) f.body.push_back(std::move(*in));
      start = k + 1;
    }
    functions.push_back(std::move(f));
    i = close;
  }
  return functions;
}

enum class Space { Generic, Global, Local, Shared, Const, Param, Other };

Space space_of(std::string_view opcode) {
  Space space = Space::Generic;
  std::size_t start = 0;
  while (start <= opcode.size()) {
    std::size_t dot = opcode.find('.', start);
    if (dot == std::string_view::npos) dot = opcode.size();
    const std::string_view part = opcode.substr(start, dot - start);
    if (part == "global") space = Space::Global;
    if (part == "local") space = Space::Local;
    if (part.starts_with("shared")) space = Space::Shared;
    if (part == "const") space = Space::Const;
    if (part.starts_with("param")) space = Space::Param;
    if (part == "tex" || part == "surf") space = Space::Other;
    start = dot + 1;
  }
  return space;
}

std::string_view base_of(std::string_view opcode) { return opcode.substr(0, opcode.find('.')); }

/// What one function does through each of its parameters.
struct Summary {
  std::vector<bool> reads, writes;
  std::vector<std::string> undecided;  // empty: decided
  bool accesses_loaded_addresses = false;
  /// Parameters whose value was stored to memory: one could come back
  /// through a load, which the taint does not connect to the store, so they
  /// are undecided where the function reads or writes through a loaded
  /// address, and harmless (a scalar written out, say) where it does not.
  std::uint64_t escaped = 0;
};

class Analysis {
 public:
  explicit Analysis(std::vector<Function> functions) : functions_(std::move(functions)) {
    for (std::size_t i = 0; i < functions_.size(); ++i)
      if (functions_[i].has_body || !by_name_.contains(functions_[i].name)) by_name_[functions_[i].name] = i;
  }

  std::vector<PtxKernel> kernels() {
    std::vector<PtxKernel> out;
    for (const auto& f : functions_) {
      if (!f.is_entry || !f.has_body) continue;
      const Summary& s = summary(f.name);
      PtxKernel k;
      k.symbol = f.name;
      k.accesses_loaded_addresses = s.accesses_loaded_addresses;
      for (std::size_t i = 0; i < f.params.size(); ++i) {
        PtxParam p;
        if (!s.undecided[i].empty()) {
          p.undecided_because = s.undecided[i];
        } else if (s.reads[i] && s.writes[i]) {
          p.access = Access::ReadWrites;
        } else if (s.writes[i]) {
          p.access = Access::Writes;
        } else {
          p.access = s.reads[i] ? Access::Reads : Access::None;
        }
        k.params.push_back(std::move(p));
      }
      out.push_back(std::move(k));
    }
    return out;
  }

 private:
  /// The summary of the function named `name`, or nullptr where there is
  /// none to follow: no body in this module, or a call back into a function
  /// being analysed (recursion).
  const Summary* find_summary(const std::string& name) {
    const auto it = by_name_.find(name);
    if (it == by_name_.end() || !functions_[it->second].has_body || in_progress_.contains(name)) return nullptr;
    return &summary(name);
  }

  const Summary& summary(const std::string& name) {
    if (const auto done = summaries_.find(name); done != summaries_.end()) return done->second;
    in_progress_.insert(name);
    Summary s = analyse(functions_[by_name_.at(name)]);
    in_progress_.erase(name);
    return summaries_.emplace(name, std::move(s)).first->second;
  }

  struct State {
    const Function* f = nullptr;
    std::map<std::string, Taint, std::less<>> registers;
    /// Call-block `.param` variables (arguments stored before a call,
    /// return values read after it), by name: flow-insensitive, so every
    /// call's `param0` is one variable -- more taint, never less.
    std::map<std::string, Taint, std::less<>> call_params;
    Summary out;
    bool changed = false;
  };

  static int param_index(const State& st, std::string_view name) {
    const auto& ps = st.f->params;
    const auto it = std::find(ps.begin(), ps.end(), name);
    return it == ps.end() ? -1 : static_cast<int>(it - ps.begin());
  }

  /// The taint of a non-address operand: a register, a vector of them, a
  /// parameter's name (its address), or nothing (an immediate, a symbol).
  static Taint taint_of(const State& st, std::string_view operand) {
    Taint t;
    std::string_view s = trim(operand);
    if (!s.empty() && (s.front() == '{' || s.front() == '(')) {
      for (const auto& piece : split_operands(s.substr(1, s.size() - 2))) t.merge(taint_of(st, piece));
      return t;
    }
    while (!s.empty() && (s.front() == '-' || s.front() == '!')) s.remove_prefix(1);
    s = s.substr(0, s.find_first_of("+|"));
    s = trim(s);
    if (const auto r = st.registers.find(s); r != st.registers.end()) return r->second;
    if (const int k = param_index(st, s); k >= 0) t.param_address |= std::uint64_t{1} << k;
    if (const auto c = st.call_params.find(s); c != st.call_params.end()) t.merge(c->second);
    return t;
  }

  /// `[X+off]` -> the taint of X.
  static Taint address_taint(const State& st, std::string_view operand) {
    std::string_view s = trim(operand);
    if (s.size() >= 2 && s.front() == '[') s = s.substr(1, s.size() - 2);
    // [tensormap, {coords}] and the like: every piece may be an address.
    Taint t;
    for (const auto& piece : split_operands(s)) t.merge(taint_of(st, piece));
    return t;
  }

  static std::string_view address_base(std::string_view operand) {
    std::string_view s = trim(operand);
    if (s.size() >= 2 && s.front() == '[') s = s.substr(1, s.size() - 2);
    return trim(s.substr(0, s.find_first_of("+,")));
  }

  static void assign(State& st, std::string_view destination, const Taint& t) {
    std::string_view d = trim(destination);
    if (!d.empty() && d.front() == '{') {
      for (const auto& piece : split_operands(d.substr(1, d.size() - 2))) assign(st, piece, t);
      return;
    }
    // setp and shfl write `%p|%q`: both get it.
    for (std::size_t bar = d.find('|'); bar != std::string_view::npos; bar = d.find('|')) {
      assign(st, d.substr(0, bar), t);
      d = d.substr(bar + 1);
    }
    if (d.empty() || d.front() != '%') return;  // `_`, a label, an immediate
    if (st.registers[std::string(d)].merge(t)) st.changed = true;
  }

  static void undecide(State& st, std::uint64_t params, const std::string& why) {
    for (std::size_t k = 0; k < st.f->params.size() && k < kMaxParams; ++k)
      if ((params >> k & 1) != 0 && st.out.undecided[k].empty()) {
        st.out.undecided[k] = why;
        st.changed = true;
      }
  }

  static void access(State& st, const Taint& address, bool read, bool write) {
    for (std::size_t k = 0; k < st.f->params.size() && k < kMaxParams; ++k) {
      if ((address.value >> k & 1) == 0) continue;
      if (read && !st.out.reads[k]) st.out.reads[k] = st.changed = true;
      if (write && !st.out.writes[k]) st.out.writes[k] = st.changed = true;
    }
    if (address.loaded && !st.out.accesses_loaded_addresses) st.out.accesses_loaded_addresses = st.changed = true;
  }

  /// A value stored to memory (Summary::escaped).
  static void escape(State& st, const Taint& stored) {
    if ((st.out.escaped | stored.params()) == st.out.escaped) return;
    st.out.escaped |= stored.params();
    st.changed = true;
  }

  void load(State& st, const Instruction& in) {
    if (in.operands.size() < 2) return;
    const Space space = space_of(in.opcode);
    const std::string_view base = address_base(in.operands[1]);
    Taint result;
    if (space == Space::Param) {
      if (const int k = param_index(st, base); k >= 0) result.value |= std::uint64_t{1} << k;
      if (const auto c = st.call_params.find(base); c != st.call_params.end()) result.merge(c->second);
      const Taint through = address_taint(st, in.operands[1]);
      result.value |= through.param_address;
    } else {
      const Taint address = address_taint(st, in.operands[1]);
      if (space == Space::Global || space == Space::Generic) {
        access(st, address, true, false);
        result.value |= address.param_address;  // a generic load of a kernel parameter itself
      } else if (space == Space::Other && address.params() != 0) {
        undecide(st, address.params(), "used by an instruction the analysis does not model: " + in.opcode);
      }
      result.loaded = true;
    }
    assign(st, in.operands[0], result);
  }

  void store(State& st, const Instruction& in) {
    if (in.operands.size() < 2) return;
    const Space space = space_of(in.opcode);
    Taint stored;
    for (std::size_t i = 1; i < in.operands.size(); ++i) stored.merge(taint_of(st, in.operands[i]));
    if (space == Space::Param) {  // an argument for a call, or this function's return value
      if (st.call_params[std::string(address_base(in.operands[0]))].merge(stored)) st.changed = true;
      return;
    }
    const Taint address = address_taint(st, in.operands[0]);
    if (space == Space::Global || space == Space::Generic) access(st, address, false, true);
    if (space == Space::Other && address.params() != 0)
      undecide(st, address.params(), "used by an instruction the analysis does not model: " + in.opcode);
    escape(st, stored);
  }

  void atomic(State& st, const Instruction& in, bool has_destination) {
    const std::size_t a = has_destination ? 1 : 0;
    if (in.operands.size() <= a) return;
    const Space space = space_of(in.opcode);
    const Taint address = address_taint(st, in.operands[a]);
    if (space == Space::Global || space == Space::Generic) access(st, address, true, true);
    Taint stored;
    for (std::size_t i = a + 1; i < in.operands.size(); ++i) stored.merge(taint_of(st, in.operands[i]));
    escape(st, stored);
    if (has_destination) assign(st, in.operands[0], Taint{0, 0, true});
  }

  void call(State& st, const Instruction& in) {
    // call[.uni] [(ret, ...),] callee, [(arg, ...)] [, prototype]
    std::size_t i = 0;
    std::vector<std::string> returns, args;
    auto names_in = [](std::string_view group) {
      return split_operands(trim(group).substr(1, trim(group).size() - 2));
    };
    if (i < in.operands.size() && in.operands[i].starts_with("(")) returns = names_in(in.operands[i++]);
    if (i >= in.operands.size()) return;
    const std::string callee = in.operands[i++];
    if (i < in.operands.size() && in.operands[i].starts_with("(")) args = names_in(in.operands[i++]);
    const Summary* s = callee.starts_with("%") ? nullptr : find_summary(callee);
    Taint all;
    for (std::size_t a = 0; a < args.size(); ++a) {
      const Taint t = taint_of(st, args[a]);
      all.merge(t);
      if (s == nullptr || a >= s->undecided.size()) {
        undecide(st, t.params(), "passed to a function the PTX does not define or calls recursively: " + callee);
        continue;
      }
      if (!s->undecided[a].empty()) undecide(st, t.params(), "passed to " + callee + ", where " + s->undecided[a]);
      if ((s->escaped >> a & 1) != 0) escape(st, t);
      undecide(st, t.param_address, "its address is passed to " + callee);
      Taint as_address = t;
      as_address.param_address = 0;
      if (s->reads[a] || s->writes[a]) access(st, as_address, s->reads[a], s->writes[a]);
    }
    if (s != nullptr && s->accesses_loaded_addresses && !st.out.accesses_loaded_addresses)
      st.out.accesses_loaded_addresses = st.changed = true;
    // A return value may be any argument, or anything the callee loaded.
    all.loaded = true;
    for (const auto& r : returns)
      if (st.call_params[r].merge(all)) st.changed = true;
  }

  void step(State& st, const Instruction& in) {
    const std::string_view base = base_of(in.opcode);
    if (base == "ld" || base == "ldu") return load(st, in);
    if (base == "st") return store(st, in);
    if (base == "atom") return atomic(st, in, true);
    if (base == "red") return atomic(st, in, false);
    if (base == "call") return call(st, in);
    if (base == "prefetch" || base == "prefetchu" || base == "applypriority") return;
    if (base == "discard") {  // the line's contents become undefined: a write
      if (!in.operands.empty()) access(st, address_taint(st, in.operands[0]), false, true);
      return;
    }
    if ((in.opcode.starts_with("cp.async.ca.shared") || in.opcode.starts_with("cp.async.cg.shared")) &&
        in.opcode.find(".global") != std::string::npos && in.operands.size() >= 2) {
      // cp.async.{ca,cg}.shared.global [shared], [global], n: reads global.
      if (address_taint(st, in.operands[0]).params() != 0)
        undecide(st, address_taint(st, in.operands[0]).params(), "the destination of " + in.opcode);
      access(st, address_taint(st, in.operands[1]), true, false);
      return;
    }
    // Everything else: the destination gets its sources' taint; an address
    // operand it does not model leaves the parameters in it undecided.
    Taint sources;
    for (std::size_t i = 1; i < in.operands.size(); ++i) {
      const std::string_view op = trim(in.operands[i]);
      if (op.starts_with("[")) {
        const Taint address = address_taint(st, op);
        undecide(st, address.params(), "used by an instruction the analysis does not model: " + in.opcode);
        if (address.loaded && !st.out.accesses_loaded_addresses) st.out.accesses_loaded_addresses = st.changed = true;
      } else {
        sources.merge(taint_of(st, op));
      }
    }
    if (!in.operands.empty()) {
      if (trim(in.operands[0]).starts_with("[")) {
        const Taint address = address_taint(st, in.operands[0]);
        undecide(st, address.params(), "used by an instruction the analysis does not model: " + in.opcode);
        escape(st, sources);
      } else {
        assign(st, in.operands[0], sources);
      }
    }
  }

  Summary analyse(const Function& f) {
    State st;
    st.f = &f;
    st.out.reads.assign(f.params.size(), false);
    st.out.writes.assign(f.params.size(), false);
    st.out.undecided.assign(f.params.size(), std::string());
    if (f.params.size() > kMaxParams) {
      for (auto& u : st.out.undecided) u = "the kernel has more than 64 parameters";
      return st.out;
    }
    do {
      st.changed = false;
      for (const auto& in : f.body) step(st, in);
    } while (st.changed);
    if (st.out.accesses_loaded_addresses)
      undecide(st, st.out.escaped,
               "its value is stored to memory and the kernel reads or writes through addresses it loads");
    return st.out;
  }

  std::vector<Function> functions_;
  std::map<std::string, std::size_t, std::less<>> by_name_;
  std::map<std::string, Summary, std::less<>> summaries_;
  std::set<std::string, std::less<>> in_progress_;
};

std::optional<Access> join(const std::optional<Access>& a, const std::optional<Access>& b) {
  if (!a || !b) return std::nullopt;
  const bool reads = *a == Access::Reads || *a == Access::ReadWrites || *b == Access::Reads || *b == Access::ReadWrites;
  const bool writes =
      *a == Access::Writes || *a == Access::ReadWrites || *b == Access::Writes || *b == Access::ReadWrites;
  if (reads && writes) return Access::ReadWrites;
  if (writes) return Access::Writes;
  return reads ? Access::Reads : Access::None;
}

}  // namespace

const char* access_word(const std::optional<Access>& access) {
  if (!access) return "?";
  switch (*access) {
    case Access::None:
      return "-";
    case Access::Reads:
      return "reads";
    case Access::Writes:
      return "writes";
    case Access::ReadWrites:
      return "readwrites";
  }
  return "?";
}

std::vector<PtxKernel> derive_ptx_accesses(std::string_view ptx) { return Analysis(parse_module(ptx)).kernels(); }

void PtxKernelTable::add(const PtxKernel& kernel) {
  auto [it, inserted] = by_symbol_.try_emplace(kernel.symbol, kernel);
  if (inserted) return;
  PtxKernel& known = it->second;
  known.accesses_loaded_addresses = known.accesses_loaded_addresses || kernel.accesses_loaded_addresses;
  if (known.params.size() != kernel.params.size()) {
    for (auto& p : known.params) p = PtxParam{std::nullopt, "its modules disagree on its parameters"};
    return;
  }
  for (std::size_t i = 0; i < known.params.size(); ++i) {
    PtxParam& p = known.params[i];
    const std::string because = p.undecided_because.empty() ? kernel.params[i].undecided_because : p.undecided_because;
    p.access = join(p.access, kernel.params[i].access);
    p.undecided_because = p.access ? std::string() : because;
  }
}

const PtxKernel* PtxKernelTable::find(std::string_view symbol) const {
  const auto it = by_symbol_.find(std::string(symbol));
  return it == by_symbol_.end() ? nullptr : &it->second;
}

std::vector<const PtxKernel*> PtxKernelTable::kernels() const {
  std::vector<const PtxKernel*> out;
  for (const auto& [symbol, kernel] : by_symbol_) out.push_back(&kernel);
  std::sort(out.begin(), out.end(), [](const PtxKernel* a, const PtxKernel* b) { return a->symbol < b->symbol; });
  return out;
}

std::string PtxKernelTable::format() const {
  std::string out;
  for (const PtxKernel* k : kernels()) {
    out += k->symbol + " |";
    for (const auto& p : k->params) out += std::string(" ") + access_word(p.access);
    out += "\n";
  }
  return out;
}

PtxKernelTable PtxKernelTable::parse(std::string_view text) {
  PtxKernelTable table;
  std::istringstream lines{std::string(text)};
  std::size_t number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    if (trim(line).empty()) continue;
    const auto bar = line.find('|');
    if (bar == std::string::npos) throw std::invalid_argument(std::to_string(number) + ": expected 'SYMBOL | W ...'");
    PtxKernel k;
    k.symbol = std::string(trim(std::string_view(line).substr(0, bar)));
    std::istringstream words(line.substr(bar + 1));
    for (std::string w; words >> w;) {
      PtxParam p;
      try {  // the sidecar's words (KernelTable), and ? for undecided
        if (w == "?")
          p.undecided_because = "undecided";
        else
          p.access = KernelTable::parse_accesses(w).front();
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::to_string(number) + ": " + e.what());
      }
      k.params.push_back(std::move(p));
    }
    table.add(k);
  }
  return table;
}

}  // namespace streamcheck::capture
