import keras
import pytest


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same random state."""
    keras.utils.set_random_seed(1234)
    yield
