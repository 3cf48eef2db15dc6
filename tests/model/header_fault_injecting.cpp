// Proves that model/fault_injecting.h stands alone: it is the only include here.
#include "model/fault_injecting.h"

namespace streamcheck::header_check {
const char* header_fault_injecting() { return "fault_injecting.h"; }
}  // namespace streamcheck::header_check
