"""The block-diffusion twin: SDAR's Qwen3 layout at the twins' size, block-causal attention.

Layout (JetAstra/SDAR training/model/SDAR-*/modeling_sdar.py = transformers' modeling_qwen3.py;
docs MODELS.md section 4): token embedding, N blocks of pre-norm RMSNorm -> attention -> residual,
RMSNorm -> SwiGLU FFN down(silu(gate(x)) * up(x)) -> residual, final RMSNorm, untied output
projection (as the twins). Attention: q/k/v/o without biases; q and k get a per-head RMSNorm over
head_dim (q_norm, k_norm, weights [head_dim] shared by the heads) BEFORE RoPE; RoPE is the
rotate-half (NEOX, HF) form: pairs (j, j + head_dim/2) rotated by pos * base^(-2j/head_dim).

Attention masks are boolean [T_q, T_k] matrices (True: may attend), built by the helpers below:
  block_causal_mask(L, B): query at p sees key at s iff s // B <= p // B (blocks aligned to 0);
  bd3lm_training_mask(L, B): the [x_t ; x_0] training mask of BD3-LM (kuleshov-group/bd3lms
    models/dit.py block_diff_mask; docs ALGORITHMS.md 5.1) over 2L positions: x_t -> x_t same block
    only, x_t -> x_0 strictly earlier blocks, x_0 -> x_0 block-causal, x_0 -> x_t never.
"""
import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from model import RMSNorm  # the twins' RMSNorm (scripts/train/model.py)


@dataclass
class BlockConfig:
    vocab_size: int = 3072
    dim: int = 192
    layers: int = 4
    heads: int = 6
    head_dim: int = 32
    ffn: int = 512
    context: int = 256
    block_length: int = 4
    rope_base: float = 10000.0
    norm_eps: float = 1e-5
    dropout: float = 0.0  # residual dropout (training only)

    def to_dict(self):
        return asdict(self)


def block_causal_mask(length, block):
    b = torch.arange(length) // block
    return b[None, :] <= b[:, None]


def bd3lm_training_mask(length, block):
    """[2L, 2L] bool over [x_t ; x_0] (queries rows, keys columns)."""
    b = torch.arange(length) // block
    same = b[:, None] == b[None, :]
    earlier = b[None, :] < b[:, None]
    causal = b[None, :] <= b[:, None]
    top = torch.cat([same, earlier], 1)                                  # x_t queries
    bottom = torch.cat([torch.zeros_like(same), causal], 1)              # x_0 queries
    return torch.cat([top, bottom], 0)


def rope_tables(head_dim, context, base):
    """cos/sin [context, head_dim] (each half repeated) for theta_j = pos * base^(-2j/head_dim)."""
    inv = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
    ang = torch.arange(context, dtype=torch.float64)[:, None] * inv[None, :]
    ang = torch.cat([ang, ang], -1)
    return torch.cos(ang).float(), torch.sin(ang).float()


def apply_rope(x, cos, sin):
    """x [B, H, T, D], cos/sin [T, D]: x * cos + rotate_half(x) * sin, rotate_half = [-x2, x1]."""
    h = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., h:], x[..., :h]], -1) * sin


class Layer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d, self.heads, self.hd = cfg.dim, cfg.heads, cfg.head_dim
        qd = cfg.heads * cfg.head_dim
        self.attn_norm = RMSNorm(d, cfg.norm_eps)
        self.wq = nn.Linear(d, qd, bias=False)
        self.wk = nn.Linear(d, qd, bias=False)
        self.wv = nn.Linear(d, qd, bias=False)
        self.q_norm = RMSNorm(cfg.head_dim, cfg.norm_eps)
        self.k_norm = RMSNorm(cfg.head_dim, cfg.norm_eps)
        self.wo = nn.Linear(qd, d, bias=False)
        self.ffn_norm = RMSNorm(d, cfg.norm_eps)
        self.w_gate = nn.Linear(d, cfg.ffn, bias=False)
        self.w_up = nn.Linear(d, cfg.ffn, bias=False)
        self.w_down = nn.Linear(cfg.ffn, d, bias=False)
        self.drop = nn.Dropout(cfg.dropout)
        self.block_length = cfg.block_length

    def forward(self, x, cos, sin, bias, n_query=None, train_length=None, train_bias=None):
        """x [B, T, D]; cos/sin [T, hd]; bias [T, T] additive (0 / -inf). With n_query, only the
        first n_query positions are computed as queries (the keys/values are all T): the last
        layer of the training forward needs no x_0 outputs. With train_length L (T = 2L, the
        [x_t ; x_0] training input), the BD3-LM mask is applied by its structure instead of a
        dense [2L, 2L] bias (half the attention FLOPs): scores of every query against the x_0 keys
        under train_bias [2L, L], plus each x_t query against the x_t keys of its own block, one
        softmax over both."""
        B, T, _ = x.shape
        nq = T if n_query is None else n_query
        h = self.attn_norm(x)
        k = self.k_norm(self.wk(h).view(B, T, self.heads, self.hd)).transpose(1, 2)
        v = self.wv(h).view(B, T, self.heads, self.hd).transpose(1, 2)
        hq = h[:, :nq]
        q = self.q_norm(self.wq(hq).view(B, nq, self.heads, self.hd)).transpose(1, 2)
        q, k = apply_rope(q, cos[:nq], sin[:nq]), apply_rope(k, cos, sin)
        q = q * (1.0 / math.sqrt(self.hd))
        if train_length is None:
            att = torch.softmax(q @ k.transpose(-1, -2) + bias[:nq], dim=-1) @ v
        else:
            att = self._train_attention(q, k, v, train_length, train_bias)
        x = x[:, :nq] + self.drop(self.wo(att.transpose(1, 2).reshape(B, nq, -1)))
        return x + self.drop(self.ffn(self.ffn_norm(x)))

    def residual_projections(self):
        """The weights that write into the residual stream (GPT-2's scaled init)."""
        return [self.wo.weight, self.w_down.weight]

    def ffn(self, h):
        """The SwiGLU FFN down(silu(gate(h)) * up(h)) of h [B, T, D] (model_moe.py swaps it)."""
        return self.w_down(F.silu(self.w_gate(h)) * self.w_up(h))

    def _train_attention(self, q, k, v, L, bias0):
        B, H, nq, hd = q.shape
        blk = self.block_length
        nb = L // blk
        kt, k0, vt, v0 = k[:, :, :L], k[:, :, L:], v[:, :, :L], v[:, :, L:]
        s0 = q @ k0.transpose(-1, -2) + bias0[:nq]                            # [B, H, nq, L]
        qt = q[:, :, :L].reshape(B, H, nb, blk, hd)
        sd = (qt @ kt.reshape(B, H, nb, blk, hd).transpose(-1, -2)).reshape(B, H, L, blk)
        if nq > L:  # x_0 queries never see x_t
            sd = torch.cat([sd, torch.full((B, H, nq - L, blk), float("-inf"))], 2)
        p = torch.softmax(torch.cat([s0, sd], -1), dim=-1)
        out = p[..., :L] @ v0
        pd = p[:, :, :L, L:].reshape(B, H, nb, blk, blk)
        own = (pd @ vt.reshape(B, H, nb, blk, hd)).reshape(B, H, L, hd)
        if nq > L:
            own = torch.cat([own, torch.zeros(B, H, nq - L, hd)], 2)
        return out + own


class BlockModel(nn.Module):
    layer_class = Layer  # model_moe.MoeModel's layers replace the FFN

    def __init__(self, cfg: BlockConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_embd = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.blocks = nn.ModuleList(self.layer_class(cfg) for _ in range(cfg.layers))
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.output = nn.Linear(cfg.dim, cfg.vocab_size, bias=False)
        cos, sin = rope_tables(cfg.head_dim, cfg.context, cfg.rope_base)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        L, Bk = cfg.context, cfg.block_length
        self.register_buffer("train_bias", self._bias(bd3lm_training_mask(L, Bk)[:, L:]),
                             persistent=False)
        self.register_buffer("infer_bias", self._bias(block_causal_mask(L, Bk)), persistent=False)
        self.apply(self._init)
        for b in self.blocks:  # GPT-2-style scaled init of the residual projections (as the twins)
            for w in b.residual_projections():
                nn.init.normal_(w, std=0.02 / math.sqrt(2 * cfg.layers))

    @staticmethod
    def _bias(mask):
        return torch.zeros(mask.shape).masked_fill(~mask, float("-inf"))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)

    def num_parameters(self):
        return sum(p.numel() for p in self.parameters())

    def hidden(self, ids, positions, bias, n_query=None, train_length=None):
        x = self.tok_embd(ids)
        cos, sin = self.cos[positions], self.sin[positions]
        for i, b in enumerate(self.blocks):
            last = i == len(self.blocks) - 1
            x = b(x, cos, sin, bias, n_query if last else None, train_length, bias)
        return self.norm(x)

    def forward(self, ids):
        """Block-causal forward of ids [B, T] at positions 0..T-1 (inference) -> logits."""
        T = ids.shape[1]
        pos = torch.arange(T)
        return self.output(self.hidden(ids, pos, self.infer_bias[:T, :T]))

    def forward_train(self, xt, x0, dense=False):
        """BD3-LM training forward of [x_t ; x_0] (each [B, L]) -> final hidden states of x_t
        [B, L, D] (the output projection is left to the caller, to apply it to the masked
        positions only). dense: the plain [2L, 2L] masked attention (the reference the
        structured one is checked against)."""
        L = xt.shape[1]
        pos = torch.arange(L).repeat(2)
        ids = torch.cat([xt, x0], 1)
        mask = bd3lm_training_mask(L, self.cfg.block_length)
        if dense:
            return self.hidden(ids, pos, self._bias(mask), n_query=L)
        bias = self.train_bias if L == self.cfg.context else self._bias(mask[:, L:])
        return self.hidden(ids, pos, bias, n_query=L, train_length=L)


def from_ar_twin(gguf_path, cfg: BlockConfig):
    """A BlockModel initialised from the AR twin's GGUF (llama layout, llama.cpp's interleaved RoPE
    rows): Q/K rows of every head reordered from interleaved pairs (2j, 2j+1) to rotate-half pairs
    (j, j + hd/2), i.e. llama.cpp's permutation undone (q.k is unchanged by the shared
    permutation); q_norm/k_norm weights 1 (the AR twin has none, so the function is not exactly
    preserved: the per-head RMSNorm rescales q and k); everything else copied."""
    import gguf_model
    ar, kv = gguf_model.load_model(gguf_path)
    if kv["general.architecture"] != "llama":
        raise ValueError(f"{gguf_path}: expected the llama AR twin")
    m = BlockModel(cfg)
    sd = ar.state_dict()
    hd = cfg.head_dim
    perm = torch.cat([torch.arange(0, hd, 2), torch.arange(1, hd, 2)])
    rows = torch.cat([h * hd + perm for h in range(cfg.heads)])
    own = m.state_dict()
    for k, v in sd.items():
        if k.endswith(("wq.weight", "wk.weight")):
            v = v[rows]
        if own[k].shape != v.shape:
            raise ValueError(f"{k}: {tuple(v.shape)} vs {tuple(own[k].shape)}")
        own[k] = v.clone()
    m.load_state_dict(own)
    return m
