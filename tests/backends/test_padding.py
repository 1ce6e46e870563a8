"""Padding never changes a prediction, for every builder, variant and baseline (any backend).

The layers promise it (tests/layers); this checks that every model keeps the promise:
the padding mask must reach each attention and pooling layer. After the predictions
on padded ids, the padding id's embedding row is replaced by large random values and
the ids of other inputs at padded steps (the hashed bigram ids, which every flat model
reads when asked and dual-axial by default) are scrambled;
the predictions must not move. Each model's `logits_model` gives the same predictions
before the softmax.
"""

import keras
import numpy as np
import pytest

from keras_textattn.models import SPECS
from keras_textattn.models import build_model
from keras_textattn.models import logits_model
from tests.small_models import SMALL

LENGTH, SENTENCES, VOCABULARY, BUCKETS = 8, 3, 40, 16
CASES = (
    [(name, {}) for name in sorted(SMALL)]
    + [
        ("dual_axial", {"bigram_buckets": BUCKETS}),  # the paper's setting and the training default
        ("dual_axial", {"bigram_buckets": BUCKETS, "variant": "softmax"}),
        ("dual_axial", {"bigram_buckets": BUCKETS, "variant": "text_axial"}),
        ("dual_axial", {"bigram_buckets": BUCKETS, "variant": "text_axial_no_attenuation"}),
        ("dual_axial", {"bigram_buckets": BUCKETS, "aggregation": "mean"}),
        ("hcan", {"hierarchical": False}),
        ("hcan", {"parallel": False, "pooling": "max"}),
        ("lama", {"use_context": True}),
        ("lama", {"use_context": True, "regularization": "positions"}),
        ("lama", {"use_rnn": False, "regularization": "embeddings"}),
        ("cspan", {"configuration": "big", "num_queries": 4}),
        ("scalable_attention", {"attention_activation": "softmax"}),
        ("hcan", {"hierarchical": False, "bigram_buckets": BUCKETS}),
    ]
    + [(name, {"bigram_buckets": BUCKETS}) for name in sorted(SMALL) if name != "dual_axial"]
)  # hcan: per sentence


def _shape_kwargs(name, kwargs):
    return {"sequence_length": LENGTH, **({"max_sentences": SENTENCES} if SPECS[name].is_hierarchical(kwargs) else {})}


def _padded_ids(shape, rng):
    """Token ids >= 2 with padding (0) after a random length per row; an all-padding row;
    for hierarchical shapes, padded words in each sentence and padded sentences."""
    ids = rng.integers(2, VOCABULARY, (5,) + shape).astype("int32")
    lengths = rng.integers(1, shape[-1], ids.shape[:-1])
    ids[np.arange(shape[-1]) >= lengths[..., None]] = 0
    ids[0] = 0  # an empty text
    if len(shape) == 2:
        ids[1, 1:] = 0  # one sentence
        ids[2, -1] = 0  # a padded last sentence
    return ids


@pytest.mark.parametrize(
    "name, kwargs", CASES, ids=[f"{n}-{'-'.join(map(str, k.values())) or 'default'}" for n, k in CASES]
)
def test_predictions_do_not_depend_on_padding(name, kwargs):
    keras.utils.set_random_seed(0)
    model = build_model(name, 3, vocabulary_size=VOCABULARY, **_shape_kwargs(name, kwargs), **{**SMALL[name], **kwargs})
    rng = np.random.default_rng(1)
    ids = _padded_ids(tuple(model.inputs[0].shape[1:]), rng)
    padding = ids == 0
    inputs = [ids]
    if len(model.inputs) == 2:  # bigram ids: hashed into 1..buckets, 0 where there is no next token
        bigrams = rng.integers(1, BUCKETS + 1, ids.shape).astype("int32")
        bigrams[padding] = 0
        inputs.append(bigrams)
    feed = inputs if len(inputs) == 2 else ids  # the list: its bigram ids are scrambled in place below
    before = model.predict(feed, verbose=0)

    for layer in model.layers:
        if isinstance(layer, keras.layers.Embedding):
            table = keras.ops.convert_to_numpy(layer.embeddings).copy()
            table[0] = rng.normal(0.0, 10.0, table.shape[1])
            layer.embeddings.assign(table)
    if len(inputs) == 2:
        inputs[1] = np.where(padding, rng.integers(1, BUCKETS + 1, ids.shape), inputs[1]).astype("int32")
    after = model.predict(feed, verbose=0)

    assert np.isfinite(before).all()
    np.testing.assert_allclose(after, before, atol=2e-6)
    # Every builder ends in `classifier_head`: its logits model is the same model before the softmax.
    logits = logits_model(model).predict(feed, verbose=0)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(keras.ops.softmax(logits)), after, atol=1e-6)
