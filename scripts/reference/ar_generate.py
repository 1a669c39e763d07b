#!/usr/bin/env python3
"""Autoregressive generation from a `llama`-architecture GGUF with the independent numpy reference.

Runs a GGUF in llama.cpp's layout (the project's AR twin, or any small Llama GGUF with a gpt2 BPE
vocabulary) through scripts/reference/llada.py's forward pass with causal attention, without a KV
cache (every step recomputes the whole prefix: slow, but an independent check). The tokenizer is
rebuilt from the GGUF's own tokens and merges with HuggingFace `tokenizers`. unmask's own AR engine
comes later; this is the reference it will be checked against.

  .venv/bin/python scripts/reference/ar_generate.py -m models/unmask-tinystories-ar.gguf \\
      -p "Once upon a time" -n 64
"""
import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "train"))
from gguf_read import GGUFFile  # noqa: E402
from llada import LladaModel  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", required=True, help="GGUF with general.architecture = llama")
    ap.add_argument("-p", "--prompt", default="Once upon a time")
    ap.add_argument("-n", "--n-predict", type=int, default=64, help="tokens to generate at most")
    ap.add_argument("--temperature", type=float, default=0.0, help="0: greedy")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    g = GGUFFile(args.model)
    if g.metadata.get("general.architecture") != "llama":
        raise SystemExit(f"{args.model}: expected a llama (autoregressive) model")
    model = LladaModel(g, dtype=np.float32, rope_mode="interleaved")
    import gguf_model  # the HF tokenizer built from the GGUF's tokens and merges
    tok = gguf_model.load_tokenizer(g.metadata)
    ids = tok.encode(args.prompt).ids
    bos, eos = g.metadata.get("tokenizer.ggml.bos_token_id"), g.metadata.get(
        "tokenizer.ggml.eos_token_id")
    if g.metadata.get("tokenizer.ggml.add_bos_token") and bos is not None:
        ids = [int(bos)] + ids
    rng = np.random.default_rng(args.seed)
    sys.stdout.write(args.prompt)
    for _ in range(args.n_predict):
        if len(ids) >= model.cfg.n_ctx:
            break
        logits = model.forward(ids)[-1].astype(np.float64)
        if args.temperature > 0:
            p = np.exp((logits - logits.max()) / args.temperature)
            nxt = int(rng.choice(len(p), p=p / p.sum()))
        else:
            nxt = int(np.argmax(logits))
        if nxt == eos:
            break
        ids.append(nxt)
        sys.stdout.write(tok.decode([nxt]))
        sys.stdout.flush()
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
