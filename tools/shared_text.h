// Text many records hold alike, one copy for all of them: a run's schedule
// (every finding it showed first), a statement's text (every op a loop's
// statement enqueued, and every report finding naming one).
#pragma once

#include <fmt/format.h>

#include <concepts>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace streamcheck::tools {

/// An immutable string shared by copies: copying one copies a pointer.
/// A random run of a loop with a race in every iteration shows thousands of
/// findings, and its schedule is tens of KB: a copy each grew with the
/// square of the loop (`explore` of 20,000 iterations held 40,000 copies of
/// 80 KB, 3.3 GB). Compared by text.
class SharedText {
 public:
  SharedText() = default;
  SharedText(std::string text) : text_(std::make_shared<const std::string>(std::move(text))) {}  // NOLINT
  SharedText(const char* text) : SharedText(std::string(text)) {}                                // NOLINT
  const std::string& str() const { return text_ ? *text_ : kEmpty; }
  operator const std::string&() const { return str(); }  // NOLINT: read where a text is
  operator std::string_view() const { return str(); }    // NOLINT
  bool empty() const { return str().empty(); }
  std::size_t size() const { return str().size(); }
  /// Whether `other` holds this very copy (not only equal text).
  bool same_copy(const SharedText& other) const { return text_ == other.text_; }
  friend bool operator==(const SharedText& a, const SharedText& b) { return a.same_copy(b) || a.str() == b.str(); }
  template <class Text>
  requires(std::convertible_to<const Text&, std::string_view> && !std::same_as<Text, SharedText>) friend bool
  operator==(const SharedText& a, const Text& b) {
    return std::string_view(a.str()) == std::string_view(b);
  }

 private:
  inline static const std::string kEmpty;
  std::shared_ptr<const std::string> text_;
};

/// One SharedText for each distinct text asked for: a loop's statements
/// have a handful of texts over millions of lines, and each op a report
/// names held its own copy of its statement's (two a finding of a racy
/// loop, plus those of its near miss).
class TextInterner {
 public:
  SharedText operator()(std::string_view text) {
    if (const auto it = by_text_.find(text); it != by_text_.end()) return it->second;
    SharedText kept{std::string(text)};
    by_text_.emplace(std::string_view(kept.str()), kept);  // the key views the kept copy
    return kept;
  }

 private:
  std::unordered_map<std::string_view, SharedText> by_text_;
};

}  // namespace streamcheck::tools

template <>
struct fmt::formatter<streamcheck::tools::SharedText> : fmt::formatter<std::string_view> {
  auto format(const streamcheck::tools::SharedText& text, format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(text.str(), ctx);
  }
};
