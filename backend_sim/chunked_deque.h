// A deque for the records a run keeps per op or per API call (the HB log,
// each stream's ops, the race checker's accesses): a million-op trace keeps
// millions of them, and the explorer makes a fresh model for every run of a
// small program.
//
// std::deque grows by 512-byte blocks, so it made a malloc every dozen
// records and a free of each when the run ended (5 % of the checker's time at
// 1 M ops), it allocates a block even while empty, and its index divides by
// a block size that is not a power of two. Here every chunk holds
// 2^kChunkLog2 elements, so an index is a shift and a mask (the checker
// indexes these records more than anything else: chunks of 8, 8, 16, ... 256
// cost it 8-16 %, docs/PERFORMANCE.md), and elements never move once added
// (references stay valid, as with std::deque). A chunk's storage goes back
// to a free list of its thread when the chunk is freed, and the next chunk
// of that element type takes it from there: the explorer's fresh model per
// run then reuses the last run's chunks instead of allocating them again (a
// malloc, and the heap's trim and page faults, each run). Every freed chunk
// is kept: a list of 64 let a million-op run give back all but 64 of its
// chunks, to fault them in again in the next run.
// pop_front drops elements from the front; they are destroyed with their
// chunk, when the last of it is popped.
#pragma once

#include <cstddef>
#include <cstring>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace streamcheck::sim {

namespace chunk_storage {

/// An allocator that keeps every freed block of kElements T on a free list
/// of its thread, for the next block of that size: a million-op run frees
/// thousands of chunks, and the next run in the process (the explorer's,
/// a benchmark's next iteration) takes them back without a malloc or a
/// page fault. Kept blocks go back to the heap when the thread ends. Other
/// sizes, and every block under AddressSanitizer (which must see each
/// allocation and free), go to the heap.
template <class T, std::size_t kElements>
class Recycling {
 public:
  using value_type = T;
  template <class U>
  struct rebind {
    using other = Recycling<U, kElements>;
  };
  Recycling() = default;
  template <class U>
  explicit Recycling(const Recycling<U, kElements>&) {}

  T* allocate(std::size_t n) {
    if (kRecycles && n == kElements)
      if (void* block = cache().take()) return static_cast<T*>(block);
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (kRecycles && n == kElements)
      cache().keep(p);
    else
      std::allocator<T>().deallocate(p, n);
  }
  friend bool operator==(const Recycling&, const Recycling&) { return true; }
  /// Blocks this thread keeps for the next allocations of kElements T.
  static std::size_t cached() { return cache().size; }

 private:
#if defined(__SANITIZE_ADDRESS__)
  static constexpr bool kRecycles = false;
#else
  static constexpr bool kRecycles = true;
#endif
  // A kept block holds the address of the next one in its first bytes, so
  // keeping one never allocates (deallocate must not throw).
  static_assert(kElements * sizeof(T) >= sizeof(void*), "a block must hold a pointer to be kept");
  struct Cache {
    void* head = nullptr;
    std::size_t size = 0;
    Cache() = default;
    ~Cache() {
      while (void* block = take()) std::allocator<T>().deallocate(static_cast<T*>(block), kElements);
    }
    Cache(const Cache&) = delete;
    Cache& operator=(const Cache&) = delete;
    void keep(void* block) noexcept {
      std::memcpy(block, &head, sizeof head);
      head = block;
      ++size;
    }
    void* take() noexcept {
      void* block = head;
      if (block) {
        std::memcpy(&head, block, sizeof head);
        --size;
      }
      return block;
    }
  };
  static Cache& cache() {
    thread_local Cache c;
    return c;
  }
};

}  // namespace chunk_storage

template <class T, std::size_t kChunkLog2 = 8>
class ChunkedDeque {
  static constexpr std::size_t kChunk = std::size_t{1} << kChunkLog2;
  static constexpr std::size_t kMask = kChunk - 1;
  using Chunk = std::vector<T, chunk_storage::Recycling<T, kChunk>>;

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

  ChunkedDeque() = default;
  /// A copied vector holds just its elements: the last chunk, which the
  /// next push_back fills, gets its whole chunk's room, or that push would
  /// move the copy's elements (and break what points into them).
  ChunkedDeque(const ChunkedDeque& other) : chunks_(other.chunks_), front_(other.front_), size_(other.size_) {
    if (!chunks_.empty() && !chunks_.back().empty()) chunks_.back().reserve(kChunk);
  }
  ChunkedDeque& operator=(const ChunkedDeque& other) {
    if (this != &other) *this = ChunkedDeque(other);
    return *this;
  }
  /// A moved-from deque is empty (the default move would leave its counts
  /// naming chunks it no longer has).
  ChunkedDeque(ChunkedDeque&& other) noexcept
      : chunks_(std::move(other.chunks_)),
        front_(std::exchange(other.front_, 0)),
        size_(std::exchange(other.size_, 0)) {
    other.chunks_.clear();
  }
  ChunkedDeque& operator=(ChunkedDeque&& other) noexcept {
    if (this != &other) {
      chunks_ = std::move(other.chunks_);
      other.chunks_.clear();
      front_ = std::exchange(other.front_, 0);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }

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
    const std::size_t at = front_ + size_;
    const std::size_t chunk = at >> kChunkLog2;
    if (chunk == chunks_.size()) {
      chunks_.emplace_back();
      chunks_.back().reserve(kChunk);  // never grown past: its elements stay where they are
    }
    chunks_[chunk].push_back(std::move(value));
    ++size_;
  }
  void pop_front() {
    if (size_ == 0) throw std::out_of_range("ChunkedDeque: pop_front of an empty deque");
    --size_;
    const std::size_t chunk = front_++ >> kChunkLog2;
    if ((front_ >> kChunkLog2) != chunk) Chunk().swap(chunks_[chunk]);  // all of it popped: freed
  }

  /// Forgets the places of the chunks pop_front emptied (their storage is
  /// gone already; each leaves an empty place in the list of chunks, which a
  /// queue that pops for a long run grows by one every chunk_size() pops).
  void forget_popped_chunks() {
    const std::size_t n = front_ >> kChunkLog2;
    if (n == 0) return;
    chunks_.erase(chunks_.begin(), chunks_.begin() + static_cast<std::ptrdiff_t>(n));
    front_ -= n * kChunk;
  }
  /// The elements a chunk holds: drop_front_chunks frees whole chunks.
  static constexpr std::size_t chunk_size() { return kChunk; }
  /// Frees the first `n` chunks (n * chunk_size() elements, which must be
  /// there): the element at index i is at index i - n * chunk_size() after.
  /// For a deque that never pops (a run's records, when a retention pass
  /// drops the front of them that nothing names, DeviceModel::compact);
  /// the chunks' storage goes back to the recycler.
  void drop_front_chunks(std::size_t n) {
    if (n == 0) return;
    if (front_ != 0) throw std::logic_error("ChunkedDeque: drop_front_chunks on a deque that popped");
    if (n > size_ / kChunk)
      throw std::out_of_range("ChunkedDeque: dropping " + std::to_string(n) + " chunks of " + std::to_string(size_) +
                              " elements");
    chunks_.erase(chunks_.begin(), chunks_.begin() + static_cast<std::ptrdiff_t>(n));
    size_ -= n * kChunk;
  }

  iterator begin() { return iterator(this, 0); }
  iterator end() { return iterator(this, size_); }
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size_); }

 private:
  T& element(std::size_t i) {
    const std::size_t at = front_ + i;
    return chunks_[at >> kChunkLog2][at & kMask];
  }

  // A vector (an empty one allocates nothing, where a std::deque allocates
  // a block at once: the explorer makes a model per run); moving a chunk's
  // vector moves no element.
  std::vector<Chunk> chunks_;
  std::size_t front_ = 0;  // the number of elements ever popped: the front's place in the chunks
  std::size_t size_ = 0;
};

}  // namespace streamcheck::sim
