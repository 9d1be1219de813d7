"""Transformer-family models: GPT-2 and LLaMA blocks (RoPE, SwiGLU, RMSNorm), MLP-Mixer,
ViT-tiny, T5 relative-position attention, an embedding front end, cross-attention.
Attention is written out (softmax(QK^T)V), so its softmax and masking become Triton
kernels; `F.scaled_dot_product_attention` on CPU runs as one aten kernel instead."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from tests.inductor.harness import Model

D, H, T = 32, 4, 8


def _seq(batch: int, t: int = T, d: int = D) -> tuple[torch.Tensor, ...]:
    return (torch.randn(batch, t, d),)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool = False,
              bias: torch.Tensor | None = None) -> torch.Tensor:
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if bias is not None:
        scores = scores + bias
    if causal:
        t = q.shape[-2]
        mask = torch.ones(t, t, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
    return scores.softmax(-1) @ v


def heads(x: torch.Tensor) -> torch.Tensor:
    b, t, _ = x.shape
    return x.view(b, t, H, D // H).transpose(1, 2)


def merge(x: torch.Tensor) -> torch.Tensor:
    b, _, t, _ = x.shape
    return x.transpose(1, 2).reshape(b, t, D)


class Gpt2Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc, self.out = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(self.ln1(x)).chunk(3, dim=-1)
        x = x + self.proj(merge(attention(heads(q), heads(k), heads(v), causal=True)))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class RmsNorm(nn.Module):
    def __init__(self, d: int = D, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight, self.eps = nn.Parameter(1 + 0.1 * torch.randn(d)), eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope(x: torch.Tensor) -> torch.Tensor:
    t, d = x.shape[-2], x.shape[-1]
    inv = 1.0 / (10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    angles = torch.arange(t, dtype=torch.float32)[:, None] * inv[None, :]
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)


class LlamaBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.n1, self.n2 = RmsNorm(), RmsNorm()
        self.q, self.k, self.v = (nn.Linear(D, D, bias=False) for _ in range(3))
        self.o = nn.Linear(D, D, bias=False)
        self.gate, self.up = nn.Linear(D, 2 * D, bias=False), nn.Linear(D, 2 * D, bias=False)
        self.down = nn.Linear(2 * D, D, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.n1(x)
        q, k = rope(heads(self.q(h))), rope(heads(self.k(h)))
        x = x + self.o(merge(attention(q, k, heads(self.v(h)), causal=True)))
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class MixerBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.tok1, self.tok2 = nn.Linear(T, 2 * T), nn.Linear(2 * T, T)
        self.ch1, self.ch2 = nn.Linear(D, 2 * D), nn.Linear(2 * D, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.ln1(x).transpose(1, 2)
        x = x + self.tok2(F.gelu(self.tok1(y))).transpose(1, 2)
        return x + self.ch2(F.gelu(self.ch1(self.ln2(x))))


class VitTiny(nn.Module):
    """Patch embedding (a strided conv), class token, learned positions, one encoder block."""

    def __init__(self, image: int = 16, patch: int = 4) -> None:
        super().__init__()
        self.embed = nn.Conv2d(3, D, patch, stride=patch)
        tokens = (image // patch) ** 2 + 1
        self.cls = nn.Parameter(0.02 * torch.randn(1, 1, D))
        self.pos = nn.Parameter(0.02 * torch.randn(1, tokens, D))
        self.ln1, self.ln2, self.ln3 = nn.LayerNorm(D), nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc1, self.fc2, self.head = nn.Linear(D, 2 * D), nn.Linear(2 * D, D), nn.Linear(D, 10)

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        x = self.embed(img).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, H, D // H).permute(2, 0, 3, 1, 4)
        x = x + self.proj(attention(q, k, v).transpose(1, 2).reshape(b, t, D))
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return self.head(self.ln3(x[:, 0]))


class T5Attention(nn.Module):
    """T5's bucketed relative-position bias (log-spaced buckets) added to the scores."""

    def __init__(self, buckets: int = 8, max_distance: int = 16) -> None:
        super().__init__()
        self.q, self.k, self.v, self.o = (nn.Linear(D, D, bias=False) for _ in range(4))
        self.bias = nn.Embedding(buckets, H)
        self.buckets, self.max_distance = buckets, max_distance

    def bucket(self, rel: torch.Tensor) -> torch.Tensor:
        half = self.buckets // 2
        sign = (rel > 0).long() * half
        rel = rel.abs()
        exact = half // 2
        large = exact + (torch.log(rel.float().clamp(min=1) / exact)
                         / math.log(self.max_distance / exact) * (half - exact)).long()
        large = large.clamp(max=half - 1)
        return sign + torch.where(rel < exact, rel, large)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        pos = torch.arange(t)
        bias = self.bias(self.bucket(pos[None, :] - pos[:, None])).permute(2, 0, 1)
        out = attention(heads(self.q(x)), heads(self.k(x)), heads(self.v(x)), bias=bias)
        return F.layer_norm(x + self.o(merge(out)), (D,))


class EmbeddingFrontEnd(nn.Module):
    """Token + position embeddings, LayerNorm, a tied output projection: indirect loads."""

    def __init__(self, vocab: int = 50) -> None:
        super().__init__()
        self.tok, self.pos, self.ln = nn.Embedding(vocab, D), nn.Embedding(T, D), nn.LayerNorm(D)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.ln(self.tok(ids) + self.pos(torch.arange(ids.shape[1])))
        return (h @ self.tok.weight.T).log_softmax(-1)


class CrossAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q, self.kv, self.o = nn.Linear(D, D), nn.Linear(D, 2 * D), nn.Linear(D, D)
        self.ln = nn.LayerNorm(D)

    def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        k, v = self.kv(memory).chunk(2, dim=-1)
        return self.ln(x + self.o(merge(attention(heads(self.q(x)), heads(k), heads(v)))))


class LayerNormResidual(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc, self.ln = nn.Linear(D, D), nn.LayerNorm(D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x + F.dropout(self.fc(x), p=0.0))


MODELS = [
    Model("layernorm_residual", LayerNormResidual, lambda b: _seq(b)),
    Model("rmsnorm", RmsNorm, lambda b: _seq(b)),
    Model("gpt2_block", Gpt2Block, lambda b: _seq(b), batch=2, other_batch=3),
    Model("llama_block", LlamaBlock, lambda b: _seq(b), batch=2, other_batch=3),
    Model("mlp_mixer", MixerBlock, lambda b: _seq(b), batch=2, other_batch=3),
    Model("vit_tiny", VitTiny, lambda b: (torch.randn(b, 3, 16, 16),), batch=2, other_batch=3),
    Model("t5_relative_attention", T5Attention, lambda b: _seq(b), batch=2, other_batch=3),
    Model("embedding_front_end", EmbeddingFrontEnd, lambda b: (torch.randint(0, 50, (b, T)),),
          batch=2, other_batch=3),
    Model("cross_attention", CrossAttention, lambda b: (*_seq(b), *_seq(b, 5)),
          batch=2, other_batch=3),
]
