"""The MoE twins: the block twin's Qwen3 layout (model_block.py) with a routed-expert FFN.

Layout (LLaDA-MoE, inclusionAI LLaDA-MoE-7B-A1B modeling_lladamoe.py; Qwen3-MoE, transformers'
modeling_qwen3_moe.py; docs MODELS.md sections 3 and 6): every layer's SwiGLU FFN is replaced by
E experts, each down(silu(gate(h)) * up(h)) of width expert_ffn, and a router (no bias) whose
softmax over the E logits picks the top_k experts of each position; the output is the sum of the
chosen experts weighted by their softmax probabilities, renormalised to sum to 1 only with
normalize (LLaDA-MoE hard-wires norm_topk_prob False; the twins keep that). No shared expert, no
dense layers. Attention is the block twin's (q/k RMSNorm, rotate-half RoPE) under a mask set by
block_length: 1 = causal (the AR twin, `qwen3moe`), context = bidirectional (the diffusion twin,
`llada-moe`), anything between = block-causal (SDAR-MoE).

Load balancing (Switch Transformer, Fedus et al. 2022, eq. 4; the auxiliary loss LLaDA-MoE and
OLMoE train with, coefficient 0.01): aux = E * sum_e f_e * P_e per layer, f_e the fraction of the
batch's top-k slots routed to expert e, P_e the mean router probability of e; MoeModel.aux_loss()
averages it over the layers of the last forward and multiplies by aux_weight.
"""
import warnings
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from model_block import BlockConfig, BlockModel, Layer


@dataclass
class MoeConfig(BlockConfig):
    experts: int = 16
    top_k: int = 2
    expert_ffn: int = 256
    normalize: bool = False  # renormalise the top-k weights (LLaDA-MoE: False)
    aux_weight: float = 0.01


class MoeLayer(Layer):
    def __init__(self, cfg: MoeConfig):
        with warnings.catch_warnings():  # the dense FFN of width 0, deleted below
            warnings.filterwarnings("ignore", "Initializing zero-element tensors")
            super().__init__(cfg)
        del self.w_gate, self.w_up, self.w_down
        e, d, f = cfg.experts, cfg.dim, cfg.expert_ffn
        self.top_k, self.normalize = cfg.top_k, cfg.normalize
        self.router = nn.Linear(d, e, bias=False)
        self.gate_exps = nn.Parameter(torch.empty(e, f, d))  # [E, ffn, dim] as HF gate_proj rows
        self.up_exps = nn.Parameter(torch.empty(e, f, d))
        self.down_exps = nn.Parameter(torch.empty(e, d, f))
        for w in (self.gate_exps, self.up_exps, self.down_exps):
            nn.init.normal_(w, std=0.02)
        self.aux = torch.zeros(())
        self.last_counts = torch.zeros(e)

    def residual_projections(self):
        return [self.wo.weight, self.down_exps]

    def route(self, x):
        """x [N, D] -> (probs [N, E] f32, weights [N, k], experts [N, k])."""
        # At least float32 (the engine's router precision); float64 when the model is.
        probs = torch.softmax(self.router(x).to(torch.promote_types(x.dtype, torch.float32)), -1)
        w, idx = probs.topk(self.top_k, -1)
        if self.normalize:
            w = w / w.sum(-1, keepdim=True)
        return probs, w, idx

    def ffn(self, h):
        shape = h.shape
        x = h.reshape(-1, shape[-1])
        probs, w, idx = self.route(x)
        e_count = probs.shape[-1]
        counts = torch.bincount(idx.reshape(-1), minlength=e_count).float()
        self.last_counts = counts.detach()
        self.aux = e_count * (counts / idx.numel() * probs.mean(0)).sum()
        out = torch.zeros_like(x)
        for e in range(e_count):
            rows, slot = (idx == e).nonzero(as_tuple=True)
            if rows.numel() == 0:
                continue
            xe = x[rows]
            ye = (F.silu(xe @ self.gate_exps[e].T) * (xe @ self.up_exps[e].T)) @ self.down_exps[e].T
            out.index_add_(0, rows, ye * w[rows, slot, None].to(ye.dtype))
        return out.reshape(shape)


class MoeModel(BlockModel):
    layer_class = MoeLayer

    def aux_loss(self):
        """aux_weight x the mean over layers of the last forward's load-balancing loss."""
        return self.cfg.aux_weight * torch.stack([b.aux for b in self.blocks]).mean()

    def expert_load(self):
        """[layers, E]: the fraction of the last forward's top-k slots each expert received."""
        c = torch.stack([b.last_counts for b in self.blocks])
        return c / c.sum(-1, keepdim=True)
