#!/usr/bin/env python3
"""Tool calling through the official `openai` client on a real instruct model, SmolLM2-135M-Instruct
(fetched by scripts/install-deps.sh), served twice: with its own ChatML template (no tool format:
the tools are described in a system message and the reply is a grammar-forced JSON object), and
with --chat-template-file tests/data/chat_templates/qwen2_5_instruct.jinja (the Hermes format:
the template renders the tools and the model writes <tool_call> blocks). Every forced call's
arguments are validated against the tool's schema by the independent jsonschema package.

  .venv/bin/python tests/server/test_tools.py --unmask build/ci/bin/unmask
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import LLADA, LLADA_ID, ROOT  # noqa: E402

import openai  # noqa: E402

from client_util import check, error_message, expect_status, run_tests  # noqa: E402

SMOLLM2 = os.path.join(os.environ.get("UNMASK_CACHE", os.path.expanduser("~/.cache/unmask")),
                       "smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
# The length of the replies that may be text (tool_choice auto).
MAX_TOKENS = 96
QWEN25_TEMPLATE = os.path.join(ROOT, "tests", "data", "chat_templates", "qwen2_5_instruct.jinja")


WEATHER_TOOLS = [
    {"type": "function",
     "function": {"name": "weather",
                  "parameters": {"type": "object",
                                 "properties": {"city": {"type": "string", "maxLength": 12},
                                                "unit": {"enum": ["C", "F"]}},
                                 "required": ["city", "unit"]}}},
    {"type": "function", "function": {"name": "time"}}]
TOOL_SCHEMAS = {"weather": WEATHER_TOOLS[0]["function"]["parameters"],
                "time": {"type": "object", "properties": {}, "additionalProperties": False}}


def check_tool_calls(calls, names, where):
    """Every call names one of `names`, has an id, and its arguments parse and match the tool's
    parameter schema (checked by the independent jsonschema validator)."""
    import jsonschema
    schemas = TOOL_SCHEMAS
    check(calls, f"{where}: at least one tool call", repr(calls))
    for c in calls:
        try:
            args = json.loads(c.function.arguments)
            jsonschema.validate(args, schemas[c.function.name])
            valid = ""
        except (ValueError, KeyError, jsonschema.ValidationError) as e:
            valid = str(e)[:200]
        check(c.function.name in names and c.type == "function" and c.id.startswith("call_")
              and not valid, f"{where}: {c.function.name} with valid arguments",
              f"{c!r} {valid}")


def t_tools(url, client, model="smollm2"):
    """Tool calling: required and named choices give calls whose arguments match the tool's schema
    (validated by jsonschema), finish_reason tool_calls and content null; auto gives either calls
    or text, never the raw JSON; streaming carries the calls in a delta; the reply sent back with
    the tool's result continues the conversation; a diffusion model and a schema the compiler
    cannot take are 400s naming tools."""
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    for seed in range(2):
        r = client.chat.completions.create(model=model, messages=messages, tools=WEATHER_TOOLS,
                                           tool_choice="required", temperature=0.9, seed=seed)
        m = r.choices[0].message
        check(r.choices[0].finish_reason == "tool_calls" and m.content is None,
              f"required seed {seed}: finish_reason tool_calls, content null",
              f"{r.choices[0].finish_reason} {m.content!r}")
        check_tool_calls(m.tool_calls, ("weather", "time"), f"required seed {seed}")
    r = client.chat.completions.create(
        model=model, messages=messages, tools=WEATHER_TOOLS, temperature=0.9, seed=1,
        tool_choice={"type": "function", "function": {"name": "weather"}},
        parallel_tool_calls=False)
    calls = r.choices[0].message.tool_calls
    check_tool_calls(calls, ("weather",), "named weather")
    check(calls is not None and len(calls) == 1, "parallel_tool_calls false: one call",
          repr(calls))
    for seed in range(2):
        r = client.chat.completions.create(model=model, messages=messages, tools=WEATHER_TOOLS,
                                           temperature=0.9, seed=seed, max_tokens=MAX_TOKENS)
        c = r.choices[0]
        if c.finish_reason == "tool_calls":
            check_tool_calls(c.message.tool_calls, ("weather", "time"), f"auto seed {seed}")
        else:
            check(not c.message.tool_calls and isinstance(c.message.content, str)
                  and not c.message.content.lstrip().startswith('{"response"'),
                  f"auto seed {seed}: an answer as text ({c.finish_reason})",
                  repr(c.message.content)[:200])
    stream = client.chat.completions.create(model=model, messages=messages, tools=WEATHER_TOOLS,
                                            tool_choice="required", temperature=0.9, seed=2,
                                            stream=True)
    finish, deltas = [], {}
    for ch in stream:
        if not ch.choices:
            continue
        finish.append(ch.choices[0].finish_reason)
        for d in ch.choices[0].delta.tool_calls or []:
            acc = deltas.setdefault(d.index, {"id": "", "name": "", "arguments": ""})
            acc["id"] += d.id or ""
            acc["name"] += (d.function.name or "") if d.function else ""
            acc["arguments"] += (d.function.arguments or "") if d.function else ""
    check(finish and finish[-1] == "tool_calls", "stream: the last chunk says tool_calls",
          repr(finish))
    streamed = [openai.types.chat.ChatCompletionMessageToolCall(
        id=v["id"], type="function",
        function={"name": v["name"], "arguments": v["arguments"]}) for _, v in sorted(deltas.items())]
    check_tool_calls(streamed, ("weather", "time"), "stream")
    # The call and its result sent back, as an agent loop does (the message object as received).
    r = client.chat.completions.create(model=model, messages=messages, tools=WEATHER_TOOLS,
                                       tool_choice="required", temperature=0)
    call = r.choices[0].message
    follow = messages + [call.model_dump(exclude_none=True),
                         {"role": "tool", "tool_call_id": call.tool_calls[0].id,
                          "content": json.dumps({"temperature": 21.5, "sky": "clear"})}]
    r2 = client.chat.completions.create(model=model, messages=follow, tools=WEATHER_TOOLS,
                                        tool_choice="none", temperature=0, max_tokens=16)
    check(r2.choices[0].message.tool_calls is None and r2.choices[0].message.content,
          "the tool's result sent back: a text reply (tool_choice none)",
          repr(r2.choices[0].message)[:300])
    bad = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]+$"}}}}}]
    e = expect_status(lambda: client.chat.completions.create(
        model=model, messages=messages, tools=bad, tool_choice="required", max_tokens=8),
        openai.BadRequestError, 400)
    check(error_message(e)[1].get("param") == "tools" and "pattern" in error_message(e)[0],
          "a parameter schema the compiler refuses -> 400 naming tools and the keyword",
          str(error_message(e)))
    e = expect_status(lambda: client.chat.completions.create(
        model=model, messages=messages, tools=WEATHER_TOOLS, max_tokens=8,
        tool_choice={"type": "function", "function": {"name": "book_flight"}}),
        openai.BadRequestError, 400)
    check(error_message(e)[1].get("param") == "tool_choice", "a named tool not offered -> 400",
          str(error_message(e)))


def t_diffusion_refuses_forced_calls(url, client):
    """A diffusion model without a tool format would need grammar-constrained unmasking: 400."""
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    e = expect_status(lambda: client.chat.completions.create(
        model=LLADA_ID, messages=messages, tools=WEATHER_TOOLS, max_tokens=8),
        openai.BadRequestError, 400)
    check("tools" in error_message(e)[0], "tools on a diffusion model without a tool format -> 400",
          str(error_message(e)))


def t_hermes(url, client):
    """The Hermes template: the prompt carries the tools (more prompt tokens than without), forced
    calls are <tool_call> blocks parsed into tool_calls; tool_choice none gives plain text."""
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    plain = client.chat.completions.create(model="smollm2", messages=messages, max_tokens=4,
                                           temperature=0)
    with_tools = client.chat.completions.create(model="smollm2", messages=messages, max_tokens=4,
                                                temperature=0, tools=WEATHER_TOOLS,
                                                tool_choice="none")
    check(with_tools.usage.prompt_tokens == plain.usage.prompt_tokens,
          "tool_choice none leaves the tools out of the prompt",
          f"{with_tools.usage.prompt_tokens} vs {plain.usage.prompt_tokens}")
    auto = client.chat.completions.create(model="smollm2", messages=messages, max_tokens=4,
                                          temperature=0, tools=WEATHER_TOOLS)
    check(auto.usage.prompt_tokens > plain.usage.prompt_tokens + 50,
          "the template renders the tools into the prompt",
          f"{auto.usage.prompt_tokens} vs {plain.usage.prompt_tokens}")
    t_tools(url, client, "smollm2")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--unmask", default=os.path.join(ROOT, "build", "release", "unmask"))
    args = ap.parse_args()
    if not os.path.exists(SMOLLM2):
        print(f"SKIP  {SMOLLM2} is missing (scripts/fetch-smollm2.sh fetches it)")
        return 1 if os.environ.get("CI") == "true" else 0
    rc = run_tests(args.unmask, ["-m", SMOLLM2, "--alias", "smollm2", "-m", LLADA, "-t", "1"],
                   [t_tools, t_diffusion_refuses_forced_calls])
    rc |= run_tests(args.unmask, ["-m", SMOLLM2, "--alias", "smollm2", "-t", "1",
                                  "--chat-template-file", QWEN25_TEMPLATE], [t_hermes])
    return rc


if __name__ == "__main__":
    sys.exit(main())
