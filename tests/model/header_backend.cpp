// Proves that model/backend.h stands alone: it is the only include here.
#include "model/backend.h"

namespace streamcheck::header_check {
const char* header_backend() { return "backend.h"; }
}  // namespace streamcheck::header_check
