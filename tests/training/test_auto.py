"""`--model auto` (the default without --model): the fast paper models raced on held-out data."""

import contextlib
import io
import json

import numpy as np
import pytest

from keras_textattn.inference import Classifier
from keras_textattn.training import RunError
from keras_textattn.training import train
from keras_textattn_cli import main
from keras_textattn_config.train_config import CANDIDATES

OPTIONS = {"epochs": 1, "max_tokens": 2000}


@pytest.fixture(scope="module")
def auto_run(shared_data, tmp_path_factory):
    """A race on TREC's training file, one epoch each, started after its first candidate had
    finished alone under candidates/ (as a race killed after it leaves it): the output folder,
    the data, the metrics, what it printed, and when the first candidate's metrics were written."""
    output = tmp_path_factory.mktemp("auto") / "run"
    data = str(shared_data / "trec" / "train.csv.gz")
    first = output / "candidates" / CANDIDATES[0]
    train(CANDIDATES[0], data, str(first), verbose=0, **OPTIONS)
    written = (first / "metrics.json").stat().st_mtime_ns
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        metrics = train(None, data, str(output), verbose=2, **OPTIONS)
    return output, data, metrics, printed.getvalue(), written


def test_auto_keeps_the_candidate_best_on_held_out_data(auto_run):
    output, _, metrics, printed, written = auto_run
    candidates = {
        model: json.loads((output / "candidates" / model / "metrics.json").read_text()) for model in CANDIDATES
    }
    held_out = {model: candidate["accuracy"]["validation"] for model, candidate in candidates.items()}
    chosen = max(CANDIDATES, key=held_out.get)
    assert metrics["model_choice"]["held_out_accuracy"] == held_out
    assert metrics["model_choice"]["chosen"] == chosen == metrics["model"]
    assert {k: v for k, v in metrics.items() if k != "model_choice"} == candidates[chosen]
    assert json.loads((output / "metrics.json").read_text()) == metrics
    assert json.loads((output / "run.json").read_text())["model"] == "auto"  # how it was started
    compared = ", ".join(f"{model} {held_out[model]:.4f}" for model in CANDIDATES)
    assert f"--model auto: held-out accuracy {compared}; keeping {chosen}" in printed
    # The candidate that had finished was read, not trained again.
    assert (output / "candidates" / CANDIDATES[0] / "metrics.json").stat().st_mtime_ns == written
    assert not list(output.glob(".tmp-*"))


def test_auto_output_classifies_as_the_chosen_run(auto_run):
    output, _, metrics, _, _ = auto_run
    texts = ["How far is it from Denver to Aspen ?", "What is the capital of Peru ?", "Who wrote Hamlet ?"]
    chosen = Classifier(str(output / "candidates" / metrics["model"]))
    np.testing.assert_array_equal(Classifier(str(output)).probabilities(texts), chosen.probabilities(texts))


def test_a_race_killed_while_copying_the_chosen_run_copies_it_again(auto_run):
    """What a kill part-way through the copy leaves (run.json "auto", some files, no metrics.json)
    resumes: the finished candidates are read, not trained again, and the copy is made whole."""
    output, data, metrics, _, _ = auto_run
    written = {model: (output / "candidates" / model / "metrics.json").stat().st_mtime_ns for model in CANDIDATES}
    for name in ("metrics.json", "model.keras"):
        (output / name).unlink()
    assert train(None, data, str(output), verbose=0, **OPTIONS) == metrics
    assert {m: (output / "candidates" / m / "metrics.json").stat().st_mtime_ns for m in CANDIDATES} == written
    assert (output / "model.keras").read_bytes() == (
        output / "candidates" / metrics["model"] / "model.keras"
    ).read_bytes()


def test_a_finished_race_is_refused_without_overwrite(auto_run):
    output, data, _, _, _ = auto_run
    with pytest.raises(RunError, match="already holds a finished run"):
        train("auto", data, str(output), **OPTIONS)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--set", "embedding_dim=16"], "model_kwargs (--set) are one model's arguments"),
        (["--validation-fraction", "0"], "--model auto chooses on held-out data"),
        (["--model", "auto", "--init-from", "runs/x"], "it takes no --model auto"),
    ],
)
def test_auto_refuses_what_a_race_cannot_take(shared_data, tmp_path, capsys, extra, message):
    output = tmp_path / "run"
    args = ["train", "--data", str(shared_data / "trec" / "test.csv.gz"), "--output", str(output)]
    assert main(args + extra) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and message in error[0] and not output.exists()


def test_an_overwritten_race_trains_its_candidates_again_and_leaves_no_copy_aside(shared_data, tmp_path):
    import gzip

    with gzip.open(shared_data / "trec" / "train.csv.gz", "rt", encoding="utf-8") as handle:
        (tmp_path / "trec.csv").write_text("".join(handle.readlines()[:801]), encoding="utf-8")
    data, output = str(tmp_path / "trec.csv"), tmp_path / "run"
    first = train("auto", data, str(output), verbose=0, **OPTIONS)
    written = {model: (output / "candidates" / model / "metrics.json").stat().st_mtime_ns for model in CANDIDATES}
    again = train("auto", data, str(output), verbose=0, overwrite=True, seed=1, **OPTIONS)
    assert all((output / "candidates" / m / "metrics.json").stat().st_mtime_ns != t for m, t in written.items())
    assert again["seed"] == 1 != first["seed"] and json.loads((output / "metrics.json").read_text()) == again
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "trec.csv"]  # nothing kept aside, no lock left
