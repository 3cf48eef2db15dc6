// Kernels for tests/capture/test_ptx_access.cpp: one for each way a kernel
// reaches memory through its parameters (a struct's pointers, a non-const
// pointer it only reads, a pointer it never uses, atomics, shared memory, a
// __noinline__ device function, a table of pointers, a local array, an
// extern "C" kernel, __ldg). nvcc turns it into PTX and into programs whose
// fat binaries carry that PTX; the programs are never run.
#include <cstdint>
struct Pair {
  float* in;
  float* out;
  int n;
};
__global__ void by_struct(Pair p) {
  int i = threadIdx.x;
  if (i < p.n) p.out[i] = p.in[i] * 2;
}
__global__ void nonconst_reader(float* a, float* b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] = a[i] + 1;
}
__global__ void unused(float* a, float* b) {
  if (threadIdx.x == 0) b[0] = 1;
}
__global__ void atomic_add(int* counter, const int* v) { atomicAdd(counter, v[threadIdx.x]); }
__global__ void shared_reduce(const float* in, float* out, int n) {
  __shared__ float s[256];
  s[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  for (int k = 128; k > 0; k >>= 1) {
    if (threadIdx.x < k) s[threadIdx.x] += s[threadIdx.x + k];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}
__device__ __noinline__ void store_it(float* p, float v) { *p = v; }
__global__ void via_call(float* a) { store_it(a + threadIdx.x, 3.f); }
__global__ void chase(float** table, int n) {
  float* p = table[threadIdx.x];
  p[0] = 1;
}
__global__ void local_array(const int* idx, float* out) {
  float t[8];
  for (int i = 0; i < 8; ++i) t[i] = i;
  out[threadIdx.x] = t[idx[threadIdx.x] & 7];
}
extern "C" __global__ void plain_c(float* x) { x[threadIdx.x] *= 2; }
__global__ void ldg_reader(const float* __restrict__ a, float* __restrict__ b) {
  b[threadIdx.x] = __ldg(a + threadIdx.x);
}

int main() { return 0; }
