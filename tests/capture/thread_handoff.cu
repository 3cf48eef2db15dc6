// A producer thread hands a buffer and the event recorded after its write to
// a worker thread through a mutex-guarded slot; the worker's stream waits on
// the event before reading. Expected: clean (the capture orders the two
// threads where the worker first uses what the producer made).
#include <condition_variable>
#include <mutex>
#include <thread>

#include "corpus.h"

struct Slot {
  std::mutex mutex;
  std::condition_variable ready;
  float* data = nullptr;
  cudaEvent_t written = nullptr;
};

int main() {
  Slot slot;
  std::thread worker([&] {
    std::unique_lock lock(slot.mutex);
    slot.ready.wait(lock, [&] { return slot.data != nullptr; });
    cudaStream_t s2;
    CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    float* out = nullptr;
    CHECK(cudaMalloc(&out, kElements * sizeof(float)));
    CHECK(cudaStreamWaitEvent(s2, slot.written, 0));
    consume<<<kBlocks, kThreads, 0, s2>>>(slot.data, out, kElements);
    CHECK(cudaStreamSynchronize(s2));
    CHECK(cudaFree(out));
    CHECK(cudaStreamDestroy(s2));
  });
  cudaStream_t s1;
  CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  float* a = nullptr;
  cudaEvent_t written;
  CHECK(cudaMalloc(&a, kElements * sizeof(float)));
  CHECK(cudaEventCreateWithFlags(&written, cudaEventDisableTiming));
  produce<<<kBlocks, kThreads, 0, s1>>>(a, kElements);
  CHECK(cudaEventRecord(written, s1));
  {
    std::lock_guard lock(slot.mutex);
    slot.data = a;
    slot.written = written;
  }
  slot.ready.notify_one();
  worker.join();
  CHECK(cudaFree(a));
  CHECK(cudaEventDestroy(written));
  CHECK(cudaStreamDestroy(s1));
  return 0;
}
