// The launch-resource cache (backend_cuda/launch_resources.h) without a
// GPU: a lease and its give-back, on one host thread and on several at once,
// against the design it replaced (a std::mutex around a vector, and a
// shared_ptr to the cache in every lease), side by side in one run. The
// handle is a token of this file's, so that only the cache is timed; on the
// GPU, bench_gpu's "backend wait+record (pooled event)" times it with the
// driver's calls around it (docs/PERFORMANCE.md, "GPU: the event cache").
#include <benchmark/benchmark.h>

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "backend_cuda/launch_resources.h"

namespace {

using streamcheck::Result;

/// A handle that owns nothing: a distinct non-null value per create().
class Token {
 public:
  static Result<Token> create() {
    static std::atomic<std::uintptr_t> next{1};
    return Token(next.fetch_add(1));
  }
  Token(Token&& o) noexcept : value_(std::exchange(o.value_, 0)) {}
  Token& operator=(Token&& o) noexcept {
    value_ = std::exchange(o.value_, 0);
    return *this;
  }
  void* into_raw() && noexcept { return reinterpret_cast<void*>(std::exchange(value_, 0)); }
  static Token from_raw(void* raw) noexcept { return Token(reinterpret_cast<std::uintptr_t>(raw)); }
  std::uintptr_t value() const { return value_; }

 private:
  explicit Token(std::uintptr_t value) : value_(value) {}
  std::uintptr_t value_;
};

/// The replaced design, kept here as the baseline only.
class MutexCache : public std::enable_shared_from_this<MutexCache> {
 public:
  class Lease {
   public:
    Lease(std::shared_ptr<MutexCache> cache, Token t) : cache_(std::move(cache)), token_(std::move(t)) {}
    Lease(Lease&&) noexcept = default;
    ~Lease() {
      if (cache_) cache_->give_back(std::move(token_));
    }
    const Token& get() const { return token_; }

   private:
    std::shared_ptr<MutexCache> cache_;
    Token token_;
  };
  explicit MutexCache(std::size_t max_cached) : max_cached_(max_cached) {}
  Lease acquire() {
    {
      std::lock_guard lock(mutex_);
      if (!cached_.empty()) {
        Token t = std::move(cached_.back());
        cached_.pop_back();
        ++leased_;
        return Lease(shared_from_this(), std::move(t));
      }
    }
    std::lock_guard lock(mutex_);
    ++leased_;
    return Lease(shared_from_this(), std::move(Token::create()).value());
  }

 private:
  void give_back(Token t) {
    std::lock_guard lock(mutex_);
    --leased_;
    if (cached_.size() < max_cached_) cached_.push_back(std::move(t));
  }
  const std::size_t max_cached_;
  std::mutex mutex_;
  std::vector<Token> cached_;
  std::size_t leased_ = 0;
};

constexpr std::size_t kBound = 256;  // CudaBackendOptions::max_cached_events

// Two leases held at once, as a read across streams holds the block's
// written event while it records its read event.
void BM_SlotCacheLeaseGiveBack(benchmark::State& state) {
  static streamcheck::cuda::BoundedCache<Token>::Owner cache;
  if (state.thread_index() == 0) cache = streamcheck::cuda::BoundedCache<Token>::create(kBound);
  // Google Benchmark starts the threads' loops together (a barrier).
  for (auto _ : state) {
    auto held = cache->acquire();
    auto lease = cache->acquire();
    benchmark::DoNotOptimize(lease.value().get().value());
    benchmark::DoNotOptimize(held.value().get().value());
  }
  state.SetItemsProcessed(2 * state.iterations());
}
BENCHMARK(BM_SlotCacheLeaseGiveBack)->ThreadRange(1, 4)->UseRealTime();

void BM_MutexCacheLeaseGiveBack(benchmark::State& state) {
  static std::shared_ptr<MutexCache> cache;
  if (state.thread_index() == 0) cache = std::make_shared<MutexCache>(kBound);
  for (auto _ : state) {
    auto held = cache->acquire();
    auto lease = cache->acquire();
    benchmark::DoNotOptimize(lease.get().value());
    benchmark::DoNotOptimize(held.get().value());
  }
  state.SetItemsProcessed(2 * state.iterations());
}
BENCHMARK(BM_MutexCacheLeaseGiveBack)->ThreadRange(1, 4)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
