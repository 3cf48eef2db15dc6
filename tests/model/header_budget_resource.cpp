// Proves that model/budget_resource.h stands alone: it is the only include here.
#include "model/budget_resource.h"

namespace streamcheck::header_check {
const char* header_budget_resource() { return "budget_resource.h"; }
}  // namespace streamcheck::header_check
