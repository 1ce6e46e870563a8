"""The example scripts run: each parses its flags, and one trains end to end offline."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = sorted(
    p for p in (pathlib.Path(__file__).parents[1] / "examples").glob("*.py") if not p.name.startswith("_")
)


def test_every_paper_has_an_example():
    assert {p.stem for p in EXAMPLES} == {
        "cspan_ag_news",
        "dual_axial_ag_news",
        "hcan_yelp",
        "lama_imdb",
        "scalable_attention_ag_news",
    }


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.stem)
def test_example_help(script):
    result = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "--data" in result.stdout and "--small" in result.stdout
    # The offline command is shown as written in the script, ready to paste into a shell.
    assert f"python examples/{script.name} --small \\\n    --data ../shared/data/" in result.stdout


def test_example_goes_from_data_to_served_artifacts(shared_data, tmp_path):
    """One command, the whole path the README promises, offline on AG News: a keras-tuner search
    (one trial), training with MirroredStrategy on two CPU devices and mixed precision with the best
    hyperparameters, and a verified SavedModel and TFLite export; the SavedModel then labels texts."""
    output, export = tmp_path / "run", tmp_path / "export"
    script = next(p for p in EXAMPLES if p.stem == "scalable_attention_ag_news")
    result = subprocess.run(
        [
            sys.executable,
            str(script),
            "--small",
            "--epochs",
            "1",
            "--output",
            str(output),
            "--data",
            str(shared_data / "ag_news" / "train_sample_5k.csv.gz"),
            "--test-data",
            str(shared_data / "ag_news" / "test.csv.gz"),
            "--tune",
            "scalable_attention",
            "--tune-trials",
            "1",
            "--distribute",
            "mirrored",
            "--cpu-devices",
            "2",
            "--dtype-policy",
            "mixed_bfloat16",
            "--export",
            str(export),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Results: {output}" in result.stdout
    assert "━" not in result.stdout and "val_accuracy: " in result.stdout  # to a pipe: a line per epoch, no bar
    search = json.loads((tmp_path / "run-search" / "best" / "metrics.json").read_text())
    assert search["dtype_policy"] == "mixed_bfloat16" and search["preset"] == "cpu"  # the search trains as the run does
    assert search["tuner_config"].endswith(
        os.path.join("keras_textattn", "tuning", "configs", "scalable_attention.yaml")
    )
    metrics = json.loads((output / "metrics.json").read_text())
    assert metrics["label_names"] == ["World", "Sports", "Business", "Sci/Tech"]
    assert (
        metrics["replicas"] == 2 and metrics["distribute"] == "mirrored" and metrics["dtype_policy"] == "mixed_bfloat16"
    )
    assert all(metrics["model_kwargs"][name] == value for name, value in search["model_kwargs"].items())
    assert search["encoder"]["sequence_length"] == metrics["encoder"]["sequence_length"] == 128  # the example's
    assert metrics["accuracy"]["test"] > 0.7
    assert (export / "tflite" / "model.tflite").is_file()
    from keras_textattn.inference import predict

    rows = predict(export / "saved_model", ["The team won the championship final", "Stocks fell on Wall Street"])
    assert [row["label"] for row in rows] == ["Sports", "Business"]


def _example_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("_example", EXAMPLES[0].parent / "_example.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    return example


def test_an_examples_search_uses_the_embeddings_its_run_trains_with():
    """With the paper preset, LAMA and HCAN train from word2vec: their search does too; --small
    (the cpu preset) and models whose paper gives no vectors search without; an example's own
    embeddings win."""
    example = _example_module()
    assert example.search_embeddings("lama", False, {}) == {"embeddings": "word2vec", "freeze_embeddings": False}
    assert example.search_embeddings("hcan", False, {})["embeddings"] == "word2vec"
    assert example.search_embeddings("lama", True, {})["embeddings"] is None
    assert example.search_embeddings("cspan", False, {})["embeddings"] is None
    assert example.search_embeddings(
        "cspan", False, {"embeddings": "glove.6B.300d.txt", "freeze_embeddings": True}
    ) == {"embeddings": "glove.6B.300d.txt", "freeze_embeddings": True}


def test_an_examples_mistake_is_one_line(tmp_path, monkeypatch, capsys):
    """A user's mistake (here a missing file; offline, an unreachable TFDS dataset) ends an example
    with one line and status 2, as `keras-textattn` does, not a traceback, and leaves no run folder."""
    script = next(p for p in EXAMPLES if p.stem == "lama_imdb")
    missing, output = tmp_path / "reviews.csv", tmp_path / "run"
    result = subprocess.run(
        [sys.executable, str(script), "--small", "--data", str(missing), "--output", str(output)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.splitlines()[-1] == f"lama_imdb.py: error: Data file not found: '{missing}'"
    assert "Traceback" not in result.stderr and not output.exists()
    # The flag mistakes below are run in this process (the status and the line are the same; a
    # process of its own costs a TensorFlow import each). --epochs 0 is train's mistake too (the
    # example's own number of epochs replaced it silently). A CPU split needs a strategy to use it,
    # and a positive count (0 was read as none; -2 failed in TensorFlow).
    import runpy

    monkeypatch.syspath_prepend(str(script.parent))  # as Python runs a script: its folder first (its `_example`)
    for flags, message in (
        (["--epochs", "0"], "epochs must be a positive number; got 0"),
        (["--cpu-devices", "2"], "--cpu-devices splits the CPU for --distribute mirrored"),
        (["--cpu-devices", "-2", "--distribute", "mirrored"], "cpu-devices must be a positive whole number; got -2"),
    ):
        monkeypatch.setattr(
            sys, "argv", [str(script), "--small", "--data", str(missing), "--output", str(output), *flags]
        )
        with pytest.raises(SystemExit) as exit_:
            runpy.run_path(str(script), run_name="__main__")
        assert exit_.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1].startswith(f"lama_imdb.py: error: {message}")
        assert not output.exists()


def test_an_examples_flags_are_checked_before_the_search_and_training(tmp_path, monkeypatch, capsys):
    """An --export folder that the export would refuse, and --tune-trials without --tune, are one
    line before any work (the export's refusal came after training; --tune-trials alone was
    ignored; a config of another model exited 1 without the program's name)."""
    example = _example_module()
    run, exported = tmp_path / "run", tmp_path / "exported"
    (exported / "tflite").mkdir(parents=True)
    (tmp_path / "file.txt").write_text("x")
    cases = [
        (
            ["--export", str(run / "exported")],
            f"the output {run / 'exported' / 'saved_model'} is, contains or lies inside the run folder {run}",
        ),
        (["--export", str(tmp_path / "file.txt")], f"{tmp_path / 'file.txt'} is a file; give the path of a folder"),
        (["--export", str(exported)], f"{exported / 'tflite'} already exists; pass overwrite=True (--overwrite)"),
        (["--tune-trials", "2"], "--tune-trials goes with --tune CONFIG (a search); got --tune-trials 2 alone"),
        (["--tune", "lama"], "lama tunes lama; this example trains scalable_attention"),
    ]
    monkeypatch.setattr(sys, "argv", ["scalable_attention_ag_news.py", "--small", "--epoch", "2"])
    with pytest.raises(SystemExit) as exit_:  # options in full, as keras-textattn takes them (--epoch was --epochs)
        example.parse_args("", "unused")
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "scalable_attention_ag_news.py: error: unrecognized arguments: --epoch 2"
    )
    for flags, message in cases:
        monkeypatch.setattr(sys, "argv", ["scalable_attention_ag_news.py", "--small", "--output", str(run), *flags])
        with pytest.raises(SystemExit) as exit_:
            example.run(example.parse_args("", "unused"), "scalable_attention", {}, str(tmp_path / "missing.csv"), 1)
        assert exit_.value.code == 2
        error = capsys.readouterr().err.strip().splitlines()
        assert len(error) == 1 and error[0].startswith(f"scalable_attention_ag_news.py: error: {message}"), error
    assert sorted(os.listdir(tmp_path)) == ["exported", "file.txt"] and os.listdir(exported) == ["tflite"]


def test_an_examples_paths_expand_a_tilde(tmp_path, monkeypatch):
    """`--output=~/runs/x` reaches the script as written: its path flags expand `~` to the home
    folder, as `keras-textattn`'s do (a folder named `~` was made in the working directory)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    flags = ["--data=~/d.csv", "--test-data=~/t.csv", "--output=~/run", "--tune=~/c.yaml", "--export=~/served"]
    monkeypatch.setattr(sys, "argv", ["lama_imdb.py", *flags])
    args = _example_module().parse_args("", "unused")
    assert [args.data, args.test_data, args.output, args.tune, args.export] == [
        str(tmp_path / name) for name in ("d.csv", "t.csv", "run", "c.yaml", "served")
    ]
