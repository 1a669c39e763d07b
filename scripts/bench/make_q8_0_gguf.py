#!/usr/bin/env python3
"""Writes a Q8_0 copy of a GGUF model: every Q4_0/Q4_1 tensor dequantized and requantized to Q8_0.

A benchmark input, not a model release: the copy is a requantized Q4_1 model (Q8_0 storage of Q4_1
values), so it measures Q8_0 kernels at the Q8_0 size of the model, not the quality of a Q8_0
conversion from the original weights. Requantization is gguf-py's Q8_0, which reproduces ggml's
quantize_row_q8_0_ref bit for bit (d = max|x| / 127 stored as f16, q = roundf(x / d)). Metadata and
the other tensors (F32 norms, Q8_0 embedding) are copied unchanged; general.file_type becomes
MOSTLY_Q8_0.

  .venv/bin/python scripts/bench/make_q8_0_gguf.py $(scripts/fetch-smollm2.sh) \\
      ~/.cache/unmask/smollm2/SmolLM2-135M-Instruct.Q8_0-requant.gguf
"""
import argparse
import os
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T

REQUANT = {T.Q4_0, T.Q4_1}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0], epilog=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src")
    ap.add_argument("dst")
    args = ap.parse_args()
    reader = gguf.GGUFReader(args.src)
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    tmp = args.dst + ".tmp"
    writer = gguf.GGUFWriter(tmp, arch)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue  # written by GGUFWriter
        val_type = field.types[0]
        sub_type = field.types[-1] if val_type == gguf.GGUFValueType.ARRAY else None
        value = field.contents()
        if field.name == gguf.Keys.General.FILE_TYPE:
            value = int(gguf.LlamaFileType.MOSTLY_Q8_0)
        writer.add_key_value(field.name, value, val_type, sub_type=sub_type)
    tensors = []
    for t in reader.tensors:
        if t.tensor_type in REQUANT:
            f32 = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
            data, qtype = gguf.quants.quantize(f32, T.Q8_0), T.Q8_0
        else:
            data, qtype = t.data, t.tensor_type
        tensors.append((t.name, data, qtype))
        writer.add_tensor_info(t.name, data.shape, data.dtype, data.nbytes, qtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for _, data, _ in tensors:
        writer.write_tensor_data(data)
    writer.close()
    os.replace(tmp, args.dst)
    n = sum(1 for t in reader.tensors if t.tensor_type in REQUANT)
    print(f"{args.dst}: {n} tensors requantized to Q8_0, {len(tensors) - n} copied",
          file=sys.stderr)


if __name__ == "__main__":
    main()
