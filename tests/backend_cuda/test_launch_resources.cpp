// BoundedCache (backend_cuda/launch_resources.h) with a handle of its own
// instead of a driver's, so that it runs without a GPU: every handle made
// is one heap token, and the token says whether a lease holds it. Run under
// ASan, a handle destroyed twice or never destroyed is a failure too.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "backend_cuda/launch_resources.h"

namespace streamcheck::cuda {
namespace {

struct Token {
  std::atomic<bool> leased{false};
};

std::atomic<std::size_t> tokens_made{0};
std::atomic<std::size_t> tokens_destroyed{0};
std::atomic<bool> refuse_next_create{false};

/// An owner like Event: create(), into_raw(), from_raw(), move-only.
class TokenHandle {
 public:
  static Result<TokenHandle> create() {
    if (refuse_next_create.exchange(false)) return ResourceError::driver("cuEventCreate: refused by the test");
    tokens_made.fetch_add(1);
    return TokenHandle(new Token);
  }
  TokenHandle(TokenHandle&& o) noexcept : token_(std::exchange(o.token_, nullptr)) {}
  TokenHandle& operator=(TokenHandle&& o) noexcept {
    if (this != &o) {
      reset();
      token_ = std::exchange(o.token_, nullptr);
    }
    return *this;
  }
  ~TokenHandle() { reset(); }
  Token* into_raw() && noexcept { return std::exchange(token_, nullptr); }
  static TokenHandle from_raw(Token* token) noexcept { return TokenHandle(token); }
  Token* token() const { return token_; }

 private:
  explicit TokenHandle(Token* token) : token_(token) {}
  void reset() {
    if (!token_) return;
    tokens_destroyed.fetch_add(1);
    delete std::exchange(token_, nullptr);
  }
  Token* token_;
};

using TokenCache = BoundedCache<TokenHandle>;

class LaunchCache : public ::testing::Test {
 protected:
  void SetUp() override {
    tokens_made = 0;
    tokens_destroyed = 0;
    refuse_next_create = false;
  }
  static TokenCache::Lease lease(TokenCache& cache) {
    auto l = cache.acquire();
    if (!l) throw std::runtime_error(l.error().to_string());
    return std::move(l).value();
  }
};

TEST_F(LaunchCache, AHandleGivenBackIsTheNextOneLeased) {
  auto cache = TokenCache::create(4);
  Token* first = nullptr;
  {
    auto l = lease(*cache);
    first = l.get().token();
    EXPECT_EQ(cache->leased(), 1u);
    EXPECT_EQ(cache->cached(), 0u);
  }
  EXPECT_EQ(cache->leased(), 0u);
  EXPECT_EQ(cache->cached(), 1u);
  auto again = lease(*cache);
  EXPECT_EQ(again.get().token(), first);
  EXPECT_EQ(tokens_made, 1u);
}

TEST_F(LaunchCache, KeepsAtMostItsBoundAndDestroysTheRest) {
  auto cache = TokenCache::create(4);
  {
    std::vector<TokenCache::Lease> leases;
    for (int i = 0; i < 10; ++i) leases.push_back(lease(*cache));
    EXPECT_EQ(cache->leased(), 10u);
  }
  EXPECT_EQ(cache->leased(), 0u);
  EXPECT_EQ(cache->cached(), 4u);
  EXPECT_EQ(tokens_destroyed, 6u);
  // All four are found again, and nothing new is made for them.
  std::set<Token*> seen;
  std::vector<TokenCache::Lease> leases;
  for (int i = 0; i < 4; ++i) {
    leases.push_back(lease(*cache));
    seen.insert(leases.back().get().token());
  }
  EXPECT_EQ(seen.size(), 4u);
  EXPECT_EQ(tokens_made, 10u);
  EXPECT_EQ(cache->cached(), 0u);
}

TEST_F(LaunchCache, ABoundOfZeroKeepsOne) {
  auto cache = TokenCache::create(0);
  EXPECT_EQ(cache->max_cached(), 1u);
  { auto l = lease(*cache); }
  EXPECT_EQ(cache->cached(), 1u);
}

TEST_F(LaunchCache, AFailedCreateChangesNothing) {
  auto cache = TokenCache::create(2);
  refuse_next_create = true;
  auto refused = cache->acquire();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().to_string().find("refused by the test"), std::string::npos) << refused.error();
  EXPECT_EQ(cache->leased(), 0u);
  EXPECT_EQ(cache->cached(), 0u);
  auto l = lease(*cache);
  EXPECT_EQ(cache->leased(), 1u);
}

TEST_F(LaunchCache, AMovedLeaseGivesBackOnce) {
  auto cache = TokenCache::create(4);
  auto a = lease(*cache);
  auto b = lease(*cache);
  Token* token_a = a.get().token();
  TokenCache::Lease moved(std::move(a));
  EXPECT_EQ(moved.get().token(), token_a);
  EXPECT_EQ(cache->leased(), 2u);
  moved = std::move(b);  // gives token_a back, holds b's
  EXPECT_EQ(cache->leased(), 1u);
  EXPECT_EQ(cache->cached(), 1u);
  auto c = lease(*cache);
  EXPECT_EQ(c.get().token(), token_a);
}

// The reason the cache has no lock: many threads lease and give back at
// once. No handle may be held by two leases, none may be lost or destroyed
// twice, and the counts must add up when all are done.
TEST_F(LaunchCache, ManyThreadsNeverShareOrLoseAHandle) {
  constexpr std::size_t kBound = 8;
  auto cache = TokenCache::create(kBound);
  std::atomic<std::size_t> shared{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t)
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      std::vector<TokenCache::Lease> held;
      for (int i = 0; i < 20000; ++i) {
        // Hold 1 to 3 at once, so that the cache both runs dry and overflows.
        const std::size_t want = 1 + static_cast<std::size_t>((i + t) % 3);
        while (held.size() < want) {
          held.push_back(lease(*cache));
          if (held.back().get().token()->leased.exchange(true)) shared.fetch_add(1);
        }
        const std::size_t keep = i % 2 == 0 ? 0 : want - 1;
        while (held.size() > keep) {
          held.back().get().token()->leased.store(false);
          held.pop_back();
        }
      }
      for (auto& l : held) l.get().token()->leased.store(false);
    });
  go = true;
  for (auto& th : threads) th.join();
  EXPECT_EQ(shared, 0u) << "a handle was held by two leases at once";
  EXPECT_EQ(cache->leased(), 0u);
  EXPECT_LE(cache->cached(), kBound);
  EXPECT_EQ(tokens_made - tokens_destroyed, cache->cached()) << "a handle was lost or destroyed twice";
  cache.reset();
  EXPECT_EQ(tokens_made, tokens_destroyed);
}

TEST_F(LaunchCache, ALeaseThatOutlivesItsCacheDestroysItsHandle) {
  auto cache = TokenCache::create(4);
  { auto cached = lease(*cache); }
  auto late = lease(*cache);
  auto later = lease(*cache);
  ::testing::internal::CaptureStderr();
  cache.reset();  // nothing cached to destroy; the cache stays for the two leases
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("2 pooled handle(s) still leased"), std::string::npos) << said;
  EXPECT_EQ(tokens_destroyed, 0u);  // the cached one was taken by `late`
  { TokenCache::Lease gone(std::move(late)); }
  EXPECT_EQ(tokens_destroyed, 1u);
  { TokenCache::Lease gone(std::move(later)); }  // the last: frees the cache (ASan: no leak)
  EXPECT_EQ(tokens_destroyed, 2u);
  EXPECT_EQ(tokens_made, 2u);
}

}  // namespace
}  // namespace streamcheck::cuda
