// A driver-API kernel on stream b reads what a kernel on stream a writes,
// and b never waits for a: a data race (expected.txt), however the PTX
// reads. Every call the program makes is a driver call.
#include "driver_module.h"

int main() {
  DriverModule m = load_driver_module();
  CUstream a, b;
  CU_CHECK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  CU_CHECK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  CUdeviceptr x, y;
  CU_CHECK(cuMemAlloc(&x, 256));
  CU_CHECK(cuMemAlloc(&y, 256));
  void* fill_args[] = {&x};
  launch_one(m.fill, a, fill_args);
  void* scale_args[] = {&x, &y};
  launch_one(m.scale_into, b, scale_args);  // BUG: b does not wait for a's fill
  CU_CHECK(cuStreamSynchronize(b));
  CU_CHECK(cuStreamSynchronize(a));
  CU_CHECK(cuMemFree(x));
  CU_CHECK(cuMemFree(y));
  std::printf("done\n");
  return 0;
}
