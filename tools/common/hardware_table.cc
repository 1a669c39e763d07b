#include "common/hardware_table.h"

#include "common/cli_util.h"

namespace unmask::tools {

StatusOr<std::vector<plan::Hardware>> LoadHardwareTable(const std::string& path) {
  if (path.empty()) return plan::ParseHardwareTable(kHardwareJson, "data/hardware.json (built in)");
  UNMASK_ASSIGN_OR_RETURN(std::string text,
                          ReadRegularFile(path, size_t{16} << 20, "hardware table"));
  return plan::ParseHardwareTable(text, path);
}

}  // namespace unmask::tools
