#!/usr/bin/env python3
"""unmask's counter-based random numbers: Philox4x32-10 (Salmon et al., SC'11; Random123).

Bit-exact specification shared with the C++ engine:

* Philox4x32-10 on a 128-bit counter (c0, c1, c2, c3) and a 64-bit key (k0, k1), all 32-bit words.
  One round: (hi0, lo0) = mulhilo(M0, c0); (hi1, lo1) = mulhilo(M1, c2);
  c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0), with M0 = 0xD2511F53, M1 = 0xCD9E8D57.
  Ten rounds; before every round except the first the key is bumped:
  k0 += 0x9E3779B9, k1 += 0xBB67AE85 (mod 2^32).
* uniform(seed, stream, step, position, index):
  counter = (index, position, step, stream), key = (seed & 0xffffffff, seed >> 32);
  with output words w0, w1: u = ((w0 >> 5) * 2^26 + (w1 >> 6)) * 2^-53, a double in [0, 1)
  (53 random bits; u == 0 is possible).
* Streams: GUMBEL = 1 (index = vocabulary id), REMASK_RANDOM = 2 (index = 0); Dream
  (dream_generate.py): DREAM_ORIGIN = 6, DREAM_ALG_TEMP = 7 (index = 0).

The numpy version is vectorized over any broadcastable counter arrays (uint64 holding 32-bit
values; products of two 32-bit numbers fit in 64 bits). A slow pure-Python version is kept for
cross-checking.

Usage as a script: print Philox outputs for a counter/key, or uniforms.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

M0 = 0xD2511F53
M1 = 0xCD9E8D57
W0 = 0x9E3779B9
W1 = 0xBB67AE85
MASK32 = 0xFFFFFFFF

STREAM_GUMBEL = 1
STREAM_REMASK_RANDOM = 2

_U64 = np.uint64
_M0, _M1, _W0, _W1, _MASK = _U64(M0), _U64(M1), _U64(W0), _U64(W1), _U64(MASK32)
_S32 = _U64(32)


def philox4x32_10_scalar(ctr: tuple[int, int, int, int], key: tuple[int, int]) -> tuple[int, ...]:
    """Pure-Python Philox4x32-10 of one counter; returns the four 32-bit output words."""
    c0, c1, c2, c3 = (x & MASK32 for x in ctr)
    k0, k1 = (x & MASK32 for x in key)
    for r in range(10):
        if r > 0:
            k0 = (k0 + W0) & MASK32
            k1 = (k1 + W1) & MASK32
        p0 = M0 * c0
        p1 = M1 * c2
        hi0, lo0 = p0 >> 32, p0 & MASK32
        hi1, lo1 = p1 >> 32, p1 & MASK32
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return c0, c1, c2, c3


def philox4x32_10(c0, c1, c2, c3, k0, k1):
    """Vectorized Philox4x32-10. Inputs: integers or arrays (broadcast together) of 32-bit
    values. Returns four uint64 arrays holding the 32-bit output words."""
    c0, c1, c2, c3, k0, k1 = np.broadcast_arrays(
        *(np.asarray(x, dtype=np.uint64) & _MASK for x in (c0, c1, c2, c3, k0, k1)))
    for r in range(10):
        if r > 0:
            k0 = (k0 + _W0) & _MASK
            k1 = (k1 + _W1) & _MASK
        p0 = _M0 * c0
        p1 = _M1 * c2
        c0, c1, c2, c3 = (p1 >> _S32) ^ c1 ^ k0, p1 & _MASK, (p0 >> _S32) ^ c3 ^ k1, p0 & _MASK
    return c0, c1, c2, c3


def _key(seed: int) -> tuple[int, int]:
    seed = int(seed)
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed {seed} is not a 64-bit unsigned integer")
    return seed & MASK32, seed >> 32


def uniform(seed: int, stream: int, step, position, index) -> np.ndarray:
    """Uniform doubles in [0, 1) for counter (index, position, step, stream) under key seed.
    step/position/index may be arrays; they broadcast together."""
    k0, k1 = _key(seed)
    w0, w1, _, _ = philox4x32_10(index, position, step, stream, k0, k1)
    bits = (w0 >> _U64(5)) * _U64(1 << 26) + (w1 >> _U64(6))   # < 2^53: exact in a double
    return bits.astype(np.float64) * 2.0**-53


def uniform_scalar(seed: int, stream: int, step: int, position: int, index: int) -> float:
    """Pure-Python version of `uniform` for one draw."""
    k0, k1 = _key(seed)
    w0, w1, _, _ = philox4x32_10_scalar((index, position, step, stream), (k0, k1))
    return ((w0 >> 5) * (1 << 26) + (w1 >> 6)) * 2.0**-53


def main() -> int:
    ap = argparse.ArgumentParser(description="Philox4x32-10 and unmask uniforms.")
    ap.add_argument("--ctr", default="0,0,0,0", help="four 32-bit hex words (default 0,0,0,0)")
    ap.add_argument("--key", default="0,0", help="two 32-bit hex words (default 0,0)")
    ap.add_argument("--uniform", metavar="SEED,STREAM,STEP,POS,INDEX",
                    help="print uniform(seed, stream, step, position, index) instead")
    args = ap.parse_args()
    if args.uniform:
        s, st, stp, pos, idx = (int(x, 0) for x in args.uniform.split(","))
        print(repr(float(uniform(s, st, stp, pos, idx))))
        return 0
    ctr = tuple(int(x, 16) for x in args.ctr.split(","))
    key = tuple(int(x, 16) for x in args.key.split(","))
    print(" ".join(f"{w:08x}" for w in philox4x32_10_scalar(ctr, key)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
