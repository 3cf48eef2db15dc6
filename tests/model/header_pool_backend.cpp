// Proves that model/pool_backend.h stands alone: it is the only include here.
#include "model/pool_backend.h"

namespace streamcheck::header_check {
const char* header_pool_backend() { return "pool_backend.h"; }
}  // namespace streamcheck::header_check
