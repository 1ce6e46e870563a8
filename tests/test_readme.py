"""README.md's Python examples run as written, on the paths they name."""

import os
import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
# The one line that needs the internet (TFDS downloads IMDB on first use).
TFDS_LINE = 'data = load_dataset("imdb_reviews", splits=("train", "validation", "test"))\n'


def test_readme_python_blocks_run(lama_run, shared_data, tmp_path, monkeypatch, capsys):
    """Each ```python block of README.md runs in one namespace per block, in a folder where the
    paths it names are real: `runs/lama-sst2` a finished run (the shared LAMA run), `models/lama-tflite`
    its TFLite export and `../shared/data` the datasets. The blocks end where a user reads their
    results: a built model, batches, predictions, an attention page and picture, a printed label."""
    from keras_textattn import export

    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 5
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "lama-sst2").symlink_to(lama_run, target_is_directory=True)
    export.tflite(lama_run, tmp_path / "models" / "lama-tflite")
    (tmp_path / "work").mkdir()  # "../shared/data" from here is the datasets
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(shared_data, target_is_directory=True)
    monkeypatch.chdir(tmp_path / "work")
    for name in ("runs", "models"):
        (tmp_path / "work" / name).symlink_to(tmp_path / name, target_is_directory=True)

    namespaces = []
    for number, block in enumerate(blocks):
        if TFDS_LINE in block:
            block = block.replace(TFDS_LINE, "")
        namespace = {}
        exec(compile(block, f"README.md python block {number}", "exec"), namespace)
        namespaces.append(namespace)
    layers, data, predictions, explained, lite = namespaces
    assert layers["model"].output.shape == (None, 2)
    assert data["data"].label_names == ["World", "Sports", "Business", "Sci/Tech"]
    ids, labels = next(iter(data["train"]))
    assert ids.shape == (64, 256) and labels.shape == (64,)
    (oil,) = predictions["predict"]("runs/lama-sst2", ["Oil prices rose."])  # the label the TFLite block prints
    assert capsys.readouterr().out.strip().splitlines()[-1] == oil["label"]
    assert [token["token"] for token in explained["e"].tokens] == ["A", "gripping", ",", "beautiful", "film", "."]
    assert "gripping" in pathlib.Path("map.html").read_text(encoding="utf-8") and os.path.getsize("map.png") > 0


def test_readme_keyword_arguments_exist():
    """Each keyword README.md's prose gives one of the library's functions (`train(init_from=...)`,
    `LocalFile(..., stream=True)`) is a parameter of it: a renamed argument fails here."""
    import inspect

    from keras_textattn.datasets import LocalFile
    from keras_textattn.inference import Classifier, predict
    from keras_textattn.training import train
    from keras_textattn.tuning import tune

    functions = {"LocalFile": LocalFile, "Classifier": Classifier, "predict": predict, "train": train, "tune": tune}
    calls = re.findall(rf"`(?:[\w.]+\.)?({'|'.join(functions)})\(([^`]*)\)`", README.read_text(encoding="utf-8"))
    keywords = [(name, keyword) for name, arguments in calls for keyword in re.findall(r"(\w+)=", arguments)]
    assert len(keywords) >= 8
    for name, keyword in keywords:
        assert keyword in inspect.signature(functions[name]).parameters, f"README: {name}({keyword}=...)"
