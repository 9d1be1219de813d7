"""MSL text the atomic lowerings add to the program prelude (helpers) or body (histogram).

Placeholders are filled by Python (`str.format`); no arithmetic happens in this text.
"""

from __future__ import annotations

# Metal only has a weak compare-exchange, which may fail spuriously; Triton's atomic_cas is
# strong. Retry while the failure was spurious (the observed value still equals `cmp`).
STRONG_CAS32 = """\
// strong 32-bit compare-and-swap from Metal's weak one; returns the old value
inline uint msl_cas32(device atomic_uint* p, uint cmp, uint val) {
    uint expected = cmp;
    while (!atomic_compare_exchange_weak_explicit(p, &expected, val, memory_order_relaxed,
                                                  memory_order_relaxed)) {
        if (expected != cmp) return expected;
        expected = cmp;
    }
    return cmp;
}"""

# A 16-bit RMW through a CAS loop on the aligned 32-bit word that contains it: the neighbour
# half-word is re-read on every attempt and written back unchanged. Little-endian (Apple).
_WORD16 = """\
// 16-bit atomic {kind} on {ct} through a CAS loop on the containing 32-bit word
inline {ct} {name}(device {ct}* p, {ct} v, {ct} cmp) {{
    device atomic_uint* w = (device atomic_uint*)((ulong)p & ~3ul);
    uint shift = ((ulong)p & 2ul) != 0ul ? 16u : 0u;
    uint cur = atomic_load_explicit(w, memory_order_relaxed);
    while (true) {{
        ushort bits = ushort(cur >> shift);
        {ct} old = as_type<{ct}>(bits);
{check}        {ct} nv = {update};
        uint next = (cur & ~(0xffffu << shift)) | (uint(as_type<ushort>(nv)) << shift);
        if (atomic_compare_exchange_weak_explicit(w, &cur, next, memory_order_relaxed,
                                                  memory_order_relaxed)) return old;
    }}
}}"""

# fadd rounds once: the float sum of two fp16/bf16 values rounded to nearest-even is the
# correctly rounded 16-bit sum (24 >= 2*11+2 bits: double rounding is innocuous).
_UPDATE = {"fadd": "{ct}(float(old) + float(v))", "exch": "v", "cas": "v"}
_CHECK = "        if (bits != as_type<ushort>(cmp)) return old;\n"


def word16_helper(kind: str, ct: str) -> tuple[str, str]:
    name = f"msl_atomic16_{kind}_{ct}"
    text = _WORD16.format(kind=kind, ct=ct, name=name, update=_UPDATE[kind].format(ct=ct),
                          check=_CHECK if kind == "cas" else "")
    return name, text


# tt.histogram: zero the bins, count owned + masked-in elements with threadgroup atomics,
# read the bins back in the result's layout. Barriers bracket the scratch use.
HISTOGRAM = """\
{{
    threadgroup atomic_int* bins = (threadgroup atomic_int*){scratch};
    threadgroup_barrier(mem_flags::mem_threadgroup);  // earlier scratch readers done
    for (uint i = {tid}; i < {bins}u; i += {threads}u) {{
        atomic_store_explicit(&bins[i], 0, memory_order_relaxed);
    }}
    threadgroup_barrier(mem_flags::mem_threadgroup);
    msl_unroll for (uint {reg} = 0; {reg} < {src_regs}u; ++{reg}) {{
        uint b = uint({src}) & {pmask}u;
        if ({guard} && b < {bins}u) atomic_fetch_add_explicit(&bins[b], 1, memory_order_relaxed);
    }}
    threadgroup_barrier(mem_flags::mem_threadgroup);
    msl_unroll for (uint {reg} = 0; {reg} < {out_regs}u; ++{reg}) {{
        {out}[{reg}] = atomic_load_explicit(&bins[{coord}], memory_order_relaxed);
    }}
}}"""


# tt.atomic_poll on 16-bit data: Metal has no 16-bit atomic load; read the aligned 32-bit
# word that contains the element atomically and take its half (little-endian, as _WORD16).
LOAD16 = """\
// atomic 16-bit load: a relaxed atomic load of the containing aligned 32-bit word
inline ushort msl_atomic_load16(device short* p) {
    device atomic_uint* w = (device atomic_uint*)((ulong)p & ~3ul);
    uint shift = ((ulong)p & 2ul) != 0ul ? 16u : 0u;
    return ushort(atomic_load_explicit(w, memory_order_relaxed) >> shift);
}"""
