// Records the blocks one launch will touch, and brackets the launch with
// the resource's prepare (before) and finish (after) calls (SPEC §2, seed 001).
//
// Call order for a non-empty recorder:
//   1. read / write / read_write every block the launch touches;
//   2. preflight(resource)  — BEFORE the work is enqueued: queues the waits;
//   3. enqueue the work on launch_stream;
//   4. commit(resource)     — AFTER: records the use events.
// Memory ordering: a launch bracketed this way is ordered after every
// earlier conflicting use of its blocks (P-read / P-write of Resource), and
// every later conflicting use and the free are ordered after it (P-finish).
// Empty recorders are no-ops in both steps.
#pragma once

#include <atomic>
#include <cstddef>
#include <iostream>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "model/memory_resource.h"
#include "model/mutants.h"
#include "model/types.h"

namespace streamcheck {

enum class RecorderMode : std::uint8_t {
  Permissive,  // untracked buffers are skipped (not safe for production paths)
  Strict,      // untracked buffers are remembered and fail preflight
};

template <class Protocol = CorrectProtocol>
class LaunchRecorder {
 public:
  struct RecordedUse {
    BlockId block;
    Access access;
    const char* label;
  };

  LaunchRecorder(StreamId launch_stream, RecorderMode mode) : launch_stream_(launch_stream), mode_(mode) {}
  LaunchRecorder(const LaunchRecorder&) = delete;
  LaunchRecorder& operator=(const LaunchRecorder&) = delete;
  LaunchRecorder(LaunchRecorder&&) = default;
  LaunchRecorder& operator=(LaunchRecorder&&) = delete;

  /// A recorder destroyed after a successful preflight but without a commit
  /// (work may be in flight with no use events recorded) reports it on
  /// stderr and in dropped_without_commit(); it never aborts. A recorder
  /// that never passed preflight had no work enqueued and stays silent.
  ~LaunchRecorder() {
    if (committed_ || uses_.empty() || !preflighted_) return;
    dropped_counter().fetch_add(1);
    std::cerr << "streamcheck: LaunchRecorder dropped without commit: " << uses_.size() << " uses on StreamId("
              << launch_stream_.value << ") were not recorded; cross-stream safety is lost for this launch\n";
  }

  /// Register a use. `block == nullptr` is a buffer the resource does not
  /// track (`external` = memory from another framework).
  LaunchRecorder& read(const DeviceBlock* block, bool external = false) {
    return note("read", block, Access::Read, external);
  }
  LaunchRecorder& write(const DeviceBlock* block, bool external = false) {
    return note("write", block, Access::Write, external);
  }
  LaunchRecorder& read_write(const DeviceBlock* block, bool external = false) {
    return note("read_write", block, Access::ReadWrite, external);
  }
  LaunchRecorder& use(const DeviceBlock* block, Access access) {
    return note(to_string(access).data(), block, access, false);
  }

  /// Gives up on the launch without recording its uses, silencing the
  /// destructor's report: the caller states that it orders this work some
  /// other way (or that the launch was never enqueued).
  void abandon() { committed_ = true; }

  template <MemoryResource R>
  Status preflight(R& resource);
  template <MemoryResource R>
  Status commit(R& resource);

  StreamId launch_stream() const { return launch_stream_; }
  RecorderMode mode() const { return mode_; }
  std::size_t recorded_count() const { return uses_.size(); }
  bool preflighted() const { return preflighted_; }
  bool committed() const { return committed_; }
  /// The uses preflight and commit act on: one per block, strongest access.
  std::vector<RecordedUse> deduped_uses() const { return dedup(uses_); }

  static std::size_t dropped_without_commit() { return dropped_counter().load(); }

  /// Collapses repeated registrations of one block into one use with the
  /// combined access. The key is (ptr, generation, device): two generations
  /// at one address are two blocks (M9 keys on ptr alone).
  static std::vector<RecordedUse> dedup(const std::vector<RecordedUse>& uses) {
    std::vector<RecordedUse> out;
    for (const auto& u : uses) {
      bool merged = false;
      for (auto& o : out) {
        if (same_block(o.block, u.block)) {
          o.access = combine(o.access, u.access);
          merged = true;
          break;
        }
      }
      if (!merged) out.push_back(u);
    }
    return out;
  }

 private:
  static bool same_block(const BlockId& a, const BlockId& b) {
    if constexpr (Protocol::has(MutantId::M9)) return a.ptr == b.ptr;
    return std::tie(a.ptr, a.generation, a.device_ordinal) == std::tie(b.ptr, b.generation, b.device_ordinal);
  }
  static std::atomic<std::size_t>& dropped_counter() {
    static std::atomic<std::size_t> counter{0};
    return counter;
  }

  LaunchRecorder& note(const char* label, const DeviceBlock* block, Access access, bool external) {
    if (preflighted_) {
      // Once preflight succeeded the set of uses is frozen: a use found
      // later would run without the waits preflight queued.
      if (!rejection_)
        rejection_ = ResourceError::stream_misuse(std::string("LaunchRecorder::") + label +
                                                  ": recorded after preflight; register every use before preflight");
      return *this;
    }
    if (block) {
      uses_.push_back(RecordedUse{BlockId::of(*block), access, label});
      return *this;
    }
    if (mode_ == RecorderMode::Strict && !rejection_) {
      rejection_ = ResourceError::stream_misuse(
          std::string("LaunchRecorder::") + label + ": untracked buffer rejected; " +
          (external ? "external memory has no resource identity: use a permissive recorder or order the "
                      "cross-stream work yourself"
                    : "allocate the buffer through the tracking resource so it has a DeviceBlock"));
    }
    return *this;
  }

  StreamId launch_stream_;
  RecorderMode mode_;
  std::vector<RecordedUse> uses_;
  std::optional<ResourceError> rejection_;
  bool preflighted_ = false;
  bool committed_ = false;
};

template <class P>
template <MemoryResource R>
Status LaunchRecorder<P>::preflight(R& resource) {
  if (rejection_) return *rejection_;
  if (uses_.empty()) {
    // An empty preflight succeeds too: the set of uses is frozen from here.
    preflighted_ = true;
    return {};
  }
  if (!resource.supports_block_use_tracking())
    return ResourceError::stream_misuse(
        "LaunchRecorder::preflight: the resource does not support cross-stream use tracking; build on Resource "
        "(or a decorator over it)");
  for (const auto& u : dedup(uses_)) {
    auto st = resource.prepare_block_use(u.block, launch_stream_, u.access);
    if (!st) return st;
  }
  preflighted_ = true;
  return {};
}

template <class P>
template <MemoryResource R>
Status LaunchRecorder<P>::commit(R& resource) {
  if (rejection_) return *rejection_;
  if (committed_) return ResourceError::stream_misuse("LaunchRecorder::commit: already committed");
  if (!uses_.empty() && !preflighted_)
    return ResourceError::stream_misuse(
        "LaunchRecorder::commit: non-empty recorder reached commit without a successful preflight; call "
        "preflight before enqueueing the work");
  for (const auto& u : dedup(uses_)) {
    auto st = resource.finish_block_use(u.block, launch_stream_, u.access);
    if (!st) return st;
  }
  committed_ = true;
  return {};
}

}  // namespace streamcheck
