import os
import pathlib

import keras
import pytest


def shared_data_dir():
    """The real datasets: $KERAS_TEXTATTN_DATA, else ../shared/data beside the checkout."""
    default = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"
    return pathlib.Path(os.environ.get("KERAS_TEXTATTN_DATA", default))


def pytest_collection_modifyitems(config, items):
    """Tests that read the real datasets skip, saying why, where they are absent."""
    path = shared_data_dir()
    absent = pytest.mark.skipif(
        not (path / "README.md").is_file(),
        reason=f"real datasets not found at {path}; set KERAS_TEXTATTN_DATA to ../shared/data",
    )
    for item in items:
        if "shared_data" in item.fixturenames:
            item.add_marker(absent)


@pytest.fixture(scope="session")
def shared_data():
    return shared_data_dir()


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same random state."""
    keras.utils.set_random_seed(1234)
    yield
