#!/usr/bin/env python3
"""Golden files on the project's trained twins (real-text fixtures), from the independent reference.

  tests/data/golden/twins/llada_story.json   LLaDA generation on models/unmask-tinystories-llada.gguf
  tests/data/golden/twins/llada_story_infill.json  the same with a suffix (infilling)
                                             (same format as tests/data/golden/llada/*.json, with the
                                             model path relative to the repository root)
  tests/data/golden/twins/llama_forward.json logits of the AR twin (models/unmask-tinystories-ar.gguf)
                                             at a few positions, causal attention, float64 reference

  .venv/bin/python scripts/train/make_twin_goldens.py
"""
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts" / "reference"))
sys.path.insert(0, str(REPO / "scripts" / "train"))
from generate import GenerateParams, generate  # noqa: E402
from gguf_read import GGUFFile  # noqa: E402
from llada import LladaModel  # noqa: E402
import gguf_model  # noqa: E402

OUT = REPO / "tests" / "data" / "golden" / "twins"
LLADA = "models/unmask-tinystories-llada.gguf"
AR = "models/unmask-tinystories-ar.gguf"


def prompt_ids(g, text):
    tok = gguf_model.load_tokenizer(g.metadata)
    return [int(g.metadata["tokenizer.ggml.bos_token_id"])] + tok.encode(text).ids


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    g = GGUFFile(str(REPO / LLADA))
    model = LladaModel(g)  # float64, rotate-half RoPE after undoing the GGUF Q/K layout
    cases = [("llada_story", "Once upon a time, there was", GenerateParams(gen_length=64, steps=64,
                                                                   block_length=32)),
             ("llada_story_fast", "Tom and his dog", GenerateParams(gen_length=64, steps=16,
                                                                    block_length=32))]
    # Infilling: canvas = prompt + masks + suffix (the suffix tokenized without BOS).
    infill = {"llada_story_infill": " They played with the ball all day. The end."}
    cases.append(("llada_story_infill", "Once upon a time, there was a little girl named Lily.",
                  GenerateParams(gen_length=16, steps=16, block_length=16)))
    tok = gguf_model.load_tokenizer(g.metadata)
    for name, text, params in cases:
        ids = prompt_ids(g, text)
        suffix_ids = tok.encode(infill[name]).ids if name in infill else []
        r = generate(model, ids, params, suffix_ids=suffix_ids)
        if r.min_decision_margin < 1e-4:
            raise SystemExit(f"{name}: decision margin {r.min_decision_margin:.2e} < 1e-4")
        golden = {"case": name, "model_path": LLADA, "prompt": text, "prompt_ids": ids,
                  **{k: getattr(params, k) for k in ("gen_length", "steps", "block_length",
                                                     "temperature", "cfg_scale", "remasking",
                                                     "logits_eos_inf", "confidence_eos_eot_inf",
                                                     "seed")},
                  "output_ids": r.output_ids, "nfe": r.nfe,
                  "min_decision_margin": r.min_decision_margin}
        if suffix_ids:
            golden["suffix"] = infill[name]
            golden["suffix_ids"] = [int(t) for t in suffix_ids]
        (OUT / f"{name}.json").write_text(json.dumps(golden, indent=1) + "\n")
        print(f"{name}: margin {r.min_decision_margin:.2e}", file=sys.stderr)

    ga = GGUFFile(str(REPO / AR))
    ar = LladaModel(ga)  # general.architecture = llama: causal attention
    ids = prompt_ids(ga, "Once upon a time, there was a little girl named Lily.")
    logits = ar.forward(ids)
    rows = [0, len(ids) // 2, len(ids) - 1]
    golden = {"model_path": AR, "input_ids": ids, "rows": rows,
              "logits": [[round(float(v), 6) for v in logits[r]] for r in rows],
              "atol": 2e-3, "rtol": 1e-4,
              "tolerance_note": "unmask computes in f32 from F16 weights, the reference in f64 "
                                "from the same weights; differences stay below 1e-3 on logits "
                                "of magnitude < 30"}
    (OUT / "llama_forward.json").write_text(json.dumps(golden) + "\n")
    print("llama_forward: ok", file=sys.stderr)


if __name__ == "__main__":
    main()
