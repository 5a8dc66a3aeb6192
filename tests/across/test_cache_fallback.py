"""numba's cache: `import fasttie` and a first call work where nothing beside the package or in
the home directory is writable (read-only installs in containers and shared clusters).

The package directory and HOME are made read-only with bind mounts in a private mount
namespace (``unshare -rm``), so the test also holds for root, whom file modes do not stop.
"""

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

import fasttie

PACKAGE = os.path.dirname(os.path.abspath(fasttie.__file__))

SCRIPT = """
import warnings
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import numpy as np, fasttie as ft
    ids, dist = ft.search(np.array([[1, 1, 1]]), np.array([[1, -1, 1], [1, 1, 1], [-1, -1, 1]]), k=2)
print(ids.tolist(), dist.tolist())
for w in caught:
    print("WARNING", w.category.__name__, w.message)
"""


def _can_unshare():
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    return probe.returncode == 0


def _run_read_only(read_only, env):
    mounts = "; ".join(f"mount --bind -o ro '{p}' '{p}'" for p in read_only if os.path.isdir(p))
    command = f"{mounts}; exec '{sys.executable}' -c \"$SCRIPT\""
    return subprocess.run(
        ["unshare", "-rm", "sh", "-c", command], env={**env, "SCRIPT": SCRIPT},
        capture_output=True, text=True, timeout=300, cwd=env["HOME"],
    )


@pytest.fixture
def read_only_env():
    if not _can_unshare():
        pytest.skip("needs `unshare -rm` (private mount namespaces) to make the package read-only")
    home = tempfile.mkdtemp(prefix="fasttie-home-")
    tmp = tempfile.mkdtemp(prefix="fasttie-tmp-")
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "FASTTIE_NO_CACHE")}
    env.update(HOME=home, TMPDIR=tmp)
    try:
        yield home, tmp, env
    finally:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


def test_read_only_package_and_home_cache_in_temp_dir(read_only_env):
    home, tmp, env = read_only_env
    done = _run_read_only([PACKAGE, home], env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "[[1, 0]] [[0, 1]]"
    warnings = [line for line in lines if line.startswith("WARNING")]
    assert len(warnings) == 1, lines
    assert "NUMBA_CACHE_DIR" in warnings[0] and tmp in warnings[0]
    cached = [name for _, _, files in os.walk(tmp) for name in files if name.endswith(".nbi")]
    assert cached, "the kernels were not cached in the temporary directory"


def test_nothing_writable_compiles_without_cache(read_only_env):
    home, tmp, env = read_only_env
    # every place tempfile.gettempdir() tries: TMPDIR, /tmp, /var/tmp, /usr/tmp, the cwd (home)
    done = _run_read_only([PACKAGE, home, tmp, "/tmp", "/var/tmp", "/usr/tmp"], env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "[[1, 0]] [[0, 1]]"
    warnings = [line for line in lines if line.startswith("WARNING")]
    assert len(warnings) == 1 and "without a cache" in warnings[0] and "NUMBA_CACHE_DIR" in warnings[0], lines
