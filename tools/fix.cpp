#include "tools/fix.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <stdexcept>
#include <variant>

namespace streamcheck::tools {

namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
  }
  return lines;
}

/// A line that holds a statement: neither blank nor only a comment.
bool is_statement(std::string_view line) {
  const auto first = line.find_first_not_of(" \t\r");
  return first != std::string_view::npos && line[first] != '#';
}

}  // namespace

EditedTrace apply_edits(std::string_view original, std::span<const TraceEdit> edits) {
  const std::vector<std::string_view> lines = split_lines(original);
  const int n = static_cast<int>(lines.size());
  // What goes just before / just after each original line: inserted text, or
  // an original line moved there (an int), in the order of the edits.
  using Entry = std::variant<std::string, int>;
  std::vector<std::vector<Entry>> before(n + 2), after(n + 2);
  std::vector<bool> moved(n + 1, false), removed(n + 1, false);
  int first_statement = n + 1;  // declarations go before it (n + 1: at the end)
  for (int l = 1; l <= n; ++l)
    if (is_statement(lines[l - 1])) {
      first_statement = l;
      break;
    }
  auto check_line = [&](const TraceEdit& e, int l) {
    if (l < 1 || l > n)
      throw std::invalid_argument(
          fmt::format("fix edit '{}' names line {}, outside the trace's {} lines", describe(e), l, n));
  };
  auto take = [&](const TraceEdit& e) {
    check_line(e, e.line);
    if (moved[e.line] || removed[e.line])
      throw std::invalid_argument(fmt::format(
          "fix edit '{}' changes line {}, which another edit already moves or removes", describe(e), e.line));
  };
  std::vector<Entry> declarations;
  for (const TraceEdit& e : edits) {
    switch (e.kind) {
      case TraceEdit::Kind::Declare:
        declarations.emplace_back(e.text);
        break;
      case TraceEdit::Kind::InsertBefore:
        check_line(e, e.line);
        before[e.line].emplace_back(e.text);
        break;
      case TraceEdit::Kind::InsertAfter:
        check_line(e, e.line);
        after[e.line].emplace_back(e.text);
        break;
      case TraceEdit::Kind::MoveBefore:
      case TraceEdit::Kind::MoveAfter:
        take(e);
        check_line(e, e.anchor);
        if (e.anchor == e.line)
          throw std::invalid_argument(fmt::format("fix edit '{}' moves line {} next to itself", describe(e), e.line));
        moved[e.line] = true;
        (e.kind == TraceEdit::Kind::MoveBefore ? before : after)[e.anchor].emplace_back(e.line);
        break;
      case TraceEdit::Kind::Remove:
        take(e);
        removed[e.line] = true;
        break;
    }
  }
  before[first_statement].insert(before[first_statement].begin(), declarations.begin(), declarations.end());

  EditedTrace out;
  out.new_line.assign(n + 1, 0);
  int written = 0;
  std::vector<bool> emitting(n + 1, false);
  auto put = [&](std::string_view text) {
    out.text.append(text);
    out.text.push_back('\n');
    ++written;
  };
  std::function<void(int)> emit_line;
  auto emit_entries = [&](const std::vector<Entry>& entries) {
    for (const Entry& entry : entries) {
      if (const auto* text = std::get_if<std::string>(&entry))
        put(*text);
      else
        emit_line(std::get<int>(entry));
    }
  };
  emit_line = [&](int l) {
    if (emitting[l]) throw std::invalid_argument(fmt::format("fix edits move line {} next to itself (a cycle)", l));
    emitting[l] = true;
    emit_entries(before[l]);
    if (!removed[l]) {
      put(lines[l - 1]);
      out.new_line[l] = written;
    }
    emit_entries(after[l]);
  };
  for (int l = 1; l <= n; ++l)
    if (!moved[l]) emit_line(l);
  emit_entries(before[n + 1]);
  for (int l = 1; l <= n; ++l)
    if (moved[l] && !emitting[l]) throw std::invalid_argument(fmt::format("fix edits move line {} in a cycle", l));
  return out;
}

std::vector<int> EditedTrace::to_original() const {
  std::vector<int> out(static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1, 0);
  for (std::size_t l = 1; l < new_line.size(); ++l)
    if (new_line[l] > 0) out.at(static_cast<std::size_t>(new_line[l])) = static_cast<int>(l);
  return out;
}

std::string describe(const TraceEdit& e) {
  switch (e.kind) {
    case TraceEdit::Kind::Declare:
      return fmt::format("declare `{}`", e.text);
    case TraceEdit::Kind::InsertBefore:
      return fmt::format("add `{}` before line {}", e.text, e.line);
    case TraceEdit::Kind::InsertAfter:
      return fmt::format("add `{}` after line {}", e.text, e.line);
    case TraceEdit::Kind::MoveBefore:
      return fmt::format("move line {} before line {}", e.line, e.anchor);
    case TraceEdit::Kind::MoveAfter:
      return fmt::format("move line {} after line {}", e.line, e.anchor);
    case TraceEdit::Kind::Remove:
      return fmt::format("remove line {}", e.line);
  }
  return {};
}

std::string describe(std::span<const TraceEdit> edits) {
  std::string out;
  for (const auto& e : edits) out += (out.empty() ? "" : "; ") + describe(e);
  return out;
}

}  // namespace streamcheck::tools
