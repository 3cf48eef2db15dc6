// Data-checking kernels of the GPU validator (SPEC §6), built for sm_90 and
// embedded in the binary as a fatbin (loaded with cuModuleLoadData).
//
// Every 64-bit word an op writes gets the op's stamp; a read compares each
// word with the stamp of the last write ordered before it and counts the
// mismatches in a device counter (P2 on the GPU). `spin_ns` delays the op's
// memory access: the gate used to force a chosen completion order.

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void spin_for(unsigned long long ns) {
  if (ns == 0) return;
  const unsigned long long start = now_ns();
  while (now_ns() - start < ns) {
  }
}

extern "C" __global__ void streamcheck_stamp_write(unsigned long long* words, unsigned long long count,
                                                   unsigned long long stamp, unsigned long long spin_ns) {
  spin_for(spin_ns);
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    reinterpret_cast<volatile unsigned long long*>(words)[i] = stamp;
  }
}

extern "C" __global__ void streamcheck_stamp_check(const unsigned long long* words, unsigned long long count,
                                                   unsigned long long expected, unsigned long long spin_ns,
                                                   unsigned long long* mismatches) {
  spin_for(spin_ns);
  unsigned long long bad = 0;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    if (reinterpret_cast<const volatile unsigned long long*>(words)[i] != expected) ++bad;
  }
  if (bad != 0) atomicAdd(mismatches, bad);
}

extern "C" __global__ void streamcheck_delay(unsigned long long spin_ns) { spin_for(spin_ns); }

// The debug tier (model/debug_guard.h): counts the bytes of [bytes, bytes +
// count) that differ from `pattern` into result[0] and keeps the smallest
// such offset in result[1] (which starts at ~0).
extern "C" __global__ void streamcheck_guard_count(const unsigned char* bytes, unsigned long long count,
                                                   unsigned int pattern, unsigned long long* result) {
  unsigned long long changed = 0, first = ~0ull;
  const unsigned long long stride = static_cast<unsigned long long>(gridDim.x) * blockDim.x;
  for (unsigned long long i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += stride) {
    if (reinterpret_cast<const volatile unsigned char*>(bytes)[i] != static_cast<unsigned char>(pattern)) {
      ++changed;
      if (i < first) first = i;
    }
  }
  if (changed != 0) {
    atomicAdd(&result[0], changed);
    atomicMin(&result[1], first);
  }
}
