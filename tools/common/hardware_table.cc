#include "common/hardware_table.h"

#include <fstream>
#include <sstream>

namespace unmask::tools {

StatusOr<std::vector<plan::Hardware>> LoadHardwareTable(const std::string& path) {
  if (path.empty()) return plan::ParseHardwareTable(kHardwareJson, "data/hardware.json (built in)");
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot open the hardware table");
  std::ostringstream text;
  text << in.rdbuf();
  return plan::ParseHardwareTable(text.str(), path);
}

}  // namespace unmask::tools
