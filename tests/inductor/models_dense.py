"""Dense-layer models: MLPs with every activation family, recurrent cells, mixtures of
experts, graph convolution, set pooling, normalisation in 1-D. Random weights, fixed seeds."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.inductor.harness import Model

D = 32


def _x(batch: int, *shape: int) -> tuple[torch.Tensor, ...]:
    return (torch.randn(batch, *shape),)


class Mlp(nn.Module):
    def __init__(self, act: nn.Module) -> None:
        super().__init__()
        self.fc1, self.fc2, self.act = nn.Linear(D, 2 * D), nn.Linear(2 * D, D), act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(self.act(self.fc1(x)))


class Softplus(nn.Module):  # softplus, mish, logsigmoid: log1p
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(D, 3 * D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b, c = self.fc(x).chunk(3, dim=-1)
        return F.softplus(a) + F.mish(b) + F.logsigmoid(c)


class LstmCell(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.LSTMCell(D, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = c = torch.zeros(x.shape[0], D, dtype=x.dtype)
        for t in range(x.shape[1]):
            h, c = self.cell(x[:, t], (h, c))
        return h


class GruCell(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.cell = nn.GRUCell(D, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(x.shape[0], D, dtype=x.dtype)
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
        return h


class MoeTop2(nn.Module):
    """Top-2 gating over 4 experts, dense dispatch (every expert sees every token)."""

    def __init__(self, experts: int = 4) -> None:
        super().__init__()
        self.gate = nn.Linear(D, experts)
        self.w1 = nn.Parameter(torch.randn(experts, D, 2 * D) / D**0.5)
        self.w2 = nn.Parameter(torch.randn(experts, 2 * D, D) / D**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.gate(x)
        top, idx = logits.topk(2, dim=-1)
        weights = torch.zeros_like(logits).scatter(-1, idx, top.softmax(-1))
        hidden = F.silu(torch.einsum("td,edh->teh", x, self.w1))
        out = torch.einsum("teh,ehd->ted", hidden, self.w2)
        return (weights.unsqueeze(-1) * out).sum(1)


class Gcn(nn.Module):
    """Two graph-convolution layers on a fixed random graph, symmetric normalisation."""

    def __init__(self, nodes: int = 12) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(5)
        adj = (torch.rand(nodes, nodes, generator=g) < 0.3).float()
        adj = ((adj + adj.T) > 0).float() + torch.eye(nodes)
        self.register_buffer("adj", adj)
        self.l1, self.l2 = nn.Linear(D, D), nn.Linear(D, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        deg = self.adj.sum(-1).rsqrt()
        norm = deg[:, None] * self.adj.to(x.dtype) * deg[None, :]
        h = F.relu(norm @ self.l1(x))
        return norm @ self.l2(h)


class DeepSets(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.phi, self.rho = nn.Linear(D, D), nn.Linear(3 * D, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.gelu(self.phi(x))
        pooled = torch.cat([h.sum(1), h.mean(1), h.amax(1)], dim=-1)
        return self.rho(pooled)


class BatchNormMlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.bn, self.fc2 = nn.Linear(D, D), nn.BatchNorm1d(D), nn.Linear(D, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.relu(self.bn(self.fc1(x))))


class TimeEmbedding(nn.Module):
    """A diffusion model's sinusoidal timestep embedding and its SiLU MLP."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(D, 2 * D), nn.Linear(2 * D, D)

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        half = D // 2
        freqs = torch.exp(-torch.arange(half, dtype=t.dtype) * (9.2103 / half))
        angles = t[:, None] * 100.0 * freqs[None, :]
        emb = torch.cat([angles.sin(), angles.cos()], dim=-1)
        return self.fc2(F.silu(self.fc1(emb)))


class Highway(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.h, self.t = nn.Linear(D, D), nn.Linear(D, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate = torch.sigmoid(self.t(x))
        return gate * torch.tanh(self.h(x)) + (1 - gate) * x


MODELS = [
    Model("mlp_gelu", lambda: Mlp(nn.GELU()), lambda b: _x(b, D)),
    Model("mlp_gelu_tanh", lambda: Mlp(nn.GELU(approximate="tanh")), lambda b: _x(b, D)),
    Model("mlp_elu", lambda: Mlp(nn.ELU()), lambda b: _x(b, D)),
    Model("mlp_selu", lambda: Mlp(nn.SELU()), lambda b: _x(b, D)),
    Model("mlp_celu", lambda: Mlp(nn.CELU(0.7)), lambda b: _x(b, D)),
    Model("mlp_hardswish", lambda: Mlp(nn.Hardswish()), lambda b: _x(b, D)),
    Model("softplus_mish_logsigmoid", Softplus, lambda b: _x(b, D)),
    Model("lstm_cell", LstmCell, lambda b: _x(b, 5, D)),
    Model("gru_cell", GruCell, lambda b: _x(b, 5, D)),
    Model("moe_top2", MoeTop2, lambda b: _x(b, D), batch=8, other_batch=11),
    Model("gcn", Gcn, lambda b: _x(b, 12, D)),
    Model("deep_sets", DeepSets, lambda b: _x(b, 7, D)),
    Model("batchnorm_mlp", BatchNormMlp, lambda b: _x(b, D), batch=8, other_batch=10),
    Model("time_embedding", TimeEmbedding, lambda b: (torch.rand(b),)),
    Model("highway", Highway, lambda b: _x(b, D)),
]
