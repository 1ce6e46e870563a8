"""Word vectors for the vocabulary: vectors files (GloVe, word2vec / fastText text) and word2vec
trained on real training texts."""

import gzip
import re

import numpy as np
import pytest

from keras_textattn.datasets import LocalFile
from keras_textattn.datasets import load_dataset
from keras_textattn.datasets.formats import DataError
from keras_textattn.errors import UserError
from keras_textattn.text import TextEncoder
from keras_textattn.text.vectors import PACKAGED_VECTORS
from keras_textattn.text.vectors import VectorsError
from keras_textattn.text.vectors import coverage
from keras_textattn.text.vectors import embedding_matrix
from keras_textattn.text.vectors import read_vectors
from keras_textattn.text.vectors import train_word2vec
from keras_textattn.text.vectors import vectors_dimension
from keras_textattn.text.vectors import vectors_words
from keras_textattn.text.vectors import write_word2vec

VOCABULARY = ["", "[UNK]", "good", "film", "café", "dull"]


def _write(path, text):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wt", encoding="utf-8") as handle:
        handle.write(text)
    return str(path)


@pytest.mark.parametrize("name, header", [("glove.txt", ""), ("vectors.vec", "4 3\n"), ("glove.txt.gz", "")])
def test_vectors_files_are_read_for_the_vocabulary(tmp_path, name, header):
    """GloVe (no header), word2vec / fastText text (a count-and-dimension header), gzip; words are
    matched as the encoder standardises them, the first spelling of a folded word wins."""
    path = _write(tmp_path / name, header + "Good 1 2 3\ngood 9 9 9\nCAFÉ 0.5 -1 2e-1\nunseen 7 7 7\n")
    vectors, dimension = read_vectors(path, VOCABULARY)
    assert dimension == 3 and sorted(vectors) == ["café", "good"]
    np.testing.assert_array_equal(vectors["good"], [1, 2, 3])
    np.testing.assert_allclose(vectors["café"], [0.5, -1, 0.2])
    # Its words in order for `TextEncoder.extend_vocabulary`: standardised, a folded repeat left out.
    assert vectors_words(path, 2) == ["good", "café"] and vectors_words(path, 10) == ["good", "café", "unseen"]


@pytest.mark.parametrize("name", ["vectors.bin", "vectors.bin.gz"])
def test_binary_word2vec_files_are_read_word_by_word(tmp_path, name):
    """word2vec's binary format (GoogleNews-vectors-negative300.bin), as gensim and Google's tool
    write it (the latter with a newline after each vector); it read as text: "1-dimensional
    vectors", and `--set embedding_dim=1` was the advice."""
    from gensim.models import KeyedVectors

    words = ["Good", "good", "CAFÉ", "unseen"]
    numbers = np.random.default_rng(0).normal(size=(4, 3)).astype("float32")
    keyed = KeyedVectors(vector_size=3)
    keyed.add_vectors(words, numbers)
    keyed.save_word2vec_format(str(tmp_path / "gensim.bin"), binary=True)
    google = b"4 3\n" + b"".join(word.encode() + b" " + row.tobytes() + b"\n" for word, row in zip(words, numbers))
    for path, content in (
        (tmp_path / f"gensim-{name}", (tmp_path / "gensim.bin").read_bytes()),
        (tmp_path / f"google-{name}", google),
    ):
        path.write_bytes(gzip.compress(content) if name.endswith(".gz") else content)
        vectors, dimension = read_vectors(str(path), VOCABULARY)
        assert dimension == 3 and sorted(vectors) == ["café", "good"], path
        np.testing.assert_array_equal(vectors["good"], numbers[0])  # the first spelling wins, as in text files
        np.testing.assert_array_equal(vectors["café"], numbers[2])
        assert vectors_words(str(path), 10) == ["good", "café", "unseen"]
    (tmp_path / "cut.bin").write_bytes(google[:-7])
    with pytest.raises(VectorsError, match=r"cut.bin: ends inside vector 4 of 4"):
        read_vectors(str(tmp_path / "cut.bin"), VOCABULARY)
    (tmp_path / "nan.bin").write_bytes(google.replace(numbers[2].tobytes(), np.array([1, np.nan, 2], "<f4").tobytes()))
    with pytest.raises(VectorsError, match=re.escape("nan.bin, vector 3: the vector of 'café' holds nan")):
        read_vectors(str(tmp_path / "nan.bin"), VOCABULARY)
    (tmp_path / "misnamed.vec").write_bytes(google)
    with pytest.raises(
        VectorsError,
        match=r"misnamed.vec, line 2: expected a word and its numbers; found 1 numbers "
        r"where its header says 3 \(a binary word2vec file\? its name must end in .bin",
    ):
        read_vectors(str(tmp_path / "misnamed.vec"), VOCABULARY)


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "holds no vectors"),
        ("good 1 2 3\nfilm 1 2\n", "line 2: 2 numbers where the first vector has 3 (rows of different lengths)"),
        ("good 1 2 3\nfilm 1 x 3\n", "line 2: not a number"),
        ("good\n", "line 1: expected a word and its numbers"),
        # A NaN row made the loss NaN whenever a text held the word (TREC's accuracy fell from 0.48 to 0.23).
        ("good 1 2 3\nfilm 1 nan 3\n", "line 2: the vector of 'film' holds nan (numbers must be finite in float32)"),
        ("good 1 -inf 3\n", "line 1: the vector of 'good' holds -inf"),
        ("good 1 1e39 3\n", "line 1: the vector of 'good' holds inf"),  # beyond float32
    ],
)
def test_bad_vectors_files_name_the_line(tmp_path, content, message):
    with pytest.raises(VectorsError, match=re.escape(message)):
        read_vectors(_write(tmp_path / "bad.txt", content), VOCABULARY)


def test_missing_and_truncated_files(tmp_path):
    with pytest.raises(VectorsError, match="not found"):
        read_vectors(str(tmp_path / "none.txt"), VOCABULARY)
    whole = gzip.compress(("good 1 2 3\n" * 2000).encode())
    (tmp_path / "cut.txt.gz").write_bytes(whole[: len(whole) // 2])
    with pytest.raises(VectorsError, match="cannot be read"):
        read_vectors(str(tmp_path / "cut.txt.gz"), VOCABULARY)


def test_embedding_matrix_rows():
    """Covered words get their vector, rescaled together to a standard deviation of 0.05; padding
    zeros; each uncovered word a random row of its own, seeded."""
    vectors = {"good": np.array([1.0, -1.0, 2.0], "float32"), "dull": np.array([-2.0, 0.5, 1.0], "float32")}
    matrix, covered = embedding_matrix(VOCABULARY, vectors, 3, seed=3)
    assert covered.tolist() == [False, False, True, False, False, True] and coverage(covered) == 0.5
    assert matrix.shape == (6, 3) and matrix.dtype == np.float32
    factor = 0.05 / np.std(np.stack(list(vectors.values())))
    np.testing.assert_allclose(matrix[2], vectors["good"] * factor, rtol=1e-6)
    np.testing.assert_allclose(matrix[5], vectors["dull"] * factor, rtol=1e-6)
    assert np.std(matrix[[2, 5]]) == pytest.approx(0.05, rel=1e-5)
    np.testing.assert_array_equal(matrix[0], 0.0)
    random_rows = matrix[[1, 3, 4]]
    assert len({tuple(row) for row in random_rows}) == 3
    assert not any(np.allclose(row, v) for row in random_rows for v in vectors.values())
    np.testing.assert_array_equal(embedding_matrix(VOCABULARY, vectors, 3, seed=3)[0], matrix)


POSITIVE = ["good", "great", "best", "funny", "beautiful", "wonderful", "excellent", "enjoyable"]
NEGATIVE = ["bad", "worst", "boring", "dull", "stupid", "awful", "terrible", "mess"]


def _assert_sentiment_words_together(vectors):
    """Frequent sentiment words are closer to each other than to random words of `vectors`."""

    def unit(word):
        return vectors[word] / np.linalg.norm(vectors[word])

    rng = np.random.default_rng(0)
    others = [w for w in rng.choice(sorted(vectors), 300, replace=False) if w not in POSITIVE + NEGATIVE]
    for group in (POSITIVE, NEGATIVE):
        within = np.mean([unit(a) @ unit(b) for a in group for b in group if a != b])
        to_random = np.mean([unit(a) @ unit(b) for a in group for b in others])
        assert within > to_random + 0.1, (group, within, to_random)


def test_word2vec_on_sst2_puts_sentiment_words_together(shared_data):
    """word2vec on SST-2's training texts (6,920 sentences), tokenised by the encoder: frequent
    sentiment words are closer to each other than to random vocabulary words; seeded, it repeats."""
    train = load_dataset({"train": LocalFile(str(shared_data / "sst2" / "train.csv.gz"))}, ("train",))["train"]
    encoder = TextEncoder(max_tokens=5000)
    encoder.adapt(train)
    vectors = train_word2vec(encoder, train, 32, seed=0)
    vocabulary = encoder.get_vocabulary()
    # min_count 5: about 3,000 of the 5,000 most frequent words occur 5 times or more.
    assert 2500 < len(vectors) < len(vocabulary) - 1000 and all(word in vectors for word in vocabulary[2:2500])
    _assert_sentiment_words_together(vectors)
    again = train_word2vec(encoder, train.take(300), 8, seed=1)
    np.testing.assert_array_equal(again["good"], train_word2vec(encoder, train.take(300), 8, seed=1)["good"])


def test_glove_from_its_package_for_the_sst2_vocabulary(shared_data, glove_package):
    """`glove-6b-50d` reads Stanford's GloVe 6B 50-d from its pip package: the published first
    vector ("the"), nearly all of SST-2's frequent words found (GloVe is lower-cased, as the
    encoder folds), words it lacks left out, and sentiment words closer to each other than to
    random vocabulary words, as word2vec on SST-2 puts them."""
    train = load_dataset({"train": LocalFile(str(shared_data / "sst2" / "train.csv.gz"))}, ("train",))["train"]
    encoder = TextEncoder(max_tokens=5000)
    encoder.adapt(train)
    vocabulary = encoder.get_vocabulary() + ["qzxv-not-a-word"]
    vectors, dimension = read_vectors("glove-6b-50d", vocabulary)
    assert dimension == 50 == vectors_dimension("glove-6b-50d")
    np.testing.assert_allclose(vectors["the"][:5], [0.418, 0.24968, -0.41242, 0.1217, 0.34527])
    assert all(vector.shape == (50,) and vector.dtype == np.float32 for vector in vectors.values())
    assert "qzxv-not-a-word" not in vectors and "[UNK]" not in vectors
    assert sum(word in vectors for word in vocabulary[2:1002]) > 990
    assert vectors_words("glove-6b-50d", 8) == ["the", ",", ".", "of", "to", "and", "in", "a"]  # its first words
    _assert_sentiment_words_together(vectors)


def test_a_packaged_source_without_its_package_says_what_to_install(monkeypatch):
    monkeypatch.setitem(PACKAGED_VECTORS, "glove-6b-50d", ("no_such_module", "no-such-package", "words", "matrix"))
    with pytest.raises(
        VectorsError, match=re.escape("package no-such-package, which is not installed: pip install no-such-package")
    ):
        read_vectors("glove-6b-50d", VOCABULARY)


def _unlabelled_reviews(shared_data, path, rows):
    """The texts of IMDB's first training reviews of each label, without labels, as JSONL;
    returns the path and the texts."""
    import csv
    import json

    with gzip.open(shared_data / "imdb" / "train.csv.gz", "rt", encoding="utf-8") as handle:
        records = list(csv.DictReader(handle))
    texts = [r["text"] for r in records[: rows // 2] + records[-rows // 2 :]]  # the file is sorted by label
    with open(path, "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps({"text": text}) + "\n" for text in texts)
    return str(path), texts


def test_write_word2vec_from_unlabelled_files(shared_data, tmp_path, capsys):
    """`keras-textattn vectors`: word2vec on unlabelled reviews (JSONL, 2,000 IMDB reviews) and
    SST-2's dev sentences (CSV, labels unread) writes a word2vec text file that `read_vectors`
    takes for another dataset's vocabulary (SST-2's training texts): every token of both files
    read, sentiment words together, the same bytes for the same seed, an existing file kept."""
    from keras_textattn_cli import main

    reviews, review_texts = _unlabelled_reviews(shared_data, tmp_path / "reviews.jsonl", 2000)
    dev = str(shared_data / "sst2" / "dev.csv.gz")
    output = tmp_path / "reviews.vec"
    command = ["vectors", "--data", reviews, "--data", dev, "--output", str(output), "--dimension", "32"]
    assert main(command) == 0
    report = capsys.readouterr().out
    dev_texts = [
        text.decode() for text, _ in load_dataset({"train": LocalFile(dev)}, ("train",))["train"].as_numpy_iterator()
    ]
    rows = TextEncoder().tokenize(review_texts + dev_texts).to_list()
    tokens = sum(b" " not in token for row in rows for token in row)  # as word2vec reads them (next test)
    count, dimension = map(int, output.read_text(encoding="utf-8").split("\n", 1)[0].split())
    assert re.search(
        rf"Wrote {count} word vectors of 32 dimensions \(word2vec, \d+ passes over {tokens} tokens\)", report
    )
    assert dimension == 32 and "--embeddings" in report and "<br" not in output.read_text(encoding="utf-8")

    train = load_dataset({"train": LocalFile(str(shared_data / "sst2" / "train.csv.gz"))}, ("train",))["train"]
    encoder = TextEncoder(max_tokens=5000)
    encoder.adapt(train)
    vectors, found = read_vectors(str(output), encoder.get_vocabulary())
    assert found == 32 and len(vectors) > 2500  # most of SST-2's frequent words occur 5 times in these texts
    _assert_sentiment_words_together(vectors)

    written = output.read_bytes()
    assert main(command) == 2 and "already exists" in capsys.readouterr().err and output.read_bytes() == written
    assert main(command + ["--overwrite"]) == 0 and output.read_bytes() == written  # seeded: the same file


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"data": "missing.csv"}, "no such file"),
        ({"data": "empty.csv"}, "texts with words"),
        (
            {"data": "broken.jsonl"},
            r"broken.jsonl, row 601: not valid JSON",
        ),  # the third batch, read as two are tokenised
        ({"dimension": 0}, "dimension must be a positive int"),
        ({"min_count": 10**6}, "no word that occurs at least 1000000 times"),
        # Petabytes, more than any address space, so that no machine starts filling them: it was numpy's
        # MemoryError with a traceback.
        ({"dimension": 10**14}, r"word2vec ran out of memory \(Unable to allocate .* shape \(\d+, 100000000000000\)"),
        ({"output": "no/such/folder/v.vec"}, "does not exist"),
        ({"output": "texts.csv", "overwrite": True}, "texts.csv is a file this command reads"),  # it replaced the texts
        ({"seed": 2**32}, "seed must be a whole number from 0 to 4294967295; got 4294967296"),
    ],
)
def test_write_word2vec_refuses_bad_input(tmp_path, arguments, message):
    """Bad input is a one-line `UserError` (a `VectorsError` but for the seed, the output that is
    the input and a file's bad row, the reader's `DataError`) and no file (nor a temporary one) is left."""
    _write(tmp_path / "texts.csv", "text\n" + '"a good film, a dull plot"\n' * 20)
    _write(tmp_path / "empty.csv", "text\n" + '""\n' * 3)
    _write(tmp_path / "broken.jsonl", '{"text": "a good film"}\n' * 600 + '{"text": oops\n')
    arguments = {"data": "texts.csv", "output": "v.vec", "dimension": 8, **arguments}
    vectors_error = not {"seed", "overwrite"} & set(arguments) and arguments["data"] != "broken.jsonl"
    arguments["data"], arguments["output"] = str(tmp_path / arguments["data"]), str(tmp_path / arguments["output"])
    with pytest.raises(VectorsError if vectors_error else UserError, match=message):
        write_word2vec(arguments.pop("data"), arguments.pop("output"), arguments.pop("dimension"), **arguments)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.jsonl", "empty.csv", "texts.csv"]


@pytest.mark.parametrize("data", [3, [], [""], ["a.csv", 4]])
def test_write_word2vec_refuses_data_that_is_no_path(tmp_path, data):
    """An int was a TypeError from `list()`; an empty list trained on no texts."""
    with pytest.raises(
        VectorsError,
        match=rf"^data must be a file, a glob or a folder of shards, or a list of them; "
        rf"got {re.escape(repr(data))}$",
    ):
        write_word2vec(data, tmp_path / "v.vec", 8)
    assert not list(tmp_path.iterdir())


def test_tokens_holding_a_space_are_left_out_of_word2vec(tmp_path):
    """The acute accent of "don´t" is a token that NFKC turns into a space and a combining mark;
    gensim would read it as two words (a bare combining mark among them): it is left out, and
    every other token keeps its place, in the file and in the count."""
    _write(tmp_path / "texts.csv", "text\n" + "i don´t like it but i do like this\n" * 10)
    tokens = [token.decode() for token in TextEncoder().tokenize(["don´t"]).to_list()[0]]
    assert tokens[0] == "don" and " " in tokens[1] and tokens[2] == "t"
    report = write_word2vec(str(tmp_path / "texts.csv"), tmp_path / "v.vec", 4)
    lines = (tmp_path / "v.vec").read_text(encoding="utf-8").splitlines()
    assert report["tokens"] == 100 and report["words"] == 8 == len(lines) - 1  # 11 tokens a line, 1 left out
    assert all(len(line.split(" ")) == 5 for line in lines[1:])
    vectors = read_vectors(str(tmp_path / "v.vec"), tokens)[0]
    assert sorted(vectors) == ["don", "t"]


def test_write_word2vec_reads_plain_text_lines(tmp_path, capsys):
    """`--lines`: each line of a plain text file (here gzip) is a text, commas and the first line
    included, where the same file read as CSV would take its first line for a header."""
    from keras_textattn_cli import main

    path = _write(tmp_path / "corpus.txt.gz", "a good film, a dull plot\n" * 20)
    report = write_word2vec(path, tmp_path / "v.vec", 4, lines=True)
    assert report["tokens"] == 20 * 7 and report["words"] == 6  # a good film , dull plot
    command = ["vectors", "--data", path, "--output", str(tmp_path / "w.vec"), "--dimension", "4", "--lines"]
    assert main(command + ["--text-column", "text"]) == 2 and "--lines reads each line" in capsys.readouterr().err
    assert main(command) == 0 and (tmp_path / "w.vec").read_bytes() == (tmp_path / "v.vec").read_bytes()
    truncated = tmp_path / "truncated.txt.gz"
    truncated.write_bytes((tmp_path / "corpus.txt.gz").read_bytes()[:-10])
    with pytest.raises(DataError, match="truncated.txt.gz: cannot be read: it ends early"):
        write_word2vec(str(truncated), tmp_path / "x.vec", 4, lines=True)
    assert not (tmp_path / "x.vec").exists()


def test_write_word2vec_reads_a_glob_or_a_folder_of_shards(tmp_path):
    """A glob or a folder of shards, as `train` streams them, stands for its files in sorted order:
    the same vectors as the list of the files (it was "no such file")."""
    (tmp_path / "shards").mkdir()
    _write(tmp_path / "shards" / "b.csv", "text\n" + "a dull plot and a dull film\n" * 20)
    _write(tmp_path / "shards" / "a.csv", "text\n" + "a good film with a good plot\n" * 20)
    listed = write_word2vec([str(tmp_path / "shards" / name) for name in ("a.csv", "b.csv")], tmp_path / "list.vec", 4)
    for name, data in (("glob", tmp_path / "shards" / "*.csv"), ("folder", tmp_path / "shards")):
        assert write_word2vec(str(data), tmp_path / f"{name}.vec", 4)["tokens"] == listed["tokens"] == 2 * 20 * 7
        assert (tmp_path / f"{name}.vec").read_bytes() == (tmp_path / "list.vec").read_bytes(), name
    with pytest.raises(DataError, match="No data files found at"):
        write_word2vec(str(tmp_path / "shards" / "*.tsv"), tmp_path / "none.vec", 4)


def test_write_word2vec_reads_a_file_of_semicolons_with_its_delimiter(tmp_path):
    _write(tmp_path / "commas.csv", "id,text\n" + '1,"a good film, a dull plot"\n' * 20)
    _write(tmp_path / "semicolons.csv", "id;text\n" + "1;a good film, a dull plot\n" * 20)
    write_word2vec(str(tmp_path / "commas.csv"), tmp_path / "commas.vec", 4)
    with pytest.raises(DataError, match="Give --delimiter ';'"):
        write_word2vec(str(tmp_path / "semicolons.csv"), tmp_path / "semicolons.vec", 4)
    write_word2vec(str(tmp_path / "semicolons.csv"), tmp_path / "semicolons.vec", 4, delimiter=";")
    assert (tmp_path / "semicolons.vec").read_bytes() == (tmp_path / "commas.vec").read_bytes()
