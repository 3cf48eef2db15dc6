// A deque for the records a run keeps per op or per API call (the HB log,
// each stream's ops, the race checker's accesses): a million-op trace keeps
// millions of them.
//
// std::deque grows by 512-byte blocks, so it made a malloc every dozen
// records and a free of each when the run ended (5 % of the checker's time at
// 1 M ops), and its index divides by a block size that is not a power of two.
// Here a chunk holds 2^kChunkLog2 elements: one allocation per chunk, an index
// is a shift and a mask, and elements never move once added (references stay
// valid, as with std::deque). pop_front drops elements from the front; they
// are destroyed with their chunk, when the last of it is popped.
#pragma once

#include <cstddef>
#include <deque>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace streamcheck::sim {

template <class T, std::size_t kChunkLog2 = 8>
class ChunkedDeque {
  static constexpr std::size_t kChunk = std::size_t{1} << kChunkLog2;
  static constexpr std::size_t kMask = kChunk - 1;

 public:
  template <bool kConst>
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = std::conditional_t<kConst, const T*, T*>;
    using reference = std::conditional_t<kConst, const T&, T&>;
    using Owner = std::conditional_t<kConst, const ChunkedDeque, ChunkedDeque>;

    Iterator() = default;
    Iterator(Owner* owner, std::size_t index) : owner_(owner), index_(index) {}
    reference operator*() const { return (*owner_)[index_]; }
    pointer operator->() const { return &(*owner_)[index_]; }
    Iterator& operator++() {
      ++index_;
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++index_;
      return before;
    }
    friend bool operator==(const Iterator& a, const Iterator& b) { return a.index_ == b.index_; }

   private:
    Owner* owner_ = nullptr;
    std::size_t index_ = 0;
  };
  using iterator = Iterator<false>;
  using const_iterator = Iterator<true>;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  T& operator[](std::size_t i) { return element(i); }
  const T& operator[](std::size_t i) const { return const_cast<ChunkedDeque&>(*this).element(i); }
  const T& at(std::size_t i) const {
    if (i >= size_)
      throw std::out_of_range("ChunkedDeque: index " + std::to_string(i) + " of " + std::to_string(size_));
    return (*this)[i];
  }
  T& at(std::size_t i) { return const_cast<T&>(std::as_const(*this).at(i)); }
  T& front() { return at(0); }
  const T& front() const { return at(0); }
  T& back() { return at(size_ - 1); }
  const T& back() const { return at(size_ - 1); }

  void push_back(T value) {
    if (chunks_.empty() || chunks_.back().size() == kChunk) {
      chunks_.emplace_back();
      chunks_.back().reserve(kChunk);  // never grown past: its elements stay where they are
    }
    chunks_.back().push_back(std::move(value));
    ++size_;
  }
  void pop_front() {
    if (size_ == 0) throw std::out_of_range("ChunkedDeque: pop_front of an empty deque");
    --size_;
    if (++first_ == kChunk) {
      chunks_.pop_front();
      first_ = 0;
    }
  }

  iterator begin() { return iterator(this, 0); }
  iterator end() { return iterator(this, size_); }
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size_); }

 private:
  T& element(std::size_t i) {
    const std::size_t at = first_ + i;
    return chunks_[at >> kChunkLog2][at & kMask];
  }

  std::deque<std::vector<T>> chunks_;  // each reserved to kChunk elements
  std::size_t first_ = 0;              // the front element's place in chunks_.front()
  std::size_t size_ = 0;
};

}  // namespace streamcheck::sim
