// An optional value kept on the heap, for the fields of a record that are
// rarely set: one pointer where nothing is, instead of the value's whole
// size in every record. A report of a racy loop holds a finding per
// iteration, and four such fields (a near miss, a producer, a schedule
// file, a shared handle) were 350 of a finding's 776 bytes.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

namespace streamcheck::tools {

/// std::optional<T>'s reading and writing (has_value, *, ->, value_or,
/// emplace, reset, assignment from T, std::optional<T> or std::nullopt)
/// with the value out of line. Copies copy the value.
template <class T>
class OutOfLine {
 public:
  OutOfLine() = default;
  OutOfLine(std::nullopt_t) {}                                           // NOLINT: as std::optional
  OutOfLine(T value) : value_(std::make_unique<T>(std::move(value))) {}  // NOLINT: as std::optional
  OutOfLine(std::optional<T> value)                                      // NOLINT: as std::optional
      : value_(value ? std::make_unique<T>(std::move(*value)) : nullptr) {}
  OutOfLine(const OutOfLine& o) : value_(o.value_ ? std::make_unique<T>(*o.value_) : nullptr) {}
  OutOfLine(OutOfLine&&) noexcept = default;
  OutOfLine& operator=(const OutOfLine& o) {
    if (this != &o) value_ = o.value_ ? std::make_unique<T>(*o.value_) : nullptr;
    return *this;
  }
  OutOfLine& operator=(OutOfLine&&) noexcept = default;
  ~OutOfLine() = default;

  bool has_value() const { return value_ != nullptr; }
  explicit operator bool() const { return has_value(); }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return value_.get(); }
  const T* operator->() const { return value_.get(); }
  const T& value() const {
    if (!value_) throw std::bad_optional_access();
    return *value_;
  }
  template <class U>
  T value_or(U&& otherwise) const {
    return value_ ? *value_ : static_cast<T>(std::forward<U>(otherwise));
  }
  template <class... Args>
  T& emplace(Args&&... args) {
    value_ = std::make_unique<T>(std::forward<Args>(args)...);
    return *value_;
  }
  void reset() { value_.reset(); }

  friend bool operator==(const OutOfLine& a, const OutOfLine& b) requires requires(const T& x) { x == x; }
  { return a.has_value() == b.has_value() && (!a.has_value() || *a == *b); }

 private:
  std::unique_ptr<T> value_;
};

}  // namespace streamcheck::tools
