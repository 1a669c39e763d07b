#!/usr/bin/env python3
"""Block diffusion served over HTTP: every SDAR and Fast-dLLM v2 golden case of the tiny HF
checkpoints (tests/data/golden/block, the numpy reference's output) posted to `unmask serve -m
tests/data/hf/sdar-tiny-f32 -m tests/data/hf/fastdllm-v2-tiny` (folders, not GGUF files) as
/v1/completions with prompt = its token ids, max_tokens, temperature 0 and the extensions
block_length, denoising_steps, remasking, threshold, eb_threshold, top_k, small_block_size. The text
must be the golden output cut as served text is (engine/text_stream.h: before the first EOS/EOT,
at most max_tokens tokens), decoded by the `tokenizers` package from the folder's tokenizer.json;
checked whole (SDAR cases with separate_store, SDAR's own schedule) and streamed (the default
fused schedule; the deltas joined), with x_unmask.engine and x_unmask.nfe (the reference's
forwards; fewer when the served text ends at a stop id, where the server stops). Then all cases of
a checkpoint at once from threads (batched step by step by the server, fused schedule) must give
the same texts. The SDAR-MoE checkpoint's cases run the same way, and its routing counters must
reach /metrics. Prints one line per check; exits 1 if any check failed.

  .venv/bin/python tests/server/test_block_goldens.py --unmask build/release/unmask
"""
import argparse
import glob
import json
import os
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import ROOT  # noqa: E402

from tokenizers import Tokenizer  # noqa: E402

from client_util import check, run_tests, x_unmask  # noqa: E402

GOLDENS = os.path.join(ROOT, "tests", "data", "golden", "block")
HF = os.path.join(ROOT, "tests", "data", "hf")
SERVED = ("sdar-tiny-f32", "fastdllm-v2-tiny", "sdar-moe-tiny-bf16")
STOPS = (1000, 1002)  # <|endoftext|>, <|im_end|>: the folders' eos / eot


def cases():
    out = []
    for path in sorted(glob.glob(os.path.join(GOLDENS, "*.json"))):
        with open(path) as f:
            g = json.load(f)
        if g["checkpoint"] in SERVED:
            out.append(g)
    return out


def request(g):
    """(model id, max_tokens, extra body) of a golden case."""
    model = g["checkpoint"]  # the served id of a folder is its name
    if g["algorithm"] == "sdar_block_diffusion":
        body = {"block_length": g["block_length"], "denoising_steps": g["denoising_steps"],
                "remasking": g["remasking_strategy"]}
        if g["remasking_strategy"] == "low_confidence_dynamic":
            body["threshold"] = g["confidence_threshold"]
        if g["remasking_strategy"] == "entropy_bounded":
            body["eb_threshold"] = g["eb_threshold"]
        if g["top_k"] > 0:
            body["top_k"] = g["top_k"]
        return model, g["gen_length"], body
    body = {"block_length": g["block_size"], "small_block_size": g["small_block_size"],
            "threshold": g["threshold"]}
    return model, g["max_new_tokens"], body


def expected_text(g, max_tokens):
    tok = Tokenizer.from_file(os.path.join(HF, g["checkpoint"], "tokenizer.json"))
    ids = []
    for t in g["output_ids"][:max_tokens]:
        if t in STOPS or t == g["mask_id"]:
            break
        ids.append(t)
    return tok.decode(ids, skip_special_tokens=True)


def complete(client, g, stream=False, separate_store=False):
    model, max_tokens, body = request(g)
    if separate_store:
        body["separate_store"] = True
    args = dict(model=model, prompt=g["prompt_ids"], max_tokens=max_tokens, temperature=0,
                extra_body=body)
    if not stream:
        return client.completions.create(**args)
    return "".join(c.choices[0].text for c in client.completions.create(stream=True, **args)
                   if c.choices)


def make_case_test(g):
    def test(url, client):
        model, max_tokens, _ = request(g)
        want = expected_text(g, max_tokens)
        sdar = g["algorithm"] == "sdar_block_diffusion"
        # SDAR cases: SDAR's schedule (its NFE) whole, the default fused schedule streamed.
        r = complete(client, g, separate_store=sdar)
        check(r.choices[0].text == want, f"{g['case']}: text equals the reference",
              f"{r.choices[0].text!r} != {want!r}")
        xu = x_unmask(r)
        engine = "block_diffusion" if g["algorithm"] == "sdar_block_diffusion" else "fast_dllm_v2"
        check(xu.get("engine") == engine, f"{g['case']}: x_unmask.engine {engine}", xu)
        # The server stops computing once the text holds EOS/EOT (engine/scheduler_step.cc): the
        # reference's forwards when no stop id is served, never more.
        cut = any(t in STOPS for t in g["output_ids"][:max_tokens])
        if cut:
            check(xu.get("nfe") <= g["nfe"], f"{g['case']}: x_unmask.nfe <= {g['nfe']}", xu)
        else:
            check(xu.get("nfe") == g["nfe"], f"{g['case']}: x_unmask.nfe = {g['nfe']}", xu)
        streamed = complete(client, g, stream=True)
        check(streamed == want, f"{g['case']}: streamed deltas join to the text",
              f"{streamed!r} != {want!r}")
    return g["case"], test


def concurrent_requests_match(url, client):
    gs = cases()
    with ThreadPoolExecutor(max_workers=len(gs)) as pool:
        texts = list(pool.map(lambda g: complete(client, g).choices[0].text, gs))
    for g, text in zip(gs, texts):
        want = expected_text(g, request(g)[1])
        check(text == want, f"{g['case']}: same text when {len(gs)} requests run at once",
              f"{text!r} != {want!r}")


def moe_metrics(url, client):
    """The MoE checkpoint's routing counters reach /metrics (unmask:moe_*)."""
    import urllib.request
    text = urllib.request.urlopen(url + "/metrics").read().decode()
    for name in ("moe_layer_forwards_total", "moe_experts_hit_total", "moe_expert_bytes_total"):
        lines = [ln for ln in text.splitlines()
                 if ln.startswith(f"unmask:{name}{{") and 'model="sdar-moe-tiny-bf16"' in ln]
        check(len(lines) == 1 and float(lines[0].split()[-1]) > 0,
              f"/metrics has unmask:{name} > 0 for the MoE checkpoint", lines)
    dense = [ln for ln in text.splitlines()
             if ln.startswith("unmask:moe_experts_hit_total{") and "sdar-tiny-f32" in ln]
    check(not dense, "no MoE counters for the dense checkpoints", dense)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--unmask", required=True)
    args = ap.parse_args()
    server_args = []
    for name in SERVED:
        server_args += ["-m", os.path.join(HF, name)]
    tests = [make_case_test(g) for g in cases()] + [concurrent_requests_match, moe_metrics]
    sys.exit(run_tests(args.unmask, server_args + ["-t", "1", "--max-batch", "8"], tests))


if __name__ == "__main__":
    main()
