#include "core/device.h"

#include <array>
#include <cstddef>

namespace unmask {
namespace {

// Indexed by Device.
constexpr std::array<std::string_view, 2> kDeviceNames = {"cpu", "cuda"};

}  // namespace

std::string_view DeviceName(Device device) {
  const auto i = static_cast<size_t>(device);
  return i < kDeviceNames.size() ? kDeviceNames[i] : "unknown";
}

std::optional<Device> DeviceFromName(std::string_view name) {
  for (size_t i = 0; i < kDeviceNames.size(); ++i) {
    if (name == kDeviceNames[i]) return static_cast<Device>(i);
  }
  return std::nullopt;
}

}  // namespace unmask
