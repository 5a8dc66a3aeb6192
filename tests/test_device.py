"""fasttie._device: arrays on a GPU (numba-cuda's simulator where no GPU is present, see
tests/conftest.py). Codes packed on the device are the words ``fasttie.pack_codes`` packs on the
host, bit for bit; copies round-trip; bad codes raise naming the first bad position."""

import numpy as np
import pytest

import fasttie as ft
from fasttie import _device

cuda = pytest.importorskip("numba.cuda")
if not _device.available():
    pytest.skip("numba-cuda finds no GPU and the simulator is off", allow_module_level=True)


@pytest.mark.parametrize("seed, n_bits, form", [(0, 7, "pm1"), (1, 64, "01"), (2, 70, "bool")])
def test_device_packing_is_the_hosts(seed, n_bits, form):
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2, (3, n_bits))
    codes = {"pm1": (bits * 2 - 1).astype(np.int8), "01": bits.astype(np.float32), "bool": bits.astype(bool)}[form]
    words, width = _device.pack_words(cuda.to_device(codes), None, "queries")
    assert width == n_bits
    assert np.array_equal(words.copy_to_host(), ft.pack_codes(codes).words)


def test_arrays_between_host_and_device():
    host = np.arange(12, dtype=np.int64).reshape(3, 4)
    device = _device.to_device(host)
    assert _device.is_device_array(device) and not _device.is_device_array(host)
    assert not _device.is_device_array([1, 2])
    assert _device.to_device(device) is device  # already on the device: no copy
    assert np.array_equal(_device.to_host(device), host)
    assert _device.to_host(host) is host
    assert np.array_equal(_device.to_host(_device.device_view(device)), host)
    assert _device.grid(1) >= 1


@pytest.mark.parametrize("codes, fragment", [
    (np.array([[1, -1, 2]], dtype=np.int8), "found 2 at [0, 2]"),
    (np.array([[1, 0], [-1, 1]], dtype=np.int8), "mixes -1 and 0"),
    (np.array([[0.5, 1.0]]), "found 0.5 at [0, 0]"),
    (np.array([1, 0], dtype=np.int8), "must be 2-D"),
])
def test_bad_codes_name_the_position(codes, fragment):
    with pytest.raises(ValueError) as error:
        _device.pack_words(cuda.to_device(codes), None, "queries")
    assert fragment in str(error.value) and str(error.value).startswith("queries ")


def test_a_width_other_than_n_bits():
    with pytest.raises(ValueError, match="queries has 3 bit columns but n_bits=4"):
        _device.pack_words(cuda.to_device(np.ones((2, 3), np.int8)), 4, "queries")
