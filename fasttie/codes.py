"""Bit conventions: binary codes to packed uint64 words and back.

Layout: bit ``b`` of a code (column ``b`` of its 0/1 matrix) is bit ``b % 64`` (least
significant first) of word ``b // 64``. Padding bits past ``n_bits`` are zero, so the Hamming
distance is the popcount of the xor of the words, whatever ``n_bits`` is.
"""

from __future__ import annotations

import mmap
import os
import sys
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Any, overload

import numpy as np

from . import _device
from .errors import InputError, InputTypeError
from .validation import numeric_array

__all__ = ["PackedCodes", "ShardedCodes", "pack_codes", "pack_pair", "unpack_codes"]

_ROWS_PER_CHUNK = 1 << 16  # pack large matrices in slices: temporaries stay small
_REVERSE_BITS = np.array([int(f"{b:08b}"[::-1], 2) for b in range(256)], dtype=np.uint8)


@dataclass(frozen=True, eq=False)
class PackedCodes:
    """Binary codes packed into uint64 words.

    Build it with :func:`pack_codes`; :func:`fasttie.evaluate` and :func:`fasttie.search` take
    it wherever they take codes, so a large database or a benchmark loop packs only once.

    Attributes
    ----------
    words : ndarray of uint64, shape (n, n_words)
        C-contiguous; bit ``b`` of a code is bit ``b % 64`` of word ``b // 64``; padding is zero.
        Or a GPU array of the same layout (anything with ``__cuda_array_interface__``), kept on
        the device for ``device="cuda"`` (:func:`pack_codes` of a GPU matrix builds one).
    n_bits : int
        Code length in bits, ``n_bits <= 64 * n_words``.
    """

    words: Any  # ndarray of uint64, or a numba device array (on_device)
    n_bits: int

    def __post_init__(self):
        if _device.is_device_array(self.words):
            object.__setattr__(self, "words", _device.device_view(self.words))
        words = self.words
        on_device = self.on_device
        if not (isinstance(words, np.ndarray) or on_device) or words.dtype != np.uint64 or words.ndim != 2:
            raise InputTypeError(
                "PackedCodes.words must be a 2-D uint64 array; build PackedCodes with "
                "fasttie.pack_codes()"
            )
        if not (words.is_c_contiguous() if on_device else words.flags.c_contiguous):
            raise InputError("PackedCodes.words must be C-contiguous; use fasttie.pack_codes()")
        if not (1 <= self.n_bits <= 64 * words.shape[1]) or words.shape[1] != _n_words(self.n_bits):
            raise InputError(
                f"{{n_bits}}={self.n_bits} does not fit words of shape {words.shape}: "
                f"expected {_n_words(self.n_bits)} words", argument="n_bits")

    @property
    def on_device(self) -> bool:
        """Whether the words are in GPU memory."""
        return not isinstance(self.words, np.ndarray)

    def to_host(self) -> "PackedCodes":
        """These codes with their words in host memory (itself when they are there already)."""
        return PackedCodes(self.words.copy_to_host(), self.n_bits) if self.on_device else self

    @property
    def n(self) -> int:
        """Number of codes."""
        return self.words.shape[0]

    @property
    def n_words(self) -> int:
        """Number of uint64 words per code."""
        return self.words.shape[1]

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, rows) -> "PackedCodes":
        """Rows as new PackedCodes (a slice gives a view, an index array a copy; on a GPU, slices only)."""
        if self.on_device:
            if not isinstance(rows, slice) or rows.step not in (None, 1):
                raise IndexError("index PackedCodes on a GPU with a contiguous slice")
            return PackedCodes(self.words[rows], self.n_bits)
        words = self.words[rows]
        if words.ndim != 2:
            raise IndexError("index PackedCodes with a slice or an array of row indices")
        return PackedCodes(np.ascontiguousarray(words), self.n_bits)

    def __repr__(self) -> str:
        return f"PackedCodes(n={self.n}, n_bits={self.n_bits})"


def _n_words(n_bits: int) -> int:
    return (n_bits + 63) // 64


def _bytes_to_words(little_bytes: np.ndarray, n_bits: int) -> np.ndarray:
    """(n, ceil(n_bits/8)) uint8, LSB-first bit order -> (n, n_words) uint64."""
    n = little_bytes.shape[0]
    n_words = _n_words(n_bits)
    padded = np.zeros((n, n_words * 8), dtype=np.uint8)
    padded[:, : little_bytes.shape[1]] = little_bytes
    return padded.view("<u8").astype(np.uint64, copy=False).reshape(n, n_words)


@overload
def pack_codes(codes: np.ndarray | PackedCodes, *, packed: bool = ..., n_bits: int | None = ..., bitorder: str = ...,
               name: str = ...) -> PackedCodes: ...
@overload
def pack_codes(codes: list | tuple | ShardedCodes, *, packed: bool = ..., n_bits: int | None = ..., bitorder: str = ...,
               name: str = ...) -> PackedCodes | ShardedCodes: ...
def pack_codes(
    codes: Any, *, packed: bool = False, n_bits: int | None = None, bitorder: str = "big", name: str = "codes"
) -> PackedCodes | ShardedCodes:
    """Pack binary codes into uint64 words once, for repeated evaluation.

    Parameters
    ----------
    codes : array_like, shape (n, n_bits), PackedCodes, or list of arrays or .npy paths
        A list (or tuple) of 2-D numpy arrays or of ``.npy`` paths (each opened with
        ``mmap_mode="r"``) is a database in row shards, in order: the result is then a
        :class:`ShardedCodes`, packed tile by tile while it is evaluated. Without ``packed``: a matrix of ±1 (any numeric dtype), of 0/1, or bool. A value
        other than -1, 0 and 1, NaN, or a mix of -1 and 0 (a ``sign(0)`` hazard) is an error.
        A uint8 matrix is always read as one bit per entry, never guessed to be packed bytes.
        A matrix on a GPU (CuPy, torch CUDA: ``__cuda_array_interface__``) is checked and
        packed there, and its PackedCodes stay on the device (``device="cuda"``).
        With ``packed=True``: bytes packed elsewhere, a (n, ceil(n_bits / 8)) uint8 array.
    packed : bool, default False
        Read ``codes`` as packed bytes (``np.packbits`` output, faiss binary codes,
        MATLAB ``compactbit``).
    n_bits : int, optional
        Code length; required with ``packed=True``, checked against the width otherwise.
    bitorder : {"big", "little"}, default "big"
        With ``packed=True``: "big" = most significant bit first (``np.packbits`` default);
        "little" = least significant first (faiss, ``compactbit``).
    name : str, default "codes"
        Argument name used in error messages.

    Returns
    -------
    PackedCodes or ShardedCodes
        Words of shape (n, ceil(n_bits / 64)), zero padding bits. Bytes that already are the
        words' layout (``packed=True``, ``bitorder="little"``, ``n_bits`` a multiple of 64, a
        C-contiguous array on a little-endian host) are not copied: the words are a read-only
        view of them, so a memory-mapped ``.npy`` stays on disk and :func:`fasttie.evaluate`
        streams it tile by tile. A list of shards gives a :class:`ShardedCodes`.

    Raises
    ------
    TypeError
        Non-numeric codes, or ``packed=True`` with a dtype other than uint8.
    ValueError
        Wrong number of dimensions, no codes or no bits, values outside {-1, 0, 1}, NaN,
        -1 and 0 mixed, packed width not matching ``n_bits``, padding bits set.

    Examples
    --------
    >>> import numpy as np, fasttie as ft
    >>> ft.pack_codes(np.array([[1, -1, 1], [-1, -1, 1]]))
    PackedCodes(n=2, n_bits=3)
    >>> p = ft.pack_codes(np.packbits([[1, 0, 1]], axis=1), packed=True, n_bits=3)
    >>> int(p.words[0, 0])
    5
    """
    if is_shard_list(codes):
        return ShardedCodes(codes, packed=packed, n_bits=n_bits, bitorder=bitorder, name=name)
    if isinstance(codes, (PackedCodes, ShardedCodes)):
        if n_bits is not None and n_bits != codes.n_bits:
            raise InputError(f"{name} has {codes.n_bits} bits but {{n_bits}}={n_bits} was asked for",
                             argument="n_bits")
        return codes
    if _device.is_device_array(codes):
        if packed:  # bytes are small: packed on the host, the words go back to the device
            on_host = _pack_bytes(_device.to_host(codes), n_bits, bitorder, name)
            return PackedCodes(_device.to_device(on_host.words), on_host.n_bits)
        return PackedCodes(*_device.pack_words(codes, n_bits, name))
    if packed:
        return _pack_bytes(codes, n_bits, bitorder, name)
    if bitorder not in ("big", "little"):
        raise InputError(f"bitorder must be 'big' or 'little', got {bitorder!r}")
    array = numeric_array(codes, name, "a numeric or bool array")
    if array.ndim != 2:
        raise InputError(
            f"{name} must be 2-D (n_codes, n_bits), got shape {array.shape}; "
            "reshape a single code with codes[None, :]")
    n, width = array.shape
    if n == 0 or width == 0:
        raise InputError(f"{name} is empty (shape {array.shape}); need at least one code and one bit")
    if n_bits is not None and n_bits != width:
        raise InputError(f"{name} has {width} bit columns but {{n_bits}}={n_bits}", argument="n_bits")
    words = np.empty((n, _n_words(width)), dtype=np.uint64)
    seen_negative = seen_zero = False
    for start in range(0, n, _ROWS_PER_CHUNK):
        chunk = array[start : start + _ROWS_PER_CHUNK]
        if array.dtype != np.bool_:
            if np.issubdtype(array.dtype, np.floating) and np.isnan(chunk).any():
                raise InputError(f"{name} contains NaN; binarize codes before evaluation")
            is_negative = chunk == -1
            is_zero = chunk == 0
            bad = ~(is_negative | is_zero | (chunk == 1))
            if bad.any():
                row, col = np.argwhere(bad)[0]
                value = chunk[row, col]
                if np.issubdtype(array.dtype, np.integer):
                    hint = ". If these are packed bytes, call fasttie.pack_codes(x, packed=True, n_bits=...)"
                else:  # real-valued network outputs (tanh, sigmoid): not yet binary
                    hint = ". These look like real-valued outputs; binarize them first: np.where(x >= 0, 1, -1)"
                raise InputError(
                    f"{name} must hold ±1, 0/1 or bool values; found {value.item()!r} at "
                    f"[{start + row}, {col}]{hint}"
                )
            seen_negative |= bool(is_negative.any())
            seen_zero |= bool(is_zero.any())
            if seen_negative and seen_zero:
                raise InputError(
                    f"{name} mixes -1 and 0: ±1 codes must not contain 0 (sign(0) = 0 is a "
                    "classic binarization bug); use np.where(x >= 0, 1, -1)"
                )
            chunk = chunk > 0
        words[start : start + len(chunk)] = _bytes_to_words(_pack_rows(chunk), width)
    return PackedCodes(words, width)


def _pack_rows(bits: np.ndarray) -> np.ndarray:
    """np.packbits of each row of a bool matrix, least significant bit first, in one call over
    the flattened rows (padded to whole bytes): numpy's per-row packing along an axis is several
    times slower on rows of a few bytes (1M rows of 24 labels: 24 ms against 4 ms)."""
    n, width = bits.shape
    n_bytes = (width + 7) // 8
    if width % 8:
        padded = np.zeros((n, 8 * n_bytes), dtype=np.bool_)
        padded[:, :width] = bits
        bits = padded
    return np.packbits(bits.reshape(-1), bitorder="little").reshape(n, n_bytes)


def _pack_bytes(raw, n_bits, bitorder, name) -> PackedCodes:
    if n_bits is None:
        raise InputError(f"{name}: packed=True needs {{n_bits}} (the code length in bits)", argument="n_bits")
    if isinstance(n_bits, bool) or not isinstance(n_bits, (int, np.integer)) or n_bits < 1:
        raise InputError(f"{{n_bits}} must be a positive integer, got {n_bits!r}", argument="n_bits")
    n_bits = int(n_bits)
    if bitorder not in ("big", "little"):
        raise InputError(f"bitorder must be 'big' or 'little', got {bitorder!r}")
    array = np.asarray(raw)
    if array.dtype != np.uint8:
        raise InputTypeError(f"{name}: packed bytes must be uint8, got dtype {array.dtype}")
    n_bytes = (n_bits + 7) // 8
    if array.ndim != 2 or array.shape[1] != n_bytes:
        raise InputError(
            f"{name}: packed bytes for {{n_bits}}={n_bits} must have shape (n, {n_bytes}), "
            f"got {array.shape}", argument="n_bits")
    if array.shape[0] == 0:
        raise InputError(f"{name} is empty; need at least one code")
    if _is_word_layout(array, n_bits, bitorder):  # no padding bits, no reordering: a view of the bytes
        words = array.view("<u8")
        words.flags.writeable = False
        return PackedCodes(words, n_bits)
    words = np.empty((array.shape[0], _n_words(n_bits)), dtype=np.uint64)
    spare = 8 * n_bytes - n_bits
    # mask of the padding bits of the last byte, in the caller's bit order
    pad_mask = 0 if spare == 0 else (((1 << spare) - 1) if bitorder == "big" else (0xFF << (8 - spare)) & 0xFF)
    for start in range(0, array.shape[0], _ROWS_PER_CHUNK):
        chunk = array[start : start + _ROWS_PER_CHUNK]
        if pad_mask and (chunk[:, -1] & pad_mask).any():
            row = int(np.flatnonzero(chunk[:, -1] & pad_mask)[0])
            raise InputError(
                f"{name}: padding bits past {{n_bits}}={n_bits} are set in code {start + row}; "
                f"check {{n_bits}} and bitorder={bitorder!r}", argument="n_bits")
        little = _REVERSE_BITS[chunk] if bitorder == "big" else chunk
        words[start : start + len(chunk)] = _bytes_to_words(little, n_bits)
    return PackedCodes(words, n_bits)


def _is_word_layout(array, n_bits, bitorder) -> bool:
    """Whether packed bytes are already uint64 words, least significant bit first, no padding."""
    return (bitorder == "little" and n_bits % 64 == 0 and sys.byteorder == "little"
            and isinstance(array, np.ndarray) and array.flags.c_contiguous)


def memory_mapped(array: Any) -> bool:
    """Whether a numpy array's memory is (a view of) a memory-mapped file."""
    while isinstance(array, np.ndarray):
        if isinstance(array, np.memmap):
            return True
        array = array.base
    return isinstance(array, mmap.mmap)


def is_shard_list(codes: Any) -> bool:
    """A list or tuple of 2-D numpy arrays and paths: a database in shards (a nested list of
    numbers is a matrix, and a list of 2-D arrays would be 3-D, so neither is ambiguous)."""
    if not isinstance(codes, (list, tuple)) or not codes:
        return False
    return all(isinstance(c, (str, os.PathLike)) or (isinstance(c, np.ndarray) and c.ndim == 2) for c in codes)


class ShardedCodes:
    """A database of codes in row shards (arrays or memory-mapped ``.npy`` files), read tile by tile.

    Build it with :func:`pack_codes` of a list: ``ft.pack_codes(["part0.npy", "part1.npy"],
    packed=True, n_bits=64, bitorder="little")``. :func:`fasttie.evaluate` takes it as its
    database and counts it a tile of at most ``2**23`` rows at a time, within one shard, so
    no whole-database array is ever made: each tile is packed as :func:`pack_codes` would pack
    it (a view for bytes in the words' layout, else a copy of the tile alone) and checked then
    (an error names the shard and its rows). The results are bitwise those of the concatenated
    database in memory.

    Attributes
    ----------
    shards : tuple of ndarray or PackedCodes
        The shards in order (paths opened with ``np.load(path, mmap_mode="r")``).
    n_bits : int
        Code length in bits.
    starts : ndarray of int64, shape (n_shards + 1,)
        First row of each shard in the whole database, then the number of codes.
    """

    def __init__(self, shards: Sequence[Any], *, packed: bool = False, n_bits: int | None = None, bitorder: str = "big",
                 name: str = "codes") -> None:
        if bitorder not in ("big", "little"):
            raise InputError(f"bitorder must be 'big' or 'little', got {bitorder!r}")
        if not is_shard_list(shards) and not (isinstance(shards, (list, tuple)) and shards
                                               and all(isinstance(s, PackedCodes) for s in shards)):
            raise InputTypeError(f"{name}: shards must be a non-empty list of 2-D numpy arrays, .npy paths or "
                                 "PackedCodes")
        opened = []
        for index, shard in enumerate(shards):
            if isinstance(shard, (str, os.PathLike)):
                try:
                    shard = np.load(shard, mmap_mode="r", allow_pickle=False)
                except (OSError, ValueError) as error:
                    raise InputError(f"{name} shard {index} ({os.fspath(shards[index])}): cannot read it as a "
                                     f".npy file ({error})") from None
                if shard.ndim != 2:
                    raise InputError(f"{name} shard {index} must be 2-D, got shape {shard.shape}")
            opened.append(self._first_look(shard, index, packed, n_bits, bitorder, name))
        widths: set[int] = set()
        for shard in opened:
            if isinstance(shard, PackedCodes):
                widths.add(shard.n_bits)
            elif packed:
                assert n_bits is not None  # packed bytes without n_bits are refused by _first_look
                widths.add(n_bits)
            else:
                widths.add(int(shard.shape[1]))
        if len(widths) != 1:
            raise InputError(f"{name}: the shards have different code lengths {sorted(widths)}; pack them with "
                             "the same {n_bits}", argument="n_bits")
        self.shards, self.n_bits = tuple(opened), widths.pop()
        self.packed, self.bitorder, self.name = packed, bitorder, name
        self.starts = np.concatenate([[0], np.cumsum([len(s) for s in opened])]).astype(np.int64)
        if self.starts[-1] == 0:
            raise InputError(f"{name} is empty (every shard has 0 rows); need at least one code")

    @staticmethod
    def _first_look(shard, index, packed, n_bits, bitorder, name):
        """A shard as PackedCodes where that costs no copy, else the array, its shape checked."""
        if isinstance(shard, PackedCodes):
            if shard.on_device:
                raise InputError(f"{name} shard {index} is on a GPU; sharded codes are read on the host")
            return shard
        if packed:
            if n_bits is None:
                raise InputError(f"{name}: packed=True needs {{n_bits}} (the code length in bits)", argument="n_bits")
            if shard.dtype != np.uint8:
                raise InputTypeError(f"{name} shard {index}: packed bytes must be uint8, got dtype {shard.dtype}")
            if shard.shape[1] != (n_bits + 7) // 8:
                raise InputError(f"{name} shard {index}: packed bytes for {{n_bits}}={n_bits} must have shape "
                                 f"(n, {(n_bits + 7) // 8}), got {shard.shape}", argument="n_bits")
            if len(shard) and _is_word_layout(shard, n_bits, bitorder):
                return pack_codes(shard, packed=True, n_bits=n_bits, bitorder=bitorder, name=name)
        elif n_bits is not None and shard.shape[1] != n_bits:
            raise InputError(f"{name} shard {index} has {shard.shape[1]} bit columns but {{n_bits}}={n_bits}",
                             argument="n_bits")
        return shard

    @property
    def n(self) -> int:
        """Number of codes, all shards together."""
        return int(self.starts[-1])

    @property
    def n_words(self) -> int:
        """Number of uint64 words per code."""
        return _n_words(self.n_bits)

    def __len__(self) -> int:
        return self.n

    def __repr__(self) -> str:
        return f"ShardedCodes(n={self.n}, n_bits={self.n_bits}, shards={len(self.shards)})"

    def tile(self, shard: int, start: int, stop: int) -> PackedCodes:
        """Rows ``start..stop-1`` of the whole database, all within shard ``shard``, packed as
        :func:`pack_codes` packs them (a view where the shard's bytes are the words' layout);
        a packing error names the shard and the rows."""
        codes, base = self.shards[shard], int(self.starts[shard])
        if not base <= start <= stop <= int(self.starts[shard + 1]):
            raise IndexError(f"rows {start}..{stop - 1} are not within shard {shard}")
        if isinstance(codes, PackedCodes):
            return codes[start - base : stop - base]
        try:
            return pack_codes(codes[start - base : stop - base], packed=self.packed, n_bits=self.n_bits,
                              bitorder=self.bitorder, name=self.name)
        except (ValueError, TypeError) as error:
            raise type(error)(f"{self.name} shard {shard} (rows {start}..{stop - 1}): {error}") from None


def pack_whole(codes: Any, name: str) -> PackedCodes:
    """:func:`pack_codes` of codes a call takes in one piece (queries; either side of a call that
    reads no shards): codes in shards are refused, naming ``name``."""
    packed = pack_codes(codes, name=name)
    if isinstance(packed, ShardedCodes):
        raise InputTypeError(f"{name} in shards (a list of arrays or files, ShardedCodes): only fasttie.evaluate's "
                             "database is read tile by tile; concatenate them (np.concatenate) for this call")
    return packed


def pack_pair(queries: Any, database: Any, keep_device: bool = False) -> tuple[PackedCodes, PackedCodes]:
    """Pack queries and database; their code lengths must agree. Codes on a GPU stay there with
    ``keep_device`` (the GPU passes), else they are copied to the host."""
    query_codes = pack_whole(queries, "queries")
    db_codes = pack_whole(database, "database")
    if not keep_device:
        query_codes, db_codes = query_codes.to_host(), db_codes.to_host()
    if query_codes.n_bits != db_codes.n_bits:
        raise InputError(
            f"queries have {query_codes.n_bits} bits but database has {db_codes.n_bits}; "
            "pack both with the same {n_bits}", argument="n_bits")
    return query_codes, db_codes


def unpack_codes(packed: PackedCodes) -> np.ndarray:
    """Unpack to a (n, n_bits) uint8 matrix of 0/1, the inverse of :func:`pack_codes`.

    Parameters
    ----------
    packed : PackedCodes

    Returns
    -------
    ndarray of uint8, shape (n, n_bits)

    Examples
    --------
    >>> import numpy as np, fasttie as ft
    >>> ft.unpack_codes(ft.pack_codes(np.array([[1, -1, 1]])))
    array([[1, 0, 1]], dtype=uint8)
    """
    if not isinstance(packed, PackedCodes):
        raise InputTypeError(f"unpack_codes takes PackedCodes, got {type(packed).__name__}")
    packed = packed.to_host()
    as_bytes = packed.words.astype("<u8", copy=False).view(np.uint8)
    return np.unpackbits(as_bytes, axis=1, bitorder="little", count=packed.n_bits)
