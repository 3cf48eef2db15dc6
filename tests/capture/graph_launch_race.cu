// A graph captured from s1 and launched on s1; s2 then reads what the graph
// writes without waiting for the launch. Expected: data race.
#include "corpus.h"

int main() {
  cudaStream_t s1, s2;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  float *a = nullptr, *b = nullptr;
  CHECK(cudaMalloc(&a, kElements * sizeof(float)));
  CHECK(cudaMalloc(&b, kElements * sizeof(float)));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CHECK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  produce<<<kBlocks, kThreads, 0, s1>>>(a, kElements);
  CHECK(cudaStreamEndCapture(s1, &graph));
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CHECK(cudaGraphLaunch(exec, s1));
  consume<<<kBlocks, kThreads, 0, s2>>>(a, b, kElements);  // BUG: no event after the launch
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  return 0;
}
