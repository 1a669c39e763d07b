#!/usr/bin/env python3
"""Pins a model catalogue (data/catalog.json format) to what the hub holds now: each entry's
revision becomes the commit its branch points to, and its files (the ones `unmask pull` would
fetch: the entry's include patterns, else config, tokenizer and safetensors files) get their size
and, for LFS files, sha256. Run it where the hub is reachable; point $UNMASK_CATALOG at the result
and `unmask pull` refuses anything that differs from the pins.

  scripts/catalog_pin.py [--in data/catalog.json] --out pinned.json [--only NAME ...]

The hub is $HF_ENDPOINT (default https://huggingface.co); $HF_TOKEN is sent when set; the CA
bundle is OpenSSL's default ($SSL_CERT_FILE).
"""
import argparse
import fnmatch
import json
import os
import sys
import urllib.parse
import urllib.request

OTHER_WEIGHTS = (".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".onnx", ".gguf", ".ot",
                 ".tflite")


def model_info(endpoint, repo, revision, token):
    url = (f"{endpoint}/api/models/{repo}/revision/"
           f"{urllib.parse.quote(revision, safe='')}?blobs=true")
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


def selected(entry, siblings):
    names = [s["rfilename"] for s in siblings]
    if entry.get("include"):
        return [n for n in names if any(fnmatch.fnmatch(n, p) for p in entry["include"])]
    return [n for n in names if n != ".gitattributes" and not n.lower().endswith(OTHER_WEIGHTS)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--in", dest="inp", default=os.path.join(os.path.dirname(__file__), "..",
                                                             "data", "catalog.json"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", nargs="*", default=None, help="pin these names only")
    args = ap.parse_args()
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")
    token = os.environ.get("HF_TOKEN", "")
    with open(args.inp) as f:
        catalog = json.load(f)
    for i, entry in enumerate(catalog["models"]):
        if args.only is not None and entry["name"] not in args.only:
            continue
        print(f"[{i + 1}/{len(catalog['models'])}] {entry['name']}: {entry['repo']}",
              file=sys.stderr)
        info = model_info(endpoint, entry["repo"], entry.get("revision", "main"), token)
        by_name = {s["rfilename"]: s for s in info["siblings"]}
        files = []
        for name in selected(entry, info["siblings"]):
            s = by_name[name]
            pin = {"path": name, "size": s.get("lfs", {}).get("size", s.get("size", 0))}
            if "lfs" in s:
                pin["sha256"] = s["lfs"]["sha256"]
            files.append(pin)
        entry["revision"] = info["sha"]
        entry["files"] = files
        entry["size_bytes"] = sum(p["size"] for p in files)
    with open(args.out, "w") as f:
        json.dump(catalog, f, indent=2)
        f.write("\n")
    print(f"catalog_pin: wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
