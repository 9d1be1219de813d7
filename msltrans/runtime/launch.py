"""One dispatch path for both engines: Triton's bound arguments → Metal buffers, grid → threads.

Triton calls the launcher with ALL bound arguments, constexprs included. Their kinds come
from `src.signature` (one entry per argument, "constexpr" for constexpr parameters, for
ints Triton specialised to 1 and for `None`): the i-th non-constexpr argument binds
`[[buffer(i)]]` — the contract with `msltrans.lower`, whose parameter table
(`metadata.params`) gives each buffer's Triton type and the `arg_casts` entry that sizes a
scalar like the MSL declaration (`constant int&` ← "int32").

Grid (gx, gy, gz) → `threads=(gx*T, gy, gz)`, `group_size=(T, 1, 1)` with T threads per
threadgroup: one Triton program = one threadgroup. Both engines expose the
`torch.mps.compile_shader` call convention, so the same call dispatches on either.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from msltrans.errors import MetalNonRecoverableError, MetalPointerDeviceError
from msltrans.runtime.debug_buffer import DebugBuffer
from msltrans.runtime.descriptors import expand_args, expand_signature, has_descriptors

MAX_GRID_THREADS = 2**32 - 1  # dispatchThreads takes 32-bit thread counts per dimension

# torch.mps sends a Python int as 8 bytes and a float as 4 unless `arg_casts` says otherwise;
# used only when the lowering's parameter table has no arg_cast for a scalar.
DEFAULT_ARG_CASTS: dict[str, str | None] = {
    "i1": "uint8", "u1": "uint8", "i8": "int8", "u8": "uint8", "i16": "int16", "u16": "int16",
    "i32": "int32", "u32": "int32", "i64": None, "u64": None,
    "fp16": "fp16", "bf16": "bf16", "fp32": None, "fp64": None,
}
# Triton's JIT writes fp32/fp16/fp64; a signature read back from a .ttgir file writes f32/f16/f64.
_TYPE_ALIASES = {"f16": "fp16", "f32": "fp32", "f64": "fp64"}
_UNSIGNED_BITS = {"u8": 8, "u16": 16, "u32": 32, "u64": 64}
_SIGNED_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64}


class Engine(Protocol):
    """What the launcher needs from an engine (`runtime.sim` or `runtime.mps`)."""

    name: str
    device_type: str  # torch device type its pointer arguments must live on

    def load(self, source: str, kernel_name: str) -> Any: ...

    def synchronize(self) -> None: ...


def flatten_signature(signature: Sequence[Any]) -> list[str]:
    """Triton's tuple arguments become consecutive kernel arguments; flatten them the same way."""
    out: list[str] = []
    for ty in signature:
        if isinstance(ty, tuple):
            out.extend(flatten_signature(ty))
        else:
            out.append(ty)
    return out


def flatten_args(args: Sequence[Any], signature: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    for arg, ty in zip(args, signature, strict=True):
        if isinstance(ty, tuple):
            out.extend(flatten_args(arg, ty))
        else:
            out.append(arg)
    return out


def normalize_type(triton_type: str) -> str:
    if triton_type.startswith("*"):
        return "*" + normalize_type(triton_type[1:])
    return _TYPE_ALIASES.get(triton_type, triton_type)


def _scalar_converter(name: str, triton_type: str) -> Callable[[Any], Any]:
    """A function turning the Python value into what torch.mps / the simulator accept."""
    if triton_type.startswith("fp") or triton_type == "bf16":
        return float
    if triton_type in ("i1", "u1"):  # Triton types Python bools as u1
        return lambda v: int(bool(v))
    if triton_type in _UNSIGNED_BITS:
        bits = _UNSIGNED_BITS[triton_type]

        def as_signed(value: Any) -> int:
            # torch's arg caster goes through int64: send the two's-complement value with
            # the same bits, so u64 values >= 2**63 (and u32 >= 2**31) keep their pattern.
            v = int(value) & ((1 << bits) - 1)
            return v - (1 << bits) if v >> (bits - 1) else v

        return as_signed
    if triton_type in _SIGNED_BITS:
        return int
    raise MetalNonRecoverableError(f"argument `{name}` has Triton type {triton_type}, "
                                   "which the Metal launcher cannot pass")


def _pointer_converter(name: str, triton_type: str, device_type: str) -> Callable[[Any], Any]:
    # `t.is_cpu` / `t.is_mps` cost ~0.2 µs, `t.device.type` ~1 µs: this runs per pointer
    # per launch.
    flag = f"is_{device_type}"

    def refuse(arg: Any) -> MetalPointerDeviceError:
        dev = getattr(getattr(arg, "device", None), "type", None)
        if dev is None:
            return MetalPointerDeviceError(
                f"pointer argument `{name}` ({triton_type}) must be a torch.Tensor on "
                f"'{device_type}', got {type(arg).__name__}")
        return MetalPointerDeviceError(
            f"pointer argument `{name}` is a tensor on '{dev}', but the Metal engine "
            f"runs on '{device_type}'", hint=f"move it with .to('{device_type}')")

    def convert(arg: Any) -> Any:
        if type(arg).__name__ == "TensorWrapper":  # triton.reinterpret: same storage
            arg = arg.base
        if getattr(arg, flag, False) is True:
            return arg
        raise refuse(arg)

    return convert


# The cast names torch.mps understands (the simulator mirrors them); "float", "int64" and
# "long" are torch's defaults for Python floats and ints, so they need no entry.
TORCH_CASTS = frozenset({"fp16", "bf16", "int32", "int16", "int8", "uint8"})
_DEFAULT_WIDTHS = frozenset({"", "float", "fp32", "int64", "long"})
# The lowering may name a cast by its MSL type; translate to torch's spelling. MSL `bool`
# is one byte, sent as uint8 0/1.
_MSL_CAST_NAMES = {"bool": "uint8", "half": "fp16", "bfloat": "bf16", "int": "int32",
                   "short": "int16", "char": "int8", "uchar": "uint8"}


def _torch_cast(name: str, cast: str | None) -> str | None:
    cast = _MSL_CAST_NAMES.get(cast, cast) if cast is not None else None
    if cast is None or cast in _DEFAULT_WIDTHS:
        return None
    if cast not in TORCH_CASTS:
        raise MetalNonRecoverableError(
            f"scalar `{name}` needs arg_cast {cast!r}, which torch.mps cannot send",
            hint=f"one of {sorted(TORCH_CASTS)}")
    return cast


class Launcher:
    """Built once per compiled kernel (Triton's `driver.launcher_cls(src, metadata)`)."""

    def __init__(self, src: Any, metadata: Any, engine: Engine) -> None:
        self.engine = engine
        signature = list(src.signature.values())
        top_names = list(getattr(getattr(src, "fn", None), "arg_names", []) or [])
        # Host-side TensorDescriptors travel as the pointer/shape/stride arguments the
        # descriptor rewrite gave the kernel (runtime/descriptors.py).
        self.descriptor_signature = signature if has_descriptors(signature) else None
        if self.descriptor_signature is not None:
            signature = expand_signature(signature)
        self.top_names = top_names
        self.signature = signature
        self.has_tuples = any(isinstance(t, tuple) for t in signature)
        flat = flatten_signature(signature)
        names = self._arg_names(src, len(flat))
        runtime = [(n, normalize_type(t)) for n, t in zip(names, flat, strict=True)
                   if t != "constexpr"]
        params = list(getattr(metadata, "params", None) or [])
        if len(params) != len(runtime):
            raise MetalNonRecoverableError(
                f"kernel `{metadata.name}` declares {len(params)} Metal buffers but Triton passes "
                f"{len(runtime)} non-constexpr arguments ({', '.join(n for n, _ in runtime)})")
        self.keep = [t != "constexpr" for t in flat]
        self.converters: list[Callable[[Any], Any]] = []
        self.arg_casts: dict[int, str] = {}
        for i, ((name, ty), param) in enumerate(zip(runtime, params, strict=True)):
            if param.get("buffer_index", i) != i:
                raise MetalNonRecoverableError(
                    f"parameter `{name}` is bound to buffer {param['buffer_index']}, expected {i}")
            if (param.get("kind") == "pointer") != ty.startswith("*"):
                raise MetalNonRecoverableError(
                    f"argument `{name}` is {ty} for Triton but a {param.get('kind')} buffer "
                    "in the generated MSL")
            if ty == "*fp64":
                # The lowering downcast fp64 to fp32 (with a warning), so the MSL reads this
                # buffer as float: float64 bytes would be misread. Refuse rather than guess.
                raise MetalNonRecoverableError(
                    f"argument `{name}` of kernel `{metadata.name}` is a float64 tensor; Apple "
                    "GPUs have no fp64 and the kernel was compiled with fp64 downcast to fp32",
                    hint=f"pass {name}.float() and convert the result back")
            if ty.startswith("*"):
                self.converters.append(_pointer_converter(name, ty, engine.device_type))
                continue
            self.converters.append(_scalar_converter(name, ty))
            cast = _torch_cast(name, param.get("arg_cast") or DEFAULT_ARG_CASTS.get(ty))
            if cast:
                self.arg_casts[i] = cast
        runtime_positions = [i for i, keep in enumerate(self.keep) if keep]
        self.plan = list(zip(self.converters, runtime_positions, strict=True))
        self.threads_per_group = int(getattr(metadata, "threads_per_group", 0)
                                     or metadata.num_warps * metadata.warp_size)
        self.group_size = (self.threads_per_group, 1, 1)
        self.name = metadata.name
        # tl.device_print / device_assert: one hidden buffer after the kernel's own
        self.debug = DebugBuffer.from_metadata(metadata)
        # The simulator places buffers itself: it must keep the alignment the kernel was
        # specialised on (MslProgram.buffer_alignment). Metal buffers keep it by themselves.
        alignment = {int(i): int(a) for i, a in getattr(metadata, "buffer_alignment", None) or ()}
        self.engine_kwargs = ({"buffer_alignment": alignment}
                              if alignment and engine.name == "sim" else {})

    @staticmethod
    def _arg_names(src: Any, count: int) -> list[str]:
        fn = getattr(src, "fn", None)
        names = list(getattr(fn, "arg_names", []) or [])
        if len(names) == count:
            return names
        return [str(k) for k in range(count)]

    def bind(self, args: Sequence[Any]) -> list[Any]:
        if self.descriptor_signature is not None:
            args = expand_args(args, self.descriptor_signature, self.top_names)
        flat = flatten_args(args, self.signature) if self.has_tuples else args
        if len(flat) != len(self.keep):
            raise MetalNonRecoverableError(
                f"kernel `{self.name}` expects {len(self.keep)} arguments, got {len(flat)}")
        return [conv(flat[i]) for conv, i in self.plan]

    def threads(self, grid_x: int, grid_y: int, grid_z: int) -> tuple[int, int, int]:
        total_x = grid_x * self.threads_per_group
        if total_x > MAX_GRID_THREADS or grid_y > MAX_GRID_THREADS or grid_z > MAX_GRID_THREADS:
            raise MetalNonRecoverableError(
                f"grid ({grid_x}, {grid_y}, {grid_z}) exceeds Metal's 32-bit thread counts "
                f"({self.threads_per_group} threads per program)")
        return (total_x, grid_y, grid_z)

    def __call__(self, grid_x: int, grid_y: int, grid_z: int, stream: Any, function: Any,
                 packed_metadata: Any, launch_metadata: Any, enter_hook: Any, exit_hook: Any,
                 *args: Any) -> None:
        bound = self.bind(args)
        if enter_hook is not None:
            enter_hook(launch_metadata)
        if grid_x * grid_y * grid_z > 0:  # Triton launches nothing for an empty grid
            debug = self.debug.allocate(self.engine.device_type) if self.debug else None
            extra = () if debug is None else (debug,)
            function(*bound, *extra, threads=self.threads(grid_x, grid_y, grid_z),
                     group_size=self.group_size, arg_casts=self.arg_casts,
                     **self.engine_kwargs)
            if debug is not None:
                self.debug.report(debug)  # reads the buffer back (waits for the dispatch)
        if exit_hook is not None:
            exit_hook(launch_metadata)
