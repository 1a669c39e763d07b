"""Reference of the EAGLE drafter (src/decode/drafter_eagle.cc), written from the published
algorithms: EAGLE's draft layer (Li et al. 2024, arXiv:2401.15077) over the target's features and
EAGLE-2's dynamic draft tree (Li et al. 2024, arXiv:2406.16858, section 4): expand the top_k nodes
of the newest level by path probability, give each its top_k children, and verify the
total_tokens nodes of highest path probability over all levels.

Unlike the engine, which keeps the draft layer's K/V cache and feeds only new rows, this reference
recomputes the whole draft sequence at every level with an explicit attention mask: the context's
rows causally, and every expanded node seeing the context and its own ancestors.
"""
import numpy as np
import torch


def top_k(logits, k):
    """(draft index, log-probability) of the k largest logits, most likely first; equal logits:
    the lower index."""
    lg = logits.double()
    lse = torch.logsumexp(lg, 0).item()
    order = sorted(range(len(lg)), key=lambda j: (-float(lg[j]), j))[:k]
    return [(j, float(lg[j]) - lse) for j in order]


@torch.no_grad()
def draft_tree(layer, draft_ids, features, ctx, depth, k, total):
    """features [P, dim] (the target's states at positions 0..P-1), ctx: the P + 1 committed
    tokens. Returns (tokens, parents) of the tree in the engine's order (creation order), and the
    selection margins: the smallest gap between a chosen and a refused logit of every top-k, and
    between the last node kept and the first one dropped."""
    P = features.shape[0]
    real_tok = torch.tensor(ctx[1:P + 1])[None]
    feats = [features[j] for j in range(P)]
    toks = list(real_tok[0].tolist())
    pos = list(range(P))
    parent_rows = []  # per expanded row: its parent's expanded row, -1 for the context

    def run():
        n = len(toks)
        mask = torch.zeros(n, n, dtype=torch.bool)
        for q in range(n):
            if q < P:
                mask[q, :q + 1] = True
            else:
                mask[q, :P] = True
                r = q - P
                while r >= 0:
                    mask[q, P + r] = True
                    r = parent_rows[r]
        g, logits = layer(torch.tensor(toks)[None], torch.stack(feats)[None],
                          torch.tensor(pos)[None], mask[None])
        return g[0], logits[0]

    margins = []

    def children(logits):
        lg = logits.double()
        s = sorted(lg.tolist(), reverse=True)
        if len(s) > k:
            margins.append(s[k - 1] - s[k])
        return top_k(logits, k)

    g, logits = run()
    root_g = g[P - 1]
    nodes = []  # dicts: token, parent (node), score, row
    level = []
    for j, lp in children(logits[P - 1]):
        level.append(len(nodes))
        nodes.append({"token": draft_ids[j], "parent": -1, "score": lp, "row": -1})
    L = P + 1
    for d in range(1, depth):
        level = sorted(level, key=lambda i: -nodes[i]["score"])[:k]  # stable: creation order
        level.sort()
        for i in level:
            node = nodes[i]
            par = node["parent"]
            feats.append(root_g if par < 0 else g[P + nodes[par]["row"]])
            toks.append(node["token"])
            pos.append(L - 2 + d)
            parent_rows.append(-1 if par < 0 else nodes[par]["row"])
            node["row"] = len(parent_rows) - 1
        g, logits = run()
        nxt = []
        for i in level:
            for j, lp in children(logits[P + nodes[i]["row"]]):
                nxt.append(len(nodes))
                nodes.append({"token": draft_ids[j], "parent": i,
                              "score": nodes[i]["score"] + lp, "row": -1})
        level = nxt
    order = sorted(range(len(nodes)), key=lambda i: -nodes[i]["score"])
    if len(order) > total:
        margins.append(nodes[order[total - 1]]["score"] - nodes[order[total]]["score"])
    best = sorted(order[:total])
    index = {}
    tokens, parents = [], []
    for i in best:
        par = nodes[i]["parent"]
        index[i] = len(tokens)
        tokens.append(int(nodes[i]["token"]))
        parents.append(-1 if par < 0 else index[par])
    return tokens, parents, (min(margins) if margins else float("inf"))
