"""The twin models: one llama-family transformer block layout, bidirectional (LLaDA) or causal (Llama).

Layout (LLaDA: NVlabs/Fast-dLLM llada/model/modeling_llada.py; Llama): token embedding, N blocks of
pre-norm RMSNorm -> attention (RoPE, no biases) -> residual, RMSNorm -> SwiGLU FFN
down(silu(gate(x)) * up(x)) -> residual, final RMSNorm, untied output projection.
RoPE is the interleaved-pair ("normal") form, the layout llama.cpp's GGUF files store for both
`llada` and `llama`, so weights export to GGUF without a Q/K permutation.
"""
import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelConfig:
    vocab_size: int = 3072
    dim: int = 256
    layers: int = 6
    heads: int = 8
    ffn: int = 688
    context: int = 256
    rope_base: float = 10000.0
    norm_eps: float = 1e-5
    causal: bool = False  # False: LLaDA (diffusion), True: Llama (autoregressive)
    dropout: float = 0.0  # residual dropout (training only; not part of the exported model)

    def to_dict(self):
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(head_dim, context, base):
    """cos/sin [context, head_dim/2] for theta_i = pos * base^(-2i/head_dim)."""
    inv = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    ang = torch.arange(context, dtype=torch.float64)[:, None] * inv[None, :]
    return torch.cos(ang).float(), torch.sin(ang).float()


def apply_rope(x, cos, sin):
    """x [B, H, T, D]; rotates the interleaved pairs (2i, 2i+1) by the angle of each position."""
    a, b = x[..., 0::2], x[..., 1::2]
    c, s = cos[: x.shape[2]], sin[: x.shape[2]]
    return torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, self.heads = cfg.dim, cfg.heads
        self.attn_norm = RMSNorm(d, cfg.norm_eps)
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, d, bias=False)
        self.wv = nn.Linear(d, d, bias=False)
        self.wo = nn.Linear(d, d, bias=False)
        self.ffn_norm = RMSNorm(d, cfg.norm_eps)
        self.w_gate = nn.Linear(d, cfg.ffn, bias=False)
        self.w_up = nn.Linear(d, cfg.ffn, bias=False)
        self.w_down = nn.Linear(cfg.ffn, d, bias=False)
        self.causal = cfg.causal
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x, cos, sin, causal_mask):
        B, T, D = x.shape
        h = self.attn_norm(x)
        q = self.wq(h).view(B, T, self.heads, -1).transpose(1, 2)
        k = self.wk(h).view(B, T, self.heads, -1).transpose(1, 2)
        v = self.wv(h).view(B, T, self.heads, -1).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        if self.causal:
            scores = scores.masked_fill(causal_mask[:T, :T], float("-inf"))
        att = torch.softmax(scores, dim=-1) @ v
        x = x + self.drop(self.wo(att.transpose(1, 2).reshape(B, T, D)))
        h = self.ffn_norm(x)
        return x + self.drop(self.w_down(F.silu(self.w_gate(h)) * self.w_up(h)))


class TwinModel(nn.Module):
    def __init__(self, cfg: ModelConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_embd = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        cos, sin = rope_tables(cfg.dim // cfg.heads, cfg.context, cfg.rope_base)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        mask = torch.triu(torch.ones(cfg.context, cfg.context, dtype=torch.bool), diagonal=1)
        self.register_buffer("causal_mask", mask, persistent=False)
        self.apply(self._init)
        for b in self.blocks:  # GPT-2-style scaled init of the residual projections
            for w in (b.wo.weight, b.w_down.weight):
                nn.init.normal_(w, std=0.02 / math.sqrt(2 * cfg.layers))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)

    def num_parameters(self):
        return sum(p.numel() for p in self.parameters())

    def forward(self, ids):
        """ids [B, T] -> logits [B, T, vocab]."""
        x = self.tok_embd(ids)
        for b in self.blocks:
            x = b(x, self.cos, self.sin, self.causal_mask)
        return self.output(self.norm(x))
