#!/usr/bin/env python3
"""Checks the exported MoE twins against their PyTorch forward and the references.

The twins are not stored in the repository (22.6 MB each): scripts/train/train_moe_twins.sh trains
them into build/train/ and runs this script.

For each twin (build/train/unmask-tinystories-moe-llada.gguf, `llada-moe`, bidirectional;
unmask-tinystories-moe-ar.gguf, `qwen3moe`, causal; unmask-tinystories-moe-block.gguf,
`sdar-moe`, block-causal, the AR twin adapted by train_block.py --init moe-ar):
  1. Loads the GGUF back into the PyTorch MoeModel (model_moe.py; F16 weights expanded exactly,
     computed in float64) and compares its logits on a held-out story's opening (for the
     diffusion twin followed by masks and a few decoded tokens: a denoising step's canvas) with
     (a) the training checkpoint's float32 forward, when --checkpoint-dir has it (the difference
     is F16 rounding), and (b) the independent numpy reference (scripts/reference/hf_model.py and
     moe.py, float64) on the same weights exported as an HF folder (export_moe.py --hf, into a
     temporary folder): same logits within 1e-8 and the same experts hit per layer.
  2. Reports the smallest routing margin (k-th minus (k+1)-th router probability over positions
     and layers; unmask routes in float32, so a margin below 1e-4 could route differently).
  3. With --unmask BIN: greedy generations by the engine equal the references on the HF folder:
     the LLaDA reference generate (scripts/reference/generate.py; gen 32, block 32 and 8) for the
     diffusion twin, greedy AR decoding (hf_ar_generate.py) for the AR twin, the SDAR reference
     decoder (sdar_generate.py; dynamic 0.85 and static) for the block twin.

  .venv/bin/python scripts/train/check_moe_twins.py [--unmask build/ci/bin/unmask]
"""
import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "scripts" / "train"))
sys.path.insert(0, str(REPO / "scripts" / "reference"))
import data  # noqa: E402
from check_block_twin import gguf_weights_into  # noqa: E402
import export_moe  # noqa: E402
import gguf_model  # noqa: E402
from model_moe import MoeConfig, MoeModel  # noqa: E402

TWINS = {"llada": "build/train/unmask-tinystories-moe-llada.gguf",
         "ar": "build/train/unmask-tinystories-moe-ar.gguf",
         "block_diffusion": "build/train/unmask-tinystories-moe-block.gguf"}
MASK = {"llada": "full", "ar": "causal", "block_diffusion": "block"}
MIN_ROUTE_MARGIN = 1e-4


def load_gguf_model(path, dtype=torch.float64):
    """(MoeModel with the GGUF's weights in dtype, objective, GGUF keys)."""
    reader, kv = gguf_model.read_fields(path)
    a = kv["general.architecture"]
    objective = {v: k for k, v in export_moe.ARCH.items()}[a]
    context = kv[f"{a}.context_length"]
    cfg = MoeConfig(vocab_size=len(kv["tokenizer.ggml.tokens"]), dim=kv[f"{a}.embedding_length"],
                    layers=kv[f"{a}.block_count"], heads=kv[f"{a}.attention.head_count"],
                    head_dim=kv[f"{a}.attention.key_length"], ffn=0, context=context,
                    block_length={"ar": 1, "llada": context}.get(
                        objective, kv.get("diffusion.block_length")),
                    rope_base=kv[f"{a}.rope.freq_base"],
                    norm_eps=kv[f"{a}.attention.layer_norm_rms_epsilon"],
                    experts=kv[f"{a}.expert_count"], top_k=kv[f"{a}.expert_used_count"],
                    expert_ffn=kv[f"{a}.expert_feed_forward_length"],
                    normalize=bool(kv[f"{a}.expert_weights_norm"]))
    names = {gg: ck for ck, gg, _ in export_moe.tensors(
        {k: None for k in MoeModel(cfg).state_dict()}, cfg)}
    return gguf_weights_into(MoeModel(cfg), reader, names, dtype), objective, kv


@dataclass
class Twin:
    objective: str
    gguf: str
    m64: MoeModel
    kv: dict
    hf: object  # hf_model.HFModel of the exported HF folder
    hf_folder: str


def canvas(objective, kv, tok):
    """The forward's input: a held-out story's opening; for the diffusion twins followed by
    masks and a few decoded tokens (a denoising step's canvas; the block twin's prompt in whole
    blocks of 4 first)."""
    bos, mask = kv["tokenizer.ggml.bos_token_id"], kv["tokenizer.ggml.mask_token_id"]
    story = tok.encode(data.load_splits()["held_out"][0]).ids
    if objective == "ar":
        return [bos] + story[:39]
    if objective == "block_diffusion":
        return [bos] + story[:23] + [mask] * 8 + tok.encode(" and the").ids[:2] + [mask] * 8
    return [bos] + story[:15] + [mask] * 10 + tok.encode(" the little").ids[:2] + [mask] * 12


def check_forward(t: Twin, tok, checkpoint_dir):
    ids = canvas(t.objective, t.kv, tok)
    x = torch.tensor([ids])
    with torch.no_grad():
        ref = t.m64(x)[0].numpy()
    hits = [int((b.last_counts > 0).sum()) for b in t.m64.blocks]
    r = {"positions": len(ids), "max_abs_logit": float(np.abs(ref).max()),
         "experts_hit_per_layer": hits}
    run = {"llada": "moe-llada", "ar": "moe-ar", "block_diffusion": "moe-block"}[t.objective]
    ck_path = Path(checkpoint_dir) / run / "checkpoint.pt"
    if ck_path.exists():
        ck = torch.load(ck_path, map_location="cpu")
        m32 = MoeModel(MoeConfig(**{**ck["config"], "dropout": 0.0}))
        m32.load_state_dict(ck["model"])
        m32.eval()
        with torch.no_grad():
            r["checkpoint_f32_vs_gguf_f64_max_abs"] = float(
                np.abs(m32(x)[0].double().numpy() - ref).max())
    stats = {}
    mask = MASK[t.objective]
    b = t.m64.cfg.block_length
    hf_logits = t.hf.forward(np.array(ids), mask=mask, moe_stats=stats,
                             block_length=b if mask == "block" else None)
    r["hf_numpy_reference_vs_pytorch_max_abs"] = float(np.abs(hf_logits - ref).max())
    r["reference_experts_hit_per_layer"] = stats["experts_hit"]
    r["min_route_margin"] = stats["min_route_margin"]
    ok = (r["hf_numpy_reference_vs_pytorch_max_abs"] < 1e-8 and stats["experts_hit"] == hits and
          stats["min_route_margin"] >= MIN_ROUTE_MARGIN)
    return ok, r


def check_generations(t: Twin, tok, unmask):
    from generate import GenerateParams, generate
    from hf_ar_generate import greedy
    sys.path.insert(0, str(REPO / "scripts"))
    from make_moe_goldens import DiffusionView
    gens, ok = [], True
    bos, eos = t.kv["tokenizer.ggml.bos_token_id"], t.kv["tokenizer.ggml.eos_token_id"]
    special = {k: t.kv[k] for k in ("tokenizer.ggml.mask_token_id", "tokenizer.ggml.eos_token_id",
                                    "tokenizer.ggml.bos_token_id")}
    special["tokenizer.ggml.eot_token_id"] = t.kv.get("tokenizer.ggml.eot_token_id", eos)
    for i, s in enumerate(data.load_splits()["held_out"][:3]):
        p_ids = [bos] + tok.encode(s.split(". ")[0] + ".").ids
        runs = []
        if t.objective == "llada":
            view = DiffusionView(t.hf_folder, np.float64, special)
            view.m.cfg.rms_norm_eps = t.m64.cfg.norm_eps
            for block in (32, 8):
                r = generate(view, p_ids, GenerateParams(gen_length=32, steps=32,
                                                          block_length=block))
                runs.append(({"block_length": block}, r.output_ids, r.min_decision_margin,
                             ["-n", "32", "--steps", "32", "--block-length", str(block)]))
        elif t.objective == "block_diffusion":
            from sdar_generate import SdarParams, generate as sdar_generate
            b = t.m64.cfg.block_length
            for strategy in ("low_confidence_dynamic", "low_confidence_static"):
                r = sdar_generate(t.hf, p_ids, SdarParams(
                    gen_length=32, block_length=b, denoising_steps=b,
                    remasking_strategy=strategy, confidence_threshold=0.85,
                    stopping_criteria_idx=[eos]))
                runs.append(({"remasking": strategy}, r.output_ids, r.min_decision_margin,
                             ["-n", "32", "--remasking", strategy]))
        else:
            r = greedy(t.hf, p_ids, 32, stop_ids=[eos])
            stop = r.first_stop_index + 1 if r.first_stop_index is not None else len(r.output_ids)
            runs.append(({}, r.output_ids[:stop], r.min_decision_margin, ["-n", "32"]))
        for params, want, margin, flags in runs:
            out = subprocess.run([unmask, "generate", "-m", t.gguf, "--prompt-ids",
                                  ",".join(map(str, p_ids)), "--json", "-t", "1", *flags],
                                 capture_output=True, text=True, cwd=REPO)
            if out.returncode != 0:
                raise SystemExit(f"{unmask} failed: {out.stderr.strip()[-400:]}")
            got = json.loads(out.stdout)["output_ids"]
            same = got == list(want)[:len(got)] and len(got) > 0
            gens.append({"prompt": i, **params, "identical": same, "tokens": len(got),
                         "min_decision_margin": float(f"{margin:.3g}")})
            ok = ok and same
    return ok, gens


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint-dir", default=str(REPO / "build/train"),
                    help="where training wrote moe-llada/, moe-ar/ and moe-block/ (optional)")
    ap.add_argument("--unmask", help="unmask binary: also compare greedy generations")
    args = ap.parse_args()
    torch.set_num_threads(1)
    missing = [p for p in TWINS.values() if not (REPO / p).exists()]
    if missing:
        print(f"SKIPPED: {', '.join(missing)} not found (scripts/train/train_moe_twins.sh "
              "trains them)")
        return 0
    if not data.corpus_path().exists():  # the held-out stories give the inputs
        print(f"check_moe_twins: {data.corpus_path()} missing (../shared/data)", file=sys.stderr)
        return 1
    from hf_model import HFModel
    report, ok = {}, True
    for objective, rel in TWINS.items():
        m64, obj, kv = load_gguf_model(str(REPO / rel))
        assert obj == objective, (rel, obj)
        tok = gguf_model.load_tokenizer(kv)
        with tempfile.TemporaryDirectory() as tmp:
            ids = {k: kv[f"tokenizer.ggml.{n}_token_id"] for k, n in
                   (("bos", "bos"), ("eos", "eos"), ("pad", "padding"), ("mask", "mask"))}
            sd = {k: v.float() for k, v in m64.state_dict().items()}
            export_moe.export_hf(sd, m64.cfg, objective, None, tmp, ids)
            hf = HFModel(tmp, np.float64)
            hf.cfg.rms_norm_eps = m64.cfg.norm_eps  # the GGUF's float32 eps (see check_block_twin)
            t = Twin(objective, rel, m64, kv, hf, tmp)
            f_ok, r = check_forward(t, tok, args.checkpoint_dir)
            if args.unmask:
                g_ok, r["greedy_generations"] = check_generations(t, tok, args.unmask)
                f_ok = f_ok and g_ok
        report[objective] = r
        ok = ok and f_ok
    report["ok"] = ok
    print(json.dumps(report, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
