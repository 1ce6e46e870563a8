"""The cpu preset's default vectors: LAMA and CSPAN start from GloVe 6B 50-d (and 100,000 of its
words) where it has a vector for most of the training texts' vocabulary, from random vectors
elsewhere (another language, sizes the user fixed, `--embeddings random`, no package)."""

import csv
import json
import os

import keras
import pytest

from keras_textattn.models import SPECS
from keras_textattn.run_folder import FINISHED_MARKER
from keras_textattn.run_folder import load_run
from keras_textattn.text.vectors import vectors_dimension
from keras_textattn.training import train
from keras_textattn_cli import main
from keras_textattn_config.train_config import DEFAULT_VECTORS
from keras_textattn_config.train_config import FIELDS
from keras_textattn_config.train_config import VECTORS_COVERAGE
from keras_textattn_config.train_config import option_of

LAMA_SMALL = {"gru_units": 4, "num_heads": 2, "mlp_units": 8}  # the embedding's size left to the rule
FINNISH = [
    ("Nopea ruskea kettu hyppää laiskan koiran yli ja juoksee metsään", 0),
    ("Hallitus päätti eilen laskea pienten yritysten veroja huomattavasti", 1),
    ("Luin kirjan mutta tarina ei valitettavasti miellyttänyt minua lainkaan", 0),
    ("Kaupungin uusi kirjasto avattiin viime viikolla suurella juhlalla", 1),
    ("Elokuva oli aivan liian pitkä ja näyttelijät olivat tylsiä", 0),
    ("Eduskunta hyväksyi lakiesityksen äänin sata kaksikymmentä", 1),
]


@pytest.fixture
def sst2_dev(shared_data):
    return str(shared_data / "sst2" / "dev.csv.gz")


def test_lama_starts_from_glove_on_english_texts_and_resumes_with_the_same_vocabulary(
    sst2_dev, glove_package, tmp_path, capsys
):
    """SST-2's sentences are English: LAMA's embedding is GloVe's 50 wide, starts from its vectors,
    and GloVe's words join the vocabulary, said with the option that turns it off; run.json keeps the
    options as given (none), and a resumed run reads its saved encoder without adding them twice."""
    run = tmp_path / "run"
    options = dict(sequence_length=16, model_kwargs=LAMA_SMALL, verbose=1)
    metrics = train("lama", sst2_dev, str(run), epochs=1, **options)
    said = capsys.readouterr().out
    assert "Chosen from the training texts (glove-6b-50d has a vector for" in said
    assert "give --embeddings random to start from random vectors): embeddings glove-6b-50d, " in said
    assert "vectors_vocabulary 100000, embedding_dim 50" in said
    embeddings = metrics["embeddings"]
    assert embeddings["source"] == "glove-6b-50d" and embeddings["coverage"] >= VECTORS_COVERAGE
    assert embeddings["words_added"] > 80_000 and metrics["model_kwargs"]["embedding_dim"] == 50
    assert json.loads((run / "run.json").read_text())["embeddings"] is None
    model, encoder, _ = load_run(run)
    assert model.get_layer("embedding").embeddings.shape == (encoder.vocabulary_size(), 50)
    (run / FINISHED_MARKER).unlink()  # unfinished: it trains again from the start, on the saved encoder
    resumed = train("lama", sst2_dev, str(run), epochs=1, **options)
    assert resumed["embeddings"] == embeddings and load_run(run)[1].vocabulary_size() == encoder.vocabulary_size()


def test_a_resumed_run_goes_on_with_the_vectors_it_started_with(sst2_dev, glove_package, tmp_path, monkeypatch):
    """A run that started from random vectors (here under a rule asking for more than any texts
    give, as an older version's might) resumes from random vectors at its own size, though the rule
    would now choose GloVe: what its saved encoder holds decides, so its backup's weights still fit."""
    from keras_textattn.training import model_setup

    run = tmp_path / "run"
    options = dict(sequence_length=12, model_kwargs=LAMA_SMALL, verbose=0)
    monkeypatch.setattr(model_setup, "VECTORS_COVERAGE", 1.01)
    assert train("lama", sst2_dev, str(run), epochs=1, **options)["embeddings"] is None
    monkeypatch.undo()
    (run / FINISHED_MARKER).unlink()  # unfinished: it trains again, on the saved encoder
    resumed = train("lama", sst2_dev, str(run), epochs=1, **options)
    assert resumed["embeddings"] is None and resumed["model_kwargs"]["embedding_dim"] == 64


def test_other_languages_given_sizes_and_random_start_from_random_vectors(sst2_dev, glove_package, tmp_path, capsys):
    """Finnish texts (GloVe knows few of their words): CSPAN starts from random vectors at the cpu
    preset's size, and says why. On English texts, a size the user fixed or `--embeddings random`
    keeps random vectors too; random vectors cannot be frozen."""
    data = tmp_path / "finnish.csv"
    with open(data, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([("text", "label"), *FINNISH * 10])
    metrics = train("cspan", str(data), str(tmp_path / "fi"), epochs=1, sequence_length=12, verbose=1)
    said = capsys.readouterr().out
    assert "cspan starts from random vectors: glove-6b-50d has a vector for" in said
    assert f"below {VECTORS_COVERAGE:.0%} (its words are English ones)" in said
    assert metrics["embeddings"] is None and metrics["model_kwargs"]["embedding_dim"] == 64
    for name, options in (
        ("sized", {"model_kwargs": {**LAMA_SMALL, "embedding_dim": 8}}),
        ("random", {"model_kwargs": LAMA_SMALL, "embeddings": "random"}),
    ):
        metrics = train("lama", sst2_dev, str(tmp_path / name), epochs=1, sequence_length=12, verbose=1, **options)
        assert metrics["embeddings"] is None and "glove" not in capsys.readouterr().out
        assert metrics["model_kwargs"]["embedding_dim"] == options["model_kwargs"].get("embedding_dim", 64)
    common = ["train", "--model", "lama", "--data", sst2_dev, "--output", str(tmp_path / "frozen")]
    assert main([*common, "--embeddings", "random", "--freeze-embeddings"]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and "needs embeddings (--embeddings) to freeze" in error[0]
    assert not os.path.exists(tmp_path / "frozen")


def test_without_the_vectors_package_the_run_says_so_and_starts_from_random(sst2_dev, tmp_path, capsys, monkeypatch):
    from keras_textattn.text import vectors

    monkeypatch.setitem(vectors.PACKAGED_VECTORS, "glove-6b-50d", ("no_such_module", "no-such-package", "w", "m"))
    metrics = train("lama", sst2_dev, str(tmp_path / "run"), epochs=1, sequence_length=12, model_kwargs=LAMA_SMALL)
    assert "lama starts from random vectors: glove-6b-50d, its default for English texts, needs no-such-package" in (
        capsys.readouterr().out
    )
    assert metrics["embeddings"] is None and metrics["model_kwargs"]["embedding_dim"] == 64


@pytest.mark.parametrize("name", [name for name, spec in SPECS.items() if spec.vectors_arguments])
def test_a_models_vectors_arguments_build_it_at_the_vectors_width(name, glove_package):
    """The builder arguments that fit a model to the default vectors give its embedding their width,
    and build (HCAN's heads must divide its units)."""
    spec = SPECS[name]
    arguments = {**spec.preset_arguments("cpu"), **spec.vectors_arguments}
    assert spec.embedding_size(arguments) == vectors_dimension(DEFAULT_VECTORS["embeddings"])
    shape = {"sequence_length": 8, **({"max_sentences": 2} if spec.is_hierarchical(arguments) else {})}
    model = spec.build(2, vocabulary_size=30, **shape, **arguments)
    assert isinstance(model, keras.Model) and model.get_layer("embedding").output_dim == 50


def test_the_embeddings_help_names_the_models_that_start_from_the_vectors():
    """`--embeddings`'s help (the CLI's and the reference's) says which models start from the
    default vectors: those whose spec has `vectors_arguments`, no other paper model."""
    help_text = option_of(FIELDS["embeddings"]).help
    starts = help_text.split("default: random, but with the cpu preset ")[1].split(" start from ")[0]
    assert starts == " and ".join(name for name, spec in SPECS.items() if spec.vectors_arguments)
    assert f"{VECTORS_COVERAGE:.0%} of the training texts' vocabulary" in help_text
