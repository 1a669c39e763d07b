"""The EAGLE draft layer in PyTorch (Li et al. 2024, arXiv:2401.15077; the layout of
src/model/eagle_head.h): x = fc([embed(t_{j+1}) ; f_j]); a = x + Attn(x) (no input norm, as
EAGLE-1's layer 0); g = a + SwiGLU(RMSNorm(a)); logits = W_out g over the draft vocabulary. RoPE
is the base model's (llama.cpp's "normal" layout: adjacent pairs), attention grouped-query with
the base model's head counts. Used by scripts/train/train_eagle.py (training, export) and by
scripts/reference/eagle_tree.py (the reference of the drafter's tree).
"""
import math

import gguf
import numpy as np
import torch
import torch.nn.functional as F


def rope(x, pos, base):
    """x [B, T, H, hd] rotated over adjacent pairs (2i, 2i+1) by pos [B, T] * base^(-2i/hd)."""
    hd = x.shape[-1]
    inv = base ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    ang = (pos[..., None].double() * inv).float()  # [B, T, hd/2]
    cos, sin = ang.cos()[:, :, None, :], ang.sin()[:, :, None, :]
    x0, x1 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1).flatten(-2)


class EagleLayer(torch.nn.Module):
    def __init__(self, dim, heads, kv_heads, ffn, eps, rope_base, embed, output):
        """embed [vocab, dim] (the base's, frozen), output [n_draft, dim] (the base head's rows of
        the draft vocabulary, frozen)."""
        super().__init__()
        self.dim, self.heads, self.kv_heads, self.ffn = dim, heads, kv_heads, ffn
        self.hd = dim // heads
        self.eps, self.rope_base = eps, rope_base
        self.fc = torch.nn.Linear(2 * dim, dim, bias=False)
        self.wq = torch.nn.Linear(dim, heads * self.hd, bias=False)
        self.wk = torch.nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.wv = torch.nn.Linear(dim, kv_heads * self.hd, bias=False)
        self.wo = torch.nn.Linear(heads * self.hd, dim, bias=False)
        self.ffn_norm = torch.nn.Parameter(torch.ones(dim))
        self.gate = torch.nn.Linear(dim, ffn, bias=False)
        self.up = torch.nn.Linear(dim, ffn, bias=False)
        self.down = torch.nn.Linear(ffn, dim, bias=False)
        self.register_buffer("embed", embed, persistent=False)
        self.register_buffer("output", output, persistent=False)

    def project(self, tokens, features, pos):
        """The layer's input x [B, T, dim] and its RoPE'd q [B, T, H, hd], k and v
        [B, T, H_kv, hd] (before the grouped-query repeat)."""
        B, T, _ = features.shape
        x = self.fc(torch.cat((F.embedding(tokens, self.embed), features), dim=-1))
        q = rope(self.wq(x).view(B, T, self.heads, self.hd), pos, self.rope_base)
        k = rope(self.wk(x).view(B, T, self.kv_heads, self.hd), pos, self.rope_base)
        v = self.wv(x).view(B, T, self.kv_heads, self.hd)
        return x, q, k, v

    def scores(self, q, k):
        """Attention scores [B, H, Tq, Tk] of q [B, Tq, H, hd] against k [B, Tk, H_kv, hd]."""
        k = k.repeat_interleave(self.heads // self.kv_heads, dim=2)
        return torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.hd)

    def mix(self, probs, v):
        """probs [B, H, Tq, Tk] over v [B, Tk, H_kv, hd] -> [B, Tq, dim]."""
        v = v.repeat_interleave(self.heads // self.kv_heads, dim=2)
        B, _, T, _ = probs.shape
        return torch.einsum("bhqk,bkhd->bqhd", probs, v).reshape(B, T, self.dim)

    def finish(self, x, o):
        """The rest of the layer after attention output o [B, T, dim]: g and draft logits."""
        a = x + self.wo(o)
        h = a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True) + self.eps) * self.ffn_norm
        g = a + self.down(F.silu(self.gate(h)) * self.up(h))
        return g, g @ self.output.T

    def forward(self, tokens, features, pos, mask):
        """tokens [B, T] (the token after each feature), features [B, T, dim], pos [B, T],
        mask [B or 1, T, T] bool (True: the query may see the key) -> g [B, T, dim] (guesses of
        the next features) and draft logits [B, T, n_draft]."""
        x, q, k, v = self.project(tokens, features, pos)
        att = self.scores(q, k).masked_fill(~mask[:, None], float("-inf"))
        return self.finish(x, self.mix(att.softmax(-1), v))

    def export(self, path, name, vocab, draft_ids, dtype="f16"):
        """Writes the layer as a GGUF of architecture 'eagle' (src/model/eagle_head.h); matrices
        in f16 or q8_0 (llama.cpp's 8-bit blocks: half the bytes a drafter pass reads)."""
        w = gguf.GGUFWriter(str(path), "eagle")
        w.add_name(name)
        w.add_uint32("eagle.embedding_length", self.dim)
        w.add_uint32("eagle.vocab_size", vocab)
        w.add_uint32("eagle.feed_forward_length", self.ffn)
        w.add_uint32("eagle.attention.head_count", self.heads)
        w.add_uint32("eagle.attention.head_count_kv", self.kv_heads)
        if draft_ids is not None:
            w.add_array("eagle.draft_vocab", [int(i) for i in draft_ids])

        def f16(t):
            a = t.detach().numpy().astype(np.float32)
            if dtype == "q8_0" and a.shape[-1] % 32 == 0:
                q = gguf.quants.quantize(a, gguf.GGMLQuantizationType.Q8_0)
                return (q, gguf.GGMLQuantizationType.Q8_0)
            return (a.astype(np.float16), None)

        def add(key, t):
            data, raw = f16(t)
            if raw is None:
                w.add_tensor(key, data)
            else:
                w.add_tensor(key, data, raw_dtype=raw)
        add("eagle.fc.weight", self.fc.weight)
        add("eagle.attn_q.weight", self.wq.weight)
        add("eagle.attn_k.weight", self.wk.weight)
        add("eagle.attn_v.weight", self.wv.weight)
        add("eagle.attn_output.weight", self.wo.weight)
        w.add_tensor("eagle.ffn_norm.weight", self.ffn_norm.detach().numpy().astype(np.float32))
        add("eagle.ffn_gate.weight", self.gate.weight)
        add("eagle.ffn_up.weight", self.up.weight)
        add("eagle.ffn_down.weight", self.down.weight)
        add("eagle.output.weight", self.output)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()


def load_eagle(path, base):
    """An exported draft layer (its tensors dequantized to float32) for `base` (llama_gguf.LlamaGguf: its
    embedding, RMSNorm epsilon and RoPE base). Returns (layer, draft ids or None)."""
    reader = gguf.GGUFReader(str(path))

    def val(key):
        f = reader.fields[key]
        return f.parts[f.data[0]][0].item()
    t = {x.name: torch.from_numpy(
        gguf.quants.dequantize(x.data, x.tensor_type).astype(np.float32).reshape(
            [int(d) for d in reversed(x.shape)]))
        for x in reader.tensors}
    dim, heads = val("eagle.embedding_length"), val("eagle.attention.head_count")
    draft = None
    if "eagle.draft_vocab" in reader.fields:
        f = reader.fields["eagle.draft_vocab"]
        draft = [int(f.parts[i][0]) for i in f.data]
    layer = EagleLayer(dim, heads, val("eagle.attention.head_count_kv"),
                       val("eagle.feed_forward_length"), base.eps, base.rope_base,
                       base.w["token_embd.weight"], t["eagle.output.weight"])
    with torch.no_grad():
        layer.fc.weight.copy_(t["eagle.fc.weight"])
        layer.wq.weight.copy_(t["eagle.attn_q.weight"])
        layer.wk.weight.copy_(t["eagle.attn_k.weight"])
        layer.wv.weight.copy_(t["eagle.attn_v.weight"])
        layer.wo.weight.copy_(t["eagle.attn_output.weight"])
        layer.ffn_norm.copy_(t["eagle.ffn_norm.weight"])
        layer.gate.weight.copy_(t["eagle.ffn_gate.weight"])
        layer.up.weight.copy_(t["eagle.ffn_up.weight"])
        layer.down.weight.copy_(t["eagle.ffn_down.weight"])
    return layer, draft
