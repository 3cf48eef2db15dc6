// shared_input_readers with its kernel in a shared library that the program
// opens with dlopen (corpus_kernels_lib.cu; no DT_NEEDED entry names it, so
// nothing reads its PTX before the run): two streams read one buffer at once
// through a kernel that takes it as a non-const pointer. Expected: clean,
// with the kernel's accesses derived by the capture library from the
// library's PTX when the kernel is first launched; `--no-ptx` gives the
// signature's data race (expected.txt: dlopen_library_readers@no-ptx).
#define STREAMCHECK_KERNEL_OPENED
#include "shared_input_readers.cu"
