// Shared by the driver-API corpus programs (docs/CAPTURE.md): the
// program loads its kernels itself, from PTX text, with cuModuleLoadData (as
// CuPy, Numba and Triton do with the PTX they generate), and launches them
// with cuLaunchKernel. No runtime call, no host stub, no file the loader
// lists: the capture reads the PTX when the module is loaded.
#pragma once
#include <cuda.h>

#include <cstdio>
#include <cstdlib>

#define CU_CHECK(call)                                                                         \
  do {                                                                                         \
    CUresult check_result_ = (call);                                                           \
    if (check_result_ != CUDA_SUCCESS) {                                                       \
      const char* name_ = nullptr;                                                             \
      cuGetErrorName(check_result_, &name_);                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, name_ ? name_ : "?"); \
      std::exit(3);                                                                            \
    }                                                                                          \
  } while (0)

// fill(x): x[0] = 1; scale_into(in, out): out[0] = 2 * in[0]. extern "C"
// names: no C++ signature says which pointer is only read.
inline const char* const kDriverModulePtx = R"(
.version 8.0
.target sm_52
.address_size 64

.visible .entry fill(
	.param .u64 fill_param_0
)
{
	.reg .f32 	%f<2>;
	.reg .b64 	%rd<3>;

	ld.param.u64 	%rd1, [fill_param_0];
	cvta.to.global.u64 	%rd2, %rd1;
	mov.f32 	%f1, 0f3F800000;
	st.global.f32 	[%rd2], %f1;
	ret;
}

.visible .entry scale_into(
	.param .u64 scale_into_param_0,
	.param .u64 scale_into_param_1
)
{
	.reg .f32 	%f<3>;
	.reg .b64 	%rd<5>;

	ld.param.u64 	%rd1, [scale_into_param_0];
	ld.param.u64 	%rd2, [scale_into_param_1];
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	ld.global.f32 	%f1, [%rd3];
	add.f32 	%f2, %f1, %f1;
	st.global.f32 	[%rd4], %f2;
	ret;
}
)";

struct DriverModule {
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  CUfunction fill = nullptr, scale_into = nullptr;
};

inline DriverModule load_driver_module() {
  DriverModule m;
  CUdevice device;
  CU_CHECK(cuInit(0));
  CU_CHECK(cuDeviceGet(&device, 0));
  CU_CHECK(cuDevicePrimaryCtxRetain(&m.context, device));
  CU_CHECK(cuCtxSetCurrent(m.context));
  CU_CHECK(cuModuleLoadData(&m.module, kDriverModulePtx));
  CU_CHECK(cuModuleGetFunction(&m.fill, m.module, "fill"));
  CU_CHECK(cuModuleGetFunction(&m.scale_into, m.module, "scale_into"));
  return m;
}

inline void launch_one(CUfunction f, CUstream stream, void** args) {
  CU_CHECK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, stream, args, nullptr));
}
