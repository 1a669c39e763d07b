// Architectures of well-known models for the planner (`unmask plan --model llada-8b`): the
// hyper-parameters of their published config.json files, as a ModelConfig (no weights).
#ifndef UNMASK_PLAN_MODEL_PRESETS_H_
#define UNMASK_PLAN_MODEL_PRESETS_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "model/config.h"

namespace unmask::plan {

struct ModelPreset {
  std::string id;      // "llada-8b"
  std::string source;  // where the numbers come from
  ModelConfig config;
};

const std::vector<ModelPreset>& ModelPresets();

// The preset with `id`. Errors: NotFound listing the known ids.
StatusOr<ModelPreset> FindModelPreset(std::string_view id);

}  // namespace unmask::plan

#endif  // UNMASK_PLAN_MODEL_PRESETS_H_
