"""Everything the package saves loads in a fresh process after `import keras_textattn` alone, in
safe mode and without `custom_objects`, and answers as it did."""

import json
import shutil
import subprocess
import sys
import zipfile

import keras
import numpy as np
import pytest

TEXTS = ["A gripping, beautiful film.", "Dull and far too long."]
# Run in a fresh process: the package import only, then Keras's loader in its default safe mode.
LOADER = """
import json, sys
import keras
import numpy as np
import keras_textattn

texts, paths = np.array(json.loads(sys.argv[1])), json.loads(sys.argv[2])
encoder, model, raw = (keras.models.load_model(paths[name]) for name in ("encoder", "model", "raw"))
ids = keras.ops.convert_to_numpy(encoder(texts))
print(json.dumps({"encoder": ids.tolist(), "model": model.predict(ids, verbose=0).tolist(),
                  "raw": keras.ops.convert_to_numpy(raw(texts)).tolist()}))
"""


@pytest.mark.real_data
def test_each_saved_kind_loads_after_the_package_import(lama_run, tmp_path):
    """A run's `encoder.keras` and `model.keras`, and a raw-string model built with the run's
    encoder (`build_lama_classifier(2, encoder=...)`) and saved: each loads after `import
    keras_textattn` (`encoder.keras` failed with "Could not locate class 'TextEncoder'" unless
    `keras_textattn.text` was imported too) and gives the ids and probabilities it gave here."""
    from keras_textattn.models import build_lama_classifier
    from keras_textattn.run_folder import load_run

    model, encoder, _ = load_run(lama_run)
    raw = build_lama_classifier(2, encoder=encoder, num_heads=2, gru_units=4, mlp_units=8, embedding_dim=8)
    keras.models.save_model(raw, tmp_path / "raw.keras")
    paths = {
        "encoder": str(lama_run / "encoder.keras"),
        "model": str(lama_run / "model.keras"),
        "raw": str(tmp_path / "raw.keras"),
    }
    result = subprocess.run(
        [sys.executable, "-c", LOADER, json.dumps(TEXTS), json.dumps(paths)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    answers = json.loads(result.stdout.strip().splitlines()[-1])
    ids = keras.ops.convert_to_numpy(encoder(np.array(TEXTS)))
    np.testing.assert_array_equal(answers["encoder"], ids)
    np.testing.assert_allclose(answers["model"], model.predict(ids, verbose=0), atol=1e-6)
    np.testing.assert_allclose(answers["raw"], keras.ops.convert_to_numpy(raw(np.array(TEXTS))), atol=1e-6)


def _tampered(source, target, edit):
    """A copy of the .keras file `source` at `target` with `edit(config)` applied to its config.json."""
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w") as copy:
        for item in original.infolist():
            data = original.read(item.filename)
            if item.filename == "config.json":
                config = json.loads(data)
                edit(config)
                data = json.dumps(config).encode()
            copy.writestr(item, data)


def _a_layer_from_os(config):
    layer = next(layer for layer in config["config"]["layers"] if layer["class_name"] == "Dense")
    layer.update(module="os", class_name="system", registered_name=None)


def _an_initializer_from_builtins(config):
    layer = next(layer for layer in config["config"]["layers"] if layer["class_name"] == "Dense")
    layer["config"]["kernel_initializer"] = {
        "module": "builtins",
        "class_name": "exec",
        "config": {},
        "registered_name": None,
    }


@pytest.mark.real_data
@pytest.mark.parametrize("edit", [_a_layer_from_os, _an_initializer_from_builtins], ids=["os.system", "builtins.exec"])
def test_a_tampered_model_file_is_one_line_and_never_runs(lama_run, tmp_path, capsys, edit):
    """A run folder whose model.keras names a layer `os.system` or an initializer `builtins.exec`:
    refused and not executed, in one line naming the file and exit status 2 (was a 65- or
    102-line traceback and exit status 1)."""
    from keras_textattn_cli import main

    run = tmp_path / "run"
    shutil.copytree(lama_run, run)
    _tampered(lama_run / "model.keras", run / "model.keras", edit)
    assert main(["predict", "--run", str(run), "a text"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"keras-textattn: error: {run / 'model.keras'} is unsafe or damaged: it names classes or functions that "
        "are neither Keras's nor keras-textattn's, so it was not loaded (nothing in it ran); use the run folder as "
        "train wrote it"
    ]


@pytest.mark.real_data
def test_an_encoder_whose_vocabulary_was_changed_is_refused(lama_run, tmp_path, capsys):
    """Two entries of encoder.keras's vocabulary swapped (the same size: it loaded, and most
    predictions changed without a word): refused against metrics.json's digest and vocabulary.txt,
    naming the first id that differs; the untouched run still predicts."""
    from keras_textattn_cli import main

    run = tmp_path / "run"
    shutil.copytree(lama_run, run)
    asset = "assets/layers/text_encoder/lookup/vocabulary.txt"
    with zipfile.ZipFile(lama_run / "encoder.keras") as original, zipfile.ZipFile(run / "encoder.keras", "w") as copy:
        for item in original.infolist():
            data = original.read(item.filename)
            if item.filename == asset:
                tokens = data.decode("utf-8").split("\n")
                tokens[10], tokens[11] = tokens[11], tokens[10]
                data = "\n".join(tokens).encode("utf-8")
            copy.writestr(item, data)
    listed = (lama_run / "vocabulary.txt").read_text(encoding="utf-8").split("\n")
    assert main(["predict", "--run", str(run), "a good film"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"keras-textattn: error: {run / 'encoder.keras'} holds another vocabulary than the one this run trained with "
        f"(metrics.json's digest, vocabulary.txt); id 10 is {listed[11]!r} there, {listed[10]!r} in vocabulary.txt: a "
        "file of the run was changed; use the run folder as train wrote it"
    ]
    assert main(["predict", "--run", str(lama_run), "a good film"]) == 0
