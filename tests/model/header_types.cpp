// Proves that model/types.h stands alone: it is the only include here.
#include "model/types.h"

namespace streamcheck::header_check {
const char* header_types() { return "types.h"; }
}  // namespace streamcheck::header_check
