// A fix as data: edits of the trace program, by the lines of the original
// file, that `streamcheck fix` applies and the report words. Everything that
// proposes a fix (a missing edge, a near-miss record or wait, a resource
// call left out) says it in these edits, so one function applies them all
// and the fix-checking test (tests/tools/test_fix.cpp) checks them all.
#pragma once

#include <compare>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace streamcheck::tools {

/// One change of a trace program. Lines are 1-based lines of the ORIGINAL
/// file; edits of one fix (and of several fixes) never renumber each other.
struct TraceEdit {
  enum class Kind : std::uint8_t {
    Declare,       // add `text` (a declaration: "event fix_1") before the first statement
    InsertBefore,  // add statement `text` on a new line just before `line`
    InsertAfter,   // add statement `text` on a new line just after `line`
    MoveBefore,    // move the statement at `line` to just before the statement at `anchor`
    MoveAfter,     // move the statement at `line` to just after the statement at `anchor`
    Remove,        // delete the statement at `line`
  };
  Kind kind = Kind::InsertAfter;
  int line = 0;  // 0 for Declare
  /// Declare/Insert*: a whole statement as a trace line, with its "@THREAD "
  /// prefix when it does not run on main; empty for Move*/Remove.
  std::string text;
  int anchor = 0;  // Move*: the line the statement moves next to

  static TraceEdit declare(std::string text) { return {Kind::Declare, 0, std::move(text), 0}; }
  static TraceEdit insert_before(int line, std::string text) { return {Kind::InsertBefore, line, std::move(text), 0}; }
  static TraceEdit insert_after(int line, std::string text) { return {Kind::InsertAfter, line, std::move(text), 0}; }
  static TraceEdit move_before(int line, int anchor) { return {Kind::MoveBefore, line, {}, anchor}; }
  static TraceEdit move_after(int line, int anchor) { return {Kind::MoveAfter, line, {}, anchor}; }
  static TraceEdit remove(int line) { return {Kind::Remove, line, {}, 0}; }

  friend auto operator<=>(const TraceEdit&, const TraceEdit&) = default;
};

/// A trace with edits applied, and where each original line went.
struct EditedTrace {
  std::string text;
  /// new_line[L] is the line number in `text` of original line L (index 0
  /// unused); 0 for a removed line.
  std::vector<int> new_line;
  /// The inverse: the original line of each line of `text` (0: an inserted one).
  std::vector<int> to_original() const;
};

/// Applies `edits` to the trace text `original`. Throws std::invalid_argument
/// (saying which edit) for a line outside the file, a move of a line that
/// another edit moves or removes too, or a move next to itself.
EditedTrace apply_edits(std::string_view original, std::span<const TraceEdit> edits);

/// "after line 7: record fix_1 on s1", "move line 21 after line 22".
std::string describe(const TraceEdit& edit);
/// The edits joined with "; ".
std::string describe(std::span<const TraceEdit> edits);

}  // namespace streamcheck::tools
