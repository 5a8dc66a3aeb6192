"""Arrays on an NVIDIA GPU, as fasttie's lower layers meet them: whether an array lives on a
device, views and copies, and packing ±1 / 0/1 / bool codes into words there.

A leaf module: the bit conventions (:mod:`fasttie.codes`) and the GPU passes
(:mod:`fasttie.hamming.gpu`) import it, it imports no other fasttie module but the errors and
the CUDA kernels. numba-cuda (the optional extra ``fasttie[cuda]``) is imported only when a call
needs the GPU: a numpy array never loads it.
"""

from __future__ import annotations

import threading
import warnings

import numpy as np

from .errors import InputError, InputTypeError

__all__ = ["available", "cuda_module", "device_view", "is_device_array", "launch", "grid", "multiprocessors",
           "pack_words", "require_gpu", "to_device", "to_host"]

_CONFIGURE_LOCK = threading.Lock()  # see launch


def cuda_module():
    """``numba.cuda``, or an ImportError that says how to install it."""
    try:
        from numba import cuda
    except ImportError:
        raise ImportError("device='cuda' needs numba-cuda: pip install 'fasttie[cuda]'") from None
    return cuda


def available() -> bool:
    """True when numba-cuda is installed and finds a GPU (or the CUDA simulator is on)."""
    try:
        return bool(cuda_module().is_available())
    except ImportError:
        return False


def require_gpu():
    """``numba.cuda`` where it finds a GPU, else an InputError saying what to do."""
    cuda = cuda_module()
    if not cuda.is_available():
        raise InputError("device='cuda': numba-cuda finds no GPU (set NUMBA_ENABLE_CUDASIM=1 for the simulator, "
                         "or use device='cpu' / 'auto')")
    return cuda


def is_device_array(x) -> bool:
    """Whether ``x`` lives on a GPU: it has ``__cuda_array_interface__`` (CuPy, torch CUDA) or is a
    numba device array (also the simulator's)."""
    if isinstance(x, np.ndarray):
        return False
    try:
        return bool(getattr(x, "__cuda_ndarray__", False)) or getattr(x, "__cuda_array_interface__", None) is not None
    except RuntimeError as error:  # torch: a tensor that requires grad refuses the interface
        raise InputError(f"a GPU tensor that requires grad cannot be read ({error}); pass tensor.detach()") from None


def device_view(x):
    """A numba device array over the GPU array ``x`` (no copy)."""
    return x if getattr(x, "__cuda_ndarray__", False) else cuda_module().as_cuda_array(x)


def to_host(x) -> np.ndarray:
    """A numpy copy of a GPU array (anything else is returned as it is)."""
    return device_view(x).copy_to_host() if is_device_array(x) else x


def to_device(array, dtype=None):
    """Device array of ``array`` (no copy when it is already on the GPU)."""
    if is_device_array(array):
        return device_view(array)
    return cuda_module().to_device(np.ascontiguousarray(array, dtype=dtype))


def multiprocessors(cuda) -> int:
    """Multiprocessors of the current GPU; 0 in the simulator (which runs one block at a time)."""
    try:
        return int(cuda.get_current_device().MULTIPROCESSOR_COUNT)
    except Exception:  # the simulator has no such attribute
        return 0


def launch(kernel, grid_size, block, shared, *args):
    """kernel[grid_size, block, 0, shared](*args), without numba's low-occupancy warning: small
    calls (a few queries, a small database) launch small grids on purpose.

    numba warns when it builds a launch configuration (and keeps it for the next launch of that
    shape). ``warnings.catch_warnings`` swaps the process's filter list in and out, which is not
    safe when several threads do it at once (one thread's exit can restore the filters another
    entered with): the configuration is built under a lock, the launch runs outside it.
    """
    with _CONFIGURE_LOCK, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*Grid size .* low occupancy")
        configured = kernel[grid_size, block, 0, shared]
    configured(*args)


def grid(n_threads) -> int:
    """Blocks for a grid-stride kernel over n_threads items: enough to fill the GPU, one in the simulator."""
    from ._kernels.cuda import THREADS  # imports numba.cuda: only once a GPU call runs

    return max(1, min(-(-n_threads // THREADS), 32 * multiprocessors(cuda_module())))


def pack_words(codes, n_bits, name):
    """Pack a (n, n_bits) GPU matrix of ±1, 0/1 or bool codes into uint64 words on the GPU.

    The checks of :func:`fasttie.pack_codes` run on the device: values other than -1, 0 and 1
    (NaN included) and a mix of -1 and 0 are errors naming the first bad position.

    Returns
    -------
    (words, n_bits) : a (n, ceil(n_bits / 64)) uint64 device array and the code length
    """
    cuda = require_gpu()
    from ._kernels import cuda as k  # imports numba.cuda: only once a GPU call runs

    array = device_view(codes)
    if array.ndim != 2:
        raise InputError(f"{name} must be 2-D (n_codes, {{n_bits}}), got shape {array.shape}; "
                         "reshape a single code with codes[None, :]", argument="n_bits")
    n, width = array.shape
    if n == 0 or width == 0:
        raise InputError(f"{name} is empty (shape {array.shape}); need at least one code and one bit")
    if n_bits is not None and n_bits != width:
        raise InputError(f"{name} has {width} bit columns but {{n_bits}}={n_bits}", argument="n_bits")
    if array.dtype != np.bool_ and not np.issubdtype(array.dtype, np.number):
        raise InputTypeError(f"{name} must be a numeric or bool array, got dtype {array.dtype}")
    n_words = (width + 63) // 64
    words = cuda.device_array((n, n_words), dtype=np.uint64)
    flags = cuda.to_device(np.array([0, 0, n * width], dtype=np.int64))
    launch(k.pack_words, grid(n * n_words), k.THREADS, 0, array, words, flags)
    negative, zero, first_bad = flags.copy_to_host()
    if first_bad < n * width:
        row, col = divmod(int(first_bad), width)
        value = array[row:row + 1, col:col + 1].copy_to_host()[0, 0]
        raise InputError(f"{name} must hold ±1, 0/1 or bool values; found {value.item()!r} at [{row}, {col}]; "
                         "binarize GPU outputs first, e.g. torch.where(x >= 0, 1, -1)")
    if negative and zero:
        raise InputError(f"{name} mixes -1 and 0: ±1 codes must not contain 0 (sign(0) = 0 is a classic "
                         "binarization bug); use torch.where(x >= 0, 1, -1)")
    return words, width
