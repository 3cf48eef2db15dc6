// Proves that model/pool_policy.h stands alone: it is the only include here.
#include "model/pool_policy.h"

namespace streamcheck::header_check {
const char* header_pool_policy() { return "pool_policy.h"; }
}  // namespace streamcheck::header_check
