// Proves that model/resource.h stands alone: it is the only include here.
#include "model/resource.h"

namespace streamcheck::header_check {
const char* header_resource() { return "resource.h"; }
}  // namespace streamcheck::header_check
