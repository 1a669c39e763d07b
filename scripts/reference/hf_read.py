#!/usr/bin/env python3
"""Reader of a Hugging Face checkpoint folder (numpy), written from docs MODELS.md sections 1.1-1.5.

Folder: `config.json`, optional `generation_config.json`, and the weights as one
`model.safetensors` or as shards named in `model.safetensors.index.json`
(`{"metadata": {"total_size": N}, "weight_map": {tensor name: shard file}}`; the weight_map is
what counts, total_size is informational). Every shard is parsed by the `safetensors` package
(`safetensors.deserialize`, the parser behind `safetensors.numpy.load`, which checks the header
and that the offsets cover the data buffer exactly); the index must name every tensor of the
shards exactly once, in the shard that holds it.

Dtypes: F32, F16, F64 as numpy reads them; BF16, which numpy lacks, by bit expansion: a bfloat16
is the upper 16 bits of an IEEE float32, so f32 bits = u16 << 16 (exact, NaN/Inf kept).
`load_tensors(..., dtype)` converts every tensor to float64 (the reference) or float32.

Usage as a script: print the config keys and the tensor table of a folder.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import safetensors

SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"

_NUMPY_DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16}


class CheckpointError(ValueError):
    pass


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) -> float32 with the same value (u16 << 16)."""
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


def read_json(folder: str, name: str) -> dict:
    with open(os.path.join(folder, name), encoding="utf-8") as f:
        return json.load(f)


def read_config(folder: str) -> dict:
    return read_json(folder, "config.json")


def read_generation_config(folder: str) -> dict | None:
    path = os.path.join(folder, "generation_config.json")
    return read_json(folder, "generation_config.json") if os.path.exists(path) else None


def shard_map(folder: str) -> dict[str, str]:
    """Tensor name -> file name. A single file maps every tensor it holds to itself."""
    if os.path.exists(os.path.join(folder, INDEX_FILE)):
        index = read_json(folder, INDEX_FILE)
        wm = index.get("weight_map")
        if not isinstance(wm, dict) or not wm:
            raise CheckpointError(f"{folder}/{INDEX_FILE}: no weight_map")
        return dict(wm)
    if not os.path.exists(os.path.join(folder, SINGLE_FILE)):
        raise CheckpointError(f"{folder}: neither {SINGLE_FILE} nor {INDEX_FILE}")
    return {name: SINGLE_FILE for name in read_safetensors(os.path.join(folder, SINGLE_FILE))}


def read_safetensors(path: str) -> dict[str, tuple[str, np.ndarray]]:
    """name -> (safetensors dtype string, array in the stored dtype; BF16 as uint16 bits)."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        entries = safetensors.deserialize(data)
    except Exception as e:  # the parser's own error types differ between versions
        raise CheckpointError(f"{path}: {e}") from e
    out = {}
    for name, view in entries:
        dt = view["dtype"]
        if dt == "BF16":
            arr = np.frombuffer(bytes(view["data"]), dtype="<u2")
        elif dt in _NUMPY_DTYPES:
            le = np.dtype(_NUMPY_DTYPES[dt]).newbyteorder("<")
            arr = np.frombuffer(bytes(view["data"]), dtype=le)
        else:
            raise CheckpointError(f"{path}: tensor {name!r} has unsupported dtype {dt}")
        out[name] = (dt, arr.reshape(view["shape"]))
    return out


def load_raw(folder: str) -> dict[str, tuple[str, np.ndarray, str]]:
    """name -> (dtype string, stored array, file name), checked against the index."""
    wm = shard_map(folder)
    out: dict[str, tuple[str, np.ndarray, str]] = {}
    for fn in sorted(set(wm.values())):
        if os.path.basename(fn) != fn:
            raise CheckpointError(f"{folder}: shard name {fn!r} is not a plain file name")
        for name, (dt, arr) in read_safetensors(os.path.join(folder, fn)).items():
            if name in out:
                raise CheckpointError(f"{folder}: tensor {name!r} in {out[name][2]} and {fn}")
            if wm.get(name) != fn:
                raise CheckpointError(f"{folder}: tensor {name!r} found in {fn}, the index says "
                                      f"{wm.get(name)!r}")
            out[name] = (dt, arr, fn)
    missing = sorted(set(wm) - set(out))
    if missing:
        raise CheckpointError(f"{folder}: the index names tensors no shard holds: {missing[:5]}")
    return out


def to_float(dt: str, arr: np.ndarray, dtype=np.float64) -> np.ndarray:
    f = bf16_bits_to_f32(arr) if dt == "BF16" else arr
    return f.astype(dtype)


def load_tensors(folder: str, dtype=np.float64) -> dict[str, np.ndarray]:
    """Every tensor of the checkpoint, converted to `dtype`."""
    return {name: to_float(dt, arr, dtype) for name, (dt, arr, _) in load_raw(folder).items()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder")
    args = ap.parse_args()
    print(json.dumps(read_config(args.folder), indent=1, sort_keys=True))
    for name, (dt, arr, fn) in sorted(load_raw(args.folder).items()):
        print(f"{name:48s} {dt:5s} {str(list(arr.shape)):14s} {fn}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
