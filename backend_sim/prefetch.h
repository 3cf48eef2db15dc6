// A hint to the CPU to start loading the cache line at `p`: it changes no
// result, only when the line arrives. A device model that runs a long
// backlog of ops (a synchronize after a million launches) reads each op's
// records long after they were written, in stream order rather than the
// enqueue order they were written in, and waited for memory on most of them
// (docs/PERFORMANCE.md).
#pragma once

namespace streamcheck::sim {

inline void prefetch(const void* p) noexcept {
#if defined(__GNUC__)
  __builtin_prefetch(p);
#else
  (void)p;
#endif
}

}  // namespace streamcheck::sim
