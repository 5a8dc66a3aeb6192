"""Reading the command line's array inputs: ``.npy`` (memory-mapped) and ``.npz`` (named arrays).

A file argument is ``PATH.npy``, ``PATH.npz:KEY`` (the array stored under KEY), or ``PATH.npz``
alone (the array under the option's default key, e.g. ``queries``, or the only array in the
file). ``.npy`` files are opened with ``mmap_mode="r"``: a database larger than memory is read
in slices while it is packed, never loaded whole. Errors are ``ValueError`` / ``TypeError``
with one-line messages naming the option and the fix; the CLI prints them as they are.
"""

from __future__ import annotations

import os
import re
import zipfile

import numpy as np

from ..codes import PackedCodes, pack_codes
from ..errors import InputError, InputTypeError

__all__ = ["load_array", "load_codes", "load_relevance", "split_key"]

_BITORDERS = ("big", "little")


def split_key(spec: str) -> tuple[str, str | None]:
    """Split ``PATH.npz:KEY`` into ``(PATH.npz, KEY)``; other paths come back with key None.

    Only a colon after ``.npz`` separates a key, so Windows drive letters and ``.npy`` paths
    with colons are left alone.

    Examples
    --------
    >>> split_key("data.npz:queries"), split_key("codes.npy")
    (('data.npz', 'queries'), ('codes.npy', None))
    """
    head, sep, key = spec.rpartition(":")
    if sep and head.lower().endswith(".npz") and key:
        return head, key
    return spec, None


def load_array(spec: str, *, option: str, default_key: str | None = None) -> np.ndarray:
    """Read one array given on the command line.

    Parameters
    ----------
    spec : str
        ``PATH.npy``, ``PATH.npz`` or ``PATH.npz:KEY``.
    option : str
        The command-line option, for error messages (``"--queries"``).
    default_key : str, optional
        Key read from a ``.npz`` given without ``:KEY``; a file holding a single array needs
        no key.

    Returns
    -------
    ndarray
        A read-only memory map for ``.npy``; an in-memory array for ``.npz``.

    Raises
    ------
    ValueError
        Missing file, unsupported extension, unknown key (the keys present are listed), a
        file numpy cannot read, or an object (pickled) array.
    """
    path, key = split_key(spec)
    if not os.path.exists(path):
        raise InputError(f"{option}: file not found: {path}")
    if os.path.isdir(path):
        raise InputError(f"{option}: {path} is a directory; give a .npy or .npz file")
    ext = os.path.splitext(path)[1].lower()
    try:
        if ext == ".npy":
            if key is not None:
                raise InputError(f"{option}: {path} is a .npy file, it has no keys")
            array = np.load(path, mmap_mode="r", allow_pickle=False)
        elif ext == ".npz":
            with np.load(path, allow_pickle=False) as archive:
                keys = list(archive.files)
                if key is None:
                    if default_key in keys:
                        key = default_key
                    elif len(keys) == 1:
                        key = keys[0]
                    else:
                        raise InputError(
                            f"{option}: {path} holds {len(keys)} arrays ({', '.join(keys)}); pick one "
                            f"with {path}:KEY"
                        )
                if key not in keys:
                    raise InputError(f"{option}: {path} has no array {key!r}; it holds: {', '.join(keys) or 'nothing'}")
                array = archive[key]
        else:
            raise InputError(f"{option}: {path}: expected a .npy or .npz file (numpy.save / numpy.savez)")
    except (OSError, zipfile.BadZipFile, EOFError) as error:
        raise InputError(f"{option}: cannot read {path} as a numpy {ext} file ({error})") from None
    except ValueError as error:
        if str(error).startswith(option):
            raise
        # numpy's own messages: pickled object arrays, truncated headers
        raise InputError(f"{option}: cannot read {path}: {error}") from None
    if array.dtype == object:
        raise InputTypeError(f"{option}: {path} holds Python objects; save a numeric array")
    return array


def load_codes(spec: str, *, option: str, default_key: str | None = None, packed: bool = False,
               n_bits: int | None = None, bitorder: str = "big") -> PackedCodes:
    """Read and pack a code matrix (±1, 0/1, bool, or packed bytes with ``packed=True``).

    Parameters
    ----------
    spec, option, default_key
        As in :func:`load_array`.
    packed : bool, default False
        The file holds (n, ceil(n_bits / 8)) uint8 bytes packed elsewhere.
    n_bits : int, optional
        Code length; required with ``packed``.
    bitorder : {"big", "little"}
        Bit order of packed bytes (numpy's packbits default / faiss and ``compactbit``).

    Returns
    -------
    PackedCodes

    Raises
    ------
    ValueError, TypeError
        As :func:`load_array`, plus the code checks of :func:`fasttie.pack_codes`, prefixed
        with the option.
    """
    array = load_array(spec, option=option, default_key=default_key)
    if packed and n_bits is None:
        raise InputError(f"{option}: --packed needs --bits N (the code length)")
    if bitorder not in _BITORDERS:
        raise InputError(f"--bitorder must be one of {_BITORDERS}, got {bitorder!r}")
    try:
        if packed:
            return pack_codes(array, packed=True, n_bits=n_bits, bitorder=bitorder, name=option)
        return pack_codes(array, n_bits=n_bits, name=option)
    except (ValueError, TypeError) as error:
        message = str(error)
        if ". If these are packed bytes" in message:  # the library's hint names its Python call
            message = message.split(". If these are packed bytes")[0] + "; if these are packed bytes, add --packed --bits N"
        message = re.sub(r"\bn_bits=", "--bits ", message)
        raise type(error)(message if message.startswith(option) else f"{option}: {message}") from None


def load_relevance(spec: str, *, option: str = "--relevance") -> tuple[tuple[np.ndarray, ...], tuple[int, ...] | None]:
    """Read listed relevance (CSR) from a ``.npz``: ``indptr``, ``indices`` and optional grades.

    Accepts ``numpy.savez(path, indptr=..., indices=..., grades=...)`` and files written by
    ``scipy.sparse.save_npz`` (a CSR matrix of grades, shape (n_queries, n_db)).

    Returns
    -------
    relevance : tuple
        ``(indptr, indices)`` or ``(indptr, indices, grades)``, as :func:`fasttie.evaluate`'s
        ``relevance=`` takes it.
    shape : tuple of int or None
        The (n_queries, n_db) shape recorded by ``scipy.sparse.save_npz``, to check against
        the codes; None for plain ``numpy.savez`` files.

    Raises
    ------
    ValueError
        Missing file, not a ``.npz``, or a sparse format other than CSR.
    """
    path, key = split_key(spec)
    if key is not None or os.path.splitext(path)[1].lower() != ".npz":
        raise InputError(
            f"{option}: expected a .npz file with arrays indptr, indices[, grades] (relevant database "
            f"ids per query, CSR), got {spec}"
        )
    keys = _npz_keys(path, option)
    if "format" in keys:  # scipy.sparse.save_npz
        fmt = load_array(f"{path}:format", option=option).item()
        fmt = fmt.decode() if isinstance(fmt, bytes) else str(fmt)
        if fmt != "csr":
            raise InputError(f"{option}: {path} holds a sparse {fmt!r} matrix; save it with .tocsr()")
    missing = [k for k in ("indptr", "indices") if k not in keys]
    if missing:
        raise InputError(
            f"{option}: {path} lacks {' and '.join(missing)}; it needs indptr, indices[, grades] "
            f"(CSR rows = queries); it holds: {', '.join(keys)}"
        )
    indptr = load_array(f"{path}:indptr", option=option)
    indices = load_array(f"{path}:indices", option=option)
    grades_key = "grades" if "grades" in keys else "data" if "data" in keys else None
    relevance = (indptr, indices) if grades_key is None else (
        indptr, indices, load_array(f"{path}:{grades_key}", option=option))
    # scipy.sparse.save_npz records the matrix shape (n_queries, n_db)
    shape = tuple(int(x) for x in load_array(f"{path}:shape", option=option)) if "shape" in keys else None
    return relevance, shape


def _npz_keys(path, option):
    if not os.path.exists(path):
        raise InputError(f"{option}: file not found: {path}")
    try:
        with np.load(path, allow_pickle=False) as archive:
            return list(archive.files)
    except (OSError, zipfile.BadZipFile, EOFError, ValueError) as error:
        raise InputError(f"{option}: cannot read {path} as a numpy .npz file ({error})") from None
