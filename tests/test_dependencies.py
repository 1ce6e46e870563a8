"""The floors pyproject.toml declares are the versions .ci/run tests (.ci/minimum-versions.txt)."""

import pathlib
import re

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _dependencies():
    """pyproject.toml's `dependencies`, by name (read as text: Python 3.10 has no tomllib)."""
    (block,) = re.findall(r"^dependencies = \[(.*?)^\]", (ROOT / "pyproject.toml").read_text(), re.MULTILINE | re.DOTALL)
    requirements = [Requirement(text) for text in re.findall(r'^\s*"([^"]+)"', block, re.MULTILINE)]
    return {requirement.name: requirement for requirement in requirements}


def test_the_tested_minimum_versions_are_the_declared_floors():
    """Each pin of .ci/minimum-versions.txt is its package's `>=` floor in pyproject.toml, so a
    raised or lowered floor is tested at once (keras-tuner before 1.4.6 ran on keras-core, and
    the declared Keras floor, 3.10, was one that TensorFlow 2.21 cannot install beside)."""
    pins = [Requirement(line) for line in (ROOT / ".ci" / "minimum-versions.txt").read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    dependencies = _dependencies()
    assert {pin.name for pin in pins} == {"keras", "keras-tuner"}
    for pin in pins:
        (pinned,) = [Version(spec.version) for spec in pin.specifier if spec.operator == "=="]
        floors = [Version(spec.version) for spec in dependencies[pin.name].specifier if spec.operator == ">="]
        assert floors == [pinned], f"{pin.name}: pyproject.toml's floor {floors} is not the tested {pinned}"
