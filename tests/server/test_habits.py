#!/usr/bin/env python3
"""What llama-server and vLLM users expect of `unmask serve`, tried with the official openai client:

- `model: "auto"` routes by capability before cost: a chat request goes to the model with a chat
  template (an instruction-tuned model) even where the base model is cheaper, and the router's
  reason names the model left out and why; a completion may go to either.
- A chat request without max_tokens runs until EOS or the context (AR), a full canvas gets the
  server's --diffusion-max-tokens.
- The model file's recommended sampling (generation_config.json here) is the default of a request
  that sets none, and /v1/models shows it.
- `-c 64` caps every request's context (max_model_len 64, a longer request a 400).
- `--api-key`: the API needs `Authorization: Bearer KEY` (401 invalid_api_key otherwise), /health
  stays open.

Prints one line per check; exits 1 if any check failed.

  .venv/bin/python tests/server/test_habits.py --unmask build/release/unmask
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import AR, AR_ID, LLADA, LLADA_ID, ROOT  # noqa: E402

from client_util import check, raw, raw_json, run_tests, x_unmask  # noqa: E402

QWEN_TINY = os.path.join(ROOT, "tests", "data", "hf", "qwen3-tiny")  # random weights, a template
CHAT_ID = "qwen3-tiny"
KEY = "test-key-123"


def chat_goes_to_the_model_with_a_template(url, client):
    for target in (1, 100000):  # a loose and an impossible latency target: capability first
        r = client.chat.completions.create(
            model="auto", max_tokens=8, temperature=0,
            messages=[{"role": "user", "content": "What is the capital of France?"}],
            extra_body={"latency_target_ms": target})
        xu = x_unmask(r)
        router = xu.get("router", {})
        check(xu["model"] == CHAT_ID, f"chat, auto, target {target} ms -> {CHAT_ID}", repr(xu))
        reason = router.get("reason", "")
        check(LLADA_ID in reason and "no chat template" in reason,
              "the reason names the base model left out and why", reason)


def model_required_with_several(url, client):
    s, _, obj, data = raw_json(url, "POST", "/v1/completions", {"prompt": "Once", "max_tokens": 4})
    check(s == 400 and obj["error"]["param"] == "model" and LLADA_ID in obj["error"]["message"],
          "no 'model' with two loaded: 400 listing them", f"{s} {data[:300]!r}")


def completions_may_go_to_either(url, client):
    r = client.completions.create(model="auto", prompt="Once upon a time", max_tokens=8,
                                  temperature=0)
    reason = x_unmask(r).get("router", {}).get("reason", "")
    check(x_unmask(r)["model"] in (CHAT_ID, LLADA_ID) and "chat template" not in reason,
          "a completion is routed by cost alone", reason)


def chat_without_max_tokens(url, client):
    r = client.chat.completions.create(model=LLADA_ID, temperature=0,
                                       messages=[{"role": "user", "content": "Once upon a time"}])
    check(r.usage.completion_tokens <= 128, "full-canvas chat without max_tokens: at most 128",
          repr(r.usage))
    r = client.chat.completions.create(model=CHAT_ID, temperature=0,
                                       messages=[{"role": "user", "content": "hi"}])
    # The random-weight model rarely emits its EOS: it runs to the end of its context.
    check(r.usage.completion_tokens > 128 or r.choices[0].finish_reason == "stop",
          "AR chat without max_tokens: until EOS or the context, not 128",
          f"{r.usage} {r.choices[0].finish_reason}")


def model_sampling_defaults(url, client):
    s, _, obj, data = raw_json(url, "GET", "/v1/models")
    by_id = {m["id"]: m for m in obj["data"]}
    check(by_id[CHAT_ID]["x_unmask"]["sampling_defaults"] == {"temperature": 0.0, "top_k": 5},
          "/v1/models shows the file's sampling defaults", repr(by_id[CHAT_ID]["x_unmask"]))
    check(by_id[LLADA_ID]["x_unmask"]["sampling_defaults"] == {},
          "a model without any shows {}", repr(by_id[LLADA_ID]["x_unmask"]))
    # do_sample false: greedy unless the request asks otherwise (OpenAI's default would be 1).
    msgs = [{"role": "user", "content": "hello"}]
    a = client.chat.completions.create(model=CHAT_ID, max_tokens=12, messages=msgs)
    b = client.chat.completions.create(model=CHAT_ID, max_tokens=12, messages=msgs)
    g = client.chat.completions.create(model=CHAT_ID, max_tokens=12, messages=msgs, temperature=0)
    check(a.choices[0].message.content == b.choices[0].message.content
          == g.choices[0].message.content, "no temperature in the request: the model's greedy")


def ctx_size_caps_requests(url, client):
    models = client.models.list().data
    ar = [m for m in models if m.id == AR_ID][0]
    check(ar.model_extra["max_model_len"] == 64, "serve -c 64: max_model_len 64",
          repr(ar.model_extra))
    try:
        client.completions.create(model=AR_ID, prompt="Once", max_tokens=100)
        check(False, "max_tokens 100 with -c 64 -> 400")
    except Exception as e:  # openai.BadRequestError
        body = getattr(e, "body", {}) or {}
        check(getattr(e, "status_code", None) == 400
              and body.get("code") == "context_length_exceeded" and "64" in body.get("message", ""),
              "max_tokens 100 with -c 64 -> 400 context_length_exceeded naming 64", repr(body))


def api_key_is_required(url, client):
    r = client.completions.create(model=AR_ID, prompt="Once", max_tokens=4, temperature=0)
    check(r.choices[0].text != "", "the right key (openai client api_key) is let in")
    # llama-server's habit: no model field with one model loaded.
    s, _, data = raw(url, "POST", "/v1/completions", {"prompt": "Once", "max_tokens": 4},
                     {"Authorization": "Bearer " + KEY})
    check(s == 200 and AR_ID.encode() in data, "no 'model' with one model loaded: that model",
          f"{s} {data[:200]!r}")
    body = {"model": AR_ID, "prompt": "Once", "max_tokens": 4}
    for headers, what in (({}, "no key"), ({"Authorization": "Bearer wrong"}, "a wrong key"),
                          ({"Authorization": KEY}, "the key without Bearer")):
        s, h, data = raw(url, "POST", "/v1/completions", body, headers)
        check(s == 401 and b"invalid_api_key" in data, f"{what} -> 401 invalid_api_key",
              f"{s} {data[:200]!r}")
    for path in ("/v1/models", "/metrics"):
        s, _, _ = raw(url, "GET", path)
        check(s == 401, f"GET {path} without a key -> 401", str(s))
    for path in ("/health", "/v1/health", "/"):
        s, _, _ = raw(url, "GET", path)
        check(s == 200, f"GET {path} without a key -> 200", str(s))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unmask", default=os.path.join(ROOT, "build", "release", "unmask"))
    args = ap.parse_args()
    # qwen3-tiny with a generation_config.json that asks for greedy decoding and top-k 5.
    chat_model = tempfile.mkdtemp(prefix="unmask-habits-")
    for name in os.listdir(QWEN_TINY):
        if name != "generation_config.json":
            os.symlink(os.path.join(QWEN_TINY, name), os.path.join(chat_model, name))
    with open(os.path.join(QWEN_TINY, "generation_config.json")) as f:
        gen = json.load(f)
    gen.update({"do_sample": False, "temperature": 0.9, "top_k": 5})
    with open(os.path.join(chat_model, "generation_config.json"), "w") as f:
        json.dump(gen, f)
    try:
        rc = run_tests(args.unmask, ["-m", LLADA, "-m", chat_model, "--alias", LLADA_ID,
                                     "--alias", CHAT_ID, "-t", "1"],
                       [chat_goes_to_the_model_with_a_template, model_required_with_several,
                        completions_may_go_to_either,
                        chat_without_max_tokens, model_sampling_defaults])
    finally:
        shutil.rmtree(chat_model)
    rc |= run_tests(args.unmask, ["-m", AR, "-t", "1", "--api-key", KEY, "-c", "64"],
                    [api_key_is_required, ctx_size_caps_requests], api_key=KEY)
    return rc


if __name__ == "__main__":
    sys.exit(main())
