// Shared by the capture corpus programs (tests/capture/README.md): every
// CUDA call is checked, so a program that ran wrongly fails loudly instead
// of leaving a short trace behind.
#pragma once
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                                          \
  do {                                                                                                       \
    cudaError_t check_result_ = (call);                                                                      \
    if (check_result_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(check_result_)); \
      std::exit(3);                                                                                          \
    }                                                                                                        \
  } while (0)

constexpr int kElements = 1 << 16;
constexpr int kThreads = 256;
constexpr int kBlocks = kElements / kThreads;

__global__ void produce(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<float>(i);
}

__global__ void consume(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * 2.0f;
}
