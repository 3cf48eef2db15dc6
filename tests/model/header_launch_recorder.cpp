// Proves that model/launch_recorder.h stands alone: it is the only include here.
#include "model/launch_recorder.h"

namespace streamcheck::header_check {
const char* header_launch_recorder() { return "launch_recorder.h"; }
}  // namespace streamcheck::header_check
