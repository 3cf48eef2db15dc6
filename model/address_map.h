#pragma once
// A hash map keyed by device address: the resource's table of live blocks.
//
// Why not std::unordered_map: on the allocate/deallocate path the map was
// most of the core's own cost (docs/PERFORMANCE.md, "GPU: ..."): each
// lookup divides by a prime bucket count, every insert allocates a node and
// every erase frees it after walking the bucket's list again to unlink it.
// Here entries live in one array (open addressing, linear probing), the
// slot comes from a multiply and a shift (Fibonacci hashing: device
// addresses are aligned, so their low bits say nothing and the product's
// high bits are used), and an erase shifts the entries after it back
// (backward-shift deletion), so no tombstones pile up and a lookup stops
// at the first empty slot.
//
// The interface is the part of std::unordered_map that GuardedMap and the
// resource use. Unlike std::unordered_map, an insert may move every entry
// (growth) and an erase may move the entries after it: iterators and
// references live only until the map next changes. The resource holds them
// only within one critical section, between changes.
#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <new>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace streamcheck {

template <class V>
class AddressMap {
  // Growth and backward shifts move entries: a move that could throw would
  // leave the table half moved.
  static_assert(std::is_nothrow_move_constructible_v<V>, "AddressMap moves its entries");
  using Slots = std::vector<std::optional<std::pair<const std::uint64_t, V>>>;

 public:
  using key_type = std::uint64_t;
  using mapped_type = V;
  using value_type = std::pair<const std::uint64_t, V>;
  using size_type = std::size_t;

  template <bool kConst>
  class Iterator {
    using SlotsRef = std::conditional_t<kConst, const Slots, Slots>;

   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = AddressMap::value_type;
    using difference_type = std::ptrdiff_t;
    using pointer = std::conditional_t<kConst, const value_type*, value_type*>;
    using reference = std::conditional_t<kConst, const value_type&, value_type&>;

    Iterator() = default;
    /// A const iterator from a mutable one (a template, so that it is never
    /// taken for Iterator<false>'s copy constructor).
    template <bool kFromConst>
    Iterator(const Iterator<kFromConst>& other) requires(kConst && !kFromConst)
        : slots_(other.slots_), index_(other.index_) {}
    reference operator*() const { return *(*slots_)[index_]; }
    pointer operator->() const { return &*(*slots_)[index_]; }
    Iterator& operator++() {
      index_ = next_used(*slots_, index_ + 1);
      return *this;
    }
    Iterator operator++(int) {
      Iterator before = *this;
      ++*this;
      return before;
    }
    friend bool operator==(const Iterator& a, const Iterator& b) { return a.index_ == b.index_; }

   private:
    friend class AddressMap;
    template <bool>
    friend class Iterator;
    Iterator(SlotsRef& slots, std::size_t index) : slots_(&slots), index_(index) {}
    SlotsRef* slots_ = nullptr;
    std::size_t index_ = 0;
  };
  using iterator = Iterator<false>;
  using const_iterator = Iterator<true>;

  AddressMap() = default;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  iterator begin() { return iterator(slots_, next_used(slots_, 0)); }
  iterator end() { return iterator(slots_, slots_.size()); }
  const_iterator begin() const { return cbegin(); }
  const_iterator end() const { return cend(); }
  const_iterator cbegin() const { return const_iterator(slots_, next_used(slots_, 0)); }
  const_iterator cend() const { return const_iterator(slots_, slots_.size()); }

  iterator find(key_type key) { return iterator(slots_, index_of(key)); }
  const_iterator find(key_type key) const { return const_iterator(slots_, index_of(key)); }
  bool contains(key_type key) const { return index_of(key) != slots_.size(); }
  /// Where `key` sits: its slot's index, or slot_count() when it is not
  /// there (for tests, which need keys that collide).
  std::size_t slot_of(key_type key) const { return index_of(key); }
  std::size_t slot_count() const { return slots_.size(); }
  /// The entry a const_iterator names, to change it: no second lookup.
  iterator mutable_iterator(const_iterator it) { return iterator(slots_, it.index_); }

  /// Inserts (key, V(args...)) unless key is there; says where it is and
  /// whether it was inserted. Nothing changes when it is there.
  template <class... Args>
  std::pair<iterator, bool> try_emplace(key_type key, Args&&... args) {
    const auto [index, found] = slot_for_insert(key);
    if (found) return {iterator(slots_, index), false};
    slots_[index].emplace(std::piecewise_construct, std::forward_as_tuple(key),
                          std::forward_as_tuple(std::forward<Args>(args)...));
    ++size_;
    return {iterator(slots_, index), true};
  }
  template <class M>
  std::pair<iterator, bool> insert_or_assign(key_type key, M&& value) {
    auto [it, inserted] = try_emplace(key, std::forward<M>(value));
    if (!inserted) it->second = std::forward<M>(value);
    return {it, inserted};
  }
  V& operator[](key_type key) { return try_emplace(key).first->second; }

  /// Erases the entry `it` names; the entries after it in its probe run
  /// move back (iterators to them are then stale).
  void erase(const_iterator it) {
    std::size_t hole = it.index_;
    slots_[hole].reset();
    --size_;
    // Backward shift: an entry further on may move into the hole when its
    // home slot is not in (hole, here], cyclically; a lookup of it would
    // otherwise stop at the hole.
    for (std::size_t here = step(hole); slots_[here]; here = step(here)) {
      const std::size_t home = home_of(slots_[here]->first);
      const bool home_after_hole = ((here - home) & mask()) < ((here - hole) & mask());
      if (home_after_hole) continue;
      slots_[hole].emplace(std::move(*slots_[here]));
      slots_[here].reset();
      hole = here;
    }
    // A table a burst of blocks grew is given back once most of them are
    // gone (at most 1/8 of the slots used; afterwards at most 1/4), so an
    // idle resource does not keep the slots of its busiest moment. Best
    // effort: when the smaller table cannot be had, this one stays.
    if (slots_.size() > kMinSlots && size_ * 8 <= slots_.size()) {
      try {
        rehash(std::max(kMinSlots, std::bit_ceil(size_ * 4)));
      } catch (const std::bad_alloc&) {
      }
    }
  }
  std::size_t erase(key_type key) {
    const std::size_t index = index_of(key);
    if (index == slots_.size()) return 0;
    erase(const_iterator(slots_, index));
    return 1;
  }
  void clear() {
    for (auto& slot : slots_) slot.reset();
    size_ = 0;
  }
  void swap(AddressMap& other) noexcept {
    slots_.swap(other.slots_);
    std::swap(size_, other.size_);
    std::swap(shift_, other.shift_);
  }

 private:
  static constexpr std::size_t kMinSlots = 16;
  static constexpr std::uint64_t kFibonacci = 0x9E3779B97F4A7C15ULL;  // 2^64 / golden ratio

  static std::size_t next_used(const Slots& slots, std::size_t from) {
    while (from < slots.size() && !slots[from]) ++from;
    return from;
  }
  std::size_t mask() const { return slots_.size() - 1; }
  std::size_t step(std::size_t index) const { return (index + 1) & mask(); }
  std::size_t home_of(key_type key) const { return static_cast<std::size_t>((key * kFibonacci) >> shift_); }
  /// The slot holding `key`, or slots_.size() when it is not there.
  std::size_t index_of(key_type key) const {
    if (size_ == 0) return slots_.size();
    for (std::size_t i = home_of(key);; i = step(i)) {
      if (!slots_[i]) return slots_.size();
      if (slots_[i]->first == key) return i;
    }
  }
  /// Where `key` is (true), or the empty slot it would go in (false),
  /// after growing so that at most half the slots are used.
  std::pair<std::size_t, bool> slot_for_insert(key_type key) {
    if (const std::size_t at = index_of(key); at != slots_.size()) return {at, true};
    if ((size_ + 1) * 2 > slots_.size()) grow();
    return {first_free_slot(key), false};
  }
  /// Where `key` goes in the table: the first empty slot from its home on.
  std::size_t first_free_slot(key_type key) const {
    std::size_t i = home_of(key);
    while (slots_[i]) i = step(i);
    return i;
  }
  void grow() {
    const std::size_t count = slots_.empty() ? kMinSlots : slots_.size() * 2;
    if (count > (std::size_t{1} << 62)) throw std::length_error("AddressMap: too many entries");
    rehash(count);
  }
  /// Moves every entry into a table of `count` slots (a power of two, more
  /// than twice the entries). If the new table cannot be had, nothing changes.
  void rehash(std::size_t count) {
    Slots old(count);
    old.swap(slots_);
    shift_ = 64 - std::countr_zero(count);
    for (auto& slot : old) {
      if (!slot) continue;
      slots_[first_free_slot(slot->first)].emplace(std::move(*slot));
    }
  }

  Slots slots_;
  std::size_t size_ = 0;
  int shift_ = 64;  // 64 - log2(slot count); with no slots, never used
};

/// An AddressMap behind a few slots for the newest entries: a backend's
/// record of the allocations it handed out, where nearly every allocation
/// is freed while it is among the newest (an allocate and deallocate
/// pair, a tensor's short life). Such a pair then only writes and clears a
/// slot in a small array, and the table behind it is not touched at all:
/// on the GPU, CudaBackend's AddressMap insert and erase were 2-4 % of a
/// bare alloc + free pair (docs/PERFORMANCE.md, "the backend's allocations
/// newest first"). Entries move to the table when the front is full.
template <class V, std::size_t kFront = 4>
class FrontedAddressMap {
 public:
  using key_type = std::uint64_t;

  std::size_t size() const { return front_count_ + behind_.size(); }

  /// Sets `key`'s value, inserting it when absent (as a newest entry).
  void insert_or_assign(key_type key, V value) {
    // Here, not at the class: a V nested in a class still being defined
    // (CudaBackend's) is not yet known to be default constructible there.
    static_assert(std::is_default_constructible_v<V> && std::is_nothrow_move_assignable_v<V>,
                  "the front's slots are assigned in place");
    if (V* there = find(key)) {
      *there = std::move(value);
      return;
    }
    if (front_count_ == kFront) {
      // Full: the oldest slot's entry goes behind (it may throw, growing the
      // table: then nothing has changed), and the others move up.
      behind_.try_emplace(front_[0].key, std::move(front_[0].value));
      std::move(front_.begin() + 1, front_.end(), front_.begin());
      --front_count_;
    }
    front_[front_count_++] = Entry{key, std::move(value)};
  }
  V* find(key_type key) {
    for (std::size_t i = front_count_; i-- > 0;)
      if (front_[i].key == key) return &front_[i].value;
    if (behind_.empty()) return nullptr;
    auto it = behind_.find(key);
    return it == behind_.end() ? nullptr : &it->second;
  }
  const V* find(key_type key) const { return const_cast<FrontedAddressMap&>(*this).find(key); }
  /// Takes `key` out; false when it was not there.
  bool erase(key_type key) {
    for (std::size_t i = front_count_; i-- > 0;)
      if (front_[i].key == key) {
        // The slots stay oldest first: the newer ones move down.
        std::move(front_.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                  front_.begin() + static_cast<std::ptrdiff_t>(front_count_),
                  front_.begin() + static_cast<std::ptrdiff_t>(i));
        front_[--front_count_] = Entry{};
        return true;
      }
    return behind_.erase(key) == 1;
  }
  /// fn(key, value) for each entry, in no particular order.
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (std::size_t i = 0; i < front_count_; ++i) fn(front_[i].key, front_[i].value);
    for (const auto& [key, value] : behind_) fn(key, value);
  }

 private:
  struct Entry {
    key_type key = 0;
    V value{};
  };
  std::array<Entry, kFront> front_{};  // [0, front_count_) used, oldest first
  std::size_t front_count_ = 0;
  AddressMap<V> behind_;
};

}  // namespace streamcheck
