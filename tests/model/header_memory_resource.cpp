// Proves that model/memory_resource.h stands alone: it is the only include here.
#include "model/memory_resource.h"

namespace streamcheck::header_check {
const char* header_memory_resource() { return "memory_resource.h"; }
}  // namespace streamcheck::header_check
