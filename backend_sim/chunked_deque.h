// A deque for the records a run keeps per op or per API call (the HB log,
// each stream's ops, the race checker's accesses): a million-op trace keeps
// millions of them, and the explorer makes a fresh model for every run of a
// small program.
//
// std::deque grows by 512-byte blocks, so it made a malloc every dozen
// records and a free of each when the run ended (5 % of the checker's time at
// 1 M ops), it allocates a block even while empty, and its index divides by
// a block size that is not a power of two. Here the first chunk holds
// 2^kFirstLog2 elements and each next one as many as all before it, up to
// 2^kChunkLog2 a chunk (a small run makes a few small allocations; a long one
// one per 2^kChunkLog2 records); an index is found with a shift; elements
// never move once added (references stay valid, as with std::deque).
// pop_front drops elements from the front; they are destroyed with their
// chunk, when the last of it is popped.
#pragma once

#include <bit>
#include <cstddef>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace streamcheck::sim {

template <class T, std::size_t kChunkLog2 = 8, std::size_t kFirstLog2 = 3>
class ChunkedDeque {
  static_assert(kFirstLog2 <= kChunkLog2);
  static constexpr std::size_t kChunk = std::size_t{1} << kChunkLog2;
  static constexpr std::size_t kFirst = std::size_t{1} << kFirstLog2;
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
    // By place, not by the last chunk's fill: popping frees chunks.
    const Place p = place(front_ + size_);
    if (p.chunk == chunks_.size()) {
      chunks_.emplace_back();
      chunks_.back().reserve(capacity(p.chunk));  // never grown past: its elements stay where they are
    }
    chunks_[p.chunk].push_back(std::move(value));
    ++size_;
  }
  void pop_front() {
    if (size_ == 0) throw std::out_of_range("ChunkedDeque: pop_front of an empty deque");
    --size_;
    const std::size_t chunk = place(front_++).chunk;
    if (place(front_).chunk != chunk) std::vector<T>().swap(chunks_[chunk]);  // all of it popped: freed
  }

  iterator begin() { return iterator(this, 0); }
  iterator end() { return iterator(this, size_); }
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size_); }

 private:
  struct Place {
    std::size_t chunk;
    std::size_t offset;
  };
  /// Where the element `at` places from the first one ever pushed lives:
  /// chunk 0 holds [0, kFirst), chunk k <= kChunkLog2 - kFirstLog2 holds
  /// [2^(kFirstLog2 + k - 1), 2^(kFirstLog2 + k)), and each chunk after
  /// them kChunk elements.
  static Place place(std::size_t at) {
    if (at < kFirst) return {0, at};
    if (at < kChunk) {
      const auto k = static_cast<std::size_t>(std::bit_width(at >> kFirstLog2));
      return {k, at - (std::size_t{1} << (kFirstLog2 + k - 1))};
    }
    return {kChunkLog2 - kFirstLog2 + (at >> kChunkLog2), at & kMask};
  }
  static std::size_t capacity(std::size_t chunk) {
    if (chunk == 0) return kFirst;
    if (chunk <= kChunkLog2 - kFirstLog2) return std::size_t{1} << (kFirstLog2 + chunk - 1);
    return kChunk;
  }
  T& element(std::size_t i) {
    const Place p = place(front_ + i);
    return chunks_[p.chunk][p.offset];
  }

  // Each reserved to its capacity. A vector (an empty one allocates
  // nothing, where a std::deque allocates a block at once: the explorer
  // makes a model per run); moving a chunk's vector moves no element.
  std::vector<std::vector<T>> chunks_;
  std::size_t front_ = 0;  // the number of elements ever popped: the front's place in the chunks
  std::size_t size_ = 0;
};

}  // namespace streamcheck::sim
