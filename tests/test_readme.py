"""README.md's examples as written: its commands parse, its Python blocks run on the paths they name,
and the options and keyword arguments its prose names exist."""

import argparse
import dataclasses
import os
import pathlib
import re
import shlex

from keras_textattn_cli import build_parser as _parser

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
# The one line that needs the internet (TFDS downloads IMDB on first use).
TFDS_LINE = 'data = load_dataset("imdb_reviews", splits=("train", "validation", "test"))\n'


def _subcommands():
    (choices,) = [action.choices for action in _parser()._actions if isinstance(action, argparse._SubParsersAction)]
    return choices


def test_the_readme_names_every_subcommand():
    """README's sentence listing the subcommands names each one `--help` offers (it left out `vectors`)."""
    (sentence,) = re.findall(r"has the subcommands([^.]*)\.", README.read_text(encoding="utf-8"))
    assert set(re.findall(r"`(\w+)`", sentence)) == set(_subcommands())


def test_the_readme_commands_parse():
    """Every command README.md shows in a shell block parses as written, and every option it or
    BENCHMARKS.md names anywhere (`train --init-from`, in prose too) is one its subcommand has: a
    renamed flag fails here."""
    readme = README.read_text(encoding="utf-8")
    subcommands = _subcommands()
    shown = [
        part.strip()
        for block in re.findall(r"```bash\n(.*?)```", readme, re.S)
        for line in block.replace("\\\n", " ").splitlines()
        for part in re.split(r"&&", line.split(" # ")[0])
        if part.strip().startswith("keras-textattn ")
    ]
    assert len(shown) >= 10
    for command in shown:
        _parser().parse_args(shlex.split(command)[1:])  # argparse exits (status 2) on what it refuses
    benchmarks = (README.parent / "BENCHMARKS.md").read_text(encoding="utf-8")  # its recipes, to repeat
    for document, text in (("README.md", readme), ("BENCHMARKS.md", benchmarks)):
        named = re.findall(rf"`(?:keras-textattn )?({'|'.join(subcommands)})((?: [^`]*)?)`", text)
        assert len(named) >= 15, document
        for subcommand, rest in named:
            options = subcommands[subcommand]._option_string_actions
            unknown = [flag for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", rest) if flag not in options]
            assert not unknown, f"{document}: `{subcommand}{rest}` names options `{subcommand}` has not: {unknown}"


def test_readme_python_blocks_run(lama_run, shared_data, tmp_path, monkeypatch, capsys):
    """Each ```python block of README.md runs in one namespace per block, in a folder where the
    paths it names are real: `runs/lama-sst2` a finished run (the shared LAMA run), `models/lama-tflite`
    its TFLite export and `../shared/data` the datasets. The blocks end where a user reads their
    results: a built model, batches, predictions, an attention page and picture, a printed label."""
    from keras_textattn import export

    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 5 and sum(TFDS_LINE in block for block in blocks) == 1
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
        namespace = {}
        exec(compile(block.replace(TFDS_LINE, ""), f"README.md python block {number}", "exec"), namespace)
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
    from keras_textattn.inference import Classifier
    from keras_textattn.inference import predict
    from keras_textattn.training import TrainConfig
    from keras_textattn.training import train
    from keras_textattn.tuning import tune

    functions = {"LocalFile": LocalFile, "Classifier": Classifier, "predict": predict, "train": train, "tune": tune}
    parameters = {name: set(inspect.signature(function).parameters) for name, function in functions.items()}
    parameters["train"] |= {field.name for field in dataclasses.fields(TrainConfig)}  # its **overrides
    calls = re.findall(rf"`(?:[\w.]+\.)?({'|'.join(functions)})\(([^`]*)\)`", README.read_text(encoding="utf-8"))
    keywords = [(name, keyword) for name, arguments in calls for keyword in re.findall(r"(\w+)=", arguments)]
    assert len(keywords) >= 8
    for name, keyword in keywords:
        assert keyword in parameters[name], f"README: {name}({keyword}=...)"


def test_readme_tuner_config_is_the_shipped_one():
    """The YAML README.md shows (`tuner_configs/lama.yaml`, annotated) is a valid config, and it is
    the shipped `lama.yaml`: the search space a user reads is the one `tune --config lama` runs."""
    import dataclasses

    import yaml

    from keras_textattn.tuning import load_config

    (block,) = re.findall(r"```yaml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    shipped = load_config("lama")
    assert dataclasses.replace(load_config(yaml.safe_load(block)), path=shipped.path) == shipped
