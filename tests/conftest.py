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


def _ag_news_run(folder, model, **kwargs):
    """A finished run folder: `model` trained one epoch on the AG News sample."""
    from keras_textattn.training import train

    train(model, str(shared_data_dir() / "ag_news" / "train_sample_5k.csv.gz"), str(folder), epochs=1,
          batch_size=64, max_tokens=5000, label_names=["World", "Sports", "Business", "Sci/Tech"], verbose=0, **kwargs)
    return folder


@pytest.fixture(scope="session")
def lama_run(tmp_path_factory, shared_data):
    """A small LAMA trained on AG News (test accuracy about 0.8), shared by the explain and export tests."""
    return _ag_news_run(tmp_path_factory.mktemp("lama"), "lama", sequence_length=48,
                        model_kwargs={"embedding_dim": 32, "gru_units": 16, "num_heads": 3, "mlp_units": 32})


@pytest.fixture(scope="session")
def hcan_run(tmp_path_factory, shared_data):
    """A small hierarchical HCAN trained on AG News."""
    return _ag_news_run(tmp_path_factory.mktemp("hcan"), "hcan", sequence_length=12, max_sentences=4,
                        model_kwargs={"units": 16, "num_heads": 2})
