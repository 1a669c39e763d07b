// The engine's one step (ARCHITECTURE.md "Scheduler"): a batch of decoders on one model advance
// by one forward pass. Every caller runs this function — `generate` and `bench` through
// Engine::Run (engine/engine.h), `serve` and the arena through the scheduler's engine thread — so
// what a benchmark measures is what the server runs.
//
// A step: each unfinished decoder plans (Decoder::Plan); the plans are concatenated into ONE
// BatchPlan (ragged sequences side by side, each at its own positions: no padding, no attention
// across requests); Model::Forward computes the logit rows of all of them; each decoder consumes
// its own rows (Decoder::Update). Each request's tokens are those of running it alone (the
// forward computes every row with the same operations whatever the batch; tests/engine checks it
// at temperature 0).
#ifndef UNMASK_ENGINE_STEP_H_
#define UNMASK_ENGINE_STEP_H_

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "decode/decoder.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace unmask {

// Buffers a caller keeps across the steps of one model (one set per thread that steps it).
struct StepBuffers {
  Workspace ws;
  Tensor logits;  // [>= rows, vocab], grown on demand
  BatchPlan batch;
  std::vector<int64_t> rows;       // logit rows of each stepped slot
  std::vector<int64_t> sequences;  // plan sequences of each stepped slot
};

// One decoder's part in a step.
struct StepSlot {
  Decoder* decoder = nullptr;  // not owned
  bool stepped = false;        // took part in this step's forward and was updated
  Status status;               // its Plan or Update error (it then took no further part)
  DecodeStep result;           // what its Update did (when stepped)
  int64_t positions = 0;       // positions it fed this step (CFG: both canvases)
};

// Work and time of one step. Times in milliseconds.
struct StepStats {
  ForwardStats forward;  // the one forward (zero when no decoder planned)
  double decode_ms = 0;  // time inside the decoders' Update calls
  double plan_ms = 0;    // time inside Plan calls (AR drafters run here)
  int64_t stepped = 0;   // decoders that took part
};

// Steps every slot whose decoder is not Done and has no error. A decoder whose Plan or Update
// fails gets that status in its slot (with the step number as context) and the others go on.
// `kv` must hold every sequence the decoders' plans use (may be null when none needs a cache).
// Errors (nothing was updated): the Forward's error, with the step; InvalidArgument for a null
// decoder.
Status StepBatch(const Model& model, std::span<StepSlot> slots, KvCache* kv, StepBuffers& buffers,
                 StepStats* stats);

}  // namespace unmask

#endif  // UNMASK_ENGINE_STEP_H_
