"""Inductor's kernels stay within the pointers Metal's buffer table holds
(msltrans/inductor/pointer_bound.py, `msltrans.abi.limits.DIRECT_POINTER_SLOTS`).

Each case once needed more than 30 pointers in one kernel (issue 40's reproducers: a sum of
30 tensors, a compiled Adam step, an RNN's bias gradient over 29 steps; optimizers over 12
parameters; RNN cells over 40 steps). Each runs compiled through msltrans on the simulator
and matches eager, and every kernel it launched binds at most DIRECT_POINTER_SLOTS pointers
(`msltrans.inductor.kernel_buffers()`, recorded at launch from each kernel's parameter table).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
import torch

import msltrans.inductor
from msltrans.abi.limits import DIRECT_POINTER_SLOTS, MAX_BUFFER_INDEX
from msltrans.errors import MetalNonRecoverableError
from msltrans.inductor import pointer_bound

pytestmark = pytest.mark.usefixtures("inductor_route")


@pytest.fixture(autouse=True)
def fresh() -> None:
    torch._dynamo.reset()
    msltrans.inductor.reset_launches()


def check_kernels() -> dict[str, tuple[int, int]]:
    """Every kernel launched through msltrans fits: at most DIRECT_POINTER_SLOTS pointers, and the
    pointers plus the scalar struct and debug buffer within Metal's table."""
    kernels = msltrans.inductor.kernel_buffers()
    assert kernels, "no Triton kernel ran through msltrans"
    assert set(kernels) == set(msltrans.inductor.launches())
    for name, (pointers, hidden) in kernels.items():
        assert pointers <= DIRECT_POINTER_SLOTS, f"{name}: {pointers} pointers"
        assert pointers + hidden <= MAX_BUFFER_INDEX + 1, f"{name}: {pointers} + {hidden}"
    return kernels


def test_limits_follow_the_slot_count() -> None:
    import torch._inductor.config as config

    assert DIRECT_POINTER_SLOTS == MAX_BUFFER_INDEX + 1 - 2 == 29
    assert pointer_bound.KERNEL_BUFFERS == DIRECT_POINTER_SLOTS - 1  # a scratch pointer (ws_ptr)
    assert config.max_fusion_unique_io_buffers == pointer_bound.KERNEL_BUFFERS
    assert config.combo_kernel_max_num_args == pointer_bound.KERNEL_BUFFERS
    from torch._inductor.graph import GraphLowering

    assert getattr(GraphLowering.run_node, pointer_bound.MARK, False)


def test_sum_of_30_tensors() -> None:
    torch.manual_seed(0)
    xs = [torch.randn(64) for _ in range(30)]
    got = torch.compile(lambda *xs: sum(xs))(*xs)
    ref = torch.stack([x.double() for x in xs]).sum(0)
    torch.testing.assert_close(got.double(), ref, rtol=0, atol=1e-5)
    assert torch.equal(got, sum(xs))  # same left-to-right fp32 additions as eager
    kernels = check_kernels()
    assert sum(p for p, _ in kernels.values()) >= 31  # 30 inputs and the output: split


def test_wide_ternary_op_is_split() -> None:
    """`torch.where` over three unrealized 12-tensor sums: one node would read 36 buffers;
    the route realizes inputs first (no fusion limit can split one node)."""
    torch.manual_seed(0)
    xs = [torch.randn(256) for _ in range(36)]

    def fn(*xs: torch.Tensor) -> torch.Tensor:
        a, b, c = (sum(xs[i:i + 12]) for i in (0, 12, 24))
        return torch.where(a > 0, b, c)

    got = torch.compile(fn)(*xs)
    assert torch.equal(got, fn(*xs))
    check_kernels()
    # Without the split the fusion limits alone leave one kernel of 37 pointers (compiled
    # afresh: Inductor's graph caches do not key on the split, only on the config); the
    # simulator runs it through an argument buffer, which the MPS engine refuses.
    torch._dynamo.reset()
    msltrans.inductor.reset_launches()
    pointer_bound.uninstall()
    try:
        with torch._inductor.config.patch(fx_graph_cache=False), \
                torch._functorch.config.patch(enable_autograd_cache=False):
            torch.compile(fn)(*xs)
        widest = max(p for p, _ in msltrans.inductor.kernel_buffers().values())
    except Exception as e:  # refused (an engine without argument buffers)
        assert "37" in str(e)
        widest = 37
    finally:
        pointer_bound.install()
    assert widest > DIRECT_POINTER_SLOTS


def test_op_too_wide_to_split_is_refused() -> None:
    class Realized:  # a buffer already written: nothing left to realize
        def __init__(self, name: str) -> None:
            self.name = name

        def get_name(self) -> str:
            return self.name

    class Node:
        def format_node(self) -> str:
            return "%wide = call_function[target=wide](...)"

    budget = pointer_bound.KERNEL_BUFFERS - 1  # one output
    values = [Realized(f"buf{i}") for i in range(budget + 1)]
    with pytest.raises(MetalNonRecoverableError, match=f"reads {budget + 1} distinct buffers"):
        pointer_bound._split(values, budget, Node())
    pointer_bound._split(values[:-1], budget, Node())  # fits: nothing to do


def mlp(widths: list[int]) -> torch.nn.Module:
    layers: list[torch.nn.Module] = []
    for i, (a, b) in enumerate(zip(widths, widths[1:], strict=False)):
        layers += [torch.nn.Linear(a, b)] + ([torch.nn.GELU()] if i < len(widths) - 2 else [])
    return torch.nn.Sequential(*layers)


def optimizer_steps(make: Callable[..., torch.optim.Optimizer], model: torch.nn.Module,
                    steps: int) -> None:
    """`steps` compiled steps against the same eager steps (foreach=True), both from the same
    gradients (the eager twin's, copied: RMSprop's first steps move each weight by about
    lr * sign(grad), so gradients of parameters one rounding apart could differ by far more
    than the step's rounding); parameters and optimizer state compared after each."""
    twin = copy.deepcopy(model)
    opt, ref = make(model.parameters()), make(twin.parameters())
    step = torch.compile(opt.step)
    for _ in range(steps):
        x = torch.randn(8, next(model.parameters()).shape[1])
        twin.zero_grad()
        twin(x).pow(2).mean().backward()
        for p, q in zip(model.parameters(), twin.parameters(), strict=True):
            p.grad = q.grad.clone()
        ref.step()
        step()
        for a, b in zip(model.parameters(), twin.parameters(), strict=True):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
        for sa, sb in zip(opt.state.values(), ref.state.values(), strict=True):
            for key in sb:
                torch.testing.assert_close(sa[key], sb[key], rtol=1e-5, atol=1e-6)
    check_kernels()


def test_adam_step_4_parameter_mlp() -> None:
    """Issue 40's reproducer: refused with 32 pointers before."""
    torch.manual_seed(0)
    model = mlp([32, 64, 32])
    optimizer_steps(lambda p: torch.optim.Adam(p, lr=1e-2, foreach=True), model, 1)


OPTIMIZERS: dict[str, Callable[..., torch.optim.Optimizer]] = {
    "adam": lambda p: torch.optim.Adam(p, lr=1e-2, foreach=True),
    "adamw": lambda p: torch.optim.AdamW(p, lr=1e-2, weight_decay=0.1, foreach=True),
    "sgd_momentum": lambda p: torch.optim.SGD(p, lr=1e-2, momentum=0.9, foreach=True),
    "adagrad": lambda p: torch.optim.Adagrad(p, lr=1e-2, foreach=True),
    "rmsprop": lambda p: torch.optim.RMSprop(p, lr=1e-2, foreach=True),
}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_step_12_parameters(name: str) -> None:
    torch.manual_seed(0)
    model = mlp([16, 24, 24, 24, 24, 24, 16])  # 6 Linear layers: 12 parameters
    assert len(list(model.parameters())) == 12
    optimizer_steps(OPTIMIZERS[name], model, 2)


def linear_tanh_cell(cell: torch.nn.Linear, x: torch.Tensor | list[torch.Tensor]
                     ) -> torch.Tensor:
    """Issue 40's RNN: `x` a (T, batch, features) tensor or a list of T (batch, features)
    tensors (then every step's forward kernel has the same source: one build, not T)."""
    h = torch.zeros(x[0].shape[0], cell.out_features)
    for t in range(len(x)):
        h = torch.tanh(cell(h) + x[t])
    return h.pow(2).mean()


def gru_loop(cell: torch.nn.GRUCell, xs: list[torch.Tensor]) -> torch.Tensor:
    h = torch.zeros(xs[0].shape[0], cell.hidden_size)
    for x in xs:
        h = cell(x, h)
    return h.pow(2).mean()


class LSTMCell(torch.nn.Module):
    """A hand-written LSTM cell: gates from one Linear over [x, h]."""

    def __init__(self, n_in: int, n_hidden: int) -> None:
        super().__init__()
        self.gates = torch.nn.Linear(n_in + n_hidden, 4 * n_hidden)
        self.hidden_size = n_hidden

    def forward(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]
                ) -> tuple[torch.Tensor, torch.Tensor]:
        h, c = state
        i, f, g, o = self.gates(torch.cat([x, h], 1)).chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        return torch.sigmoid(o) * torch.tanh(c), c


def lstm_loop(cell: LSTMCell, xs: list[torch.Tensor]) -> torch.Tensor:
    h = c = torch.zeros(xs[0].shape[0], cell.hidden_size)
    for x in xs:
        h, c = cell(x, (h, c))
    return h.pow(2).mean()


def steps(n: int, batch: int, features: int) -> list[torch.Tensor]:
    return [torch.randn(batch, features) for _ in range(n)]


def backward_matches(loss_fn: Callable[..., torch.Tensor], cell: torch.nn.Module,
                     x: torch.Tensor | list[torch.Tensor]) -> None:
    """Compiled loss and backward against eager: every parameter's gradient."""
    loss_ref = loss_fn(cell, x)
    loss_ref.backward()
    refs = [p.grad.clone() for p in cell.parameters()]
    cell.zero_grad()
    loss = torch.compile(loss_fn)(cell, x)
    loss.backward()
    torch.testing.assert_close(loss, loss_ref, rtol=1e-5, atol=1e-7)
    for p, ref in zip(cell.parameters(), refs, strict=True):
        torch.testing.assert_close(p.grad, ref, rtol=1e-4, atol=1e-6)
    check_kernels()


def test_rnn_backward_29_steps() -> None:
    """Issue 40's reproducer: the bias gradient summed 29 steps in one kernel before."""
    torch.manual_seed(0)
    backward_matches(linear_tanh_cell, torch.nn.Linear(32, 32), torch.randn(29, 2, 32))


def test_rnn_backward_40_steps() -> None:
    torch.manual_seed(0)
    backward_matches(linear_tanh_cell, torch.nn.Linear(16, 16), steps(40, 2, 16))


@pytest.mark.slow  # ~15 s of CPU each; the tanh RNN's 40 steps run in CI
def test_gru_cell_backward_40_steps() -> None:
    torch.manual_seed(0)
    backward_matches(gru_loop, torch.nn.GRUCell(8, 16), steps(40, 2, 8))


@pytest.mark.slow  # ~15 s of CPU each; the tanh RNN's 40 steps run in CI
def test_lstm_cell_backward_40_steps() -> None:
    torch.manual_seed(0)
    backward_matches(lstm_loop, LSTMCell(8, 16), steps(40, 2, 8))
