#!/usr/bin/env python3
"""Renders the chat templates of tests/data/chat_templates/ with Jinja2, configured as Hugging Face
transformers renders chat templates, and writes the results as goldens for the C++ renderer.

transformers' set-up (transformers/utils/chat_template_utils.py, _compile_jinja_template):
ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True), a `tojson` filter that calls
json.dumps(x, ensure_ascii=False, indent=indent, separators=separators, sort_keys=sort_keys), a
global raise_exception(message). Conversations include tools, assistant tool calls (arguments as a
mapping, as transformers and vLLM pass them to templates) and tool results, with floats, nested
schemas and non-ASCII text.

  .venv/bin/python scripts/make_chat_template_goldens.py   # writes tests/data/chat_templates/goldens.json
"""
import argparse
import json
import os
import sys

from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATES = os.path.join(ROOT, "tests", "data", "chat_templates")

TOOLS = [
    {"type": "function",
     "function": {"name": "get_weather", "description": "Current weather in a city (°C or °F)",
                  "parameters": {"type": "object",
                                 "properties": {"city": {"type": "string",
                                                         "description": "e.g. Zürich"},
                                                "unit": {"type": "string",
                                                         "enum": ["celsius", "fahrenheit"]},
                                                "precision": {"type": "number", "minimum": 0.5,
                                                              "default": 1.0}},
                                 "required": ["city"]}}},
    {"type": "function",
     "function": {"name": "get_time", "description": "The time now",
                  "parameters": {"type": "object", "properties": {}}}},
]

CALL = {"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Zürich", "precision": 0.5}}}

CASES = {
    "plain": dict(messages=[{"role": "system", "content": "Be brief."},
                            {"role": "user", "content": "Hi there"},
                            {"role": "assistant", "content": "Hello!"},
                            {"role": "user", "content": "What is 2+2?"}]),
    "tools": dict(messages=[{"role": "user", "content": "Weather in Zürich?"}], tools=TOOLS),
    "tools_system": dict(messages=[{"role": "system", "content": "You are terse."},
                                   {"role": "user", "content": "Weather in Zürich?"}],
                         tools=TOOLS),
    "tool_round_trip": dict(messages=[{"role": "user", "content": "Weather in Zürich?"},
                                      {"role": "assistant", "content": "", "tool_calls": [CALL]},
                                      {"role": "tool", "tool_call_id": "call_1",
                                       "content": "{\"temp\": 21.5, \"sky\": \"clear\"}"},
                                      ], tools=TOOLS),
    "tool_calls_no_tools": dict(messages=[{"role": "user", "content": "Weather?"},
                                          {"role": "assistant", "content": "Checking.",
                                           "tool_calls": [CALL]},
                                          {"role": "tool", "tool_call_id": "call_1",
                                           "content": "sunny"}]),
}


def environment():
    def raise_exception(message):
        raise TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", default=os.path.join(TEMPLATES, "goldens.json"))
    args = ap.parse_args()
    env = environment()
    out = []
    names = sorted(f for f in os.listdir(TEMPLATES) if f.endswith(".jinja"))
    for i, name in enumerate(names):
        with open(os.path.join(TEMPLATES, name), encoding="utf-8") as f:
            source = f.read()
        template = env.from_string(source)
        for case, inputs in CASES.items():
            variables = dict(inputs, add_generation_prompt=True, bos_token="<s>",
                             eos_token="</s>")
            entry = {"template": name, "case": case}
            try:
                entry["text"] = template.render(**variables)
            except TemplateError as e:
                entry["error"] = str(e)
            out.append(entry)
        print(f"[{i + 1}/{len(names)}] {name}: {len(CASES)} cases", file=sys.stderr)
    doc = {"generator": "scripts/make_chat_template_goldens.py",
           "cases": {k: v for k, v in CASES.items()}, "goldens": out}
    with open(args.o, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {args.o}: {len(out)} renderings", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
