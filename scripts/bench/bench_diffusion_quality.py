#!/usr/bin/env python3
"""Quality against speed of unmask's diffusion decoding modes (caches, parallel commit rules, early
stop) on the diffusion twin, judged by the AR twin, with llama.cpp's `llama-diffusion-cli` measured
in the same run: a markdown table on stdout and, with --out, JSON + the table + a Pareto plot (SVG).

Usage:
  .venv/bin/python scripts/bench/bench_diffusion_quality.py                # 100 prompts, default modes
  .venv/bin/python scripts/bench/bench_diffusion_quality.py --n 5 --out build/bench-dq \\
      --modes "exact=--steps 128" "steps32=--steps 32" "thr0.9+dual=--commit threshold --cache dual"
  .venv/bin/python scripts/bench/bench_diffusion_quality.py --list-modes   # the default list

Setting (the issue's): prompts are the first 100 held-out stories of the twins (never trained on,
scripts/train/data.py), each cut to exactly 32 tokens of the twin's tokenizer (BOS included: the
GGUF sets add_bos_token) and passed as --prompt-ids; every mode runs
  unmask generate -m MODEL --json --prompt-ids IDS --gen-length 128 --block-length 32 -t 2 FLAGS
Modes are NAME=FLAGS (FLAGS: extra `unmask generate` flags); the mode named `exact` (default
`--steps 128`: one token per forward, no cache, the LLaDA reference) is always run and is what the
others are compared with. Runs are interleaved (for each prompt, every mode, then llama.cpp), so drift
in machine speed hits every mode alike; each run is one process, model loading excluded from timings.

Columns:
  * NFE/token = forward passes / generated positions (gen_length per prompt); tokens/forward = its
    inverse;
  * tokens/s = (prompts x gen_length) / (sum of `timings.generate_ms` over the prompts): every
    request counts its full gen_length, also when --early-stop ends it early (the canvas is then
    complete: EOS fills the rest);
  * agreement with exact: the fraction of the 128 output positions equal to the exact mode's, and of
    prompts whose whole output is identical ("= to EOS": identical up to and including the first EOS);
  * judge ppl: the AR twin's perplexity of each continuation given its prompt, up to and including
    the first EOS (later positions are fill and not scored; an output without EOS is scored whole),
    corpus-level: exp(total NLL / total scored tokens). The judge is the project's independent numpy
    forward pass (scripts/reference/llada.py, float64, causal for the llama GGUF): it shares no code
    with unmask or llama.cpp, and its logits are checked against goldens by the reference tests;
  * vs exact / vs llama.cpp: ratios of judge ppl and tokens/s. llama.cpp = llama-diffusion-cli in its
    default one-token-per-step setting on the same GGUF (scripts/bench/llamacpp_diffusion.py explains
    the command and the identity chat template), on the first --llamacpp-n prompts, interleaved; it
    samples (its default) so it has no judge ppl here.
The summary names the fastest mode whose judge ppl is within 5% of exact and its speed against
llama.cpp (the issue's target: at least 10x).

Cost: each (prompt, mode) is one process; the default 37 modes take about 25 s per prompt at
-t 1 on this machine (100 prompts: about 40 minutes, plus llama.cpp's 20 runs of a few seconds and
the judge's minute). If llama-diffusion-cli is not built, its column shows "-" and a line says so.

Timings on a shared 2-core machine are noisy: compare rows of one run; rerun before concluding. The
header gives the load average seen during the run. With 2 threads on cores that other processes
keep busy, OpenMP's spinning waits can make unmask 5-10x slower (llama.cpp's thread pool suffers
too); `OMP_WAIT_POLICY=passive` in the environment (passed through, and reported) tames that for
unmask only, so use it to compare modes on a busy machine, not to compare with llama.cpp.
"""
import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "bench"))
sys.path.insert(0, str(ROOT / "scripts" / "train"))
sys.path.insert(0, str(ROOT / "scripts" / "reference"))
import llamacpp_diffusion  # noqa: E402

GEN_LENGTH, BLOCK_LENGTH, PROMPT_LENGTH = 128, 32, 32


def default_modes():
    """The default mode list (edit here): NAME=FLAGS strings."""
    rules = [("thr0.9", "--commit threshold --threshold 0.9"),
             ("thr0.7", "--commit threshold --threshold 0.7"),
             ("thr0.5", "--commit threshold --threshold 0.5"),
             ("factor1", "--commit factor --factor 1.0"),
             ("hier", "--commit hierarchy --threshold 0.9 --low-threshold 0.6"),
             ("credit", "--commit credit --threshold 0.9")]
    caches = ["none", "prefix", "dual", "vicinity"]
    modes = ["exact=--steps 128", "steps64=--steps 64", "steps32=--steps 32",
             "steps32+dual=--steps 32 --cache dual"]
    for name, flags in rules:
        for cache in caches:
            suffix = "" if cache == "none" else f"+{cache}"
            modes.append(f"{name}{suffix}={flags}" + ("" if cache == "none" else f" --cache {cache}"))
    # early stop: on the main rules with the caches that matter most
    for name, flags in rules[:2] + rules[3:4]:
        for cache in ["none", "dual", "vicinity"]:
            suffix = "" if cache == "none" else f"+{cache}"
            modes.append(f"{name}{suffix}+es={flags}" + ("" if cache == "none" else f" --cache {cache}")
                         + " --early-stop")
    return modes


def parse_modes(specs):
    modes = {}
    for s in specs:
        if "=" not in s:
            sys.exit(f"--modes: {s!r} is not NAME=FLAGS")
        name, flags = s.split("=", 1)
        modes[name.strip()] = shlex.split(flags)
    if "exact" not in modes:
        modes = {"exact": ["--steps", "128"], **modes}
    return modes


def build_prompts(model, n):
    """n prompts of exactly PROMPT_LENGTH ids: BOS (if the GGUF adds it) + the first tokens of
    held-out text (never trained on), tokenized by the HF tokenizer built from the GGUF's vocabulary
    and merges. First the story openings of the held-out stories; when n is larger than their number
    (the held-out split has 55 stories), then the starts of their 2nd paragraphs (the text from there
    on), then of their 3rd, ... Returns (prompts, kinds, kv); kinds[i] is "opening" or "paragraph K"."""
    import data
    import gguf_model
    _, kv = gguf_model.read_fields(model)
    tok = gguf_model.load_tokenizer(kv)
    bos = [kv["tokenizer.ggml.bos_token_id"]] if kv.get("tokenizer.ggml.add_bos_token") else []
    stories = [s.split("\n\n") for s in data.load_splits()["held_out"]]
    out, kinds = [], []
    for k in range(max(len(s) for s in stories)):
        for paragraphs in stories:
            if len(out) == n:
                return out, kinds, kv
            if k >= len(paragraphs):
                continue
            ids = bos + tok.encode("\n\n".join(paragraphs[k:])).ids
            if len(ids) >= PROMPT_LENGTH:
                out.append(ids[:PROMPT_LENGTH])
                kinds.append("opening" if k == 0 else f"paragraph {k + 1}")
    return out, kinds, kv


def check_against_unmask(unmask, model, prompts, kv):
    """The first prompts' ids must be what `unmask tokenize` gives for the same story text."""
    import data
    import gguf_model
    import tempfile
    stories = data.load_splits()["held_out"][:3]
    bos = 1 if kv.get("tokenizer.ggml.add_bos_token") else 0
    with tempfile.TemporaryDirectory() as tmp:
        for story, ids in zip(stories, prompts):
            got = gguf_model.unmask_token_ids(unmask, model, story, tmp)[:PROMPT_LENGTH - bos]
            if got != ids[bos:]:
                sys.exit(f"tokenizer mismatch with `unmask tokenize`: {got} vs {ids[bos:]}")


def run_unmask(args, ids, flags):
    cmd = [args.unmask, "generate", "-m", args.model, "--json", "--prompt-ids",
           ",".join(map(str, ids)), "--gen-length", str(GEN_LENGTH), "--block-length",
           str(BLOCK_LENGTH), "-t", str(args.threads), *flags]
    p = subprocess.run(cmd, capture_output=True, text=True)  # OpenMP's default (spinning) waits
    if p.returncode != 0:
        sys.exit(f"failed: {shlex.join(cmd)}\n{p.stderr[-3000:]}")
    r = json.loads(p.stdout)
    out = r["output_ids"]
    if len(out) == len(ids) + GEN_LENGTH and out[:len(ids)] == ids:  # prompt included: drop it
        out = out[len(ids):]
    return {"output_ids": out, "nfe": r["nfe"], "generate_ms": r["timings"]["generate_ms"],
            "tokens_per_second": r.get("tokens_per_second"), "finish_reason": r.get("finish_reason")}


def continuation(out, eos):
    """The scored part of an output: up to and including the first EOS."""
    return out[:out.index(eos) + 1] if eos in out else list(out)


class Judge:
    """The AR twin in the project's numpy reference (float64); caches scores by sequence."""

    def __init__(self, path):
        from gguf_read import GGUFFile
        from llada import LladaModel
        g = GGUFFile(path)
        if g.metadata.get("general.architecture") != "llama":
            sys.exit(f"--judge {path}: expected a llama (autoregressive) GGUF")
        self.model = LladaModel(g, dtype=np.float64, rope_mode="interleaved")
        self.cache = {}

    def nll(self, prompt, cont):
        """(sum of -log p(cont_i | prompt, cont_<i), len(cont))."""
        key = (tuple(prompt), tuple(cont))
        if key not in self.cache:
            seq = list(prompt) + list(cont)
            logits = self.model.forward(seq[:-1])[len(prompt) - 1:]
            logits = logits - logits.max(-1, keepdims=True)
            logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
            self.cache[key] = (float(-logp[np.arange(len(cont)), cont].sum()), len(cont))
        return self.cache[key]


def pareto_front(rows):
    """Rows not dominated (another row at least as fast and at most as perplexing, better in one)."""
    front = []
    for r in rows:
        if not any((o["tokens_per_second"] >= r["tokens_per_second"] and o["judge_ppl"] <= r["judge_ppl"])
                   and (o["tokens_per_second"] > r["tokens_per_second"] or o["judge_ppl"] < r["judge_ppl"])
                   for o in rows):
            front.append(r)
    return sorted(front, key=lambda r: r["tokens_per_second"])


def write_pareto(path, rows, n_prompts, threads, lc_tps):
    """The Pareto plot: judge ppl against tokens/s (log x), colored by cache (and early stop),
    the front dashed, exact ringed, the 5% band shaded, llama.cpp and 10x llama.cpp as dotted
    verticals; ppl above 2.5x exact clipped to the top edge."""
    import plot
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
              "#17becf"]
    caches = ["none", "prefix", "dual", "vicinity"]

    def color(r):
        f = r["flags"]
        c = next((k for k in caches if f"--cache {k}" in f), "none")
        return colors[caches.index(c) + (4 if "--early-stop" in f else 0)]
    ex = rows[0]
    pts = [(r["mode"], r["tokens_per_second"], r["judge_ppl"], color(r)) for r in rows[1:]]
    front = [(r["tokens_per_second"], r["judge_ppl"]) for r in pareto_front(rows)]
    title = (f"diffusion twin: judge perplexity vs tokens/s ({n_prompts} prompts, {threads} "
             f"threads)" + (f"; llama.cpp {lc_tps:.1f} tok/s" if lc_tps else ""))
    key = [(f"cache {c}" + (" + early stop" if es else ""), colors[4 * es + k])
           for es in (0, 1) for k, c in enumerate(caches)]
    plot.scatter_svg(pts, path, title, "tokens/s (log scale)", "judge perplexity (AR twin)",
                     logx=True, front=front,
                     band=(ex["judge_ppl"], ex["judge_ppl"] * 1.05, "within 5% of exact"),
                     reference=(ex["tokens_per_second"], ex["judge_ppl"], "exact"),
                     ymax=ex["judge_ppl"] * 2.5, color_key=key,
                     vlines=[(lc_tps, "llama.cpp"), (10 * lc_tps, "10x llama.cpp")] if lc_tps else None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100, help="prompts (held-out stories), default 100")
    ap.add_argument("--modes", nargs="+", help="NAME=FLAGS ... (default: --list-modes)")
    ap.add_argument("--list-modes", action="store_true", help="print the default modes and exit")
    ap.add_argument("-t", "--threads", type=int, default=2, help="threads of unmask and llama.cpp")
    ap.add_argument("--unmask", default=str(ROOT / "build/release/bin/unmask"),
                    help="unmask binary (a copy keeps a run on one build while build/release changes)")
    ap.add_argument("-m", "--model", default=str(ROOT / "models/unmask-tinystories-llada.gguf"),
                    help="diffusion model (GGUF)")
    ap.add_argument("--judge", default=str(ROOT / "models/unmask-tinystories-ar.gguf"),
                    help="AR judge (llama GGUF with the same tokenizer)")
    ap.add_argument("--llamacpp", default=str(llamacpp_diffusion.DEFAULT_CLI),
                    help="llama-diffusion-cli binary ('none' to skip; built by "
                         "scripts/bench/setup-llamacpp-diffusion.sh)")
    ap.add_argument("--llamacpp-n", type=int, default=20,
                    help="prompts llama.cpp runs on (the first ones; default 20)")
    ap.add_argument("--out", help="directory for results.json, table.md and pareto.svg")
    ap.add_argument("--replot", metavar="DIR", help="redraw DIR/pareto.svg from DIR/results.json, exit")
    args = ap.parse_args()
    if args.list_modes:
        print("\n".join(default_modes()))
        return
    if args.replot:
        d = json.loads((Path(args.replot) / "results.json").read_text())
        write_pareto(Path(args.replot) / "pareto.svg", d["rows"], d["setting"]["prompts"],
                     d["setting"]["threads"], d["llamacpp"]["tokens_per_second"])
        return
    modes = parse_modes(args.modes or default_modes())
    for p in (args.unmask, args.model, args.judge):
        if not Path(p).is_file():
            sys.exit(f"{p}: not found")

    prompts, kinds, kv = build_prompts(args.model, args.n)
    n_open = kinds.count("opening")
    prompt_desc = (f"{len(prompts)} held-out prompts of {PROMPT_LENGTH} tokens"
                   + (f" ({n_open} story openings, {len(prompts) - n_open} paragraph starts)"
                      if n_open < len(prompts) else " (story openings)"))
    print(prompt_desc, file=sys.stderr)
    eos = kv["tokenizer.ggml.eos_token_id"]
    check_against_unmask(args.unmask, args.model, prompts, kv)

    # llama.cpp: the CLI, the identity-template copy of the model, prompt texts checked for exactness
    cli = None if args.llamacpp == "none" else llamacpp_diffusion.find_cli(args.llamacpp)
    lc_prompts, lc_note = [], ""
    if args.llamacpp != "none" and cli is None:
        print(f"llama.cpp: SKIPPED, {args.llamacpp} is not built "
              f"(scripts/bench/setup-llamacpp-diffusion.sh)", file=sys.stderr)
        lc_note = "llama.cpp: not built, skipped"
    if cli is not None:
        lc_model = llamacpp_diffusion.prepare_model(args.model)
        texts = [llamacpp_diffusion.prompt_text(args.model, ids)[0]
                 for ids in prompts[:args.llamacpp_n]]
        got = llamacpp_diffusion.llamacpp_token_ids(lc_model, texts)
        exact = 0
        for i, t in enumerate(texts):
            n_tok = len(got[i]) if got else PROMPT_LENGTH
            same = got is not None and got[i] == prompts[i]
            exact += same
            if (n_tok + GEN_LENGTH) % BLOCK_LENGTH == 0:
                lc_prompts.append((i, t, n_tok, same))
        lc_note = (f"llama.cpp prompts: {len(lc_prompts)} run, {exact}/{len(texts)} tokenized by "
                   f"llama.cpp to exactly unmask's ids" if got is not None else
                   f"llama.cpp prompts: {len(lc_prompts)} run (token identity not checked: no "
                   f".venv-llamacpp)")
        print(lc_note, file=sys.stderr)
    lc_at = {i: (t, n, same) for i, t, n, same in lc_prompts}

    binary_stamp = Path(args.unmask).stat().st_mtime  # the binary must not change during the run
    results = {m: [] for m in modes}
    lc_runs = []
    loads = []  # 1-minute load average before each prompt: how busy the shared cores were
    start = time.time()
    n_modes = len(modes) + (1 if lc_prompts else 0)
    for j, ids in enumerate(prompts):
        loads.append(os.getloadavg()[0])
        for i, (name, flags) in enumerate(modes.items()):
            el = time.time() - start
            done = j * n_modes + i
            eta = el / done * (len(prompts) * n_modes - done) if done else 0
            print(f"\rprompt {j + 1}/{len(prompts)}, mode {i + 1}/{n_modes} {name:<22} "
                  f"elapsed {el:5.0f} s, ETA {eta:5.0f} s", end="", file=sys.stderr)
            results[name].append(run_unmask(args, ids, flags))
        if j in lc_at:
            text, n_tok, same = lc_at[j]
            print(f"\rprompt {j + 1}/{len(prompts)}, mode {n_modes}/{n_modes} {'llama.cpp':<22} "
                  f"elapsed {time.time() - start:5.0f} s", end="", file=sys.stderr)
            r = llamacpp_diffusion.run(cli, lc_model, text, n_tok, GEN_LENGTH, BLOCK_LENGTH,
                                       args.threads, seed=j)
            r.update(prompt_index=j, prompt_tokens=n_tok, prompt_identical=same)
            lc_runs.append(r)
    print(file=sys.stderr)
    if Path(args.unmask).stat().st_mtime != binary_stamp:
        print(f"WARNING: {args.unmask} was rebuilt during the run: rows mix two binaries "
              f"(copy the binary and pass --unmask COPY)", file=sys.stderr)

    print("judging with the AR twin ...", file=sys.stderr)
    judge = Judge(args.judge)
    exact_out = [r["output_ids"] for r in results["exact"]]
    rows = []
    for name, flags in modes.items():
        rs = results[name]
        nll = cnt = 0
        for ids, r in zip(prompts, rs):
            cont = continuation(r["output_ids"], eos)
            a, b = judge.nll(ids, cont)
            r["judge_nll"], r["judge_tokens"] = a, b
            nll, cnt = nll + a, cnt + b
        ms = sum(r["generate_ms"] for r in rs)
        nfe = sum(r["nfe"] for r in rs)
        pos = sum(sum(x == y for x, y in zip(r["output_ids"], e)) for r, e in zip(rs, exact_out))
        rows.append(dict(
            mode=name, flags=shlex.join(flags), nfe_per_token=nfe / (len(rs) * GEN_LENGTH),
            tokens_per_forward=len(rs) * GEN_LENGTH / nfe,
            tokens_per_second=len(rs) * GEN_LENGTH / ms * 1000,
            agree_positions=pos / (len(rs) * GEN_LENGTH),
            identical=sum(r["output_ids"] == e for r, e in zip(rs, exact_out)) / len(rs),
            identical_to_eos=sum(continuation(r["output_ids"], eos) == continuation(e, eos)
                                 for r, e in zip(rs, exact_out)) / len(rs),
            judge_ppl=math.exp(nll / cnt), judge_tokens=cnt, generate_ms=ms))
    ex = rows[0]
    lc_tps = (len(lc_runs) * GEN_LENGTH / sum(r["total_ms"] for r in lc_runs) * 1000) if lc_runs else None
    for r in rows:
        r["ppl_vs_exact"] = r["judge_ppl"] / ex["judge_ppl"]
        r["speed_vs_exact"] = r["tokens_per_second"] / ex["tokens_per_second"]
        r["speed_vs_llamacpp"] = r["tokens_per_second"] / lc_tps if lc_tps else None

    lines = [f"model {os.path.relpath(args.model, ROOT)}, judge {os.path.relpath(args.judge, ROOT)} "
             f"| {prompt_desc}, gen_length {GEN_LENGTH}, "
             f"block {BLOCK_LENGTH}, {args.threads} threads, greedy; load average during the run "
             f"{min(loads):.1f}-{max(loads):.1f} (mean {statistics.mean(loads):.1f}) on {os.cpu_count()} "
             f"cores" + (f"; OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}"
                         if "OMP_WAIT_POLICY" in os.environ else ""),
             "tokens/s = prompts x gen_length / sum of generate wall time (model load excluded); "
             "judge ppl = AR twin perplexity of the continuation through its first EOS, corpus-level",
             ""]
    if lc_runs:
        tps = [r["tokens_per_second"] for r in lc_runs]
        sd = statistics.stdev(tps) if len(tps) > 1 else 0.0
        lines.append(f"llama.cpp llama-diffusion-cli (default sampling, 1 token/step, "
                     f"{lc_runs[0]['command'][lc_runs[0]['command'].index('--diffusion-steps') + 1]} "
                     f"steps over a {lc_runs[0]['prompt_tokens'] + GEN_LENGTH}-token canvas): "
                     f"{lc_tps:.1f} tokens/s over {len(lc_runs)} prompts (per run {statistics.mean(tps):.1f} "
                     f"± {sd:.1f}); {lc_note}")
        lines.append("")
    elif lc_note:
        lines += [lc_note, ""]
    lines.append("| mode | NFE/token | tokens/forward | tokens/s | vs exact | vs llama.cpp | "
                 "positions = exact | identical | = to EOS | judge ppl | ppl vs exact |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        vs_lc = f"{r['speed_vs_llamacpp']:.1f}x" if r["speed_vs_llamacpp"] else "-"
        lines.append(f"| {r['mode']} | {r['nfe_per_token']:.3f} | {r['tokens_per_forward']:.2f} | "
                     f"{r['tokens_per_second']:.1f} | {r['speed_vs_exact']:.2f}x | {vs_lc} | "
                     f"{r['agree_positions']:.1%} | {r['identical']:.0%} | {r['identical_to_eos']:.0%} | "
                     f"{r['judge_ppl']:.3f} | {r['ppl_vs_exact']:.3f} |")
    ok = [r for r in rows if r["ppl_vs_exact"] <= 1.05]
    best = max(ok, key=lambda r: r["tokens_per_second"])
    lines.append("")
    msg = (f"best mode within 5% of exact judge ppl: {best['mode']} ({best['flags']}): "
           f"{best['tokens_per_second']:.1f} tokens/s, ppl {best['judge_ppl']:.3f} "
           f"({best['ppl_vs_exact']:.3f}x exact), {best['speed_vs_exact']:.2f}x exact")
    if lc_tps:
        msg += (f", {best['speed_vs_llamacpp']:.1f}x llama.cpp "
                f"({'meets' if best['speed_vs_llamacpp'] >= 10 else 'misses'} the 10x target)")
    lines.append(msg)
    lines.append("Pareto front (tokens/s up, ppl down): "
                 + ", ".join(r["mode"] for r in pareto_front(rows)))
    table = "\n".join(lines)
    print(table)

    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "table.md").write_text(table + "\n")
        (out / "results.json").write_text(json.dumps(dict(
            setting=dict(model=args.model, judge=args.judge, prompts=len(prompts),
                         prompt_length=PROMPT_LENGTH, gen_length=GEN_LENGTH,
                         block_length=BLOCK_LENGTH, threads=args.threads, eos=eos,
                         load_average=loads, omp_wait_policy=os.environ.get("OMP_WAIT_POLICY")),
            prompt_ids=prompts, prompt_kinds=kinds,
            modes={k: shlex.join(v) for k, v in modes.items()}, rows=rows,
            llamacpp=dict(tokens_per_second=lc_tps, note=lc_note, runs=lc_runs),
            runs=results), indent=1) + "\n")
        write_pareto(out / "pareto.svg", rows, len(prompts), args.threads, lc_tps)
        print(f"wrote {out}/results.json, table.md, pareto.svg", file=sys.stderr)


if __name__ == "__main__":
    main()
