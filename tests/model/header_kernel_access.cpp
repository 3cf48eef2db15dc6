// Proves that model/kernel_access.h stands alone: it is the only include here.
#include "model/kernel_access.h"

namespace streamcheck::header_check {
const char* header_kernel_access() { return "kernel_access.h"; }
}  // namespace streamcheck::header_check
