#!/usr/bin/env python3
"""Minimal GGUF v2/v3 reader (numpy), written from the GGUF format description.

This is the *reference* reader of unmask's Python tooling. It deliberately does not
use gguf-py (llama.cpp's package), so that files written by gguf-py are read back by
an independent implementation.

File layout (all little-endian):
  magic "GGUF" | u32 version (2 or 3) | u64 n_tensors | u64 n_kv
  n_kv x  { string key | u32 value_type | value }
  n_tensors x { string name | u32 n_dims | u64 dims[n_dims] | u32 ggml_type | u64 offset }
  padding to `general.alignment` (default 32) | tensor data (offsets relative to here)
  string = u64 length + UTF-8 bytes; array value = u32 elem_type + u64 count + elements.

Dimensions are stored innermost-first (ne[0] is the contiguous one), so a tensor with GGUF
dims {n_in, n_out} is a row-major numpy array of shape [n_out, n_in]; `tensor()` returns
that reversed shape. Supported tensor types: F32, F16, BF16, Q8_0 (dequantized to float64).

Usage as a script: print the metadata and the tensor table of a file.
"""
from __future__ import annotations

import argparse
import mmap
import struct
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

GGUF_MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32

# Metadata value types.
T_UINT8, T_INT8, T_UINT16, T_INT16, T_UINT32, T_INT32, T_FLOAT32, T_BOOL = range(8)
T_STRING, T_ARRAY, T_UINT64, T_INT64, T_FLOAT64 = 8, 9, 10, 11, 12

VALUE_TYPE_NAMES = {
    T_UINT8: "u8", T_INT8: "i8", T_UINT16: "u16", T_INT16: "i16", T_UINT32: "u32",
    T_INT32: "i32", T_FLOAT32: "f32", T_BOOL: "bool", T_STRING: "str", T_ARRAY: "array",
    T_UINT64: "u64", T_INT64: "i64", T_FLOAT64: "f64",
}

# Fixed-size scalar metadata types -> numpy dtype (little-endian).
_SCALAR_DTYPES = {
    T_UINT8: np.dtype("<u1"), T_INT8: np.dtype("<i1"), T_UINT16: np.dtype("<u2"),
    T_INT16: np.dtype("<i2"), T_UINT32: np.dtype("<u4"), T_INT32: np.dtype("<i4"),
    T_FLOAT32: np.dtype("<f4"), T_BOOL: np.dtype("<u1"), T_UINT64: np.dtype("<u8"),
    T_INT64: np.dtype("<i8"), T_FLOAT64: np.dtype("<f8"),
}

# ggml tensor types handled here: id -> (name, block size in elements, bytes per block).
GGML_F32, GGML_F16, GGML_Q8_0, GGML_BF16 = 0, 1, 8, 30
GGML_TYPES = {
    GGML_F32: ("F32", 1, 4),
    GGML_F16: ("F16", 1, 2),
    GGML_Q8_0: ("Q8_0", 32, 34),  # f16 scale d, then 32 x int8 q; value = d * q
    GGML_BF16: ("BF16", 1, 2),    # upper 16 bits of an IEEE float32
}


class GGUFError(ValueError):
    """Raised for malformed or unsupported GGUF content."""


@dataclass
class TensorInfo:
    name: str
    dims: tuple[int, ...]   # GGUF order, innermost first
    ggml_type: int
    offset: int             # relative to the start of the data section

    @property
    def shape(self) -> tuple[int, ...]:
        """Row-major (numpy) shape: the GGUF dims reversed."""
        return tuple(reversed(self.dims))

    @property
    def n_elements(self) -> int:
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def type_name(self) -> str:
        return GGML_TYPES.get(self.ggml_type, (f"type{self.ggml_type}",))[0]

    def n_bytes(self) -> int:
        if self.ggml_type not in GGML_TYPES:
            raise GGUFError(f"tensor {self.name!r}: unsupported ggml type {self.ggml_type}")
        _, block, size = GGML_TYPES[self.ggml_type]
        if self.dims and self.dims[0] % block != 0:
            raise GGUFError(f"tensor {self.name!r}: row of {self.dims[0]} elements is not a "
                            f"multiple of the {self.type_name} block size {block}")
        return self.n_elements // block * size


class _Cursor:
    def __init__(self, buf: memoryview | bytes, path: str):
        self.buf = buf
        self.pos = 0
        self.path = path

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.buf):
            raise GGUFError(f"{self.path}: truncated at byte {self.pos} (need {n} more bytes)")
        out = memoryview(self.buf)[self.pos:self.pos + n]
        self.pos += n
        return out

    def u32(self) -> int:
        return struct.unpack("<I", self.take(4))[0]

    def u64(self) -> int:
        return struct.unpack("<Q", self.take(8))[0]

    def string(self) -> str:
        n = self.u64()
        raw = bytes(self.take(n))
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise GGUFError(f"{self.path}: invalid UTF-8 string at byte {self.pos - n}") from e

    def value(self, vtype: int, depth: int = 0) -> Any:
        if vtype in _SCALAR_DTYPES:
            dt = _SCALAR_DTYPES[vtype]
            v = np.frombuffer(self.take(dt.itemsize), dtype=dt)[0]
            if vtype == T_BOOL:
                if int(v) not in (0, 1):
                    raise GGUFError(f"{self.path}: bool value {int(v)} at byte {self.pos - 1}")
                return bool(v)
            return float(v) if vtype in (T_FLOAT32, T_FLOAT64) else int(v)
        if vtype == T_STRING:
            return self.string()
        if vtype == T_ARRAY:
            if depth > 16:
                raise GGUFError(f"{self.path}: arrays nested too deeply")
            etype = self.u32()
            count = self.u64()
            if etype in _SCALAR_DTYPES:
                dt = _SCALAR_DTYPES[etype]
                arr = np.frombuffer(self.take(count * dt.itemsize), dtype=dt)
                if etype == T_BOOL:
                    return [bool(x) for x in arr]
                return arr.astype(np.float64).tolist() if etype in (T_FLOAT32, T_FLOAT64) \
                    else [int(x) for x in arr]
            if etype in (T_STRING, T_ARRAY):
                return [self.value(etype, depth + 1) for _ in range(count)]
            raise GGUFError(f"{self.path}: unknown array element type {etype}")
        raise GGUFError(f"{self.path}: unknown metadata value type {vtype}")


class GGUFFile:
    """A parsed GGUF file.

    Attributes: version, metadata (key -> python value; arrays are lists, nested arrays are
    lists of lists), value_types (key -> type name, e.g. "u32" or "array[str]"),
    tensors (name -> TensorInfo, in file order), alignment, data_offset.
    """

    def __init__(self, path: str):
        self.path = str(path)
        with open(self.path, "rb") as f:
            try:
                self._buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError:  # empty file
                self._buf = b""
        cur = _Cursor(self._buf, self.path)
        magic = bytes(cur.take(4))
        if magic != GGUF_MAGIC:
            raise GGUFError(f"{self.path}: bad magic {magic!r}, expected b'GGUF'")
        self.version = cur.u32()
        if self.version not in (2, 3):
            hint = " (big-endian file?)" if self.version > 0xFFFF else ""
            raise GGUFError(f"{self.path}: unsupported GGUF version {self.version}{hint}")
        n_tensors = cur.u64()
        n_kv = cur.u64()
        self.metadata: dict[str, Any] = {}
        self.value_types: dict[str, str] = {}
        for _ in range(n_kv):
            key = cur.string()
            vtype = cur.u32()
            type_name = VALUE_TYPE_NAMES.get(vtype, str(vtype))
            if vtype == T_ARRAY:
                etype = struct.unpack("<I", bytes(cur.buf[cur.pos:cur.pos + 4]))[0]
                type_name = f"array[{VALUE_TYPE_NAMES.get(etype, str(etype))}]"
            if key in self.metadata:
                raise GGUFError(f"{self.path}: duplicate metadata key {key!r}")
            self.metadata[key] = cur.value(vtype)
            self.value_types[key] = type_name
        self.tensors: dict[str, TensorInfo] = {}
        for _ in range(n_tensors):
            name = cur.string()
            n_dims = cur.u32()
            if n_dims > 4:
                raise GGUFError(f"{self.path}: tensor {name!r} has {n_dims} dims (max 4)")
            dims = tuple(cur.u64() for _ in range(n_dims))
            ggml_type = cur.u32()
            offset = cur.u64()
            if name in self.tensors:
                raise GGUFError(f"{self.path}: duplicate tensor {name!r}")
            self.tensors[name] = TensorInfo(name, dims, ggml_type, offset)
        self.alignment = int(self.metadata.get("general.alignment", DEFAULT_ALIGNMENT))
        if self.alignment <= 0 or self.alignment % 8 != 0:
            raise GGUFError(f"{self.path}: bad general.alignment {self.alignment}")
        self.data_offset = (cur.pos + self.alignment - 1) // self.alignment * self.alignment
        for ti in self.tensors.values():
            if ti.offset % self.alignment != 0:
                raise GGUFError(f"{self.path}: tensor {ti.name!r} offset {ti.offset} "
                                f"is not aligned to {self.alignment}")
            end = self.data_offset + ti.offset + ti.n_bytes()
            if end > len(self._buf):
                raise GGUFError(f"{self.path}: tensor {ti.name!r} data ends at byte {end}, "
                                f"past the end of the file ({len(self._buf)} bytes)")

    def get(self, key: str, default: Any = None) -> Any:
        return self.metadata.get(key, default)

    def require(self, key: str) -> Any:
        if key not in self.metadata:
            raise GGUFError(f"{self.path}: missing metadata key {key!r}")
        return self.metadata[key]

    def raw_bytes(self, name: str) -> bytes:
        ti = self._info(name)
        start = self.data_offset + ti.offset
        return bytes(self._buf[start:start + ti.n_bytes()])

    def _info(self, name: str) -> TensorInfo:
        if name not in self.tensors:
            raise GGUFError(f"{self.path}: no tensor named {name!r}")
        return self.tensors[name]

    def tensor(self, name: str) -> np.ndarray:
        """Dequantized tensor as float64, row-major shape (GGUF dims reversed)."""
        ti = self._info(name)
        start = self.data_offset + ti.offset
        raw = np.frombuffer(self._buf, dtype=np.uint8, count=ti.n_bytes(), offset=start)
        if ti.ggml_type == GGML_F32:
            out = raw.view("<f4").astype(np.float64)
        elif ti.ggml_type == GGML_F16:
            out = raw.view("<f2").astype(np.float64)
        elif ti.ggml_type == GGML_BF16:
            out = (raw.view("<u2").astype(np.uint32) << np.uint32(16)).view("<f4").astype(np.float64)
        elif ti.ggml_type == GGML_Q8_0:
            blocks = raw.reshape(-1, 34)
            d = blocks[:, :2].copy().view("<f2").astype(np.float64)        # [n_blocks, 1]
            q = blocks[:, 2:].copy().view(np.int8).astype(np.float64)      # [n_blocks, 32]
            out = (d * q).reshape(-1)
        else:
            raise GGUFError(f"{self.path}: tensor {name!r} has unsupported type {ti.type_name}")
        return out.reshape(ti.shape)

    def close(self) -> None:
        if isinstance(self._buf, mmap.mmap):
            self._buf.close()


def _short(v: Any) -> str:
    if isinstance(v, list):
        head = ", ".join(repr(x) for x in v[:6])
        return f"[{head}{', ...' if len(v) > 6 else ''}] (len {len(v)})"
    s = repr(v)
    return s if len(s) < 120 else s[:117] + "..."


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", help="GGUF file")
    args = ap.parse_args()
    g = GGUFFile(args.file)
    print(f"GGUF v{g.version}, {len(g.metadata)} keys, {len(g.tensors)} tensors, "
          f"alignment {g.alignment}, data at {g.data_offset}")
    for k, v in g.metadata.items():
        print(f"  {k} ({g.value_types[k]}) = {_short(v)}")
    for ti in g.tensors.values():
        print(f"  {ti.name:32s} {ti.type_name:5s} dims {list(ti.dims)} -> shape {list(ti.shape)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
