// Proves that model/non_tracking_resource.h stands alone: it is the only include here.
#include "model/non_tracking_resource.h"

namespace streamcheck::header_check {
const char* header_non_tracking_resource() { return "non_tracking_resource.h"; }
}  // namespace streamcheck::header_check
