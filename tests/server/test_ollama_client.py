#!/usr/bin/env python3
"""`unmask serve` through the official `ollama` Python client (Ollama's /api/* endpoints).

Starts `unmask serve` with the LLaDA and AR twins and SmolLM2-135M-Instruct (a chat template) on a
free loopback port and checks: /api/tags, /api/ps, /api/show (details, capabilities, template),
/api/generate and /api/chat whole and streamed (NDJSON) against the OpenAI endpoints' output for
the same request (the same engine must give the same text), the generate-as-chat rule (a model
with a chat template renders the prompt as a user message unless raw), infilling with `suffix`
(the twin's golden), `format` (JSON mode and a schema), tools, options mapped to unmask's, and
Ollama-style errors ({"error": ...} with 400/404). Prints one line per check; exits 1 on failure.

  .venv/bin/python tests/server/test_ollama_client.py --unmask build/release/bin/unmask
"""
import argparse
import datetime
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import AR, AR_ID, LLADA, LLADA_ID, ROOT  # noqa: E402

import ollama  # noqa: E402

from client_util import TIMEOUT_S, check, raw, raw_json, run_tests  # noqa: E402

SMOLLM2 = os.path.join(os.environ.get("UNMASK_CACHE", os.path.expanduser("~/.cache/unmask")),
                       "smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
SMOL_ID = "SmolLM2-135M-Instruct.Q4_1"
PROMPT = "Once upon a time"


def client(url):
    return ollama.Client(host=url, timeout=TIMEOUT_S)


def openai_text(url, chat, body):
    s, _, obj, data = raw_json(url, "POST", "/v1/chat/completions" if chat else "/v1/completions",
                               body)
    check(s == 200, f"OpenAI reference request {body.get('model')}", f"{s} {data[:300]!r}")
    c = obj["choices"][0]
    return (c["message"]["content"] if chat else c["text"]), obj


def t_tags_ps_show(url, _):
    c = client(url)
    tags = c.list()
    names = {m.model: m for m in tags.models}
    for mid, path in ((LLADA_ID, LLADA), (AR_ID, AR), (SMOL_ID, SMOLLM2)):
        m = names.get(mid + ":latest")
        check(m is not None, f"tags: {mid}:latest listed", repr(list(names)))
        check(m.details.format == "gguf" and m.size == os.path.getsize(path)
              and m.details.family and m.details.parameter_size and m.details.quantization_level,
              f"tags: {mid} details and size", repr(m))
    ps = c.ps()
    check({m.model for m in ps.models} == set(names) and all(
        m.size_vram == 0 and m.context_length > 0 for m in ps.models), "ps: loaded models",
        repr(ps))
    show = c.show(LLADA_ID)
    check(show.capabilities == ["completion", "insert"] and show.details.family == "llada"
          and show.modelinfo["general.architecture"] == "llada", "show: the diffusion twin",
          repr(show))
    show = c.show(SMOL_ID + ":latest")
    check("tools" in show.capabilities and "insert" not in show.capabilities
          and "im_start" in (show.template or ""), "show: SmolLM2 (tools, its template)",
          repr(show.capabilities))
    s, _, obj, data = raw_json(url, "GET", "/api/version")
    check(s == 200 and isinstance(obj.get("version"), str), "version", data[:100])


def t_generate_matches_openai(url, _):
    c = client(url)
    for mid in (LLADA_ID, AR_ID):
        want, ref = openai_text(url, False, {"model": mid, "prompt": PROMPT, "max_tokens": 16,
                                             "temperature": 0})
        r = c.generate(model=mid, prompt=PROMPT, options={"num_predict": 16, "temperature": 0})
        check(r.response == want, f"generate {mid}: the OpenAI completion's text",
              f"{r.response!r} != {want!r}")
        check(r.done and r.done_reason == ref["choices"][0]["finish_reason"]
              and r.eval_count == ref["usage"]["completion_tokens"]
              and r.prompt_eval_count == ref["usage"]["prompt_tokens"]
              and r.total_duration > 0 and r.eval_duration >= 0, f"generate {mid}: statistics",
              repr(r))
        datetime.datetime.fromisoformat(r.created_at.replace("Z", "+00:00")[:26] + "+00:00")
        parts = list(c.generate(model=mid, prompt=PROMPT, stream=True,
                                options={"num_predict": 16, "temperature": 0}))
        text = "".join(p.response for p in parts)
        check(text == want and parts[-1].done and not any(p.done for p in parts[:-1])
              and parts[-1].eval_count == r.eval_count, f"generate {mid}: the stream adds up",
              f"{text!r}, {len(parts)} parts")


def t_generate_as_chat_and_raw(url, _):
    c = client(url)
    want, _ = openai_text(url, True, {"model": SMOL_ID, "max_tokens": 8, "temperature": 0,
                                      "messages": [{"role": "system", "content": "Be brief."},
                                                   {"role": "user", "content": "Name a color."}]})
    r = c.generate(model=SMOL_ID, prompt="Name a color.", system="Be brief.",
                   options={"num_predict": 8, "temperature": 0})
    check(r.response == want, "generate with a chat template renders system + user",
          f"{r.response!r} != {want!r}")
    want, _ = openai_text(url, False, {"model": SMOL_ID, "prompt": "The sky is", "max_tokens": 6,
                                       "temperature": 0})
    r = c.generate(model=SMOL_ID, prompt="The sky is", raw=True,
                   options={"num_predict": 6, "temperature": 0})
    check(r.response == want, "generate raw is a plain completion", f"{r.response!r}")


def t_chat_matches_openai(url, _):
    c = client(url)
    messages = [{"role": "user", "content": "What is 2+2?"}]
    want, ref = openai_text(url, True, {"model": SMOL_ID, "messages": messages, "max_tokens": 12,
                                        "temperature": 0})
    r = c.chat(model=SMOL_ID, messages=messages, options={"num_predict": 12, "temperature": 0})
    check(r.message.role == "assistant" and r.message.content == want,
          "chat: the OpenAI chat completion's text", f"{r.message.content!r} != {want!r}")
    check(r.eval_count == ref["usage"]["completion_tokens"], "chat: eval_count", repr(r))
    parts = list(c.chat(model=SMOL_ID, messages=messages, stream=True,
                        options={"num_predict": 12, "temperature": 0}))
    text = "".join(p.message.content or "" for p in parts)
    check(text == want and parts[-1].done, "chat: the stream adds up", f"{text!r}")


def t_infill(url, _):
    with open(os.path.join(ROOT, "tests", "data", "golden", "twins",
                           "llada_story_infill.json")) as f:
        g = json.load(f)
    s, _, obj, _ = raw_json(url, "POST", "/detokenize", {"model": LLADA_ID,
                                                         "tokens": g["output_ids"]})
    r = client(url).generate(model=LLADA_ID, prompt=g["prompt"], suffix=g["suffix"],
                             options={"num_predict": g["gen_length"], "steps": g["steps"],
                                      "temperature": 0})
    check(r.response == obj["prompt"], "suffix: the twin's middle equals the reference's",
          f"{r.response!r} != {obj['prompt']!r}")


def t_format_and_tools(url, _):
    c = client(url)
    schema = {"type": "object", "properties": {"color": {"enum": ["red", "blue"]}},
              "required": ["color"]}
    r = c.generate(model=AR_ID, prompt=PROMPT, format=schema,
                   options={"num_predict": 24, "temperature": 0})
    check(json.loads(r.response).get("color") in ("red", "blue"), "format: a JSON schema",
          repr(r.response))
    r = c.generate(model=AR_ID, prompt=PROMPT, format="json",
                   options={"num_predict": 48, "temperature": 0})
    check(r.response.lstrip().startswith("{"), "format: json", repr(r.response))

    def get_weather(city: str) -> str:
        """The weather of a city.

        Args:
          city: the city
        """
        return "sunny"

    r = c.chat(model=SMOL_ID, messages=[{"role": "user", "content": "Weather in Paris?"}],
               tools=[get_weather], options={"num_predict": 64, "temperature": 0})
    calls = r.message.tool_calls or []
    check(calls and all(t.function.name == "get_weather" and isinstance(t.function.arguments, dict)
                        for t in calls), "tools: calls with arguments as objects", repr(r.message))
    # The call and its result sent back: a tool message answers it.
    history = [{"role": "user", "content": "Weather in Paris?"},
               {"role": "assistant", "content": "", "tool_calls": [
                   {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
               {"role": "tool", "content": "sunny", "tool_name": "get_weather"}]
    r = c.chat(model=SMOL_ID, messages=history, options={"num_predict": 16, "temperature": 0})
    check(r.done and isinstance(r.message.content, str), "tools: history with a result",
          repr(r.message))


def expect_error(fn, status, needle, what):
    try:
        fn()
    except ollama.ResponseError as e:
        check(e.status_code == status and needle in e.error, what, f"{e.status_code} {e.error}")
        return
    check(False, what, "no error")


def t_errors(url, _):
    c = client(url)
    expect_error(lambda: c.generate(model="nope", prompt="x"), 404, "not found", "unknown model")
    expect_error(lambda: c.generate(model=LLADA_ID, prompt="x", options={"temprature": 0.5}),
                 400, "did you mean 'temperature'", "unknown option")
    expect_error(lambda: c.generate(model=LLADA_ID, prompt="x", options={"mirostat": 2}), 400,
                 "mirostat", "mirostat refused")
    expect_error(lambda: c.generate(model=LLADA_ID, prompt="x", images=[b"\x89PNG"]), 400,
                 "images", "images refused")
    expect_error(lambda: c.chat(model=SMOL_ID, messages=[{"role": "user", "content": "x"}],
                                think=True), 400, "think", "think refused")
    expect_error(lambda: c.generate(model=AR_ID, prompt="x", suffix="y"), 400,
                 "fill-in-the-middle", "suffix on an AR model without FIM tokens")
    s, _, obj, data = raw_json(url, "POST", "/api/generate", {"model": LLADA_ID, "prompt": 3})
    check(s == 400 and isinstance(obj, dict) and isinstance(obj.get("error"), str),
          "a prompt that is not a string: {error}", f"{s} {data[:200]!r}")
    # Errors of the translated request name Ollama's fields (they said 'response_format').
    s, _, obj, data = raw_json(url, "POST", "/api/chat", {
        "model": SMOL_ID, "messages": [{"role": "user", "content": "x"}], "format": {"a": 1}})
    check(s == 400 and "'format'" in obj.get("error", "") and "response_format" not in data.decode(),
          "a bad format schema names 'format'", f"{s} {data[:200]!r}")
    # /api/show: a body that is not JSON or not an object, and unknown fields, are 400s saying so;
    # "model" wins over the older "name".
    for body, needle in ((b'{"model":"x"', "JSON object"), (b"[]", "JSON object"),
                         ({"model": AR_ID, "bogus": 1}, "unknown field 'bogus'")):
        s, _, obj, data = raw_json(url, "POST", "/api/show", body)
        check(s == 400 and needle in (obj or {}).get("error", ""), f"show: {body!r} refused",
              f"{s} {data[:200]!r}")
    s, _, obj, data = raw_json(url, "POST", "/api/show", {"model": AR_ID, "name": LLADA_ID})
    check(s == 200 and obj["model_info"]["general.architecture"] != "llada",
          "show: model wins over name", f"{s} {data[:200]!r}")
    # Without "stream", Ollama streams: NDJSON lines.
    s, headers, data = raw(url, "POST", "/api/generate",
                           {"model": AR_ID, "prompt": PROMPT, "options": {"num_predict": 4}})
    lines = [json.loads(x) for x in data.decode().splitlines() if x.strip()]
    ctype = {k.lower(): v for k, v in headers.items()}.get("content-type", "")
    check(s == 200 and "ndjson" in ctype and len(lines) >= 2 and lines[-1]["done"],
          "stream by default (NDJSON)", f"{s} {ctype} {data[:200]!r}")


TESTS = [t_tags_ps_show, t_generate_matches_openai, t_generate_as_chat_and_raw,
         t_chat_matches_openai, t_infill, t_format_and_tools, t_errors]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unmask", default=os.path.join(ROOT, "build", "release", "bin", "unmask"))
    ap.add_argument("-k", help="run only the tests whose name contains this")
    args = ap.parse_args()
    if not os.path.exists(SMOLLM2):
        print(f"SKIPPED: {SMOLLM2} is missing (scripts/fetch-smollm2.sh)")
        return 1 if os.environ.get("CI") == "true" else 0
    tests = [t for t in TESTS if not args.k or args.k in t.__name__]
    return run_tests(args.unmask, ["-m", LLADA, "-m", AR, "-m", SMOLLM2, "-t", "1"], tests)


if __name__ == "__main__":
    sys.exit(main())
