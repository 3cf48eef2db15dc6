// Proves that model/guarded.h stands alone: it is the only include here.
#include "model/guarded.h"

namespace streamcheck::header_check {
const char* header_guarded() { return "guarded.h"; }
}  // namespace streamcheck::header_check
