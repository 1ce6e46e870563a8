"""The floors pyproject.toml declares are the versions .ci/run tests (.ci/minimum-versions.txt)."""

import pathlib
import re

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = pathlib.Path(__file__).resolve().parents[1]
# A floor that names a feature, not a version tested: setuptools 77 reads the license expression
# (the wheel test builds with whichever one is installed; 77.0.0 itself was never on PyPI).
UNTESTED_FLOORS = {"setuptools"}


def _declared():
    """pyproject.toml's `dependencies` and optional dependencies, as requirements (read as text: Python
    3.10 has no tomllib)."""
    text = (ROOT / "pyproject.toml").read_text()
    (dependencies,) = re.findall(r"^dependencies = \[(.*?)^\]", text, re.MULTILINE | re.DOTALL)
    (extras,) = re.findall(r"^\[project\.optional-dependencies\]\n(.*?)^\[", text, re.MULTILINE | re.DOTALL)
    lines = [line.split("#")[0] for line in (dependencies + extras).splitlines()]
    requirements = [Requirement(quoted) for line in lines for quoted in re.findall(r'"([^"]+)"', line)]
    return requirements


def test_the_tested_minimum_versions_are_the_declared_floors():
    """Each `>=` floor in pyproject.toml, of a dependency or an extra, is pinned in
    .ci/minimum-versions.txt and nothing else is, so a raised or lowered floor is tested at once
    (keras-tuner before 1.4.6 ran on keras-core; the declared Keras floor, 3.10, was one that
    TensorFlow 2.21 cannot install beside; Ray 2.40's Train reserved a CPU more than 2 workers
    need, and on 2 CPUs the run waited without end; LiteRT 1.0.1, 1.2.0 and 1.3.0 refused the int8
    dual-axial model, TFDS 4.9.4, 4.9.8 and 4.9.9 failed on protobuf 7, and TensorBoard 2.16 could not
    read a run's logs on NumPy 2)."""
    pins = [
        Requirement(line)
        for line in (ROOT / ".ci" / "minimum-versions.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    floors = {}
    for requirement in _declared():
        for spec in requirement.specifier:
            if spec.operator == ">=" and requirement.name not in UNTESTED_FLOORS:
                floors.setdefault(requirement.name, set()).add(Version(spec.version))
    assert {
        "keras",
        "keras-tuner",
        "gensim",
        "ray",
        "pytest",
        "hypothesis",
        "numpy",
        "scikit-learn",
        "matplotlib",
        "ai-edge-litert",
        "tensorflow-datasets",
        "importlib_resources",
        "pyyaml",
        "tensorboard",
    } <= floors.keys()  # the parse finds them
    assert sorted(pin.name for pin in pins) == sorted(floors)
    for pin in pins:
        (pinned,) = [Version(spec.version) for spec in pin.specifier if spec.operator == "=="]
        assert floors[pin.name] == {pinned}, (
            f"{pin.name}: pyproject.toml's floor {floors[pin.name]} is not the tested {pinned}"
        )
