"""The histogram pass against its roofline on the CPU at hand.

    python scripts/bench_roofline.py                              # 16-512 bits, 1M and 20M codes, 1 and 2 threads
    python scripts/bench_roofline.py --bits 64,128 --sizes 1000000 --threads 1
    python scripts/bench_roofline.py --quick                      # seconds: small sizes, short timings
    python scripts/bench_roofline.py --show-loop 64               # the hot loops of one width, annotated

Four steps, all measured on this machine:

1. **Operations per pair, from the assembly.** For each code width the kernel that ``evaluate``
   runs (:func:`fasttie._kernels.cpu.bitsliced_codes`, :func:`~fasttie._kernels.histogram.tiled_kernel`,
   else the one-word joint pass) is called once as the engine calls it, so that the signature
   it runs is compiled, then compiled again from its Python function without a cache and its
   ``inspect_asm()`` read: every innermost loop (a backward jump whose range holds no other),
   its instructions sorted into classes (loads, xor/logic, popcount, add/sad, shift, compare,
   store, memory increment, other). The loops that do the work are picked and divided by the
   (query, code) pairs one iteration handles, from the kernel's structure:

   * one-word joint pass (:func:`~fasttie._kernels.histogram.hist_segments_one_word`, at most
     64 bits): the vectorized cells loop (the one with the most popcounts) handles ``step``
     codes for a pair of queries (``step``: the increment of the register that indexes its code
     loads, times its scale over 8 bytes), 2 x step pairs; the counting loop (the one with the
     most memory increments) one joint cell per increment, a code for two queries: 2 pairs each;
   * tiled two-loop pass (:func:`~fasttie._kernels.histogram.hist_classes_tiled`, 65 bits and
     up without AVX-512): the distance loop whose code loads come from ``n_words`` rows of the
     word-major tile (two and four words; other widths: the word-by-word loop, one row,
     executed ``n_words`` times a code) handles 2 x step pairs (a word of them in the
     word-by-word loop); the counting loop, the one whose increments go to 2 x copies counters
     (copies = 4 up to four words, else 1) with the most increments, one pair per increment;
   * any other kernel (the AVX-512 bit-sliced and fused passes): a generic rule, not checked on
     this machine: the innermost loop with the most popcounts, its pairs = 64-bit popcounts per
     iteration / words per code (an exact xor-popcount method takes one per word and pair).

   The column ``pop/pair`` (64-bit popcounts per pair: ``vpopcntq`` x lanes, ``vpshufb`` x
   lanes / 2 for the nibble-table popcount, ``popcnt`` x 1) must equal the words per code: a
   check of the division.
2. **Issue rates, from a microbenchmark.** Every instruction form found in those loops is
   rewritten with its registers renamed (the destination one of 8-10 independent registers in
   turn, sources fixed, memory operands at distinct addresses of an L1-resident buffer) and run
   as a block of inline assembly in a numba loop, whose assembly is checked to contain it:
   instructions per second, the best of 15 runs in each of 4 rounds over all forms in turn (5
   runs, one round with ``--quick``; other jobs only slow a run). The clock comes from a chain
   of dependent ``add``: one a cycle.
3. **The ceiling.** Per loop and class, time = sum over its instructions of count / rate; a
   pair's time is at least the busiest class's (all classes overlap perfectly: the optimistic
   roofline, ``ceiling``) and at most the sum over classes (no overlap: ``no-overlap``), summed
   over the loops a pair goes through (they run one after the other), times the threads. A
   second ceiling is memory: the bandwidth of a streaming read (numba, one and two threads)
   over the bytes a pair reads, the code bytes over the queries of a block that pass over a
   tile (the joint pass: 32; the tiled and bit-sliced passes: the queries of a thread's block),
   plus the tile passes' 4 bytes of class label a code.
4. **What runs.** On the same seeded class-correlated codes (10 classes): the histogram kernel
   alone, called as the engine calls it (its class-sorted copy or tile gathers included, the
   packing and the copy outside), the whole ``evaluate`` (AP, AP@1000, nDCG@1000, P@1000,
   class labels), and a distance-only numba loop (xor, popcount, a sum over the codes, by
   tiles copied word-major with the queries blocked over them: the floor under any exact
   method), each as pairs per second and as a fraction of the lower of the two ceilings.
   The kernel is driven through ``fasttie.hamming.engine._DatabasePass`` (the engine's own
   preparation and call; a private name this benchmark reaches for on purpose, to leave the
   packing and the class-sorted copy out of the time).

The model ignores: the flush of the int32 counters into the int64 histograms (once per block
and slice), the class sort or gathers and the finalizer (in ``evaluate``'s time, not in the
ceiling), loop overheads outside the hot loops, latency chains through memory (increments of one
counter in a row), port sharing between classes (the overlap bound assumes none), the front end
(decode, micro-op cache) and the cache levels between L1 and memory. The machine is shared: the
``others`` column is the CPU other processes used meanwhile (cores).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

SCRIPTS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(SCRIPTS_DIR))
sys.path.insert(1, str(SCRIPTS_DIR.parent))
sys.path.insert(2, str(SCRIPTS_DIR.parent / "asv_bench"))  # benchmarks.data: seeded data, shared with asv

import numba  # noqa: E402
import llvmlite.binding  # noqa: E402
from llvmlite import ir  # noqa: E402
from numba import types  # noqa: E402
from numba.extending import intrinsic  # noqa: E402

from measure import LoadMeter, cpu_model, parse_int_list, timed  # noqa: E402

METRICS = ("AP", "AP@1000", "nDCG@1000", "P@1000")
CLASSES = ("load", "logic", "popcount", "add/sad", "shift", "compare", "store", "mem inc", "other")

# --------------------------------------------------------------------------------------------
# assembly: instructions, innermost loops, classes

_VREG = re.compile(r"^%([xyz])mm(\d+)$")
_GPR64 = ["rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp"] + [f"r{i}" for i in range(8, 16)]
_GPR_NAMES = {}  # name -> (64-bit name, bits)
for _r in _GPR64:
    if _r.startswith("r") and _r[1:].isdigit():
        for _name, _bits in ((_r, 64), (_r + "d", 32), (_r + "w", 16), (_r + "b", 8)):
            _GPR_NAMES[_name] = (_r, _bits)
    else:
        base = _r[1:]  # ax, bx, si, bp...
        _GPR_NAMES[_r] = (_r, 64)
        _GPR_NAMES["e" + base] = (_r, 32)
        _GPR_NAMES[base] = (_r, 16)
        _GPR_NAMES[(base[0] + "l") if base[1] == "x" else base + "l"] = (_r, 8)


def _gpr_name(reg64, bits):
    """The name of the ``bits``-wide part of a 64-bit register."""
    for name, (r, b) in _GPR_NAMES.items():
        if r == reg64 and b == bits:
            return name
    raise KeyError((reg64, bits))


@dataclass
class Instruction:
    text: str
    mnemonic: str
    operands: list

    @property
    def memory(self):
        return [op for op in self.operands if "(" in op]

    @property
    def width(self):
        """Widest register operand: 'zmm', 'ymm', 'xmm' or 'gpr'."""
        kinds = [m.group(1) for op in self.operands if (m := _VREG.match(op))]
        for kind in "zyx":
            if kind in kinds:
                return kind + "mm"
        return "gpr"


def _split_operands(text):
    operands, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            operands.append(current.strip())
            current = ""
        else:
            current += ch
    if current.strip():
        operands.append(current.strip())
    return operands


def parse_asm(asm):
    """(instructions, {label: index of the instruction it precedes})."""
    instructions, labels = [], {}
    for line in asm.splitlines():
        s = line.split("#")[0].strip()
        if not s:
            continue
        m = re.match(r"^([\w$.]+):", s)
        if m:
            labels[m.group(1)] = len(instructions)
            continue
        if s.startswith("."):
            continue
        parts = s.split(None, 1)
        instructions.append(Instruction(s, parts[0], _split_operands(parts[1]) if len(parts) > 1 else []))
    return instructions, labels


def innermost_loops(instructions, labels, innermost=True):
    """[(first, last)] index ranges of the innermost loops: a jump back to a label before it,
    whose range holds no other such loop (every loop where ``innermost`` is false)."""
    loops = []
    for i, ins in enumerate(instructions):
        if ins.mnemonic.startswith("j") and ins.operands and ins.operands[0] in labels:
            target = labels[ins.operands[0]]
            if target <= i:
                loops.append((target, i))
    if not innermost:
        return loops
    return [a for a in loops if not any(b != a and a[0] <= b[0] and b[1] <= a[1] for b in loops)]


def _is_reg(op):
    return op.startswith("%")


def classify(ins):
    """The class of an instruction (its memory-source operand counted apart, as a load)."""
    m, ops = ins.mnemonic, ins.operands
    dest = ops[-1] if ops else ""
    if m.startswith(("j", "push", "pop", "call", "ret")):
        return "other"
    if "(" in dest and not m.startswith(("cmp", "test")):
        if m.startswith(("mov", "vmov")) or m.startswith("vextract") or m.startswith("vpmov"):
            return "store"
        return "mem inc"  # read-modify-write of memory: inc, add $1, add reg
    if m in ("vpshufb",) or m.startswith(("vpopcnt", "popcnt")):
        return "popcount"
    if m.startswith(("mov", "vmov", "vpbroadcast", "vbroadcast")) and ops and "(" in ops[0]:
        return "load"
    if m.startswith(("vpxor", "vpand", "vpor", "vpternlog", "xor", "and", "or", "not", "vpandn", "andn")):
        return "logic"
    if m.startswith(("vpadd", "vpsub", "vpsad", "add", "sub", "inc", "dec", "lea", "neg", "adc")):
        return "add/sad"
    if m.startswith(("vpsll", "vpsrl", "vpsra", "shl", "shr", "sar", "sal", "rol", "ror", "shrx", "shlx")):
        return "shift"
    if m.startswith(("cmp", "test", "vpcmp", "vpmin", "vpmax")):
        return "compare"
    return "other"


def popcount_words(ins):
    """64-bit popcounts an instruction does: vpopcntq x lanes, vpshufb x lanes / 2 (a nibble-table
    popcount takes two table look-ups a byte), popcnt x 1."""
    lanes = {"zmm": 8, "ymm": 4, "xmm": 2, "gpr": 1}[ins.width]
    if ins.mnemonic.startswith("vpopcntq"):
        return lanes
    if ins.mnemonic.startswith("vpopcntd"):
        return lanes / 2
    if ins.mnemonic == "vpshufb":
        return lanes / 2
    if ins.mnemonic.startswith("popcnt"):
        return 1
    return 0


def memory_increments(ins):
    """Whether ``ins`` adds one to a counter in memory (inc, add $1 with a memory destination)."""
    m, ops = ins.mnemonic, ins.operands
    return classify(ins) == "mem inc" and (m.startswith("inc") or (m.startswith("add") and ops[0] == "$1"))


def _address(op):
    """(base, index, scale) of a memory operand."""
    m = re.match(r"^(-?\w*)\((%\w+)?(?:,(%\w+))?(?:,(\d+))?\)$", op)
    if not m:
        return None, None, 1
    return m.group(2), m.group(3), int(m.group(4) or 1)


@dataclass
class Loop:
    role: str
    instructions: list
    pairs_per_iteration: float
    how: str
    start: int = 0
    per_class: Counter = field(default_factory=Counter)
    loads_from_memory_operands: int = 0

    def __post_init__(self):
        for ins in self.instructions:
            if ins.mnemonic.startswith("j"):
                continue  # fused with the compare or add before it (macro-fusion)
            self.per_class[classify(ins)] += 1
            if ins.memory and classify(ins) not in ("load", "store", "mem inc") and not ins.mnemonic.startswith("lea"):
                self.per_class["load"] += 1  # a memory source: one load besides the operation
                self.loads_from_memory_operands += 1

    @property
    def popcounts(self):
        return sum(popcount_words(i) for i in self.instructions)


def _code_loads(instructions):
    """Plain loads of vector or general registers from memory that is not the stack: their
    (base, index, scale)."""
    out = []
    for ins in instructions:
        if classify(ins) == "load" and "rsp" not in ins.operands[0] and "rip" not in ins.operands[0]:
            out.append(_address(ins.operands[0]))
    return out


def _step_codes(instructions):
    """Codes (8-byte words of one stream) per iteration: the immediate added to the register that
    indexes (or bases) the code loads, times the scale, over 8."""
    loads = _code_loads(instructions)
    for ins in instructions:
        m = re.match(r"^(add|sub)q$", ins.mnemonic)
        if m and len(ins.operands) == 2 and ins.operands[0].startswith("$"):
            value = int(ins.operands[0][1:])
            value = -value if m.group(1) == "sub" else value
            register = ins.operands[1]
            for base, index, scale in loads:
                if index == register:
                    return value * scale / 8
                if base == register and index is None:
                    return value / 8
    for ins in instructions:  # leaq 1(%rsi), %rsi / incq: one element
        if ins.mnemonic == "incq" and any(index == ins.operands[0] for _, index, _ in loads):
            return 1.0
    return None


def _increment_bases(instructions):
    return {_address(ins.operands[-1])[0] for ins in instructions if memory_increments(ins)}


def hot_loops(asm, kernel_name, n_words):
    """The loops a pair goes through in ``kernel_name``'s assembly, with their pairs a
    iteration (see the module docstring)."""
    instructions, labels = parse_asm(asm)
    loops = [(a, instructions[a:b + 1]) for a, b in innermost_loops(instructions, labels)]
    if not any(popcount_words(i) for _, body in loops for i in body):  # popcounts in loops with loops inside
        loops = [(a, instructions[a:b + 1]) for a, b in innermost_loops(instructions, labels, innermost=False)]
    vector_pop = [(a, body) for a, body in loops if any(popcount_words(i) and i.width != "gpr" for i in body)]
    scalar_pop = [(a, body) for a, body in loops if any(popcount_words(i) for i in body)]
    increments = [(a, body) for a, body in loops if any(memory_increments(i) for i in body)]

    def n_pop(item):
        return sum(popcount_words(i) for i in item[1])

    def n_inc(item):
        return sum(memory_increments(i) for i in item[1])

    result = []
    if kernel_name.startswith("hist_segments_one_word"):
        start, body = max(vector_pop or scalar_pop, key=n_pop)
        step = _step_codes(body)
        result.append(Loop("distances (cells)", body, 2 * step, f"{step:g} codes x 2 queries", start))
        start, body = max(increments, key=n_inc)
        result.append(Loop("counting (joint)", body, 2 * n_inc((start, body)),
                           f"{n_inc((start, body))} increments x 2 queries (one joint cell a code)", start))
    elif kernel_name == "hist_classes_tiled":
        rows = n_words if n_words in (2, 4) else 1
        candidates = [item for item in vector_pop if len({b for b, _, _ in _code_loads(item[1])}) == rows]
        start, body = max(candidates or vector_pop, key=n_pop)
        step = _step_codes(body)
        if rows == 1:
            result.append(Loop("distances (a word)", body, 2 * step / n_words,
                               f"{step:g} codes x 2 queries, one word of {n_words} (run {n_words}x a code)", start))
        else:
            result.append(Loop("distances", body, 2 * step, f"{step:g} codes x 2 queries ({rows} rows)", start))
        copies = 4 if n_words <= 4 else 1
        candidates = [item for item in increments if len(_increment_bases(item[1])) == 2 * copies]
        start, body = max(candidates or increments, key=n_inc)
        result.append(Loop("counting", body, n_inc((start, body)),
                           f"{n_inc((start, body))} increments, one pair each ({copies} copies x 2 queries)", start))
    else:  # generic rule (AVX-512 passes): not checked on this machine
        if not scalar_pop:
            raise RuntimeError(f"no loop of {kernel_name} does a popcount: is the assembly read right?")
        start, body = max(vector_pop or scalar_pop, key=n_pop)
        result.append(Loop("hot loop (generic rule)", body, n_pop((start, body)) / n_words,
                           f"{n_pop((start, body)):g} popcounts / {n_words} words (generic rule, unchecked)", start))
        if increments:
            start, body = max(increments, key=n_inc)
            if start != result[0].start:
                result.append(Loop("counting (generic rule)", body, n_inc((start, body)),
                                   f"{n_inc((start, body))} increments, one pair each (generic rule)", start))
    return result


# --------------------------------------------------------------------------------------------
# the kernels evaluate runs, and their assembly

def engine_kernel(n_words):
    """(name, numba dispatcher) of the histogram kernel ``evaluate`` runs for class labels and
    codes of ``n_words`` words on this CPU."""
    from fasttie._kernels import bitsliced, histogram
    from fasttie._kernels.cpu import bitsliced_codes

    if bitsliced_codes(n_words):
        kernel = bitsliced.hist_classes_bitsliced if n_words == 1 else bitsliced.hist_classes_bitsliced_two_words
    elif n_words >= 2:
        kernel = histogram.tiled_kernel(n_words)
    else:
        kernel = histogram.hist_segments_one_word
    return kernel.py_func.__name__, kernel


def fresh_asm(dispatcher):
    """The assembly of ``dispatcher``'s signatures, compiled again from its Python function
    without a cache (a kernel loaded from numba's cache may show none)."""
    if not dispatcher.signatures:
        raise RuntimeError(f"{dispatcher.py_func.__name__} has no compiled signature: run it first")
    options = {k: v for k, v in dispatcher.targetoptions.items() if k not in ("cache", "nopython")}
    fresh = numba.njit(**options)(dispatcher.py_func)
    asm = []
    for signature in dispatcher.signatures:
        fresh.compile(signature)
        asm.append(fresh.inspect_asm(signature))
    return "\n".join(asm)


# --------------------------------------------------------------------------------------------
# issue rates: inline assembly in numba loops

_VECTOR_CHAINS = 10  # destinations in turn (vector registers 0..9; sources 10..15)
_GPR_CHAINS = ["rax", "rcx", "rdx", "rsi", "r8", "r9", "r10", "r11"]
_GPR_FIXED = ["r12", "r13", "r14", "r15", "rbx"]
_REPEATS = 6  # rounds of the chains in one block
_BUFFER_BYTES = 1 << 14  # the memory operands' buffer: in L1


def template(ins):
    """A block of inline assembly of ``ins``'s form (registers renamed, memory operands at
    distinct offsets of operand $0), instructions in it; or None where the form is not handled.
    Memory-source operations are timed without their load (counted as a load apart)."""
    if ins.mnemonic.startswith(("j", "push", "pop", "call", "ret", "leave")) or not ins.operands:
        return None  # branches are fused with the flag-setting instruction; the stack is not to be moved
    ops = list(ins.operands)
    # a memory source of an operation: time the operation on a register (its load is counted apart)
    if classify(ins) not in ("load", "store", "mem inc") and not ins.mnemonic.startswith("lea"):
        for k, op in enumerate(ops[:-1]):
            if "(" in op:
                if ins.width == "gpr":
                    size = next((_GPR_NAMES[o[1:]][1] for o in ops if o[1:] in _GPR_NAMES), 64)
                    ops[k] = "%" + _gpr_name(_GPR_FIXED[0], size)
                else:
                    ops[k] = f"%{ins.width}15"
    lines, offset = [], 0
    chains = _VECTOR_CHAINS if ins.width != "gpr" else len(_GPR_CHAINS)
    clobbers = set()
    for _ in range(_REPEATS):
        for c in range(chains):
            out, fixed_vec, fixed_gpr = [], 10, 0
            for k, op in enumerate(ops):
                last = k == len(ops) - 1
                if op.startswith("$"):
                    out.append("$" + op)  # $imm -> $$imm in LLVM's template
                elif "(" in op and ins.mnemonic.startswith("lea"):
                    out.append(f"{8 * (c + 1)}(%{_GPR_FIXED[-1]})")  # an address computed, nothing read
                    clobbers.add(f"~{{{_GPR_FIXED[-1]}}}")
                elif "(" in op:
                    out.append(f"{offset % _BUFFER_BYTES}($0)")
                    offset += 64
                elif m := _VREG.match(op):
                    number = c if last else fixed_vec
                    if not last:
                        fixed_vec += 1
                    out.append(f"%{m.group(1)}mm{number}")
                    clobbers.add(f"~{{{m.group(1)}mm{number}}}")
                elif op[1:] in _GPR_NAMES:
                    bits = _GPR_NAMES[op[1:]][1]
                    if last:
                        reg = _GPR_CHAINS[c]
                    else:
                        reg = _GPR_FIXED[fixed_gpr]
                        fixed_gpr += 1
                    out.append("%" + _gpr_name(reg, bits))
                    clobbers.add(f"~{{{reg}}}")
                else:
                    return None
            lines.append(f"{ins.mnemonic} {', '.join(out)}")
    clobbers.add("~{memory}")
    clobbers.add("~{dirflag}")
    clobbers.add("~{fpsr}")
    clobbers.add("~{flags}")
    return "\n".join(lines), len(lines), ",".join(sorted(clobbers))


def _asm_loop(text, constraints):
    llvmlite.binding.initialize_native_asmparser()  # numba's JIT assembles inline assembly with it
    """A numba function ``loop(buffer, n)`` running ``text`` n times (buffer: uint64 array whose
    data pointer is operand $0)."""

    @intrinsic
    def block(typingctx, pointer):
        if pointer != types.uintp:
            return None

        def codegen(context, builder, signature, args):
            fnty = ir.FunctionType(ir.VoidType(), [ir.IntType(64)])
            builder.asm(fnty, text, "r," + constraints, [args[0]], side_effect=True)
            return context.get_dummy_value()

        return types.void(pointer), codegen

    @numba.njit(nogil=True)
    def loop(buffer, n):
        pointer = buffer.ctypes.data
        for _ in range(n):
            block(pointer)

    return loop


def _best_rate(loop, per_call, buffer, seconds, tries=15):
    """Instructions per second of ``loop`` (``per_call`` instructions an iteration): the best of
    ``tries`` runs of about ``seconds`` each."""
    loop(buffer, 10)
    n = 1000
    while True:
        t = time.perf_counter()
        loop(buffer, n)
        elapsed = time.perf_counter() - t
        if elapsed > seconds / 4:
            break
        n *= 4
    n = max(1, int(n * seconds / elapsed))
    best = 0.0
    for _ in range(tries):
        t = time.perf_counter()
        loop(buffer, n)
        best = max(best, n * per_call / (time.perf_counter() - t))
    return best


class IssueRates:
    """Instructions per second of instruction forms, measured once each."""

    def __init__(self, seconds, tries):
        self.seconds, self.tries = seconds, tries
        self.buffer = np.zeros(_BUFFER_BYTES // 8 + 64, dtype=np.uint64)
        self.rates = {}
        self.loops = {}
        self.checked = {}

    def key(self, ins):
        made = template(ins)
        return None if made is None else made[0].splitlines()[0]

    def rate(self, ins):
        made = template(ins)
        if made is None:
            return None
        text, count, clobbers = made
        key = text.splitlines()[0]
        if key not in self.rates:
            loop = _asm_loop(text, clobbers)
            if os.environ.get("ROOF_DEBUG"):
                print("microbenchmark", key, clobbers, flush=True)
            loop(self.buffer, 1)
            asm = loop.inspect_asm(loop.signatures[0])
            self.checked[key] = asm.count(ins.mnemonic) >= count
            if not self.checked[key]:
                raise RuntimeError(f"the microbenchmark of {key!r} lacks it in its assembly")
            self.rates[key] = _best_rate(loop, count, self.buffer, self.seconds, self.tries)
            self.loops[key] = (loop, count)
        return self.rates[key]

    def refine(self, rounds):
        """Measure every instruction form again, ``rounds`` times in turn, keeping the best rate:
        a burst of other work on the machine then slows one of its runs, not all."""
        for _ in range(rounds):
            for key, (loop, count) in self.loops.items():
                self.rates[key] = max(self.rates[key], _best_rate(loop, count, self.buffer, self.seconds, self.tries))

    def clock(self):
        """Cycles per second: a chain of dependent adds, one a cycle."""
        text = "\n".join(["addq $$1, %rax"] * 64)
        loop = _asm_loop(text, "~{rax},~{flags}")
        loop(self.buffer, 1)
        return _best_rate(loop, 64, self.buffer, self.seconds, self.tries)


def loop_times(loop, rates):
    """{class: seconds per iteration} of a loop; instructions without a template take the
    slowest measured rate of their class (or the clock where none)."""
    per_class = defaultdict(float)
    for ins in loop.instructions:
        if ins.mnemonic.startswith("j"):
            continue
        cls = classify(ins)
        rate = rates.rate(ins)
        per_class[cls] += 1.0 / (rate or rates.clock_hz)
        if ins.memory and cls not in ("load", "store", "mem inc") and not ins.mnemonic.startswith("lea"):
            width = ins.width
            load = Instruction("", "vmovdqu" if width != "gpr" else "movq",
                               ["0(%rdi)", f"%{width}0" if width != "gpr" else "%rax"])
            if width == "zmm":
                load = Instruction("", "vmovdqu64", ["0(%rdi)", "%zmm0"])
            per_class["load"] += 1.0 / (rates.rate(load) or rates.clock_hz)
    return per_class


# --------------------------------------------------------------------------------------------
# what runs: the kernel, evaluate, the distance-only floor, a streaming read

_FLOOR_TILE = 4096


def _make_floor():
    from fasttie._kernels.popcount import popcount64

    @numba.njit(nogil=True)
    def distance_sums(query_words, db_words, tile, start, stop):
        n_db, n_words = db_words.shape
        total = np.uint64(0)
        for lo in range(0, n_db, _FLOOR_TILE):
            n = min(_FLOOR_TILE, n_db - lo)
            for t in range(n):
                for w in range(n_words):
                    tile[w, t] = db_words[lo + t, w]
            for i in range(start, stop):
                for w in range(n_words):
                    q = query_words[i, w]
                    row = tile[w]
                    for t in range(n):
                        total += popcount64(q ^ row[t])
        return total

    return distance_sums


_floor_kernel = None


def distance_only(query_words, db_words, n_threads):
    """The distance-only floor on ``n_threads`` threads (queries split between them)."""
    global _floor_kernel
    if _floor_kernel is None:
        _floor_kernel = _make_floor()
    n_queries, n_words = query_words.shape
    bounds = np.linspace(0, n_queries, n_threads + 1).astype(np.int64)
    tiles = [np.empty((n_words, _FLOOR_TILE), dtype=np.uint64) for _ in range(n_threads)]
    if n_threads == 1:
        return _floor_kernel(query_words, db_words, tiles[0], 0, n_queries)
    with ThreadPoolExecutor(n_threads) as pool:
        parts = list(pool.map(lambda k: _floor_kernel(query_words, db_words, tiles[k], bounds[k], bounds[k + 1]),
                              range(n_threads)))
    return sum(parts)


@numba.njit(nogil=True)
def _stream_sum(words):
    total = np.uint64(0)
    for i in range(words.shape[0]):
        total += words[i]
    return total


def stream_bandwidth(n_threads, mib, tries=3):
    """Bytes per second of a streaming read of ``mib`` MiB a thread (best of ``tries``)."""
    arrays = [np.ones(mib * (1 << 17), dtype=np.uint64) for _ in range(n_threads)]
    _stream_sum(arrays[0][:16])
    best = 0.0
    for _ in range(tries):
        t = time.perf_counter()
        if n_threads == 1:
            _stream_sum(arrays[0])
        else:
            with ThreadPoolExecutor(n_threads) as pool:
                list(pool.map(_stream_sum, arrays))
        best = max(best, sum(a.nbytes for a in arrays) / (time.perf_counter() - t))
    return best


def make_codes(n_queries, n_db, max_bits, seed=0):
    """Seeded class-correlated codes at ``max_bits`` bits (narrower widths take their first bits:
    every bit is drawn alike)."""
    from benchmarks.data.synthetic import make_hashing_data

    return make_hashing_data(n_queries, n_db, max(64, max_bits), seed=seed)


def packed(ft, words, n_bits):
    return ft.pack_codes(np.ascontiguousarray(words.view(np.uint8)[:, : n_bits // 8]), packed=True, n_bits=n_bits,
                         bitorder="little")


class EngineKernel:
    """The histogram pass as the engine calls it (``fasttie.hamming.engine.counts_of`` without
    the packing and the database's preparation, made once)."""

    def __init__(self, queries, database, query_labels, db_labels, n_threads):
        from fasttie.hamming import engine

        query_codes, db_codes = engine.pack_pair(queries, database)
        self.n_queries = query_codes.n
        spec = engine.make_relevance(query_labels, db_labels, None, query_codes.n, db_codes.n)
        self.engine, self.spec, self.n_threads = engine, spec, n_threads
        self.db = engine._DatabasePass(db_codes, spec, stable=False, n_threads=n_threads)
        self.c = self.db.chunk(query_codes.words, spec.rows(0, self.n_queries))
        self.hist = np.zeros((self.n_queries, db_codes.n_bits + 1, spec.n_grades), dtype=np.int64)
        self.splits = self.db.splits_database(self.n_queries, n_threads)

    def queries_per_block(self):
        """Queries that pass over each tile the kernel reads."""
        if self.splits:
            return self.n_queries
        return -(-self.n_queries // self.n_threads)

    def __call__(self):
        self.hist[:] = 0
        if self.splits:
            self.db.counts_by_slices(self.c, self.hist, self.n_threads)
        else:
            self.engine.run_blocks(lambda lo, hi: self.db.counts(self.c, self.hist, lo, hi), self.n_queries,
                                   self.n_threads, granule=2, blocks_per_thread=1)


def timed_rate(fn, pairs, repeats):
    """(median pairs per second of ``repeats`` calls, others' CPU in cores meanwhile)."""
    median, _, load = timed(fn, repeats)
    return pairs / median, load.others


# --------------------------------------------------------------------------------------------
# the report

def _fmt_rate(x):
    return f"{x / 1e9:.2f}" if x >= 1e8 else f"{x / 1e9:.3f}"


def _fmt_fraction(x):
    return f"{x:.2f}" if x >= 0.1 else f"{x:.3f}"


def show_loops(name, loops, rates):
    print(f"\nhot loops of {name}:")
    for loop in loops:
        times = loop_times(loop, rates)
        print(f"\n  {loop.role}: {len(loop.instructions)} instructions, {loop.pairs_per_iteration:g} pairs an iteration "
              f"({loop.how}), {loop.popcounts:g} 64-bit popcounts an iteration")
        for ins in loop.instructions:
            rate = rates.rate(ins)
            shown = f"{rate / 1e9:6.2f} G/s" if rate else "   (fused)" if ins.mnemonic.startswith("j") else "       -"
            print(f"    {ins.mnemonic:<12} {', '.join(ins.operands):<28} {classify(ins):<9} {shown}")
        print("    cycles an iteration by class: " + ", ".join(
            f"{cls} {times[cls] * rates.clock_hz:.2f}" for cls in CLASSES if times.get(cls)))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bits", default="16,32,64,128,256,512", help="comma list of code widths (16, 32, multiples of 64)")
    p.add_argument("--sizes", default="1000000,20000000", help="comma list of database sizes (codes)")
    p.add_argument("--threads", default="1,2", help="comma list of thread counts")
    p.add_argument("--queries", type=int, default=256,
                   help="queries at the smallest size; larger sizes take 64 (even; default 256)")
    p.add_argument("--repeats", type=int, default=3, help="timed calls of each kind (median)")
    p.add_argument("--quick", action="store_true",
                   help="seconds: 64 and 128 bits unless --bits is given, 20,000 codes, 16 queries, one call, "
                        "short microbenchmarks")
    p.add_argument("--show-loop", type=int, default=0, metavar="BITS",
                   help="print the hot loops of this width, each instruction with its class and measured rate")
    args = p.parse_args(argv)
    if args.quick:
        if "--bits" not in " ".join(argv or sys.argv[1:]):
            args.bits = "64,128"
        if "--sizes" not in " ".join(argv or sys.argv[1:]):
            args.sizes = "20000"
        args.queries, args.repeats = min(args.queries, 16), 1
    bits_list, sizes, threads_list = parse_int_list(args.bits), parse_int_list(args.sizes), parse_int_list(args.threads)
    if any(b not in (16, 32) and (b <= 0 or b % 64) for b in bits_list):
        p.error("--bits: 16, 32 or multiples of 64")
    if args.queries < 2 or args.queries % 2:
        p.error("--queries must be even and >= 2")

    import fasttie as ft

    seconds = 0.003 if args.quick else 0.02
    rates = IssueRates(seconds, 5 if args.quick else 15)
    with LoadMeter() as setup_load:
        rates.clock_hz = rates.clock()
        bandwidth = {t: stream_bandwidth(t, 16 if args.quick else 256) for t in threads_list}
    print(f"CPU: {cpu_model()} ({os.cpu_count()} CPUs), clock {rates.clock_hz / 1e9:.2f} GHz (a dependent add "
          f"chain), streaming read " + ", ".join(f"{bandwidth[t] / 1e9:.1f} GB/s at {t} thread{'s' * (t > 1)}"
                                                 for t in threads_list)
          + f"; others' CPU meanwhile {setup_load.others:.2f} cores")
    from fasttie._kernels.cpu import kernel_choice
    print(f"numba {numba.__version__}, FASTTIE_KERNEL={kernel_choice()}")

    # the kernels' hot loops: each width's kernel run once on a few codes as the engine runs it (the
    # signature evaluate runs: the same types at every size), then its assembly read
    models = {}
    small = make_codes(4, 4096, max(bits_list), seed=1)
    for n_bits in bits_list:
        n_words = -(-n_bits // 64)
        EngineKernel(packed(ft, small.query_words, n_bits), packed(ft, small.db_words, n_bits), small.query_labels,
                     small.db_labels, 1)()
        name, dispatcher = engine_kernel(n_words)
        models[n_bits] = (name, hot_loops(fresh_asm(dispatcher), name, n_words))
        for loop in models[n_bits][1]:
            loop_times(loop, rates)  # measure the issue rates of its instructions
    rates.refine(rounds=0 if args.quick else 3)
    for n_bits, (name, loops) in models.items():
        if args.show_loop == n_bits:
            show_loops(name, loops, rates)

    rows = []
    for n_db in sizes:
        n_queries = args.queries if n_db == min(sizes) else min(args.queries, 64)
        data = make_codes(n_queries, n_db, max(bits_list))
        for n_bits in bits_list:
            n_words = -(-n_bits // 64)
            queries, database = packed(ft, data.query_words, n_bits), packed(ft, data.db_words, n_bits)
            q_words = np.ascontiguousarray(data.query_words[:, :n_words])
            db_words = np.ascontiguousarray(data.db_words[:, :n_words])
            if n_bits < 64:
                mask = np.uint64((1 << n_bits) - 1)
                q_words &= mask
                db_words &= mask
            pairs = n_queries * n_db
            for n_threads in threads_list:
                kernel_call = EngineKernel(queries, database, data.query_labels, data.db_labels, n_threads)
                kernel_call()  # compile or load
                name, loops = models[n_bits]
                overlap = no_overlap = 0.0
                popcounts = per_pair_ops = 0.0
                per_pair_class = Counter()
                for loop in loops:
                    times = loop_times(loop, rates)
                    overlap += max(times.values()) / loop.pairs_per_iteration
                    no_overlap += sum(times.values()) / loop.pairs_per_iteration
                    popcounts += loop.popcounts / loop.pairs_per_iteration
                    for cls, count in loop.per_class.items():
                        per_pair_class[cls] += count / loop.pairs_per_iteration
                per_pair_ops = sum(per_pair_class.values())
                ceiling, ceiling_low = n_threads / overlap, n_threads / no_overlap
                code_bytes = 8 * n_words  # codes of up to 64 bits lie in one uint64 word
                if name.startswith("hist_segments_one_word"):
                    per_block = min(32, kernel_call.queries_per_block())
                    pair_bytes = code_bytes / per_block
                else:
                    per_block = kernel_call.queries_per_block()
                    pair_bytes = (8 * n_words + 4) / per_block
                memory = bandwidth[n_threads] / pair_bytes
                kernel_rate, kernel_load = timed_rate(kernel_call, pairs, args.repeats)
                del kernel_call

                def whole(threads=n_threads, labels=(data.query_labels, data.db_labels)):
                    return ft.evaluate(queries, database, *labels, metrics=METRICS, n_threads=threads)

                whole()
                evaluate_rate, evaluate_load = timed_rate(whole, pairs, args.repeats)
                distance_only(q_words, db_words, n_threads)
                floor_rate, floor_load = timed_rate(lambda: distance_only(q_words, db_words, n_threads), pairs,
                                                    args.repeats)
                roof = min(ceiling, memory)
                rows.append({
                    "bits": n_bits, "codes": n_db, "queries": n_queries, "threads": n_threads, "kernel": name,
                    "popcount": per_pair_class["popcount"], "pop_words": popcounts, "ops": per_pair_ops,
                    "ceiling": ceiling, "no_overlap": ceiling_low, "memory": memory,
                    "kernel_rate": kernel_rate, "kernel_fraction": kernel_rate / roof,
                    "evaluate_rate": evaluate_rate, "evaluate_fraction": evaluate_rate / roof,
                    "floor_rate": floor_rate, "floor_fraction": floor_rate / roof,
                    "others": max(kernel_load, evaluate_load, floor_load),
                })
                print(f"  {n_bits} bits, {n_db:,} codes, {n_queries} queries, {n_threads} thread(s): done", flush=True)
        del data

    print("\nper pair, from the assembly (loops a pair goes through; pairs an iteration):")
    for n_bits, (name, loops) in models.items():
        parts = "; ".join(f"{loop.role}: {len(loop.instructions)} instructions / {loop.pairs_per_iteration:g} pairs "
                          f"({loop.how})" for loop in loops)
        print(f"  {n_bits} bits, {name}: {parts}")
        counts = Counter()
        for loop in loops:
            for cls, count in loop.per_class.items():
                counts[cls] += count / loop.pairs_per_iteration
        print("    " + ", ".join(f"{cls} {counts[cls]:.2f}" for cls in CLASSES if counts[cls]))
    print("\nissue rates measured (G instructions/s, best of 15 runs in each of several rounds; inline assembly in numba loops, "
          "independent destinations): " + ", ".join(f"`{k}` {v / 1e9:.2f}" for k, v in sorted(rates.rates.items())))
    print()
    print("| bits | codes | queries | threads | ops/pair (popcount) | pop/pair | ceiling G pairs/s (no-overlap) "
          "| memory ceiling | kernel G pairs/s (fraction) | evaluate (fraction) | distance-only (fraction) | others |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in rows:
        codes = f"{r['codes'] / 1e6:g}M" if r["codes"] >= 1e6 else f"{r['codes']:,}"
        print(f"| {r['bits']} | {codes} | {r['queries']} | {r['threads']} | {r['ops']:.2f} ({r['popcount']:.2f}) "
              f"| {r['pop_words']:.2f} | {_fmt_rate(r['ceiling'])} ({_fmt_rate(r['no_overlap'])}) "
              f"| {_fmt_rate(r['memory'])} | {_fmt_rate(r['kernel_rate'])} ({_fmt_fraction(r['kernel_fraction'])}) "
              f"| {_fmt_rate(r['evaluate_rate'])} ({_fmt_fraction(r['evaluate_fraction'])}) "
              f"| {_fmt_rate(r['floor_rate'])} ({_fmt_fraction(r['floor_fraction'])}) | {r['others']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
