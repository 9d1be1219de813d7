"""Convolutional blocks (convolutions run as aten; their BatchNorm/GroupNorm/activation
epilogues and pooling are Triton), loss heads, and models that reach the libdevice
functions Inductor emits (expm1, log1p, erfc, erfinv, lgamma, hypot, nextafter, frexp)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from tests.inductor.harness import Model

D, C = 32, 8


class ResNetBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(C, C, 3, padding=1), nn.Conv2d(C, C, 3, padding=1)
        self.b1, self.b2 = nn.BatchNorm2d(C), nn.BatchNorm2d(C)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x + self.b2(self.c2(F.relu(self.b1(self.c1(x))))))


class ConvNextBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.dw = nn.Conv2d(C, C, 7, padding=3, groups=C)
        self.ln, self.fc1, self.fc2 = nn.LayerNorm(C), nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
        self.gamma = nn.Parameter(0.5 * torch.ones(C))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.dw(x).permute(0, 2, 3, 1)
        h = self.fc2(F.gelu(self.fc1(self.ln(h)))) * self.gamma
        return x + h.permute(0, 3, 1, 2)


class UNetResBlock(nn.Module):
    """GroupNorm + SiLU + conv, a time embedding added per channel."""

    def __init__(self) -> None:
        super().__init__()
        self.g1, self.g2 = nn.GroupNorm(2, C), nn.GroupNorm(2, C)
        self.c1, self.c2 = nn.Conv2d(C, C, 3, padding=1), nn.Conv2d(C, C, 3, padding=1)
        self.t = nn.Linear(D, C)

    def forward(self, x: torch.Tensor, temb: torch.Tensor) -> torch.Tensor:
        h = self.c1(F.silu(self.g1(x))) + self.t(F.silu(temb))[:, :, None, None]
        return x + self.c2(F.silu(self.g2(h)))


class PoolingNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c = nn.Conv2d(3, C, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(self.c(x))
        a = F.max_pool2d(h, 2)
        b = F.avg_pool2d(h, 2)
        return torch.cat([F.adaptive_avg_pool2d(a + b, 1).flatten(1), h.amax((2, 3))], 1)


class GatedConv1d(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c = nn.Conv1d(C, 2 * C, 3, padding=1)
        self.norm = nn.InstanceNorm1d(C, affine=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(F.glu(self.c(x), dim=1)) + x


class Upsampler(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c = nn.Conv2d(C, 4 * C, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        up = F.pixel_shuffle(self.c(x), 2)
        return F.leaky_relu(up, 0.2) + F.interpolate(x, scale_factor=2, mode="nearest")


class Classifier(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.fc = nn.Linear(D, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def _labels(batch: int, classes: int = 10) -> torch.Tensor:
    return torch.randint(0, classes, (batch,), generator=torch.Generator().manual_seed(batch))


class CrossEntropyHead(Classifier):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.fc(x)
        y = _labels(x.shape[0])
        return torch.stack([F.cross_entropy(logits, y),
                            F.cross_entropy(logits, y, label_smoothing=0.1)])


class BceFocalHead(Classifier):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.fc(x)
        target = (torch.arange(logits.numel()).view_as(logits) % 3 == 0).to(logits.dtype)
        bce = F.binary_cross_entropy_with_logits(logits, target, reduction="none")
        p = torch.sigmoid(logits)
        focal = bce * (1 - torch.where(target > 0, p, 1 - p)).pow(2)
        return torch.stack([bce.mean(), focal.mean()])


class DistillationHead(Classifier):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        student = self.fc(x)
        teacher = (x[:, :10] * 2).detach()
        return F.kl_div(F.log_softmax(student / 2, -1), F.log_softmax(teacher / 2, -1),
                        reduction="batchmean", log_target=True)


class LogSpaceScan(nn.Module):
    """A CTC-like forward recursion in log space: logaddexp and logcumsumexp."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(D, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logp = F.log_softmax(self.fc(x), -1)
        cum = torch.logcumsumexp(logp, dim=1)
        return torch.logaddexp(cum[:, :, :3], cum[:, :, 3:])


class CountLikelihood(nn.Module):
    """Poisson and negative-binomial log-likelihoods of counts: lgamma."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(D, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rate_raw, r_raw = self.fc(x).unbind(-1)
        rate, r = F.softplus(rate_raw) + 0.1, F.softplus(r_raw) + 0.5
        k = (torch.arange(x.shape[0], dtype=x.dtype) % 7)
        poisson = k * torch.log(rate) - rate - torch.lgamma(k + 1)
        nb = (torch.lgamma(k + r) - torch.lgamma(r) - torch.lgamma(k + 1)
              + r * torch.log(r / (r + rate)) + k * torch.log(rate / (r + rate)))
        return torch.stack([poisson, nb])


class ProbitHead(nn.Module):
    """Gaussian tail and quantile transforms: erf, erfc, erfinv."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(D, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.fc(x)
        u = torch.sigmoid(z) * 0.98 + 0.01
        return torch.cat([torch.special.erfc(z), torch.erfinv(2 * u - 1), torch.erf(z)], -1)


class PolarFeatures(nn.Module):
    """Magnitudes and angles of 2-D feature pairs: hypot, atan2."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(D, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = self.fc(x).chunk(2, -1)
        return torch.cat([torch.hypot(a, b), torch.atan2(b, a)], -1)


class BlockFloatQuantizer(nn.Module):
    """Block floating point: a shared exponent per row from frexp, then ldexp; nextafter
    keeps the clamp bound strictly inside the range."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(D, D)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc(x)
        mantissa, exponent = torch.frexp(h)
        shared = exponent.amax(-1, keepdim=True)
        scaled = torch.ldexp(h, 4 - shared)  # |scaled| < 16
        limit = torch.nextafter(torch.full_like(h, 16.0), torch.zeros_like(h))
        q = torch.round(scaled).clamp(-limit, limit)
        return torch.cat([torch.ldexp(q, shared - 4), mantissa], -1)


MODELS = [
    Model("resnet_block", ResNetBlock, lambda b: (torch.randn(b, C, 8, 8),), batch=2,
          other_batch=3),
    Model("convnext_block", ConvNextBlock, lambda b: (torch.randn(b, C, 8, 8),), batch=2,
          other_batch=3),
    Model("unet_res_block", UNetResBlock, lambda b: (torch.randn(b, C, 8, 8), torch.randn(b, D)),
          batch=2, other_batch=3),
    Model("pooling_net", PoolingNet, lambda b: (torch.randn(b, 3, 8, 8),), batch=2, other_batch=3),
    Model("gated_conv1d", GatedConv1d, lambda b: (torch.randn(b, C, 16),)),
    Model("pixel_shuffle_upsampler", Upsampler, lambda b: (torch.randn(b, C, 4, 4),), batch=2,
          other_batch=3),
    Model("cross_entropy_head", CrossEntropyHead, lambda b: (torch.randn(b, D),), batch=8,
          other_batch=12, loss=lambda out: out.sum()),
    Model("bce_focal_head", BceFocalHead, lambda b: (torch.randn(b, D),), batch=8,
          other_batch=12, loss=lambda out: out.sum()),
    Model("distillation_kl", DistillationHead, lambda b: (torch.randn(b, D),), batch=8,
          other_batch=12, loss=lambda out: out),
    Model("log_space_scan", LogSpaceScan, lambda b: (torch.randn(b, 6, D),)),
    Model("count_likelihood", CountLikelihood, lambda b: (torch.randn(b, D),), batch=8,
          other_batch=12),
    Model("probit_head", ProbitHead, lambda b: (torch.randn(b, D),)),
    Model("polar_features", PolarFeatures, lambda b: (torch.randn(b, D),)),
    Model("block_float_quantizer", BlockFloatQuantizer, lambda b: (torch.randn(b, D),),
          train=False),
]
