import collections
import csv
import gzip
import json
import re
import time
import warnings
import zipfile

import hypothesis
import hypothesis.strategies as st
import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_textattn.export.client import ClientTokenizer
from keras_textattn.export.tflite import write_tokenizer_files
from keras_textattn.text import TextEncoder
from keras_textattn.text.encoder import _valid_utf8 as valid_utf8
from keras_textattn.vocabulary import window_starts

CORPUS = [
    "The movie was GREAT. Loved it!<br /><br />Really great.",
    "A bad film, a bad plot.",
    "Café déjà vu — ﬁne.",
]


def _adapted(**kwargs):
    encoder = TextEncoder(**kwargs)
    encoder.adapt(CORPUS)
    return encoder


def _ids(encoder, texts):
    return keras.ops.convert_to_numpy(encoder(texts))


def test_standardisation_and_vocabulary_order():
    encoder = _adapted()
    vocabulary = encoder.get_vocabulary()
    assert vocabulary[:2] == ["", "[UNK]"]
    # Counts: "." 4, "a" 3, "bad" 2, "great" 2; ties broken by the token's bytes.
    assert vocabulary[2:6] == [".", "a", "bad", "great"]
    assert "br" not in vocabulary and "<br" not in vocabulary  # HTML stripped
    assert "café" in vocabulary and "déjà" in vocabulary  # Unicode letters stay words
    assert "fine" in vocabulary  # NFKC turns the "ﬁ" ligature into "fi"
    assert "the" in vocabulary and "The" not in vocabulary


def test_adapt_counts_every_batch_of_a_long_dataset(shared_data):
    """Counts are summed over blocks of batches: a dataset of many more batches than a block
    has the vocabulary, in order, of counting every token of it at once."""
    with gzip.open(shared_data / "trec/train.csv.gz", "rt", encoding="utf-8", newline="") as handle:
        texts = [row["text"] for _, row in zip(range(2000), csv.DictReader(handle))]
    encoder = TextEncoder(min_frequency=2)
    encoder.adapt(tf.data.Dataset.from_tensor_slices(texts).batch(7))  # 286 batches
    counts = collections.Counter(token for tokens in encoder.tokenize(texts).to_list() for token in tokens)
    counts.pop(b"[UNK]", None)
    expected = sorted((item for item in counts.items() if item[1] >= 2), key=lambda item: (-item[1], item[0]))
    assert encoder.get_vocabulary()[2:] == [token.decode("utf-8") for token, _ in expected]


def test_ids_padding_and_truncation():
    encoder = _adapted(sequence_length=5)
    ids = _ids(encoder, ["a bad film", "A BAD plot . . . . . .", "unknownword a"])
    vocabulary = encoder.get_vocabulary()
    np.testing.assert_array_equal(ids[0], [vocabulary.index(w) for w in ("a", "bad", "film")] + [0, 0])
    assert ids.shape == (3, 5) and ids.dtype == np.int32
    np.testing.assert_array_equal(ids[2], [1, vocabulary.index("a"), 0, 0, 0])  # OOV is 1


def test_pads_to_batch_longest_without_sequence_length():
    encoder = _adapted()
    assert _ids(encoder, ["a", "a bad film"]).shape == (2, 3)
    assert _ids(encoder, ["", "   "]).shape == (2, 1)  # still a time axis
    np.testing.assert_array_equal(_ids(encoder, ["", "   "]), 0)


def test_max_tokens_and_min_frequency():
    encoder = _adapted(max_tokens=4)
    assert encoder.get_vocabulary() == ["", "[UNK]", ".", "a"]
    encoder = _adapted(min_frequency=2)
    assert encoder.get_vocabulary() == ["", "[UNK]", ".", "a", "bad", "great"]
    # No vocabulary says why: it was "the vocabulary is empty; adapt on texts that contain tokens"
    # for a min_frequency no token reaches too (and a traceback from train).
    with pytest.raises(ValueError, match=r"^TextEncoder.adapt: the texts hold no tokens \(each is empty or blank\)"):
        TextEncoder().adapt(["", "  ", "\n"])
    with pytest.raises(
        ValueError,
        match=r"^TextEncoder.adapt: no token of the texts occurs min_frequency=9 times; "
        r"the most frequent, '\.', occurs 4$",
    ):
        _adapted(min_frequency=9)


def test_adapt_takes_datasets_of_pairs():
    dataset = tf.data.Dataset.from_tensor_slices((CORPUS, [0, 1, 0]))
    encoder = TextEncoder()
    encoder.adapt(dataset)
    assert encoder.get_vocabulary() == _adapted().get_vocabulary()
    # Datasets of something else are one ValueError saying so (they failed inside the traced tokenizer).
    for dataset, given in (
        (tf.data.Dataset.from_tensor_slices(([0, 1], ["a", "b"])), "int32 of shape ()"),
        (tf.data.Dataset.from_tensor_slices([[CORPUS[0], CORPUS[1]]]).batch(1), "string of shape (None, 2)"),
        (tf.data.Dataset.from_tensor_slices({"text": CORPUS}), "{'text': TensorSpec(shape=()"),
    ):
        with pytest.raises(
            ValueError,
            match=re.escape(
                "TextEncoder.adapt takes a tf.data.Dataset of strings or of "
                f"(text, label) pairs, batched or not. Received: a dataset whose "
                f"texts are {given}"
            ),
        ):
            TextEncoder().adapt(dataset)


def test_offsets_point_at_original_text():
    text = "Héllo, <b>wörld</b>!\u00a0東京 ok"
    tokens, starts, ends = _adapted().tokenize_with_offsets([text])
    raw = text.encode("utf-8")
    tokens = tokens.to_list()[0]
    assert [t.decode() for t in tokens] == ["Héllo", ",", "wörld", "!", "東", "京", "ok"]
    for token, start, end in zip(tokens, starts.to_list()[0], ends.to_list()[0]):
        assert raw[start:end] == token


def test_bigrams_are_aligned_hashed_and_stable():
    encoder = _adapted(sequence_length=6, bigram_buckets=50)
    ids, bigrams = (keras.ops.convert_to_numpy(t) for t in encoder(["a bad film", "bad film a", ""]))
    assert bigrams.shape == ids.shape == (3, 6)
    assert bigrams[0, 1] == bigrams[1, 0]  # "bad film" hashes the same everywhere
    assert bigrams[0, 0] != 0 and bigrams[0, 2] == 0  # no bigram after the last token
    assert ((bigrams >= 0) & (bigrams <= 50)).all()
    np.testing.assert_array_equal(bigrams[2], 0)
    again = _adapted(sequence_length=6, bigram_buckets=50)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(again(["a bad film"])[1])[0], bigrams[0])


def test_bigrams_of_the_vocabulary_write_unknown_tokens_as_unk():
    """Reference: FarmHash of the pairs built in Python, the out-of-vocabulary token written [UNK]."""
    texts = ["a bad zebra film here", "a bad okapi film"]
    encoder = _adapted(sequence_length=4, bigram_buckets=1000)
    assert encoder.bigrams_of == "vocabulary"
    bigrams = keras.ops.convert_to_numpy(encoder(texts)[1])
    pairs = [["a bad", "bad [UNK]", "[UNK] film", "film [UNK]"], ["a bad", "bad [UNK]", "[UNK] film"]]
    for row, expected in zip(bigrams, pairs):
        hashed = tf.strings.to_hash_bucket_fast(expected, 1000).numpy() + 1
        np.testing.assert_array_equal(row[: len(hashed)], hashed)
    assert bigrams[1, 3] == 0
    np.testing.assert_array_equal(bigrams[0, :3], bigrams[1, :3])  # two unknown names: the same bigrams
    as_written = keras.ops.convert_to_numpy(
        _adapted(sequence_length=4, bigram_buckets=1000, bigrams_of="tokens")(texts)[1]
    )
    assert as_written[0, 1] != as_written[1, 1]  # "bad zebra" and "bad okapi"
    np.testing.assert_array_equal(
        as_written[0],
        tf.strings.to_hash_bucket_fast(["a bad", "bad zebra", "zebra film", "film here"], 1000).numpy() + 1,
    )


def test_hierarchical_bigrams_pair_the_words_of_a_sentence_row():
    """Reference: FarmHash of each row's pairs built in Python. A sentence cut after `sequence_length`
    words pairs its last kept word with the next; a sentence's last word, and a row that
    `split_long_sentences` cut off, pair with nothing (0); padded rows and words are 0."""

    def hashed(pairs):
        return list(tf.strings.to_hash_bucket_fast(pairs, 1000).numpy() + 1)

    text = "A bad zebra film here today. Great fun!"
    encoder = _adapted(hierarchical=True, max_sentences=3, sequence_length=4, bigram_buckets=1000)
    ids, bigrams = (keras.ops.convert_to_numpy(t) for t in encoder([text, ""]))
    assert ids.shape == bigrams.shape == (2, 3, 4)
    np.testing.assert_array_equal(bigrams[0, 0], hashed(["a bad", "bad [UNK]", "[UNK] film", "film [UNK]"]))
    np.testing.assert_array_equal(bigrams[0, 1], hashed(["great [UNK]"]) + [0, 0, 0])
    np.testing.assert_array_equal(bigrams[0, 2], 0)
    np.testing.assert_array_equal(bigrams[1], 0)
    split = _adapted(
        hierarchical=True,
        max_sentences=3,
        sequence_length=4,
        bigram_buckets=1000,
        split_long_sentences=True,
        bigrams_of="tokens",
    )
    ids, bigrams = (keras.ops.convert_to_numpy(t)[0] for t in split([text]))
    np.testing.assert_array_equal(
        bigrams,
        [
            hashed(["a bad", "bad zebra", "zebra film"]) + [0],
            hashed(["here today"]) + [0, 0, 0],
            hashed(["great fun"]) + [0, 0, 0],
        ],
    )
    assert ((bigrams > 0) <= (ids > 0)).all()
    free = _adapted(hierarchical=True, bigram_buckets=1000)  # sizes of the batch: the shapes still agree
    ids, bigrams = (keras.ops.convert_to_numpy(t) for t in free([text, "one"]))
    assert ids.shape == bigrams.shape == (2, 2, 6) and bigrams[1, 0, 0] == 0


def test_hierarchical_sentences_and_words():
    encoder = _adapted(hierarchical=True, max_sentences=3, sequence_length=4)
    ids = _ids(encoder, ["A bad film. A bad plot! Great?? Really great.", "", "no end mark"])
    assert ids.shape == (3, 3, 4)
    vocabulary = encoder.get_vocabulary()
    np.testing.assert_array_equal(ids[0, 0], [vocabulary.index(w) for w in ("a", "bad", "film")] + [0])
    np.testing.assert_array_equal(ids[0, 2], [vocabulary.index("great"), 0, 0, 0])
    np.testing.assert_array_equal(ids[1], 0)  # 0 sentences: all padding
    assert (ids[2, 0] > 0).sum() == 3 and (ids[2, 1:] == 0).all()


def test_rows_left_over_hold_the_rest_of_long_sentences():
    """With `split_long_sentences`, text without sentence ends (R8's) is one "sentence" that fills the
    rows in order, so HCAN reads `max_sentences x sequence_length` of its words, not the first
    `sequence_length`; a text with more sentences gives no sentence's row to another's tail."""
    words = [f"w{i}" for i in range(10)]
    assert not TextEncoder(hierarchical=True).split_long_sentences  # the default cuts (IMDB: BENCHMARKS.md)
    encoder = TextEncoder(hierarchical=True, sequence_length=4, max_sentences=4, split_long_sentences=True)
    encoder.set_vocabulary(words)
    n = {w: encoder.get_vocabulary().index(w) for w in words}
    texts = [
        " ".join(words),
        "w0 w1. w0 w1 w2 w3 w4! w9",
        "",
        "w1 " * 100,
        "w0 w1 w2 w3 w4 w5. w6. w7. w8. w9",
        "w0 w1 w2 w3 w4 w5 w6 w7 w8. w9. w1",
    ]
    ids = _ids(encoder, texts)
    rows = {
        0: [["w0", "w1", "w2", "w3"], ["w4", "w5", "w6", "w7"], ["w8", "w9"]],
        1: [["w0", "w1"], ["w0", "w1", "w2", "w3"], ["w4"], ["w9"]],
        2: [],
        3: [["w1"] * 4] * 4,
        4: [["w0", "w1", "w2", "w3"], ["w6"], ["w7"], ["w8"]],  # 5 sentences: no row left over
        5: [["w0", "w1", "w2", "w3"], ["w4", "w5", "w6", "w7"], ["w9"], ["w1"]],
    }  # one left over: w8 is not read
    for text, expected in rows.items():
        wanted = np.zeros((4, 4), int)
        for r, row in enumerate(expected):
            wanted[r, : len(row)] = [n[w] for w in row]
        np.testing.assert_array_equal(ids[text], wanted)
    # The explain maps' positions follow the same rows.
    for text, row_ids in zip(texts, ids):
        spans = encoder.token_spans(text)
        assert len(spans) == (row_ids > 0).sum()
        assert all(row_ids[position] == n[token] for position, token, _, _ in spans)
    assert TextEncoder.from_config(encoder.get_config()).split_long_sentences
    # Cut (the default, and so encoders saved before the option load): each sentence's first 4 words.
    config = {k: v for k, v in encoder.get_config().items() if k != "split_long_sentences"}
    for cut in (TextEncoder.from_config(config), TextEncoder(**{**config, "split_long_sentences": False})):
        assert not cut.split_long_sentences
        cut.set_vocabulary(words)
        np.testing.assert_array_equal(_ids(cut, texts[:1])[0, 0], ids[0, 0])
        assert (_ids(cut, texts[:1])[0, 1:] == 0).all()
        assert [p for p, *_ in cut.token_spans(texts[0])] == [(0, k) for k in range(4)]


CJK = ["我喜欢这部电影。剧情很好！Great film", "日本語のテキストです｡とても良い", "한국어 문장입니다", "𠀀𠀁 ok"]


def test_cjk_ideographs_are_tokens_of_their_own():
    tokens = [[t.decode() for t in row] for row in TextEncoder().tokenize(CJK).to_list()]
    assert tokens == [
        ["我", "喜", "欢", "这", "部", "电", "影", "。", "剧", "情", "很", "好", "!", "great", "film"],
        ["日", "本", "語", "のテキストです", "。", "とても", "良", "い"],  # kana runs stay words
        ["한국어", "문장입니다"],  # hangul is written with spaces
        ["𠀀", "𠀁", "ok"],
    ]  # extension B, outside the basic plane
    whole = [[t.decode() for t in row] for row in TextEncoder(split_cjk=False).tokenize(CJK[:1]).to_list()]
    assert whole == [["我喜欢这部电影", "。", "剧情很好", "!", "great", "film"]]
    hierarchical = TextEncoder(hierarchical=True)
    hierarchical.adapt(CJK)
    sentences, words = hierarchical.count_tokens(CJK)
    np.testing.assert_array_equal(sentences, [3, 2, 1, 1])  # 。 ！ ｡ end sentences
    np.testing.assert_array_equal(words, [7, 4, 2, 4, 3, 2, 3])
    assert [token for _, token, _, _ in hierarchical.token_spans(CJK[0])[:3]] == ["我", "喜", "欢"]
    assert TextEncoder(split_cjk=False, hierarchical=True).count_tokens(CJK)[0].tolist() == [1, 1, 1, 1]


def test_cjk_text_unseen_in_training_is_mostly_known():
    """Chinese written without spaces: split into ideographs, new sentences reuse the vocabulary;
    as runs of letters, every sentence is a word of its own and is unknown elsewhere."""
    rng = np.random.default_rng(0)
    alphabet = [chr(0x4E00 + i) for i in rng.choice(20000, 400, replace=False)]
    texts = ["".join(rng.choice(alphabet, 12)) + "，" + "".join(rng.choice(alphabet, 9)) + "。" for _ in range(600)]
    for split, lowest, highest in ((True, 0.99, 1.0), (False, 0.5, 0.5)):
        encoder = TextEncoder(split_cjk=split)
        encoder.adapt(texts[:500])
        ids = _ids(encoder, texts[500:])
        known = (ids > 1).sum() / (ids > 0).sum()
        assert lowest <= known <= highest, (
            split,
            known,
        )  # unsplit: "，" and "。" known, every run of ideographs unknown


def test_encoder_files_saved_before_split_cjk_and_bigrams_of_keep_their_ids(tmp_path):
    """A run folder's encoder.keras written before the two options existed (the file of today with
    their keys taken out of its config.json) loads with the old tokens and bigrams."""
    from keras_textattn.run_folder import load_encoder
    from keras_textattn.run_folder import save_encoder

    encoder = TextEncoder(sequence_length=8, bigram_buckets=1000)
    encoder.adapt(CJK + ["a bad film", "a bad plot"])
    assert (encoder.split_cjk, encoder.bigrams_of) == (True, "vocabulary")
    save_encoder(tmp_path / "new.keras", encoder)

    def without_new_keys(value):
        if isinstance(value, dict):
            return {k: without_new_keys(v) for k, v in value.items() if k not in ("split_cjk", "bigrams_of")}
        return [without_new_keys(v) for v in value] if isinstance(value, list) else value

    with zipfile.ZipFile(tmp_path / "new.keras") as new, zipfile.ZipFile(tmp_path / "old.keras", "w") as old:
        for item in new.infolist():
            data = new.read(item)
            if item.filename == "config.json":
                data = json.dumps(without_new_keys(json.loads(data)))
            old.writestr(item, data)
    restored = load_encoder(tmp_path / "old.keras")
    assert (restored.split_cjk, restored.bigrams_of) == (False, "tokens")
    texts = ["我喜欢 a zebra film", "a bad okapi"]
    before = TextEncoder(sequence_length=8, bigram_buckets=1000, split_cjk=False, bigrams_of="tokens")
    before.set_vocabulary(encoder.get_vocabulary()[2:])
    for restored_ids, old_ids in zip(restored(texts), before(texts), strict=True):
        np.testing.assert_array_equal(restored_ids, old_ids)


def test_hierarchical_extremes():
    encoder = _adapted(hierarchical=True, max_sentences=5, sequence_length=3)
    many = "a bad film. " * 10000
    ids = _ids(encoder, [many, "..."])
    assert ids.shape == (2, 5, 3) and (ids[0] > 0).all() and (ids[1] == 0).all()
    free = _adapted(hierarchical=True)
    assert _ids(free, ["a. a a. a", ""]).shape == (2, 3, 2)


def test_bad_input_defined_results():
    encoder = _adapted(sequence_length=8)
    invalid = tf.constant([b"a \xff\xfe bad", b"\xc3", b""])
    ids = _ids(encoder, invalid)
    assert ids.shape == (3, 8)
    np.testing.assert_array_equal(
        ids[0, :4], [encoder.get_vocabulary().index("a"), 1, 1, encoder.get_vocabulary().index("bad")]
    )
    np.testing.assert_array_equal(ids[2], 0)
    huge = "word " * 200_000 + "a"  # about 1 MB
    start = time.perf_counter()
    assert _ids(encoder, [huge]).shape == (1, 8)
    assert time.perf_counter() - start < 30


def test_ignorable_characters_are_unknown_words_not_padding():
    """A soft hyphen alone (IMDB has one) standardises to nothing: an unknown word, kept out of the vocabulary."""
    encoder = TextEncoder(sequence_length=6)
    texts = ["to the point\u00ad . end", "zero\u200bwidth"]
    encoder.adapt(texts)  # raised: the empty token reached the vocabulary as the mask token
    assert "" not in encoder.get_vocabulary()[2:] and "[UNK]" not in encoder.get_vocabulary()[2:]
    vocabulary = encoder.get_vocabulary()
    np.testing.assert_array_equal(
        _ids(encoder, texts[:1])[0],
        [vocabulary.index(w) for w in ("to", "the", "point")] + [1, vocabulary.index("."), vocabulary.index("end")],
    )


def test_wrong_inputs_raise_value_error():
    encoder = _adapted()
    with pytest.raises(ValueError, match="expects strings.*int32"):
        encoder(tf.constant([1, 2]))
    with pytest.raises(ValueError, match=r"shape \(batch,\), or one string.*\(2, 2\)"):
        encoder(tf.constant([["a", "b"], ["c", "d"]]))
    with pytest.raises(ValueError, match="no vocabulary"):
        TextEncoder()(["a"])
    # Python values: what was expected and what was given, not TensorFlow's conversion error or Keras's
    # "Only input tensors may be passed as positional arguments" (for one string).
    expected = (
        "takes a batch of texts: a list of strings (str or bytes), a NumPy array of them or a string tensor "
        "of shape (batch,). Received: "
    )
    for value, given in (
        ("one text", "one str; give a list of one"),
        (b"one", "one bytes; give a list of one"),
        (None, "NoneType"),
        (3, "int"),
        ([1, 2], "item 0 is 1 (int)"),
        (["a", None], "item 1 is None (NoneType)"),
        ([["a", "b"]], "item 0 is ['a', 'b'] (list)"),
        (np.array([1.0]), "a NumPy array of dtype float64"),
        (np.array(["a", None], dtype=object), "item 1 is None (NoneType)"),
    ):
        if not isinstance(value, (str, bytes)):  # one text is encoded (test_one_text_without_a_batch_axis)
            with pytest.raises(ValueError, match=re.escape("TextEncoder.call " + expected + given)):
                encoder(value)
        with pytest.raises(ValueError, match=re.escape("TextEncoder.adapt " + expected + given)):
            TextEncoder().adapt(value)
    with pytest.raises(ValueError, match=re.escape("TextEncoder.adapt " + expected + "a string tensor of shape ()")):
        TextEncoder().adapt(tf.constant("one"))
    assert _ids(encoder, np.array([["a"], [b"b"]], dtype=object)).shape[0] == 2  # a column of texts, as before


@pytest.mark.parametrize(
    "kwargs",
    [
        {"sequence_length": 6},
        {"sequence_length": None},
        {"sequence_length": 6, "bigram_buckets": 50},
        {"hierarchical": True, "max_sentences": 2, "sequence_length": 4},
    ],
)
def test_one_text_without_a_batch_axis(kwargs):
    """One text (a `str`, or a scalar string tensor as a `tf.data` map before batching gives it)
    encodes to its row of the batch, without the batch axis, as Keras's TextVectorization does (it
    was refused: "give a list of one")."""
    encoder = _adapted(**kwargs)
    texts = ["a great film . bad end", "bad"]
    batch = keras.tree.map_structure(keras.ops.convert_to_numpy, encoder(texts))
    for one in (texts[0], texts[0].encode(), tf.constant(texts[0])):
        ids = keras.tree.map_structure(keras.ops.convert_to_numpy, encoder(one))
        keras.tree.map_structure(lambda row, rows: np.testing.assert_array_equal(row, rows[0]), ids, batch)
    mapped = tf.data.Dataset.from_tensor_slices(texts).map(encoder).batch(2)
    if kwargs["sequence_length"] is not None:  # a batch padded to its longest text is not a batch of rows
        keras.tree.map_structure(np.testing.assert_array_equal, next(iter(mapped.as_numpy_iterator())), batch)
    # The declared shape is the one given (the length None where each text sets it).
    rows = [tuple(n if kwargs["sequence_length"] else None for n in row.shape) for row in keras.tree.flatten(ids)]
    assert encoder.compute_output_shape(()) == (tuple(rows) if len(rows) > 1 else rows[0])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_tokens": 2}, "at least 3"),
        ({"sequence_length": 0}, "sequence_length"),
        ({"min_frequency": 0}, "min_frequency"),
        ({"normalization": "NFX"}, "normalization"),
        ({"bigram_buckets": -1}, "bigram_buckets"),
        ({"bigram_buckets": 10, "bigrams_of": "words"}, "bigrams_of"),
        ({"max_sentences": 3}, "hierarchical=True"),
    ],
)
def test_invalid_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        TextEncoder(**kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"sequence_length": 6, "bigram_buckets": 20},
        {"hierarchical": True},
        {"hierarchical": True, "sequence_length": 3, "bigram_buckets": 20},
    ],
)
def test_save_and_load_round_trip(kwargs, tmp_path):
    encoder = _adapted(**kwargs)
    texts = tf.constant(CORPUS + ["never seen words here. a bad"])
    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, encoder(inputs))
    model.save(tmp_path / "encoder.keras")
    loaded = keras.models.load_model(tmp_path / "encoder.keras")
    restored = loaded.layers[-1]
    assert restored.get_config() == encoder.get_config()
    assert restored.get_vocabulary() == encoder.get_vocabulary()
    for restored_ids, ids in zip(keras.tree.flatten(loaded(texts)), keras.tree.flatten(model(texts)), strict=True):
        np.testing.assert_array_equal(restored_ids, ids)


def test_real_data_vocabulary_and_coverage(shared_data):
    with gzip.open(shared_data / "sst2" / "train.csv.gz", "rt", encoding="utf-8", newline="") as handle:
        train = [row["text"] for row in csv.DictReader(handle)]
    with gzip.open(shared_data / "sst2" / "test.csv.gz", "rt", encoding="utf-8", newline="") as handle:
        test = [row["text"] for row in csv.DictReader(handle)]
    encoder = TextEncoder(max_tokens=10000, min_frequency=2)
    encoder.adapt(train)
    assert 5000 < encoder.vocabulary_size() <= 10000
    assert {"the", "movie", "good", "bad"} <= set(encoder.get_vocabulary())
    ids = _ids(encoder, test)
    real = ids[ids > 0]
    assert (real == 1).mean() < 0.1  # fewer than 10% of test tokens are out of vocabulary


LINE_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"  # every character str.splitlines breaks at, but "\n"


def test_line_breaking_characters_separate_tokens_and_the_encoder_saves(shared_data, tmp_path):
    """IMDB's reviews hold U+0085 (NEL). As a token it broke the saved vocabulary (Keras reads it back with
    str.splitlines): a run trained on IMDB could not be loaded. Such characters now separate tokens."""
    with gzip.open(shared_data / "imdb" / "train.csv.gz", "rt", encoding="utf-8", newline="") as handle:
        reviews = [row["text"] for row in csv.DictReader(handle) if "\x85" in row["text"]]
    assert len(reviews) > 100
    texts = reviews + [f"good{c}bad {c} end" for c in LINE_BREAKS]
    encoder = TextEncoder(max_tokens=20000, sequence_length=50)
    encoder.adapt(texts)
    assert all(token.splitlines() == [token] for token in encoder.get_vocabulary()[1:])
    tokens = encoder.tokenize([f"good{c}bad {c} end" for c in LINE_BREAKS]).to_list()
    assert all(row == [b"good", b"bad", b"end"] for row in tokens)
    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, encoder(inputs))
    model.save(tmp_path / "encoder.keras")
    restored = keras.models.load_model(tmp_path / "encoder.keras")
    np.testing.assert_array_equal(restored(tf.constant(texts)), model(tf.constant(texts)))
    for vocabulary in (["fine", "a\x85b"], ["fine", ""], ["fine", b"bytes"]):
        with pytest.raises(ValueError, match="non-empty strings without line breaks"):
            encoder.set_vocabulary(vocabulary)


def test_a_set_vocabulary_names_tokens_it_can_never_look_up():
    """A vocabulary from elsewhere (another tokenizer's, capitalised, phrases) sets, but its tokens
    that this encoder reads otherwise are named: they would be unknown in every text, silently.
    A path is not read as a list of its characters."""
    encoder = TextEncoder(sequence_length=4)
    with pytest.warns(
        UserWarning,
        match=re.escape(
            "TextEncoder: 3 of the 4 vocabulary tokens can never be looked up, as this encoder reads them otherwise: "
            "'Apple' (read as ['apple']), 'new york' (read as ['new', 'york']), \"don't\" (read as ['don', \"'\", 't'])"
        ),
    ):
        encoder.set_vocabulary(["Apple", "pear", "new york", "don't"])
    assert _ids(encoder, ["Apple pear"])[0].tolist() == [1, 3, 0, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        encoder.set_vocabulary(("apple", "pear"))  # a tuple, tokens it reads as themselves: no warning
    assert _ids(encoder, ["Apple pear"])[0].tolist() == [2, 3, 0, 0]
    with pytest.raises(
        ValueError,
        match=r"set_vocabulary takes a list of tokens; for a file of tokens, one per line, "
        r"use set_vocabulary_file\(path\). Received: 'vocabulary.txt'",
    ):
        encoder.set_vocabulary("vocabulary.txt")  # was "repeated terms: ['a', 'r', ...]"


def test_a_vocabulary_file_is_checked_before_tensorflow_reads_it(tmp_path):
    """A run's vocabulary.txt (padding and OOV first), a file with an empty line, an empty file: one
    ValueError saying what a vocabulary file holds (TensorFlow's InvalidArgumentError said "empty
    line found at position 1" from its table initialiser)."""
    encoder = TextEncoder(sequence_length=4)
    files = {
        "run.txt": (
            "\n[UNK]\napple\n",
            "lists padding and OOV first, as a run's vocabulary.txt does (line i is "
            "id i); a vocabulary file holds the tokens after them",
        ),
        "gap.txt": ("apple\n\npear\n", "has an empty line (2); a vocabulary file holds one token per line"),
        "empty.txt": ("", "is empty; a vocabulary file holds one token per line"),
    }
    for name, (content, message) in files.items():
        (tmp_path / name).write_text(content)
        with pytest.raises(ValueError, match=re.escape(f"TextEncoder: {tmp_path / name} {message}")):
            encoder.set_vocabulary_file(str(tmp_path / name))
    (tmp_path / "good.txt").write_text("apple\npear")
    encoder.set_vocabulary_file(str(tmp_path / "good.txt"))
    assert encoder.get_vocabulary() == ["", "[UNK]", "apple", "pear"]


@pytest.mark.parametrize(
    "path",
    [
        "imdb/train.csv.gz",
        "sst2/train.csv.gz",
        "trec/train.csv.gz",
        "r8/train.csv.gz",
        "ag_news/train_sample_5k.csv.gz",
        "mr/all.csv.gz",
    ],
)
def test_the_vocabulary_of_every_shared_dataset_saves_and_loads(shared_data, tmp_path, path):
    """What a run folder of each real dataset holds: the default 20,000-token vocabulary, saved and read back."""
    with gzip.open(shared_data / path, "rt", encoding="utf-8", newline="") as handle:
        texts = [row["text"] for row in csv.DictReader(handle)]
    encoder = TextEncoder(sequence_length=64)
    encoder.adapt(texts)
    inputs = keras.Input(shape=(), dtype="string")
    keras.Model(inputs, encoder(inputs)).save(tmp_path / "encoder.keras")
    restored = keras.models.load_model(tmp_path / "encoder.keras").layers[-1]
    assert restored.get_vocabulary() == encoder.get_vocabulary()
    np.testing.assert_array_equal(restored(texts[:200]), encoder(texts[:200]))


def test_cut_vocabulary_encodes_as_adapting_with_fewer_tokens(shared_data):
    """What a search over `max_tokens` relies on: the cut encoder equals one adapted with that many
    tokens on the same texts (ids, vocabulary, settings), and equals reading larger ids as OOV."""
    with gzip.open(shared_data / "sst2" / "train.csv.gz", "rt", encoding="utf-8", newline="") as handle:
        train = [row["text"] for row in csv.DictReader(handle)]
    test = train[:500] + ["zzqx never seen words", ""]
    full = TextEncoder(max_tokens=20000, sequence_length=40, bigram_buckets=50)
    full.adapt(train)
    for max_tokens in (3, 1000, 5000):
        cut = full.cut_vocabulary(max_tokens)
        adapted = TextEncoder(max_tokens=max_tokens, sequence_length=40, bigram_buckets=50)
        adapted.adapt(train)
        assert cut.get_vocabulary() == adapted.get_vocabulary()
        assert {**cut.get_config(), "name": None} == {**adapted.get_config(), "name": None}
        (cut_ids, cut_bigrams), (ids, bigrams) = cut(test), adapted(test)
        np.testing.assert_array_equal(cut_ids, ids)
        np.testing.assert_array_equal(cut_bigrams, bigrams)
        np.testing.assert_array_equal(cut_ids, np.where(np.asarray(full(test)[0]) >= max_tokens, 1, full(test)[0]))
        assert (np.asarray(ids) >= 2).any() and (np.asarray(ids) == 1).any()  # real words and OOV both present
    assert full.cut_vocabulary(10**6).get_vocabulary() == full.get_vocabulary()  # more than it has: all of it
    with pytest.raises(ValueError, match="at least 3. Received: max_tokens=2"):
        full.cut_vocabulary(2)
    with pytest.raises(ValueError, match="no vocabulary to cut"):
        TextEncoder().cut_vocabulary(100)


def test_cut_length_encodes_as_an_encoder_of_that_length(shared_data):
    """What a search over `sequence_length` relies on: the cut encoder equals one of that length adapted
    on the same texts (ids, bigram ids, vocabulary, settings), and equals the first columns of the
    longer encoder's ids (the last kept token's bigram pairs it with the next token either way)."""
    with gzip.open(shared_data / "sst2" / "train.csv.gz", "rt", encoding="utf-8", newline="") as handle:
        train = [row["text"] for row in csv.DictReader(handle)]
    test = train[:500] + ["zzqx never seen words", ""]
    full = TextEncoder(max_tokens=3000, sequence_length=40, bigram_buckets=50)
    full.adapt(train)
    full.extend_vocabulary(["zzqx"])
    full_ids, full_bigrams = (np.asarray(ids) for ids in full(test))
    for length in (1, 7, 40):
        cut = full.cut_length(length)
        adapted = TextEncoder(max_tokens=3000, sequence_length=length, bigram_buckets=50)
        adapted.adapt(train)
        adapted.extend_vocabulary(["zzqx"])
        assert cut.get_vocabulary() == adapted.get_vocabulary() == full.get_vocabulary()
        assert cut.added_tokens == 1 and cut.counted_vocabulary_size() == full.counted_vocabulary_size()
        assert {**cut.get_config(), "name": None} == {**adapted.get_config(), "name": None}
        (cut_ids, cut_bigrams), (ids, bigrams) = cut(test), adapted(test)
        np.testing.assert_array_equal(cut_ids, ids)
        np.testing.assert_array_equal(cut_bigrams, bigrams)
        np.testing.assert_array_equal(cut_ids, full_ids[:, :length])
        np.testing.assert_array_equal(cut_bigrams, full_bigrams[:, :length])
    assert (full_ids[:, 7] > 0).sum() > 100  # texts longer than the cut are there
    with pytest.raises(ValueError, match="must be a positive integer. Received: sequence_length=0"):
        full.cut_length(0)
    with pytest.raises(ValueError, match="to at most this encoder's 40 tokens. Received: sequence_length=41$"):
        full.cut_length(41)
    hierarchical = TextEncoder(max_tokens=100, sequence_length=8, hierarchical=True, max_sentences=2)
    hierarchical.adapt(train[:100])
    with pytest.raises(ValueError, match="this one is hierarchical. Received: sequence_length=4$"):
        hierarchical.cut_length(4)
    with pytest.raises(ValueError, match="no vocabulary to keep"):
        TextEncoder(sequence_length=8).cut_length(4)
    with pytest.raises(ValueError, match="this one is of no fixed length. Received: sequence_length=4$"):
        _adapted().cut_length(4)


def test_extend_vocabulary_gives_ids_to_the_words_it_lacks(tmp_path):
    """Words of pretrained vectors (`vectors_words`) join the vocabulary after the adapted tokens, in
    their order: only those it lacks and reads as one token each ("don't" and "u.s." split; a
    repeat, padding's "" and a line break never join). A text holding one now encodes to its id,
    not OOV; the encoder saves and loads with them; a cut drops them first; adapting again forgets them."""
    encoder = _adapted(sequence_length=4)
    adapted = encoder.get_vocabulary()
    added = encoder.extend_vocabulary(
        ["movie", "zebra", "don't", "u.s.", "zebra", "", "a\nb", "Kiwi", "kiwi", "éclair"]
    )
    assert added == ["zebra", "kiwi", "éclair"]  # "Kiwi" reads as "kiwi"; "movie" it has
    assert encoder.get_vocabulary() == adapted + added and encoder.added_tokens == 3
    assert encoder.counted_vocabulary_size() == len(adapted)
    assert encoder.extend_vocabulary(["zebra", "yak"]) == ["yak"] and encoder.added_tokens == 4
    zebra = len(adapted)
    np.testing.assert_array_equal(_ids(encoder, ["A zebra okapi Kiwi"]), [[adapted.index("a"), zebra, 1, zebra + 1]])
    inputs = keras.Input(shape=(), dtype="string")
    keras.Model(inputs, encoder(inputs)).save(tmp_path / "encoder.keras")
    restored = keras.models.load_model(tmp_path / "encoder.keras").layers[-1]
    assert restored.get_vocabulary() == encoder.get_vocabulary() and restored.added_tokens == 4
    assert encoder.cut_vocabulary(zebra + 1).added_tokens == 1 and encoder.cut_vocabulary(zebra).added_tokens == 0
    assert encoder.cut_vocabulary(10**6).added_tokens == 4
    encoder.adapt(CORPUS)
    assert encoder.get_vocabulary() == adapted and encoder.added_tokens == 0
    with pytest.raises(ValueError, match="no vocabulary to extend"):
        TextEncoder().extend_vocabulary(["zebra"])


_ENCODER = None


def _property_encoder():
    global _ENCODER
    if _ENCODER is None:
        _ENCODER = _adapted(sequence_length=7)
    return _ENCODER


@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(st.lists(st.text(max_size=200), min_size=1, max_size=5))
def test_property_any_unicode_gives_declared_shape(texts):
    encoder = _property_encoder()
    ids = _ids(encoder, tf.constant([t.encode("utf-8", "surrogatepass") for t in texts]))
    assert ids.shape == (len(texts), 7) and ids.dtype == np.int32
    assert ((ids >= 0) & (ids < encoder.vocabulary_size())).all()


@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(st.lists(st.binary(max_size=200), min_size=1, max_size=5))
def test_property_any_bytes_gives_declared_shape(texts):
    encoder = _property_encoder()
    ids = _ids(encoder, tf.constant(texts, tf.string))
    assert ids.shape == (len(texts), 7)
    assert ((ids >= 0) & (ids < encoder.vocabulary_size())).all()


def test_bigrams_without_sequence_length_match_token_width():
    encoder = _adapted(bigram_buckets=10)
    dataset = tf.data.Dataset.from_tensor_slices(["a bad film", "a"]).batch(2).map(encoder)
    ids, bigrams = next(iter(dataset))
    assert ids.shape == bigrams.shape == (2, 3)


# Encoders that read long texts in windows: of tokens with bigrams, and of sentences.
WINDOW_OPTIONS = [
    {"sequence_length": 48, "bigram_buckets": 1000},
    {"sequence_length": 12, "max_sentences": 4, "hierarchical": True},
]


def _imdb_reviews(shared_data, count):
    """IMDB's first `count` test reviews (HTML included)."""
    with gzip.open(shared_data / "imdb" / "test.csv.gz", "rt", encoding="utf-8", newline="") as handle:
        return [row["text"] for row, _ in zip(csv.DictReader(handle), range(count))]


def _window_starts(units, width, stride):
    """Where each window of a text of `units` tokens (sentences) starts, recomputed from the rule."""
    if units <= width:
        return [0]
    starts = list(range(0, units - width + 1, stride))
    return starts + ([units - width] if starts[-1] + width < units else [])


@pytest.mark.parametrize("options", WINDOW_OPTIONS, ids=["tokens-and-bigrams", "sentences"])
def test_windows_read_each_stretch_of_a_long_text_as_its_own_ids(shared_data, options, tmp_path):
    """Encoding a window gives the ids (and bigram ids) of that stretch of the whole text, as an
    encoder reading the text whole gives them, on IMDB reviews (HTML included): windows of the
    encoder's width, half of it apart (or the given stride), the last ending with the text. The
    graph's windows and a TFLite client's (plain Python) are the same windows."""
    texts = _imdb_reviews(shared_data, 150)
    texts += ["short", ""]
    encoder = TextEncoder(max_tokens=3000, **options)
    encoder.adapt(texts)
    write_tokenizer_files(tmp_path, encoder)
    client = ClientTokenizer(tmp_path)
    whole = TextEncoder(
        max_tokens=3000, **{**options, ("max_sentences" if encoder.hierarchical else "sequence_length"): None}
    )
    with warnings.catch_warnings():  # tokens NFKC writes otherwise ('½'): looked up alike by both
        warnings.simplefilter("ignore")
        whole.set_vocabulary(encoder.get_vocabulary()[2:])
    width = options.get("max_sentences", options["sequence_length"])
    for stride in (None, 3):
        windows, owners = encoder.windows(texts, stride)
        assert sorted(set(owners.tolist())) == list(range(len(texts))) and np.all(np.diff(owners) >= 0)
        np.testing.assert_array_equal(encoder.longer_than_read(texts), np.bincount(owners) > 1)
        read = [keras.ops.convert_to_numpy(x) for x in keras.tree.flatten(encoder(windows))]
        # In the graph (a SavedModel's windows), cut from the tokens: the same windows, the same ids.
        in_graph = tf.function(lambda batch, stride=stride: encoder.window_ids(batch, stride))
        graph_ids, graph_owners = in_graph(tf.constant(texts))
        np.testing.assert_array_equal(graph_owners.numpy(), owners)
        for ids, expected in zip(keras.tree.flatten(graph_ids), read, strict=True):
            np.testing.assert_array_equal(ids.numpy(), expected)
        for text in (0, 1, 2, 3, len(texts) - 2, len(texts) - 1):
            mine = owners == text
            assert client.longer_than_read(texts[text]) == (mine.sum() > 1)
            for ids, expected in zip(client.windows(texts[text], stride).values(), read, strict=True):
                np.testing.assert_array_equal(ids, expected[mine])
        for text in range(len(texts)):
            full = [keras.ops.convert_to_numpy(x)[0] for x in keras.tree.flatten(whole([texts[text]]))]
            units = len(full[0]) if texts[text] else 0
            starts = _window_starts(units, width, stride or width // 2)
            assert window_starts(units, width, stride or width // 2) == starts  # the clients' rule
            mine = np.flatnonzero(owners == text)
            assert len(mine) == len(starts)
            for k, start in zip(mine, starts):
                for ids, expected in zip(read, full):
                    stretch = expected[start : start + width]
                    if encoder.hierarchical:
                        stretch = stretch[:, : options["sequence_length"]]
                    np.testing.assert_array_equal(ids[k][: len(stretch)], stretch)
    assert max(np.bincount(encoder.windows(texts)[1])) > 3  # long reviews did take several windows
    with pytest.raises(ValueError, match=f"`stride` must be an integer from 1 to {width}. Received: 0"):
        encoder.windows(texts, 0)
    with pytest.raises(
        ValueError, match=f"window_ids: `stride` must be an integer from 1 to {width}. Received: {width + 1}"
    ):
        encoder.window_ids(tf.constant(texts), width + 1)
    with pytest.raises(ValueError, match=f"ClientTokenizer.windows: `stride` must be an integer from 1 to {width}"):
        client.windows(texts[0], width + 1)


@pytest.mark.parametrize("options", WINDOW_OPTIONS, ids=["tokens-and-bigrams", "sentences"])
def test_a_sampled_window_is_a_stretch_of_the_text_drawn_by_the_seed(shared_data, options):
    """`sampled_window_ids` reads each long IMDB review at one of its windows (the ids of the whole
    text from some token, or sentence, within it, as a window of stride 1 reads it), a short one as
    `call`; the seed decides which, and another seed draws others, spread over the whole text."""
    texts = _imdb_reviews(shared_data, 60) + ["short", ""]
    encoder = TextEncoder(max_tokens=3000, **options)
    encoder.adapt(texts)
    batch = tf.constant(texts)
    every, owners = (keras.tree.flatten(x) for x in encoder.window_ids(batch, 1))  # every start
    owners = owners[0].numpy()
    draws = []
    for seed in ([0, 1], [0, 1], [5, 7]):
        sampled = keras.tree.flatten(tf.function(encoder.sampled_window_ids)(batch, tf.constant(seed, tf.int64)))
        starts = []
        for text in range(len(texts)):
            mine = np.flatnonzero(owners == text)
            matches = [
                k
                for k in mine
                if all(np.array_equal(s.numpy()[text], e.numpy()[k]) for s, e in zip(sampled, every, strict=True))
            ]
            assert matches, text  # the sampled window is one of the text's own windows
            starts.append(int(matches[0] - mine[0]))
        draws.append(starts)
    assert draws[0] == draws[1] and draws[0] != draws[2]  # the seed decides
    longer = encoder.longer_than_read(texts)
    assert not any(np.array(draws[0])[~longer]) and np.mean(np.array(draws[0])[longer] > 0) > 0.8
    ids = keras.tree.flatten(encoder(batch))
    short = np.flatnonzero(~longer)
    for s, e in zip(keras.tree.flatten(encoder.sampled_window_ids(batch, tf.constant([3, 4]))), ids, strict=True):
        np.testing.assert_array_equal(s.numpy()[short], e.numpy()[short])


def _tokens_with_offsets(encoder, texts):
    """The standardised tokens of `tokenize_with_offsets` (tensorflow-text's regex split): the
    definition `tokenize` finds faster."""
    return encoder._standardize(encoder.tokenize_with_offsets(texts)[0]).to_list()


_TOKENIZER_OPTIONS = [{}, {"strip_html": False}, {"split_cjk": True}, {"lowercase": False, "normalization": None}]
_EDGE_TEXTS = [
    "",
    "   \t\n ",
    "a<<b>c",
    "<br /><br />x<br/>",
    "x<" + "y" * 201 + ">z",
    "end<",
    "don't, stop!!! ...ok?",
    "a\x00b\u0085c\u2028d\u00a0e\u3000f\x1cg\x0bh",
    "東京で会う。日本語！",
    "e\u0301t\u00e9 \u00ad \u200b",
    "😀🎉 emoji😀word",
    "tab\tsep|pipe_under_score 3.14 1,000",
]


@pytest.mark.parametrize("options", _TOKENIZER_OPTIONS)
def test_tokenize_finds_the_tokens_of_tokenize_with_offsets(options):
    encoder = TextEncoder(**options)
    assert encoder.tokenize(_EDGE_TEXTS).to_list() == _tokens_with_offsets(encoder, _EDGE_TEXTS)


@pytest.mark.parametrize(
    "path", ["imdb/train.csv.gz", "ag_news/train_sample_5k.csv.gz", "r8/train.csv.gz", "trec/train.csv.gz"]
)
def test_tokenize_finds_the_tokens_of_tokenize_with_offsets_on_real_texts(shared_data, path):
    with gzip.open(shared_data / path, "rt", encoding="utf-8", newline="") as handle:
        texts = [row["text"] for _, row in zip(range(3000), csv.DictReader(handle))]
    for options in _TOKENIZER_OPTIONS[:3]:
        encoder = TextEncoder(**options)
        assert encoder.tokenize(texts).to_list() == _tokens_with_offsets(encoder, texts)


@hypothesis.settings(max_examples=100, deadline=None)
@hypothesis.given(st.lists(st.text(max_size=80), min_size=1, max_size=4), st.sampled_from(_TOKENIZER_OPTIONS))
def test_property_tokenize_finds_the_tokens_of_tokenize_with_offsets(texts, options):
    encoder = TextEncoder(**options)
    texts = [t.encode("utf-8", "surrogatepass") for t in texts]
    assert encoder.tokenize(texts).to_list() == _tokens_with_offsets(encoder, texts)


@hypothesis.settings(max_examples=60, deadline=None)
@hypothesis.given(st.lists(st.binary(max_size=80), min_size=1, max_size=4))
def test_property_tokenize_of_any_bytes_finds_the_tokens_of_tokenize_with_offsets(texts):
    encoder = TextEncoder()
    assert encoder.tokenize(texts).to_list() == _tokens_with_offsets(encoder, texts)


_UTF8_EDGE_BYTES = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF]
_UTF8_EDGE_BYTES += [0xF0, 0xF4, 0xF5, 0xFF]


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(
    st.lists(
        st.one_of(st.binary(max_size=12), st.lists(st.sampled_from(_UTF8_EDGE_BYTES), max_size=6).map(bytes)),
        min_size=1,
        max_size=8,
    )
)
def test_property_texts_are_repaired_as_a_transcode_to_utf8_repairs_them(texts):
    """Only texts that are not valid UTF-8 are transcoded (surrogates and code points above
    U+10FFFF are invalid too), and the batch is what transcoding every text gives."""
    transcoded = tf.strings.unicode_transcode(texts, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)
    assert valid_utf8(tf.constant(texts)).numpy().tolist() == transcoded.numpy().tolist()
