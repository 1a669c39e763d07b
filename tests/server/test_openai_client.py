#!/usr/bin/env python3
"""`unmask serve` through the official `openai` Python client (and raw HTTP where the client cannot).

Starts `unmask serve -m models/unmask-tinystories-llada.gguf -m models/unmask-tinystories-ar.gguf -t 1`
on a free loopback port and checks the contract of docs/serving.md: models, completions and chat for
both engines and `auto`, usage and `x_unmask`, greedy and seeded determinism, stop strings, streaming
(deltas, the usage chunk, finish_reason), the diffusion extensions, errors (404, 400, 413, bad JSON),
/tokenize and /detokenize, /metrics, and cancellation (a closed stream and a client timeout abort the
request on the server). Prints one line per check; exits 1 if any check failed.

  .venv/bin/python tests/server/test_openai_client.py --unmask build/release/unmask
"""
import argparse
import json
import math
import os
import re
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import AR, AR_ID, LLADA, LLADA_ID, ROOT  # noqa: E402

import openai  # noqa: E402

from client_util import (ENGINE, PROMPT, TIMEOUT_S, check, check_usage, check_x_unmask,  # noqa: E402
                         complete, error_message, expect_status, metrics, msum, mvalues, raw,
                         raw_json, run_tests, x_unmask, is_error_object)


# ----------------------------------------------------------------------------------------------
# tests (each a function; a failing check aborts only that function)


def t_health_and_root(url, client):
    s, h, obj, _ = raw_json(url, "GET", "/health")
    check(s == 200 and obj == {"status": "ok"}, "GET /health -> 200 {status: ok}", f"{s} {obj}")
    s, h, data = raw(url, "GET", "/")
    check(s == 200 and "html" in h.get("content-type", ""), "GET / -> 200 html (playground)",
          f"{s} {h.get('content-type')}")


def t_models(url, client):
    page = client.models.list()
    ids = [m.id for m in page.data]
    check(LLADA_ID in ids and AR_ID in ids and "auto" in ids, "models.list: both ids and auto",
          repr(ids))
    for m in page.data:
        if m.id in ENGINE:
            xu = x_unmask(m)
            check(isinstance(xu, dict) and xu.get("engine") == ENGINE[m.id]
                  and isinstance(xu.get("max_model_len"), int) and "architecture" in xu,
                  f"models.list: {m.id} x_unmask engine/architecture/max_model_len", repr(xu))


def t_completions(url, client):
    for model in (LLADA_ID, AR_ID, "auto"):
        r = complete(client, model, max_tokens=24)
        name = f"completions {model}"
        check(r.object == "text_completion" and len(r.choices) == 1, f"{name}: one choice",
              str(r)[:300])
        c = r.choices[0]
        check(isinstance(c.text, str) and c.text.strip() != "", f"{name}: text non-empty",
              repr(c.text))
        check(c.finish_reason in ("stop", "length"), f"{name}: finish_reason in stop/length",
              repr(c.finish_reason))
        check_usage(name, r.usage, 24)
        xu = x_unmask(r)
        if model == "auto":
            check_x_unmask(name, xu)
            rt = xu.get("router")
            pm = rt.get("predicted_ms") if isinstance(rt, dict) else None
            # a number, or one prediction per model (the choice's among them)
            pm_ok = isinstance(pm, (int, float)) or (
                isinstance(pm, dict) and rt.get("choice") in pm
                and all(isinstance(v, (int, float)) for v in pm.values()))
            check(isinstance(rt, dict) and rt.get("choice") in ENGINE and "reason" in rt and pm_ok,
                  f"{name}: x_unmask.router {{choice, reason, predicted_ms}}", repr(xu))
            check(xu["model"] == rt["choice"] and xu["engine"] == ENGINE[rt["choice"]],
                  f"{name}: router choice is the model that ran", repr(xu))
        else:
            check_x_unmask(name, xu, ENGINE[model], model)
    r = client.completions.create(model=AR_ID, prompt=PROMPT, temperature=0)
    check(r.usage.completion_tokens <= 16, "completions: default max_tokens 16",
          f"completion_tokens {r.usage.completion_tokens}")


def t_token_prompt(url, client):
    s, _, obj, data = raw_json(url, "POST", "/tokenize", {"model": AR_ID, "prompt": PROMPT})
    check(s == 200 and isinstance(obj, dict) and obj.get("tokens"), "tokenize for token prompt",
          f"{s} {data[:200]!r}")
    ids = obj["tokens"]
    for model in (AR_ID, LLADA_ID):
        r = client.completions.create(model=model, prompt=ids, max_tokens=8, temperature=0)
        check(r.choices[0].text.strip() != "" and r.usage.prompt_tokens == len(ids),
              f"completions {model}: prompt as token ids",
              f"prompt_tokens {r.usage.prompt_tokens} vs {len(ids)} ids, text {r.choices[0].text!r}")
    # An empty text prompt generates from BOS alone (llama.cpp, llama2.c): one prompt token.
    r = client.completions.create(model=AR_ID, prompt="", max_tokens=8, temperature=0)
    check(r.usage.prompt_tokens == 1 and r.usage.completion_tokens > 0,
          "completions: empty prompt starts from BOS",
          f"prompt_tokens {r.usage.prompt_tokens}, text {r.choices[0].text!r}")


def t_greedy_determinism(url, client):
    for model in (LLADA_ID, AR_ID):
        a = complete(client, model).choices[0].text
        b = complete(client, model).choices[0].text
        check(a == b, f"greedy determinism {model}", f"{a!r} != {b!r}")


def t_seed(url, client):
    kw = dict(max_tokens=32, temperature=0.8)
    a = complete(client, AR_ID, seed=7, **kw).choices[0].text
    b = complete(client, AR_ID, seed=7, **kw).choices[0].text
    check(a == b, f"seed determinism {AR_ID} (T 0.8, seed 7)", f"{a!r} != {b!r}")
    others = [complete(client, AR_ID, seed=s, **kw).choices[0].text for s in (8, 9)]
    check(any(o != a for o in others), f"different seeds differ {AR_ID}", f"{a!r} vs {others!r}")


def t_n_and_echo(url, client):
    """n choices: seeds seed, seed + 1, ...; choice i equals a single request with seed + i; echo
    puts the prompt before each text; streaming interleaves the choices by index."""
    kw = dict(max_tokens=16, temperature=0.8)
    for model in (AR_ID, LLADA_ID):
        r = complete(client, model, seed=11, n=3, **kw)
        check(len(r.choices) == 3 and [c.index for c in r.choices] == [0, 1, 2],
              f"n=3 ({model}): three choices, indexed", str(r)[:300])
        singles = [complete(client, model, seed=11 + i, **kw).choices[0].text for i in range(3)]
        check([c.text for c in r.choices] == singles,
              f"n=3 ({model}): choice i = the request with seed 11 + i",
              f"{[c.text for c in r.choices]!r} vs {singles!r}")
        check(r.usage.completion_tokens == sum(
            complete(client, model, seed=11 + i, **kw).usage.completion_tokens for i in range(3))
              and r.usage.prompt_tokens == complete(client, model, **kw).usage.prompt_tokens,
              f"n=3 ({model}): usage counts every choice's tokens and the prompt once", str(r.usage))
        stream = client.completions.create(model=model, prompt=PROMPT, seed=11, n=3, stream=True,
                                           **kw)
        texts = ["", "", ""]
        finished = set()
        for ch in stream:
            for c in ch.choices:
                texts[c.index] += c.text or ""
                if c.finish_reason:
                    finished.add(c.index)
        check(texts == singles and finished == {0, 1, 2},
              f"n=3 stream ({model}): each index's text equals its single request",
              f"{texts!r} vs {singles!r}")
    e = complete(client, AR_ID, max_tokens=8, echo=True)
    plain = complete(client, AR_ID, max_tokens=8)
    check(e.choices[0].text == PROMPT + plain.choices[0].text, "echo: the prompt, then the text",
          f"{e.choices[0].text!r}")
    c = client.chat.completions.create(model=AR_ID, max_tokens=8, n=2, temperature=0.8, seed=3,
                                       messages=[{"role": "user", "content": PROMPT}])
    check(len(c.choices) == 2 and all(ch.message.content for ch in c.choices),
          "chat n=2: two messages")


def check_completion_logprobs(r, k, what):
    """One entry per returned token whose texts make the text; every log-probability <= 0 with k
    alternatives, the greedy token the most likely, the alternatives' probabilities summing <= 1."""
    lp = r.choices[0].logprobs
    check(lp is not None and len(lp.tokens) == r.usage.completion_tokens == len(lp.token_logprobs)
          and "".join(lp.tokens) == r.choices[0].text,
          f"{what}: a token per returned token, their texts make the text",
          f"{lp} vs {r.choices[0].text!r}")
    ok = all(v <= 0 for v in lp.token_logprobs) and all(len(t) == k for t in lp.top_logprobs)
    ok = ok and all(abs(max(t.values()) - v) < 1e-6 for t, v in zip(lp.top_logprobs,
                                                                      lp.token_logprobs))
    ok = ok and all(sum(math.exp(x) for x in t.values()) <= 1 + 1e-6 for t in lp.top_logprobs)
    check(ok, f"{what}: logprobs <= 0, {k} alternatives, greedy = the most likely, "
          "probabilities sum <= 1", str(lp)[:400])
    check(all(list(t.values()) == sorted(t.values(), reverse=True) for t in lp.top_logprobs),
          f"{what}: each top_logprobs dict most likely first (as OpenAI orders it)",
          str(lp.top_logprobs)[:400])
    return lp


def t_logprobs(url, client):
    """logprobs: one entry per returned token, the token's log-probability, k alternatives most
    likely first; greedy picks the most likely; chat's format; streaming; diffusion models report
    each committed token's probability at commit time."""
    r = complete(client, AR_ID, max_tokens=12, logprobs=3)
    lp = check_completion_logprobs(r, 3, "completions logprobs")
    check(lp.text_offset[0] == 0 and all(b >= a for a, b in zip(lp.text_offset, lp.text_offset[1:])),
          "text_offset ascending from 0", str(lp.text_offset))
    for model, k in ((AR_ID, 2), (LLADA_ID, 1)):
        c = client.chat.completions.create(model=model, max_tokens=8, temperature=0, logprobs=True,
                                           top_logprobs=k,
                                           messages=[{"role": "user", "content": PROMPT}])
        content = c.choices[0].logprobs.content
        check(len(content) == c.usage.completion_tokens
              and all(len(t.top_logprobs) == k and t.top_logprobs[0].token == t.token
                      for t in content)
              and all(bytes(t.bytes).decode("utf-8", "replace") == t.token for t in content),
              f"{model} chat logprobs: content entries with bytes and {k} alternatives",
              str(content)[:400])
    plain = complete(client, AR_ID, max_tokens=12)
    check(plain.choices[0].logprobs is None, "no logprobs unless asked")
    stream = client.completions.create(model=AR_ID, prompt=PROMPT, max_tokens=12, temperature=0,
                                       logprobs=3, stream=True)
    got = [ch.choices[0].logprobs for ch in stream if ch.choices and ch.choices[0].logprobs]
    check(len(got) == 1 and got[0].token_logprobs == lp.token_logprobs,
          "stream: the logprobs come with the choice's last chunk", str(got)[:300])
    # Diffusion: the committed tokens' probabilities at commit time (greedy: the committed token is
    # the most likely of its row, so it heads its alternatives).
    check_completion_logprobs(complete(client, LLADA_ID, max_tokens=16, temperature=0, logprobs=3,
                                       extra_body={"block_length": 8, "steps": 16}),
                              3, "diffusion logprobs")


# Structured output: each schema uses keywords the compiler supports (nesting, enums, arrays,
# numbers, strings with escapes); string and array bounds keep the tiny model's texts short
# enough to finish within max_tokens.
JSON_CASES = [
    ("A character as JSON:", {
        "type": "object",
        "properties": {"name": {"type": "string", "maxLength": 12},
                       "age": {"type": "integer", "minimum": 0, "maximum": 120},
                       "mood": {"enum": ["happy", "sad", "n/a"]}},
        "required": ["name", "age", "mood"]}),
    ("A list of toys:", {
        "type": "object",
        "properties": {"toys": {"type": "array", "maxItems": 3,
                                "items": {"type": "string", "maxLength": 8}},
                       "count": {"type": "number"}},
        "required": ["toys"]}),
    ("Nested:", {
        "type": "object",
        "properties": {"pet": {"type": "object",
                               "properties": {"kind": {"const": "cat"},
                                              "legs": {"type": "integer", "minimum": 3,
                                                       "maximum": 4},
                                              "quote": {"type": "string", "maxLength": 6}},
                               "required": ["kind", "legs", "quote"]},
                       "ok": {"type": "boolean"},
                       "note": {"anyOf": [{"type": "null"}, {"type": "integer"}]}},
        "required": ["pet", "ok", "note"]}),
]


def t_structured_output(url, client):
    """JSON mode and JSON schemas through grammar-constrained sampling: on every prompt of the set,
    every spelling (OpenAI response_format, llama-server json_schema, vLLM guided_json) and several
    seeds, the text parses and the independent jsonschema validator accepts it; json_object gives
    an object; guided_choice and grammar give one of their strings; a diffusion model refuses."""
    import jsonschema
    for prompt, schema in JSON_CASES:
        spellings = [
            {"response_format": {"type": "json_schema",
                                 "json_schema": {"name": "case", "schema": schema,
                                                 "strict": True}}},
            {"json_schema": schema},
            {"guided_json": schema}]
        for seed, extra in enumerate(spellings):
            r = client.completions.create(model=AR_ID, prompt=prompt, max_tokens=200,
                                          temperature=0.8, seed=seed, extra_body=extra)
            text = r.choices[0].text
            try:
                value = json.loads(text)
                jsonschema.validate(value, schema)
                valid = ""
            except (ValueError, jsonschema.ValidationError) as e:
                valid = str(e)[:200]
            check(not valid and r.choices[0].finish_reason == "stop",
                  f"{list(extra)[0]} seed {seed}: the text is valid for the schema ({prompt!r})",
                  f"{text!r}: {valid} finish {r.choices[0].finish_reason}")
    c = client.chat.completions.create(model=AR_ID, max_tokens=200, temperature=0.7, seed=3,
                                       response_format={"type": "json_object"},
                                       messages=[{"role": "user", "content": "Reply in JSON."}])
    try:
        obj = json.loads(c.choices[0].message.content)
    except ValueError:
        obj = None
    check(isinstance(obj, dict) or c.choices[0].finish_reason == "length",
          "chat json_object: a JSON object (or cut by max_tokens)",
          repr(c.choices[0].message.content)[:300])
    for seed in range(4):
        r = client.completions.create(model=AR_ID, prompt="Colour:", max_tokens=20, seed=seed,
                                      temperature=1.0,
                                      extra_body={"guided_choice": ["red", "green", "blue"]})
        check(r.choices[0].text in ("red", "green", "blue"), f"guided_choice seed {seed}",
              repr(r.choices[0].text))
    r = client.completions.create(model=AR_ID, prompt="Count:", max_tokens=20, temperature=0,
                                  extra_body={"grammar": 'root ::= [1-9] [0-9]? " apples"'})
    check(re.fullmatch(r"[1-9][0-9]? apples", r.choices[0].text) is not None,
          "grammar (GBNF): the text is in the language", repr(r.choices[0].text))
    e = expect_status(lambda: client.completions.create(
        model=LLADA_ID, prompt="x", max_tokens=8,
        extra_body={"response_format": {"type": "json_object"}}), openai.BadRequestError, 400)
    check("constrained" in error_message(e)[0] and error_message(e)[1].get("param") == "response_format",
          "response_format on a diffusion model -> 400 naming it", str(error_message(e)))
    e = expect_status(lambda: client.completions.create(
        model=AR_ID, prompt="x", max_tokens=8,
        extra_body={"guided_json": {"type": "string", "pattern": "^a$"}}),
        openai.BadRequestError, 400)
    check("pattern" in error_message(e)[0], "an unsupported schema keyword -> 400 naming it",
          str(error_message(e)))


def pick_stop(text):
    """A stop string that occurs in text, after its start: ' word' of a word from the middle."""
    words = [m for m in re.finditer(r" [A-Za-z]{3,}", text) if m.start() >= 4]
    if not words:
        return None
    return words[len(words) // 2].group(0)


def t_stop(url, client):
    for model in (AR_ID, LLADA_ID):
        full = complete(client, model, max_tokens=32).choices[0].text
        stop = pick_stop(full)
        check(stop is not None, f"stop {model}: greedy output has a word to stop at", repr(full))
        want = full[:full.find(stop)]
        r = complete(client, model, max_tokens=32, stop=[stop, "\u2603never\u2603"])
        got = r.choices[0].text
        check(got == want, f"stop {model}: text cut before {stop!r}",
              f"got {got!r}, want {want!r} (full {full!r})")
        check(r.choices[0].finish_reason == "stop", f"stop {model}: finish_reason stop",
              repr(r.choices[0].finish_reason))
        check_usage(f"stop {model}", r.usage, 32)
    # a single string too
    full = complete(client, AR_ID, max_tokens=32).choices[0].text
    stop = pick_stop(full)
    r = complete(client, AR_ID, max_tokens=32, stop=stop)
    check(r.choices[0].text == full[:full.find(stop)] and r.choices[0].finish_reason == "stop",
          "stop as a string", f"{r.choices[0].text!r} / {r.choices[0].finish_reason}")
    e = expect_status(lambda: complete(client, AR_ID, stop=["a", "b", "c", "d", "e"]),
                      openai.BadRequestError, 400)
    msg, _ = error_message(e)
    check("stop" in msg, "stop: 5 strings -> 400 naming stop", msg)


def t_chat(url, client):
    for model in (LLADA_ID, AR_ID):
        name = f"chat {model}"
        r = client.chat.completions.create(model=model, max_tokens=24, temperature=0,
                                           messages=[{"role": "user", "content": PROMPT}])
        check(r.object == "chat.completion" and len(r.choices) == 1, f"{name}: one choice",
              str(r)[:300])
        msg = r.choices[0].message
        check(msg.role == "assistant" and isinstance(msg.content, str) and msg.content.strip(),
              f"{name}: assistant message non-empty", repr(msg))
        check(r.choices[0].finish_reason in ("stop", "length"), f"{name}: finish_reason",
              repr(r.choices[0].finish_reason))
        check_usage(name, r.usage, 24)
        check_x_unmask(name, x_unmask(r), ENGINE[model], model)
        # no chat template: one message's content is the prompt, so chat == completion (greedy)
        c = complete(client, model, max_tokens=24).choices[0].text
        check(msg.content == c, f"{name}: one user message == completion of its content",
              f"chat {msg.content!r} vs completion {c!r}")
        r = client.chat.completions.create(model=model, max_completion_tokens=8, temperature=0,
                                           messages=[{"role": "user", "content": PROMPT}])
        check(r.usage.completion_tokens <= 8, f"{name}: max_completion_tokens",
              f"completion_tokens {r.usage.completion_tokens}")
    # several messages: contents joined by a blank line (same tokens as the joined prompt)
    msgs = [{"role": "system", "content": "Tell a story."}, {"role": "user", "content": PROMPT}]
    s1, _, a, d1 = raw_json(url, "POST", "/tokenize", {"model": AR_ID, "messages": msgs})
    s2, _, b, d2 = raw_json(url, "POST", "/tokenize",
                            {"model": AR_ID, "prompt": "Tell a story.\n\n" + PROMPT})
    check(s1 == 200 and s2 == 200 and a["tokens"] == b["tokens"],
          "chat without template: contents joined by a blank line (tokenize)",
          f"{s1} {d1[:300]!r} vs {s2} {d2[:300]!r}")


def collect_stream(stream, chat):
    """Returns (text, content_chunks, usage_chunks, finish_reasons in order, all chunks)."""
    text, content, usage_chunks, finish, chunks = "", [], [], [], []
    for ch in stream:
        chunks.append(ch)
        if not ch.choices:
            usage_chunks.append(ch)
            continue
        c = ch.choices[0]
        piece = (c.delta.content or "") if chat else (c.text or "")
        text += piece
        content.append(ch)
        finish.append(c.finish_reason)
    return text, content, usage_chunks, finish, chunks


def t_streaming(url, client):
    for chat in (False, True):
        for model in (LLADA_ID, AR_ID):
            kind = "chat" if chat else "completions"
            name = f"stream {kind} {model}"
            if chat:
                msgs = [{"role": "user", "content": PROMPT}]
                ref = client.chat.completions.create(model=model, messages=msgs, max_tokens=40,
                                                     temperature=0)
                ref_text = ref.choices[0].message.content
                stream = client.chat.completions.create(
                    model=model, messages=msgs, max_tokens=40, temperature=0, stream=True,
                    stream_options={"include_usage": True})
            else:
                ref = complete(client, model, max_tokens=40)
                ref_text = ref.choices[0].text
                stream = client.completions.create(
                    model=model, prompt=PROMPT, max_tokens=40, temperature=0, stream=True,
                    stream_options={"include_usage": True})
            with stream:
                text, content, usage_chunks, finish, chunks = collect_stream(stream, chat)
            check(text == ref_text, f"{name}: deltas == non-streaming text",
                  f"{text!r} != {ref_text!r}")
            check(len(usage_chunks) == 1 and chunks[-1] is usage_chunks[0],
                  f"{name}: exactly one usage chunk, last, with empty choices",
                  f"{len(usage_chunks)} usage chunks of {len(chunks)}")
            u = usage_chunks[0].usage
            check(u is not None and u.completion_tokens == ref.usage.completion_tokens
                  and u.prompt_tokens == ref.usage.prompt_tokens
                  and u.total_tokens == u.prompt_tokens + u.completion_tokens,
                  f"{name}: usage chunk == non-streaming usage", f"{u} vs {ref.usage}")
            check(isinstance(x_unmask(usage_chunks[0]), dict), f"{name}: usage chunk has x_unmask",
                  str(usage_chunks[0])[:300])
            check(content and finish[-1] in ("stop", "length")
                  and all(f is None for f in finish[:-1]),
                  f"{name}: finish_reason on the last content chunk only", repr(finish))
            check(finish[-1] == ref.choices[0].finish_reason,
                  f"{name}: finish_reason == non-streaming", f"{finish[-1]} vs "
                  f"{ref.choices[0].finish_reason}")
            check(all(c.usage is None for c in content), f"{name}: no usage on content chunks")
    # without include_usage: no usage chunk
    stream = client.completions.create(model=AR_ID, prompt=PROMPT, max_tokens=16, temperature=0,
                                       stream=True)
    with stream:
        _, content, usage_chunks, _, _ = collect_stream(stream, False)
    check(not usage_chunks and content, "stream without include_usage: no usage chunk",
          f"{len(usage_chunks)} usage chunks")
    # the wire format itself
    s, h, data = raw(url, "POST", "/v1/completions",
                     {"model": AR_ID, "prompt": PROMPT, "max_tokens": 8, "stream": True})
    lines = [ln for ln in data.decode().split("\n") if ln and not ln.startswith(":")]
    check(s == 200 and h.get("content-type", "").startswith("text/event-stream")
          and lines and all(ln.startswith("data: ") for ln in lines)
          and lines[-1] == "data: [DONE]" and data.endswith(b"\n\n"),
          "stream wire format: text/event-stream, data: lines, data: [DONE]",
          f"{s} {h.get('content-type')} {data[-200:]!r}")


def t_extensions(url, client):
    exact = {"cache": "none", "commit": "fixed", "steps": 32, "block_length": 32}
    r_exact = complete(client, LLADA_ID, max_tokens=32, extra_body=exact)
    xe = x_unmask(r_exact)
    check(xe["nfe"] == 32, "extensions: exact steps 32 -> nfe 32", repr(xe))
    r = complete(client, LLADA_ID, max_tokens=32, extra_body={"steps": 16})
    check(x_unmask(r)["nfe"] == 16, "extensions: steps 16 -> nfe 16", repr(x_unmask(r)))
    # The twins are rarely 90% sure of a token (`unmask generate -n 32 --block-length 16 --cache
    # dual --threshold 0.9` takes 32 forwards too, 27 at --threshold 0.3): 0.9 must be accepted
    # and take no more forwards than exact, 0.3 must take fewer (with `commit` implied, as in
    # `unmask generate`, and given).
    for body, strict in (({"cache": "dual", "threshold": 0.9, "block_length": 16}, False),
                         ({"cache": "dual", "commit": "threshold", "threshold": 0.3,
                           "block_length": 16}, True),
                         ({"cache": "dual", "threshold": 0.3, "block_length": 16}, True)):
        r = complete(client, LLADA_ID, max_tokens=32, extra_body=body)
        xu = x_unmask(r)
        good = xu["nfe"] < xe["nfe"] if strict else xu["nfe"] <= xe["nfe"]
        check(r.choices[0].text.strip() != "" and good,
              f"extensions: {json.dumps(body)} accepted, nfe {xu['nfe']} "
              f"{'<' if strict else '<='} exact {xe['nfe']}", f"{xu}")
    r = complete(client, LLADA_ID, max_tokens=20, extra_body={"block_length": 8, "steps": 24})
    check(r.usage.completion_tokens <= 20, "extensions: max_tokens 20 with block 8 cut to 20",
          f"completion_tokens {r.usage.completion_tokens}")
    e = expect_status(lambda: complete(client, LLADA_ID, extra_body={"cache": "bogus"}),
                      openai.BadRequestError, 400)
    msg, _ = error_message(e)
    check("cache" in msg, "extensions: cache 'bogus' -> 400 naming cache", msg)
    # x_canvas: canvas chunks in the stream (raw: they are not OpenAI chunks)
    s, h, data = raw(url, "POST", "/v1/completions",
                     {"model": LLADA_ID, "prompt": PROMPT, "max_tokens": 16, "temperature": 0,
                      "stream": True, "x_canvas": True})
    events = [json.loads(ln[6:]) for ln in data.decode().split("\n")
              if ln.startswith("data: ") and ln != "data: [DONE]"]
    canvas = [ev for ev in events if ev.get("object") == "unmask.canvas"]
    ok = (s == 200 and canvas and all(isinstance(c.get("tokens"), list) and len(c["tokens"]) >= 16
                                      and "step" in c and "nfe" in c for c in canvas)
          and None not in canvas[-1]["tokens"])
    check(ok, f"x_canvas: {len(canvas)} canvas chunks, last one fully unmasked",
          f"{s} {data[:400]!r}")


def t_errors(url, client):
    for fn, what in ((lambda: complete(client, "no-such-model"), "completions"),
                     (lambda: client.chat.completions.create(
                         model="no-such-model", messages=[{"role": "user", "content": "hi"}]),
                      "chat")):
        e = expect_status(fn, openai.NotFoundError, 404)
        check(error_message(e)[0] != "", f"unknown model ({what}) -> NotFoundError 404", str(e))
    for field, kw in (("temperature", {"temperature": -1}), ("max_tokens", {"max_tokens": 0}),
                      ("n", {"n": 65}), ("top_p", {"top_p": 2})):
        args = {"max_tokens": 8, "temperature": 0, **kw}
        for model in (AR_ID, LLADA_ID):
            e = expect_status(lambda: client.completions.create(model=model, prompt=PROMPT, **args),
                              openai.BadRequestError, 400)
            msg, err = error_message(e)
            named = re.search(rf"(?<![A-Za-z_]){re.escape(field)}(?![A-Za-z_])", msg) \
                or err.get("param") == field
            check(named, f"{field} {kw[field]} ({model}) -> 400 naming {field}", msg)
    # Too long for the context: OpenAI's 400 context_length_exceeded (the client's BadRequestError).
    def context_error(fn, what):
        e = expect_status(fn, openai.BadRequestError, 400)
        _, err = error_message(e)
        check(err.get("code") == "context_length_exceeded",
              f"{what} -> 400 context_length_exceeded", str(e))
    context_error(lambda: complete(client, AR_ID, max_tokens=100000), "max_tokens 100000")
    context_error(lambda: complete(client, LLADA_ID, max_tokens=100000),
                  "max_tokens 100000 (diffusion)")
    long_prompt = " ".join(["Once upon a time there was a little cat."] * 60)
    context_error(lambda: complete(client, AR_ID, prompt=long_prompt, max_tokens=8),
                  "prompt longer than the context")
    context_error(lambda: client.chat.completions.create(
        model=AR_ID, max_tokens=100000, messages=[{"role": "user", "content": "hi"}]),
        "chat max_tokens 100000")
    for path in ("/v1/completions", "/v1/chat/completions", "/tokenize"):
        for body, what in ((b'{"model": "x", "prompt": ', "truncated JSON"),
                           (b"not json at all", "not JSON"), (b"[1, 2]", "a JSON array"),
                           (b"", "empty body")):
            s, h, data = raw(url, "POST", path, body, {"Content-Type": "application/json"})
            try:
                obj = json.loads(data)
            except ValueError:
                obj = None
            check(s == 400 and is_error_object(obj), f"{what} to {path} -> 400 error object",
                  f"{s} {data[:300]!r}")
    s, h, obj, data = raw_json(url, "POST", "/v1/completions", {"model": AR_ID, "max_tokens": 4})
    check(s == 400 and is_error_object(obj), "completions without prompt -> 400", f"{s} {data[:300]!r}")
    s, h, obj, data = raw_json(url, "POST", "/v1/chat/completions", {"model": AR_ID})
    check(s == 400 and is_error_object(obj), "chat without messages -> 400", f"{s} {data[:300]!r}")
    s, h, obj, data = raw_json(url, "POST", "/v1/completions",
                               {"model": AR_ID, "prompt": PROMPT, "max_tokens": "many"})
    check(s == 400 and is_error_object(obj) and "max_tokens" in obj["error"]["message"],
          "max_tokens of the wrong type -> 400 naming it", f"{s} {data[:300]!r}")
    for method, path in (("GET", "/v1/nope"), ("POST", "/v2/completions"), ("GET", "/nope")):
        s, h, obj, data = raw_json(url, method, path, {} if method == "POST" else None)
        check(s == 404 and is_error_object(obj), f"{method} {path} -> 404 error object",
              f"{s} {data[:300]!r}")
    # steps beyond the tokens run as the reference, but not beyond the context (cost bound)
    s, h, obj, data = raw_json(url, "POST", "/v1/completions",
                               {"model": LLADA_ID, "prompt": PROMPT, "max_tokens": 8,
                                "block_length": 8, "steps": 100000})
    check(s == 400 and is_error_object(obj) and "steps" in obj["error"]["message"],
          "diffusion steps above the context -> 400 naming steps", f"{s} {data[:300]!r}")
    r = complete(client, LLADA_ID, max_tokens=8, extra_body={"block_length": 8, "steps": 16})
    check(r.choices[0].text != "", "diffusion steps 16 for 8 tokens runs")
    # Nothing is silently dropped: an unknown field, a value unmask cannot honour, or a field the
    # model's decoder does not use is a 400 naming it.
    for extra, param, code in (({"frobnicate": 3}, "frobnicate", "unknown_parameter"),
                               ({"max_token": 3}, "max_token", "unknown_parameter"),
                               ({"guided_regex": "a+"}, "guided_regex", "unsupported_parameter"),
                               ({"tools": [{"type": "function", "function": {"name": "f"}}]},
                                "tools", "unsupported_parameter"),  # on completions
                               ({"logit_bias": {"5": 3}}, "logit_bias", "unsupported_parameter")):
        e = expect_status(lambda: complete(client, AR_ID, max_tokens=4, extra_body=extra),
                          openai.BadRequestError, 400)
        _, err = error_message(e)
        check(err.get("param") == param and err.get("code") == code,
              f"{param} -> 400 {code}", str(err))
    e = expect_status(lambda: complete(client, LLADA_ID, max_tokens=8, extra_body={"top_k": 5}),
                      openai.BadRequestError, 400)
    check("top_k" in error_message(e)[0], "top_k on a diffusion model -> 400 naming it",
          error_message(e)[0])
    e = expect_status(lambda: complete(client, AR_ID, max_tokens=8, extra_body={"steps": 8}),
                      openai.BadRequestError, 400)
    check("steps" in error_message(e)[0], "steps on an AR model -> 400 naming it",
          error_message(e)[0])
    # Neutral values change nothing and are accepted everywhere (clients send them by default).
    r = complete(client, LLADA_ID, max_tokens=8, top_p=1, frequency_penalty=0, presence_penalty=0)
    check(r.choices[0].text != "", "top_p 1 and zero penalties on a diffusion model run")
    # llama-server's and vLLM's extensions are honoured.
    plain = complete(client, AR_ID, max_tokens=24)
    pen = complete(client, AR_ID, max_tokens=24, extra_body={"repeat_penalty": 1.5})
    check(pen.choices[0].text != plain.choices[0].text, "repeat_penalty 1.5 changes greedy text")
    vllm = complete(client, AR_ID, max_tokens=24,
                    extra_body={"repetition_penalty": 1.5, "repeat_last_n": 64})
    check(vllm.choices[0].text == pen.choices[0].text,
          "repetition_penalty (vLLM) = repeat_penalty (llama-server) over the same window")
    eos = complete(client, AR_ID, max_tokens=200, extra_body={"ignore_eos": True})
    check(eos.usage.completion_tokens == 200 and eos.choices[0].finish_reason == "length",
          "ignore_eos: all 200 tokens", f"{eos.usage} {eos.choices[0].finish_reason}")
    r = complete(client, AR_ID, max_tokens=4, user="alice", extra_body={"cache_prompt": True})
    check(r.choices[0].text != "", "user and cache_prompt accepted")


def t_tokenize(url, client):
    text = "Lily and Tom were playing with their blocks in the living room."
    for model in (AR_ID, LLADA_ID):
        s, _, a, d = raw_json(url, "POST", "/tokenize",
                              {"model": model, "prompt": text, "add_special": False})
        check(s == 200 and isinstance(a, dict) and isinstance(a.get("tokens"), list)
              and a["count"] == len(a["tokens"]) and isinstance(a.get("max_model_len"), int),
              f"tokenize {model}: tokens, count, max_model_len", f"{s} {d[:300]!r}")
        s, _, b, d = raw_json(url, "POST", "/tokenize", {"model": model, "prompt": text})
        check(s == 200 and b["count"] == a["count"] + 1 and b["tokens"][1:] == a["tokens"],
              f"tokenize {model}: add_special (default true) adds BOS", f"{a} vs {b}")
        s, _, c, d = raw_json(url, "POST", "/detokenize", {"model": model, "tokens": a["tokens"]})
        check(s == 200 and isinstance(c, dict) and c.get("prompt") == text,
              f"detokenize {model}: round trip", f"{s} {d[:300]!r}")
    s, _, obj, d = raw_json(url, "POST", "/tokenize", {"model": "no-such-model", "prompt": "x"})
    check(s == 404 and is_error_object(obj), "tokenize unknown model -> 404", f"{s} {d[:300]!r}")


def t_metrics(url, client):
    s, h, _ = raw(url, "GET", "/metrics")
    check(s == 200 and h.get("content-type", "").startswith("text/plain"),
          "GET /metrics -> 200 text/plain", f"{s} {h.get('content-type')}")
    text0, m0 = metrics(url)
    for name in ("unmask:requests_total", "unmask:time_to_first_token_seconds_bucket",
                 "unmask:num_requests_running"):
        check(name in text0, f"/metrics has {name}")
    complete(client, AR_ID, max_tokens=4)
    complete(client, LLADA_ID, max_tokens=4)
    deadline = time.time() + 3
    while True:
        text1, m1 = metrics(url)
        d_req = msum(m1, "unmask:requests_total") - msum(m0, "unmask:requests_total")
        d_ttft = (msum(m1, "unmask:time_to_first_token_seconds_count")
                  - msum(m0, "unmask:time_to_first_token_seconds_count"))
        d_inf = (msum(m1, "unmask:time_to_first_token_seconds_bucket", le="+Inf")
                 - msum(m0, "unmask:time_to_first_token_seconds_bucket", le="+Inf"))
        if (d_req >= 2 and d_inf >= 2) or time.time() > deadline:
            break
        time.sleep(0.1)
    check(d_req >= 2, "metrics: requests_total +2 after two requests", f"+{d_req}")
    check(d_inf >= 2, "metrics: time_to_first_token_seconds_bucket{le=+Inf} +2", f"+{d_inf}")
    if "unmask:time_to_first_token_seconds_count" in text1:
        check(d_ttft >= 2, "metrics: time_to_first_token_seconds_count +2", f"+{d_ttft}")
    for model in (AR_ID, LLADA_ID):
        check(msum(m1, "unmask:requests_total", model=model) > 0,
              f"metrics: requests_total has model=\"{model}\"")


def wait_idle_and_abort(url, m0, name, wait_s=5.0, aborts=1):
    """Polls /metrics until num_requests_running is 0 for every model and the abort counter rose
    by `aborts`."""
    a0 = msum(m0, "unmask:requests_total", outcome="abort")
    deadline = time.time() + wait_s
    while True:
        _, m = metrics(url)
        running = mvalues(m, "unmask:num_requests_running")
        a1 = msum(m, "unmask:requests_total", outcome="abort")
        idle = running and all(v == 0 for _, v in running)
        if (idle and a1 >= a0 + aborts) or time.time() > deadline:
            break
        time.sleep(0.1)
    check(idle, f"{name}: num_requests_running 0 for all models within {wait_s:.0f} s",
          repr(running))
    check(a1 >= a0 + aborts, f"{name}: requests_total{{outcome=\"abort\"}} +{aborts}",
          f"{a0} -> {a1}; requests_total now: "
          + ", ".join(f"{lab}={v:g}" for lab, v in mvalues(m, "unmask:requests_total")))


def long_diffusion_prompt(url):
    """A prompt that leaves exactly room for 128 generated tokens: the longest exact request."""
    story = ("Lily and Tom were playing with their blocks in the living room. They liked to build "
             "towers and houses and bridges with the colorful blocks. ") * 20
    s, _, obj, d = raw_json(url, "POST", "/tokenize", {"model": LLADA_ID, "prompt": story})
    room = obj["max_model_len"] - 128
    s, _, txt, d = raw_json(url, "POST", "/detokenize",
                            {"model": LLADA_ID, "tokens": obj["tokens"][1:room - 8]})
    return txt["prompt"]


LONG = {"cache": "none", "commit": "fixed", "steps": 128, "block_length": 32}


def t_cancel_stream(url, client):
    prompt = long_diffusion_prompt(url)
    # how long does it take uncancelled?
    t0 = time.time()
    full = complete(client, LLADA_ID, prompt=prompt, max_tokens=128, extra_body=LONG)
    full_s = time.time() - t0
    print(f"info  long exact diffusion request: {full_s:.2f} s, nfe {x_unmask(full)['nfe']}")
    _, m0 = metrics(url)
    stream = client.completions.create(model=LLADA_ID, prompt=prompt, max_tokens=128,
                                       temperature=0, stream=True, extra_body=LONG)
    got = 0
    t0 = time.time()
    for ch in stream:
        if ch.choices and (ch.choices[0].text or ""):
            got += 1
            if got >= 1:
                break
    stream.close()
    print(f"info  closed the stream after {got} chunk(s), {time.time() - t0:.2f} s")
    check(got >= 1, "cancel stream: read a content chunk before closing")
    wait_idle_and_abort(url, m0, "cancel stream")


def t_cancel_timeout(url, client):
    # The server notices a gone client of a non-streaming request when a keep-alive write fails
    # (one space every 200 ms: the second write after the close fails, ~0.4 s). The requests must
    # run well past that: two long requests with classifier-free guidance (twice the forwards),
    # batched or queued together, each take seconds uncancelled on one thread.
    prompt = long_diffusion_prompt(url)
    _, m0 = metrics(url)
    errors = []

    def one():
        t0 = time.time()
        try:
            r = client.with_options(timeout=0.3).completions.create(
                model=LLADA_ID, prompt=prompt, max_tokens=128, temperature=0,
                extra_body={**LONG, "cfg_scale": 1.0})
            errors.append(f"the request finished before the client timeout ({time.time() - t0:.2f}"
                          f" s, {r.usage}); cannot test the server-side abort")
        except openai.APITimeoutError:
            pass
        except Exception as e:
            errors.append(f"{type(e).__name__}: {e}")

    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT_S)
    check(not errors, "cancel by client timeout: two requests, openai.APITimeoutError after 0.3 s",
          "; ".join(errors))
    t0 = time.time()
    wait_idle_and_abort(url, m0, "cancel by client timeout", wait_s=8.0, aborts=2)
    print(f"info  server idle {time.time() - t0:.1f} s after the client timeouts")


def t_infill(url, client):
    """suffix: the diffusion twin fills the span between prompt and suffix exactly as the Python
    reference does (tests/data/golden/twins/llada_story_infill.json); the AR twin, which has no
    fill-in-the-middle tokens, and chat requests get a 400 naming suffix."""
    with open(os.path.join(ROOT, "tests", "data", "golden", "twins", "llada_story_infill.json")) as f:
        g = json.load(f)
    s, _, obj, data = raw_json(url, "POST", "/detokenize", {"model": LLADA_ID,
                                                             "tokens": g["output_ids"]})
    check(s == 200 and isinstance(obj, dict) and "prompt" in obj, "infill: detokenize the golden",
          f"{s} {data[:200]!r}")
    expected = obj["prompt"]
    r = client.completions.create(model=LLADA_ID, prompt=g["prompt"], suffix=g["suffix"],
                                  max_tokens=g["gen_length"], temperature=0,
                                  extra_body={"steps": g["steps"]})
    check(r.choices[0].text == expected, "infill: the twin's middle equals the reference's",
          f"{r.choices[0].text!r} != {expected!r}")
    check(r.usage.prompt_tokens == len(g["prompt_ids"]),
          "infill: prompt_tokens counts the prompt (not the suffix)", str(r.usage))
    # Streamed: the same text.
    text = "".join(c.choices[0].text for c in client.completions.create(
        model=LLADA_ID, prompt=g["prompt"], suffix=g["suffix"], max_tokens=g["gen_length"],
        temperature=0, stream=True, extra_body={"steps": g["steps"]}) if c.choices)
    check(text == expected, "infill: streamed text equals the whole one", f"{text!r}")
    e = expect_status(lambda: client.completions.create(model=AR_ID, prompt=g["prompt"],
                                                        suffix=g["suffix"], max_tokens=4),
                      openai.BadRequestError, 400)
    msg = error_message(e)[0] if e is not None else ""
    check("fill-in-the-middle" in msg, "infill: an AR model without FIM tokens gets a 400", msg)
    s, _, obj, data = raw_json(url, "POST", "/v1/chat/completions", {
        "model": LLADA_ID, "messages": [{"role": "user", "content": "hi"}], "suffix": "x"})
    check(s == 400 and is_error_object(obj) and obj["error"].get("param") == "suffix",
          "infill: suffix on chat is a 400 naming it", f"{s} {data[:200]!r}")
    s, _, obj, data = raw_json(url, "POST", "/v1/completions", {
        "model": LLADA_ID, "prompt": "a", "suffix": 3})
    check(s == 400 and is_error_object(obj) and obj["error"].get("param") == "suffix",
          "infill: a suffix that is not a string is a 400", f"{s} {data[:200]!r}")


TESTS = [t_health_and_root, t_models, t_completions, t_token_prompt, t_greedy_determinism, t_seed,
         t_n_and_echo, t_logprobs, t_structured_output, t_infill,
         t_stop, t_chat, t_streaming, t_extensions, t_errors, t_tokenize, t_metrics,
         t_cancel_stream, t_cancel_timeout]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unmask", default=os.path.join(ROOT, "build", "release", "unmask"))
    ap.add_argument("-k", help="run only the tests whose name contains this")
    args = ap.parse_args()
    tests = [t for t in TESTS if not args.k or args.k in t.__name__]
    return run_tests(args.unmask, ["-m", LLADA, "-m", AR, "-t", "1"], tests)


if __name__ == "__main__":
    sys.exit(main())
