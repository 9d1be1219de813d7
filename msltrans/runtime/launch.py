"""One dispatch path for both engines: Triton's bound arguments → Metal buffers, grid → threads.

Triton calls the launcher with ALL bound arguments, constexprs included. Their kinds come
from `src.signature` (one entry per argument, "constexpr" for constexpr parameters, for
ints Triton specialised to 1 and for `None`). The contract with `msltrans.lower`, whose
parameter table is `metadata.params` (one entry per non-constexpr argument, in order):
pointer arguments bind `[[buffer(0)]]`, `[[buffer(1)]]`, ... in argument order; pointers past
Metal's buffer table (a `slot` in their parameter entry) travel as one list of tensors bound
after them, whose GPU addresses fill the kernel's argument buffer (torch.mps sends a list of
tensors that way; the MPS engine refuses it, runtime/mps.py says why); every scalar lives at its
`offset` in one `constant` struct of `metadata.args_size` bytes bound after those
(msltrans/lower/kernel_args.py), packed by msltrans/abi/scalar_struct.py.

Grid (gx, gy, gz) → `threads=(gx*T, gy, gz)`, `group_size=(T, 1, 1)` with T threads per
threadgroup: one Triton program = one threadgroup. Both engines expose the
`torch.mps.compile_shader` call convention, so the same call dispatches on either.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from msltrans.abi.alignment import sim_alignment
from msltrans.abi.scalar_struct import ScalarPacker
from msltrans.errors import MetalNonRecoverableError, MetalPointerDeviceError
from msltrans.runtime.align_variants import AlignVariants
from msltrans.runtime.debug_buffer import DebugBuffer
from msltrans.runtime.descriptors import expand_args, expand_signature, has_descriptors

MAX_GRID_THREADS = 2**32 - 1  # dispatchThreads takes 32-bit thread counts per dimension

# Triton's JIT writes fp32/fp16/fp64; a signature read back from a .ttgir file writes f32/f16/f64.
_TYPE_ALIASES = {"f16": "fp16", "f32": "fp32", "f64": "fp64"}


class Engine(Protocol):
    """What the launcher needs from an engine (`runtime.sim` or `runtime.mps`)."""

    name: str
    device_type: str  # torch device type its pointer arguments must live on
    # whether a dispatch may pass pointers through an argument buffer (a list of tensors)
    argument_buffers: bool

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


def _extent(arg: Any) -> tuple[int, int] | None:
    """[first, last) byte addresses a tensor view spans, or None if unknown."""
    try:
        start, size = int(arg.data_ptr()), int(arg.element_size())
        span = 1 + sum((n - 1) * abs(st) for n, st in zip(arg.shape, arg.stride(), strict=True))
    except (AttributeError, TypeError, ValueError):
        return None
    return (start, start + span * size) if arg.numel() else None


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
                f"kernel `{metadata.name}` declares {len(params)} arguments but Triton passes "
                f"{len(runtime)} non-constexpr arguments ({', '.join(n for n, _ in runtime)})")
        self.keep = [t != "constexpr" for t in flat]
        self.converters: list[Callable[[Any], Any]] = []
        pointer_positions: list[int] = []
        spilled: dict[int, tuple[Callable[[Any], Any], int, str]] = {}  # slot → (conv, pos, name)
        spill_buffers: set[int] = set()
        scalar_positions: list[int] = []
        scalar_fields: list[tuple[str, int | None]] = []
        scalar_names: list[str] = []
        runtime_positions = [i for i, keep in enumerate(self.keep) if keep]
        for position, (name, ty), param in zip(runtime_positions, runtime, params, strict=True):
            if (param.get("kind") == "pointer") != ty.startswith("*"):
                raise MetalNonRecoverableError(
                    f"argument `{name}` is {ty} for Triton but a {param.get('kind')} "
                    "in the generated MSL")
            if ty == "*fp64":
                # The lowering downcast fp64 to fp32 (with a warning), so the MSL reads this
                # buffer as float: float64 bytes would be misread. Refuse rather than guess.
                raise MetalNonRecoverableError(
                    f"argument `{name}` of kernel `{metadata.name}` is a float64 tensor; Apple "
                    "GPUs have no fp64 and the kernel was compiled with fp64 downcast to fp32",
                    hint=f"pass {name}.float() and convert the result back")
            if ty.startswith("*") and param.get("slot") is not None:
                spilled[int(param["slot"])] = (
                    _pointer_converter(name, ty, engine.device_type), position, name)
                spill_buffers.add(int(param.get("buffer_index", -1)))
            elif ty.startswith("*"):
                if param.get("buffer_index") != len(pointer_positions):
                    raise MetalNonRecoverableError(
                        f"pointer `{name}` is bound to buffer {param.get('buffer_index')}, "
                        f"expected {len(pointer_positions)}")
                self.converters.append(_pointer_converter(name, ty, engine.device_type))
                pointer_positions.append(position)
            else:
                scalar_positions.append(position)
                scalar_fields.append((ty, param.get("offset")))
                scalar_names.append(name)
        self.plan = list(zip(self.converters, pointer_positions, strict=True))
        self.spill_plan = self._spill_plan(metadata.name, spilled, spill_buffers,
                                           len(pointer_positions), engine)
        self.scalar_positions = scalar_positions
        args_size = int(getattr(metadata, "args_size", 0) or 0)
        if scalar_fields and not args_size:
            raise MetalNonRecoverableError(
                f"kernel `{metadata.name}` has scalar arguments but no argument struct")
        self.packer = (ScalarPacker(scalar_fields, args_size, scalar_names)
                       if scalar_fields else None)
        # The struct goes as a list of byte values, sent with one setBytes (uint8 cast).
        struct_index = len(pointer_positions) + (1 if self.spill_plan else 0)
        self.arg_casts: dict[int, str] = {struct_index: "uint8"} if self.packer else {}
        self.threads_per_group = int(getattr(metadata, "threads_per_group", 0)
                                     or metadata.num_warps * metadata.warp_size)
        self.group_size = (self.threads_per_group, 1, 1)
        self.name = metadata.name
        # tl.device_print / device_assert: one hidden buffer after the kernel's own
        self.debug = DebugBuffer.from_metadata(metadata)
        # The simulator places buffers itself: it must keep the alignment the kernel was
        # specialised on (MslProgram.buffer_alignment). Metal buffers keep it by themselves.
        # The argument buffer (if any) follows the direct pointers' buffers.
        alignment = sim_alignment(getattr(metadata, "buffer_alignment", None) or (),
                                  getattr(metadata, "spilled_alignment", None) or (),
                                  len(pointer_positions))
        self.coherent = tuple(int(i) for i in getattr(metadata, "coherent_buffers", None) or ())
        self.engine_kwargs = ({"buffer_alignment": alignment}
                              if alignment and engine.name == "sim" else {})
        # Integer arguments whose divisibility picks a faster compile (runtime/align_variants.py)
        self.variants = AlignVariants.from_launch(
            src, metadata, self.has_tuples or self.descriptor_signature is not None)

    @staticmethod
    def _spill_plan(kernel: str, spilled: dict[int, tuple[Callable[[Any], Any], int, str]],
                    buffers: set[int], direct: int, engine: Engine
                    ) -> list[tuple[Callable[[Any], Any], int]]:
        """(converter, argument position) of each pointer in the argument buffer, in slot
        order; refused where the engine cannot make such pointers valid for the dispatch."""
        if not spilled:
            return []
        if sorted(spilled) != list(range(len(spilled))) or buffers != {direct}:
            raise MetalNonRecoverableError(
                f"kernel `{kernel}`: the argument buffer's pointers are bound to buffers "
                f"{sorted(buffers)} at slots {sorted(spilled)}; expected buffer {direct}, "
                f"slots 0 to {len(spilled) - 1}")
        if not getattr(engine, "argument_buffers", False):
            from msltrans.runtime.mps import argument_buffer_refusal

            raise argument_buffer_refusal(kernel, direct + len(spilled),
                                          [spilled[k][2] for k in sorted(spilled)])
        return [spilled[k][:2] for k in sorted(spilled)]

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
        bound = [conv(flat[i]) for conv, i in self.plan]
        if self.coherent:
            self._check_coherent_apart(bound + [conv(flat[i]) for conv, i in self.spill_plan])
        if self.spill_plan:
            bound.append([conv(flat[i]) for conv, i in self.spill_plan])
        if self.packer is not None:
            bound.append(self.packer.pack([flat[i] for i in self.scalar_positions]))
        return bound

    def _check_coherent_apart(self, bound: list[Any]) -> None:
        """The kernel's coherent(device) buffers were chosen taking distinct arguments as
        distinct memory (lower/memory/coherence.py): refuse a launch where one overlaps another."""
        spans = [_extent(arg) for arg in bound]
        for i in self.coherent:
            for j, other in enumerate(spans):
                if j != i and j not in self.coherent and spans[i] and other and \
                        spans[i][0] < other[1] and other[0] < spans[i][1]:
                    raise MetalNonRecoverableError(
                        f"kernel `{self.name}`: buffer {i}, which other programs write and "
                        f"read while the kernel runs (declared coherent(device)), overlaps "
                        f"buffer {j}, whose accesses are not coherent",
                        hint="pass non-overlapping tensors (or the same tensor once)")

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
        if self.variants is not None:
            variant = self.variants.pick(args)
            if variant is not None:
                launcher, variant_function = variant
                launcher(grid_x, grid_y, grid_z, stream, variant_function, packed_metadata,
                         launch_metadata, enter_hook, exit_hook, *args)
                return
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
