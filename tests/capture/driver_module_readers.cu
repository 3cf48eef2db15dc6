// Two streams read one buffer at once through a driver-API kernel, each
// writing an output of its own; both wait for the stream that filled it,
// and the filling stream waits for both before it copies the outputs back
// and frees the buffers (all stream-ordered on it).
// Expected: clean: the PTX the program loaded shows scale_into only reads
// its first pointer. Without it (expected.txt: driver_module_readers@no-ptx)
// each pointer is taken as read-write, and two unordered read-writes are a
// data race.
#include "driver_module.h"

int main() {
  DriverModule m = load_driver_module();
  CUstream a, b, c;
  CU_CHECK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  CU_CHECK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  CU_CHECK(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
  CUevent filled, done_b, done_c;
  CU_CHECK(cuEventCreate(&filled, CU_EVENT_DISABLE_TIMING));
  CU_CHECK(cuEventCreate(&done_b, CU_EVENT_DISABLE_TIMING));
  CU_CHECK(cuEventCreate(&done_c, CU_EVENT_DISABLE_TIMING));
  CUdeviceptr x, y1, y2;  // stream-ordered on a: b and c use them after waiting for a
  CU_CHECK(cuMemAllocAsync(&x, 256, a));
  CU_CHECK(cuMemAllocAsync(&y1, 256, a));
  CU_CHECK(cuMemAllocAsync(&y2, 256, a));

  void* fill_args[] = {&x};
  launch_one(m.fill, a, fill_args);
  CU_CHECK(cuEventRecord(filled, a));
  CU_CHECK(cuStreamWaitEvent(b, filled, 0));
  CU_CHECK(cuStreamWaitEvent(c, filled, 0));
  void* read_b[] = {&x, &y1};
  void* read_c[] = {&x, &y2};
  launch_one(m.scale_into, b, read_b);
  launch_one(m.scale_into, c, read_c);
  CU_CHECK(cuEventRecord(done_b, b));
  CU_CHECK(cuEventRecord(done_c, c));
  CU_CHECK(cuStreamWaitEvent(a, done_b, 0));
  CU_CHECK(cuStreamWaitEvent(a, done_c, 0));
  float got[2] = {0, 0};
  CU_CHECK(cuMemcpyDtoHAsync(&got[0], y1, sizeof(float), a));
  CU_CHECK(cuMemcpyDtoHAsync(&got[1], y2, sizeof(float), a));
  CU_CHECK(cuMemFreeAsync(x, a));
  CU_CHECK(cuMemFreeAsync(y1, a));
  CU_CHECK(cuMemFreeAsync(y2, a));
  CU_CHECK(cuStreamSynchronize(a));
  if (got[0] != 2.0f || got[1] != 2.0f) {
    std::fprintf(stderr, "wrong results: %g %g\n", got[0], got[1]);
    return 1;
  }
  std::printf("ok\n");
  return 0;
}
