// The planner's hardware table as the tools load it: data/hardware.json embedded at build time
// (cmake/embed_text.cmake), or a user's file of the same schema.
#ifndef UNMASK_TOOLS_COMMON_HARDWARE_TABLE_H_
#define UNMASK_TOOLS_COMMON_HARDWARE_TABLE_H_

#include <string>
#include <vector>

#include "core/status.h"
#include "plan/hardware.h"

namespace unmask::tools {

extern const char* const kHardwareJson;  // data/hardware.json

// `path` empty: the embedded table; else the file at `path`. Errors: NotFound for a missing file,
// and those of plan::ParseHardwareTable.
StatusOr<std::vector<plan::Hardware>> LoadHardwareTable(const std::string& path);

}  // namespace unmask::tools

#endif  // UNMASK_TOOLS_COMMON_HARDWARE_TABLE_H_
