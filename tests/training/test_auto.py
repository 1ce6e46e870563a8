"""`--model auto` (the default without --model): the fast paper models raced on held-out data."""

import contextlib
import io
import json

import numpy as np
import pytest

from keras_textattn.inference import Classifier
from keras_textattn.text import vectors
from keras_textattn.training import RunError
from keras_textattn.training import train
from keras_textattn.training.auto import raced
from keras_textattn_cli import main
from keras_textattn_config.train_config import BIGRAMS_CANDIDATE
from keras_textattn_config.train_config import CANDIDATES
from keras_textattn_config.train_config import DEFAULT_BIGRAM_BUCKETS
from keras_textattn_config.train_config import GLOVE_CANDIDATE
from keras_textattn_config.train_config import TrainConfig

OPTIONS = {"epochs": 1, "max_tokens": 2000}


@pytest.fixture(scope="module")
def auto_run(shared_data, tmp_path_factory):
    """A race on TREC's training file, one epoch each, started after its first candidate had
    finished alone under candidates/ (as a race killed after it leaves it): the output folder,
    the data, the metrics, what it printed, and when the first candidate's metrics were written."""
    output = tmp_path_factory.mktemp("auto") / "run"
    data = str(shared_data / "trec" / "train.csv.gz")
    first_name, (first_model, _) = next(iter(CANDIDATES.items()))
    first = output / "candidates" / first_name
    train(first_model, data, str(first), verbose=0, **OPTIONS)
    written = (first / "metrics.json").stat().st_mtime_ns
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        metrics = train(None, data, str(output), verbose=2, **OPTIONS)
    return output, data, metrics, printed.getvalue(), written


def test_auto_keeps_the_candidate_best_on_held_out_data(auto_run):
    output, _, metrics, printed, written = auto_run
    candidates = {name: json.loads((output / "candidates" / name / "metrics.json").read_text()) for name in CANDIDATES}
    held_out = {name: candidate["accuracy"]["validation"] for name, candidate in candidates.items()}
    chosen = max(CANDIDATES, key=held_out.get)
    assert metrics["model_choice"]["held_out_accuracy"] == held_out
    assert metrics["model_choice"]["chosen"] == chosen and metrics["model"] == CANDIDATES[chosen][0]
    assert {k: v for k, v in metrics.items() if k != "model_choice"} == candidates[chosen]
    assert json.loads((output / "metrics.json").read_text()) == metrics
    assert json.loads((output / "run.json").read_text())["model"] == "auto"  # how it was started
    compared = ", ".join(f"{name} {held_out[name]:.4f}" for name in CANDIDATES)
    assert f"--model auto: held-out accuracy {compared}; keeping {chosen}" in printed
    # The candidate that had finished was read, not trained again.
    assert (output / "candidates" / next(iter(CANDIDATES)) / "metrics.json").stat().st_mtime_ns == written
    assert not list(output.glob(".tmp-*"))


def test_the_glove_candidate_starts_from_glove_at_its_width_with_its_words(auto_run):
    output, _, _, _, _ = auto_run
    glove = json.loads((output / "candidates" / GLOVE_CANDIDATE / "metrics.json").read_text())
    plain = json.loads((output / "candidates" / "scalable_attention" / "metrics.json").read_text())
    assert glove["model"] == plain["model"] == "scalable_attention"
    assert glove["embeddings"]["source"] == "glove-6b-50d" and glove["embeddings"]["dimension"] == 50
    assert glove["embeddings"]["words_added"] > 90_000 and plain["embeddings"] is None


def test_the_bigram_candidate_reads_hashed_bigrams_beside_the_words(auto_run):
    output, _, _, _, _ = auto_run
    bigrams = json.loads((output / "candidates" / BIGRAMS_CANDIDATE / "metrics.json").read_text())
    plain = json.loads((output / "candidates" / "scalable_attention" / "metrics.json").read_text())
    assert bigrams["model"] == "scalable_attention" and bigrams["embeddings"] is None
    assert bigrams["encoder"]["bigram_buckets"] == DEFAULT_BIGRAM_BUCKETS and not plain["encoder"]["bigram_buckets"]
    vocabulary = [output / "candidates" / name / "vocabulary.txt" for name in (BIGRAMS_CANDIDATE, "scalable_attention")]
    assert vocabulary[0].read_text() == vocabulary[1].read_text()  # the same words, and their bigrams


def test_the_bigram_candidate_is_left_out_where_bigram_buckets_are_given():
    candidates, left_out = raced(TrainConfig(bigram_buckets=1000))
    why = "it reads 50,000 buckets of hashed bigrams, and --bigram-buckets 1000 was given"
    assert left_out == {BIGRAMS_CANDIDATE: why}
    assert list(candidates) == [name for name in CANDIDATES if name != BIGRAMS_CANDIDATE]
    assert all(config.bigram_buckets == 1000 for _, config in candidates.values())


@pytest.mark.parametrize(
    ("given", "why"),
    [
        ({"embeddings": "word2vec"}, "it starts from glove-6b-50d, and --embeddings word2vec was given"),
        ({}, "its vectors need the package no-such-package (pip install it)"),
    ],
)
def test_the_glove_candidate_is_left_out_saying_why(monkeypatch, given, why):
    if not given:  # as where the vectors' package is not installed
        monkeypatch.setitem(vectors.PACKAGED_VECTORS, "glove-6b-50d", ("no_such_module", "no-such-package", "", ""))
    candidates, left_out = raced(TrainConfig(**given))
    assert left_out == {GLOVE_CANDIDATE: why}
    assert list(candidates) == [name for name in CANDIDATES if name != GLOVE_CANDIDATE]
    assert all(config.embeddings == given.get("embeddings") for _, config in candidates.values())


def test_auto_output_classifies_as_the_chosen_run(auto_run):
    output, _, metrics, _, _ = auto_run
    texts = ["How far is it from Denver to Aspen ?", "What is the capital of Peru ?", "Who wrote Hamlet ?"]
    chosen = Classifier(str(output / "candidates" / metrics["model_choice"]["chosen"]))
    np.testing.assert_array_equal(Classifier(str(output)).probabilities(texts), chosen.probabilities(texts))


def test_a_race_killed_while_copying_the_chosen_run_copies_it_again(auto_run):
    """What a kill part-way through the copy leaves (run.json "auto", some files, no metrics.json)
    resumes: the finished candidates are read, not trained again, and the copy is made whole."""
    output, data, metrics, _, _ = auto_run
    written = {name: (output / "candidates" / name / "metrics.json").stat().st_mtime_ns for name in CANDIDATES}
    for name in ("metrics.json", "model.keras"):
        (output / name).unlink()
    assert train(None, data, str(output), verbose=0, **OPTIONS) == metrics
    assert {m: (output / "candidates" / m / "metrics.json").stat().st_mtime_ns for m in CANDIDATES} == written
    assert (output / "model.keras").read_bytes() == (
        output / "candidates" / metrics["model_choice"]["chosen"] / "model.keras"
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
    written = {name: (output / "candidates" / name / "metrics.json").stat().st_mtime_ns for name in CANDIDATES}
    again = train("auto", data, str(output), verbose=0, overwrite=True, seed=1, **OPTIONS)
    assert all((output / "candidates" / m / "metrics.json").stat().st_mtime_ns != t for m, t in written.items())
    assert again["seed"] == 1 != first["seed"] and json.loads((output / "metrics.json").read_text()) == again
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "trec.csv"]  # nothing kept aside, no lock left


def test_a_race_of_equal_candidates_keeps_the_first_and_says_what_it_left_out(tmp_path, capsys):
    """`race` with a stand-in for `train` that writes a run folder whose held-out accuracy is the
    same for every candidate: each candidate gets its own options, a tie keeps the first listed,
    and a candidate left out is said, with why."""
    from keras_textattn.training.auto import race

    given = []

    def train_candidate(model, data, folder, config):
        given.append((model, config.embeddings, config.model_kwargs, config.bigram_buckets))
        metrics = {"model": model, "accuracy": {"validation": 0.5}}
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "metrics.json").write_text(json.dumps(metrics))
        return metrics

    config = TrainConfig(embeddings="word2vec", verbose=1)
    metrics = race(train_candidate, "data.csv", str(tmp_path / "run"), config)
    assert given == [
        ("scalable_attention", "word2vec", {}, None),
        ("dual_axial", "word2vec", {}, None),
        ("scalable_attention", "word2vec", {}, DEFAULT_BIGRAM_BUCKETS),
    ]
    assert metrics["model_choice"]["chosen"] == "scalable_attention" == metrics["model"]
    printed = capsys.readouterr().out
    assert f"--model auto: {GLOVE_CANDIDATE} is not raced: it starts from glove-6b-50d, and --embeddings" in printed
    given.clear()
    race(train_candidate, "data.csv", str(tmp_path / "again"), TrainConfig(verbose=0))
    assert given[2] == ("scalable_attention", "glove-6b-50d", {"embedding_dim": 50}, None)
