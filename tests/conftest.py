import keras
import pytest


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same random state."""
    keras.utils.set_random_seed(1234)
    yield


def shared_data_dir():
    """The real datasets: $KERAS_TEXTATTN_DATA, else ../shared/data beside the checkout."""
    import os
    import pathlib

    default = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"
    return pathlib.Path(os.environ.get("KERAS_TEXTATTN_DATA", default))


@pytest.fixture
def shared_data():
    path = shared_data_dir()
    if not (path / "README.md").is_file():
        pytest.skip(f"real datasets not found at {path}; set KERAS_TEXTATTN_DATA to ../shared/data")
    return path
