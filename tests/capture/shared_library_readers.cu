// shared_input_readers with its kernel in a shared library
// (corpus_kernels_lib.cu, linked with RUNPATH $ORIGIN): two streams read one
// buffer at once through a kernel that takes it as a non-const pointer, each
// writing an output of its own; both wait for the producer, and the first
// stream waits for both before freeing. Expected: clean, with the kernel's
// accesses derived from the library's PTX; `--no-ptx` gives the signature's
// data race (expected.txt: shared_library_readers@no-ptx).
#define STREAMCHECK_KERNEL_IN_LIBRARY
#include "shared_input_readers.cu"
