#!/usr/bin/env python3
"""Checks the exported block-diffusion twin against its PyTorch forward and writes the engine's
golden logits.

  1. Loads models/unmask-tinystories-block.gguf back into the PyTorch BlockModel (model_block.py;
     F16 weights expanded exactly, computed in float64) and compares its block-causal logits with
     (a) the training checkpoint's forward (float32 weights; the difference is F16 rounding) and
     (b) the independent numpy reference (scripts/reference/hf_model.py, float64) on the HF folder
     models/unmask-tinystories-block-hf: the same function from the two files, so the GGUF and the
     HF export agree with each other and with the PyTorch model (tolerance 1e-9 in float64).
  2. Writes tests/data/golden/twins/sdar_forward.json: float64 logits of the PyTorch forward (from
     the GGUF's weights) for a canvas of a held-out story's opening plus masked blocks, the input
     of a real denoising step, at every position. tests/model/block_twin_forward_test.cc checks
     unmask's logits against it (uncached forward and prefill + cached block forwards, GGUF and HF
     folder, both weight modes) within atol 2e-3 + rtol 1e-4 (float32 against float64).
  3. With --unmask BIN: greedy generation (temperature 0) by the engine equals the numpy reference
     decoder (scripts/reference/sdar_generate.py) on the HF folder, for both shipped strategies
     (low_confidence_dynamic 0.85 and low_confidence_static) and a few prompts.

  .venv/bin/python scripts/train/check_block_twin.py [--checkpoint build/train/block/checkpoint.pt]
      [--unmask build/twin/bin/unmask]
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts" / "train"))
sys.path.insert(0, str(REPO / "scripts" / "reference"))
import data  # noqa: E402
import gguf_model  # noqa: E402
from model_block import BlockConfig, BlockModel  # noqa: E402

GGUF = "models/unmask-tinystories-block.gguf"
HF = "models/unmask-tinystories-block-hf"
GOLDEN = REPO / "tests/data/golden/twins/sdar_forward.json"
ATOL, RTOL = 2e-3, 1e-4


def load_gguf_model(path, dtype=torch.float64):
    """BlockModel with the GGUF's weights (names of export_block.py, inverted)."""
    reader, kv = gguf_model.read_fields(path)
    a = kv["general.architecture"]
    assert a == "sdar", a
    cfg = BlockConfig(vocab_size=len(kv["tokenizer.ggml.tokens"]), dim=kv[f"{a}.embedding_length"],
                      layers=kv[f"{a}.block_count"], heads=kv[f"{a}.attention.head_count"],
                      head_dim=kv[f"{a}.attention.key_length"], ffn=kv[f"{a}.feed_forward_length"],
                      context=kv[f"{a}.context_length"], block_length=kv["diffusion.block_length"],
                      rope_base=kv[f"{a}.rope.freq_base"],
                      norm_eps=kv[f"{a}.attention.layer_norm_rms_epsilon"])
    import export_block
    names = {gg: ck for ck, gg, _, _ in export_block.tensors(
        {k: None for k in BlockModel(cfg).state_dict()}, cfg)}
    return gguf_weights_into(BlockModel(cfg), reader, names, dtype), kv


def gguf_weights_into(m, reader, names, dtype):
    """m (a BlockModel or subclass) in dtype with the GGUF's tensors (names: GGUF name ->
    state-dict key; F16 expanded exactly); in float64 the RoPE tables are rebuilt in float64 too
    (the model's are float32). Returns m in eval mode."""
    state = {}
    for t in reader.tensors:
        arr = np.asarray(t.data).astype(np.float64).reshape([int(d) for d in reversed(t.shape)])
        state[names[t.name]] = torch.from_numpy(arr.copy())
    m = m.to(dtype)
    m.load_state_dict(state)
    cfg = m.cfg
    if dtype == torch.float64:
        inv = cfg.rope_base ** (-torch.arange(0, cfg.head_dim, 2, dtype=torch.float64) /
                                cfg.head_dim)
        ang = torch.arange(cfg.context, dtype=torch.float64)[:, None] * inv[None, :]
        ang = torch.cat([ang, ang], -1)
        m.cos, m.sin = torch.cos(ang), torch.sin(ang)
    m.eval()
    return m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", default=str(REPO / "build/train/block/checkpoint.pt"))
    ap.add_argument("--gguf", default=str(REPO / GGUF))
    ap.add_argument("--hf", default=str(REPO / HF))
    ap.add_argument("--unmask", help="unmask binary: also compare greedy generations")
    ap.add_argument("--no-golden", action="store_true", help="do not (re)write the golden file")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if not data.corpus_path().exists():  # the held-out stories give the prompts
        if os.environ.get("CI") == "true":
            print(f"check_block_twin: {data.corpus_path()} missing", file=sys.stderr)
            return 1
        print(f"SKIPPED: {data.corpus_path()} not found (../shared/data)")
        return 0

    m64, kv = load_gguf_model(args.gguf)
    tok = gguf_model.load_tokenizer(kv)
    bos, mask = kv["tokenizer.ggml.bos_token_id"], kv["tokenizer.ggml.mask_token_id"]
    B = m64.cfg.block_length
    story = data.load_splits()["held_out"][0]
    prompt = [bos] + tok.encode(story).ids[:21]  # 22 tokens: 5 full blocks + 2 of the 6th
    # A denoising step's canvas: prompt, the 6th block's 2 masks, two more masked blocks, and a
    # partly decoded one (positions 0 .. 35, 9 blocks).
    ids = prompt + [mask] * 2 + [mask] * 8 + tok.encode(" and the").ids[:2] + [mask, mask]
    L = len(ids)
    x = torch.tensor([ids])
    with torch.no_grad():
        ref = m64(x)[0].numpy()
    report = {"positions": L, "block_length": B, "max_abs_logit": float(np.abs(ref).max())}

    if Path(args.checkpoint).exists():
        ck = torch.load(args.checkpoint, map_location="cpu")
        m32 = BlockModel(BlockConfig(**{**ck["config"], "dropout": 0.0}))
        m32.load_state_dict(ck["model"])
        m32.eval()
        with torch.no_grad():
            f32 = m32(x)[0].double().numpy()
        report["checkpoint_f32_vs_gguf_f64_max_abs"] = float(np.abs(f32 - ref).max())

    from hf_model import HFModel
    hf = HFModel(args.hf, np.float64)
    # The GGUF stores eps as float32 (9.99999975e-06, what unmask computes with); config.json has
    # 1e-05. Same eps here, so that the comparison shows the weights and layout alone (the eps
    # difference alone moves the logits by ~4e-9).
    hf.cfg.rms_norm_eps = m64.cfg.norm_eps
    hf_logits = hf.forward(np.array(ids), mask="block", block_length=B)
    report["hf_numpy_reference_vs_pytorch_max_abs"] = float(np.abs(hf_logits - ref).max())
    cache = hf.new_cache()
    pre = (len(prompt) // B) * B
    hf.forward(np.array(ids[:pre]), mask="block", block_length=B, cache=cache, store_kv=True)
    cached = [hf.forward(np.array(ids[s:s + B]), mask="block", block_length=B, cache=cache,
                         store_kv=True) for s in range(pre, L, B)]
    report["hf_cached_blocks_vs_pytorch_max_abs"] = float(
        np.abs(np.concatenate(cached) - ref[pre:]).max())
    ok = report["hf_numpy_reference_vs_pytorch_max_abs"] < 1e-9 and \
        report["hf_cached_blocks_vs_pytorch_max_abs"] < 1e-9

    if not args.no_golden:
        golden = {"model_path": GGUF, "hf_folder": HF, "block_length": B, "input_ids": ids,
                  "prefill_length": pre, "rows": list(range(L)),
                  "logits": [[round(float(v), 6) for v in row] for row in ref],
                  "atol": ATOL, "rtol": RTOL,
                  "tolerance_note": "float64 PyTorch forward (model_block.BlockModel) from the "
                                    "GGUF's F16 weights; unmask computes in float32 from the same "
                                    "weights. Same bound as twins/llama_forward.json; layout bugs "
                                    "(RoPE pairing, q/k norm, mask) are >= 1e-1 on these logits."}
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(golden) + "\n")
        report["golden"] = str(GOLDEN.relative_to(REPO))

    if args.unmask:
        from sdar_generate import SdarParams, generate as sdar_generate
        gens = []
        for i, s in enumerate(data.load_splits()["held_out"][:4]):
            text = s.split(". ")[0] + "."
            p_ids = [bos] + tok.encode(text).ids
            for strategy in ("low_confidence_dynamic", "low_confidence_static"):
                eos = kv["tokenizer.ggml.eos_token_id"]
                r = sdar_generate(hf, p_ids, SdarParams(
                    gen_length=32, block_length=B, denoising_steps=B,
                    remasking_strategy=strategy, confidence_threshold=0.85,
                    stopping_criteria_idx=[eos]))
                out = subprocess.run([args.unmask, "generate", "-m", args.gguf, "--prompt-ids",
                                      ",".join(map(str, p_ids)), "-n", "32", "--remasking",
                                      strategy, "--json", "-t", "1"],
                                     capture_output=True, text=True, check=True).stdout
                j = json.loads(out)
                same = j["output_ids"] == list(r.output_ids)[:len(j["output_ids"])]
                gens.append({"prompt": i, "strategy": strategy, "identical": same,
                             "engine_nfe": j["nfe"], "reference_nfe": r.nfe,
                             "min_decision_margin": r.min_decision_margin})
                ok = ok and same
        report["greedy_generations"] = gens
    report["ok"] = ok
    print(json.dumps(report, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
