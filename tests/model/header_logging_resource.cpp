// Proves that model/logging_resource.h stands alone: it is the only include here.
#include "model/logging_resource.h"

namespace streamcheck::header_check {
const char* header_logging_resource() { return "logging_resource.h"; }
}  // namespace streamcheck::header_check
