"""Word vectors for the vocabulary: vectors files (GloVe, word2vec / fastText text) and word2vec
trained on real training texts."""

import gzip
import re

import numpy as np
import pytest

from keras_textattn.datasets import LocalFile
from keras_textattn.datasets import load_dataset
from keras_textattn.text import TextEncoder
from keras_textattn.text.vectors import VectorsError
from keras_textattn.text.vectors import embedding_matrix
from keras_textattn.text.vectors import read_vectors
from keras_textattn.text.vectors import train_word2vec

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


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "holds no vectors"),
        ("good 1 2 3\nfilm 1 2\n", "line 2: 2 numbers where the first vector has 3 (rows of different lengths)"),
        ("good 1 2 3\nfilm 1 x 3\n", "line 2: not a number"),
        ("good\n", "line 1: expected a word and its numbers"),
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
    matrix, coverage = embedding_matrix(VOCABULARY, vectors, 3, seed=3)
    assert coverage == 0.5 and matrix.shape == (6, 3) and matrix.dtype == np.float32
    factor = 0.05 / np.std(np.stack(list(vectors.values())))
    np.testing.assert_allclose(matrix[2], vectors["good"] * factor, rtol=1e-6)
    np.testing.assert_allclose(matrix[5], vectors["dull"] * factor, rtol=1e-6)
    assert np.std(matrix[[2, 5]]) == pytest.approx(0.05, rel=1e-5)
    np.testing.assert_array_equal(matrix[0], 0.0)
    random_rows = matrix[[1, 3, 4]]
    assert len({tuple(row) for row in random_rows}) == 3
    assert not any(np.allclose(row, v) for row in random_rows for v in vectors.values())
    np.testing.assert_array_equal(embedding_matrix(VOCABULARY, vectors, 3, seed=3)[0], matrix)


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

    def unit(word):
        return vectors[word] / np.linalg.norm(vectors[word])

    positive = ["good", "great", "best", "funny", "beautiful", "wonderful", "excellent", "enjoyable"]
    negative = ["bad", "worst", "boring", "dull", "stupid", "awful", "terrible", "mess"]
    rng = np.random.default_rng(0)
    others = [w for w in rng.choice(sorted(vectors), 300, replace=False) if w not in positive + negative]
    for group in (positive, negative):
        within = np.mean([unit(a) @ unit(b) for a in group for b in group if a != b])
        to_random = np.mean([unit(a) @ unit(b) for a in group for b in others])
        assert within > to_random + 0.1, (group, within, to_random)
    again = train_word2vec(encoder, train.take(300), 8, seed=1)
    np.testing.assert_array_equal(again["good"], train_word2vec(encoder, train.take(300), 8, seed=1)["good"])
