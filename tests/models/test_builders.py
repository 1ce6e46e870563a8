import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_textattn.models import BUILDERS
from keras_textattn.models import SPECS
from keras_textattn.models import build_model
from keras_textattn.models import get_spec
from keras_textattn.models.dual_axial import VARIANTS
from keras_textattn.text import TextEncoder
from keras_textattn.training.model_setup import accept_shorter_ids
from tests.small_models import SMALL

TEXTS = ["A great film. Loved it!", "Dull and slow. Bad acting?", "", "fine"]


def _encoder(name):
    """An adapted encoder for `name`; every model reads hashed bigrams too (HCAN's per sentence row)."""
    encoder = TextEncoder(**get_spec(name).encoder_options(sequence_length=6, max_sentences=3, bigram_buckets=16))
    encoder.adapt(TEXTS)
    return encoder


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_raw_text_model_round_trip(name, tmp_path):
    """Every builder takes the encoder: the model reads raw strings and saves whole."""
    model = build_model(name, 3, encoder=_encoder(name), **SMALL[name])
    texts = tf.constant(TEXTS)
    probabilities = keras.ops.convert_to_numpy(model(texts))
    assert probabilities.shape == (4, 3)
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, rtol=1e-5)
    # No texts: no rows, as the layers promise. The Kim-CNN baseline is Keras's Conv1D alone, which
    # fails where TensorFlow's convolution gives a batch of no rows the input's channels (oneDNN's,
    # `call_unless_empty` says more; our layers call their convolutions through it).
    if name == "kim_cnn" and tf.nn.conv1d(tf.zeros((0, 2, 2)), tf.zeros((1, 2, 1)), 1, "SAME").shape[-1] == 2:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Incompatible shapes"):
            model(tf.constant([], tf.string))
    else:
        assert tuple(model(tf.constant([], tf.string)).shape) == (0, 3)
    model.save(tmp_path / "model.keras")
    np.testing.assert_allclose(
        keras.models.load_model(tmp_path / "model.keras")(texts), probabilities, rtol=1e-5, atol=1e-6
    )


@pytest.mark.parametrize(
    "name, kwargs",
    [("dual_axial", {"variant": v}) for v in VARIANTS]
    + [
        ("lama", {"use_context": True}),
        ("lama", {"use_rnn": False, "regularization": "embeddings"}),
        ("cspan", {"configuration": "big", "num_queries": 4}),
        ("hcan", {"hierarchical": False}),
        ("hcan", {"parallel": False, "pooling": "max"}),
        ("scalable_attention", {"attention_activation": "softmax"}),
    ],
)
def test_variants_build_and_train_a_step(name, kwargs, tmp_path):
    shape = {"sequence_length": 6, **({"max_sentences": 3} if get_spec(name).is_hierarchical(kwargs) else {})}
    model = build_model(name, 2, vocabulary_size=30, **shape, **{**SMALL[name], **kwargs})
    ids = np.random.default_rng(0).integers(0, 30, (4,) + tuple(model.inputs[0].shape[1:]))
    model.compile("adam", "sparse_categorical_crossentropy")
    history = model.fit(ids, np.array([0, 1, 0, 1]), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    model.save(tmp_path / "model.keras")  # every variant reloads in safe mode (CSPAN's LSTM stack once did not)
    reloaded = keras.models.load_model(tmp_path / "model.keras", safe_mode=True)
    np.testing.assert_allclose(reloaded.predict(ids, verbose=0), model.predict(ids, verbose=0), rtol=1e-5, atol=1e-6)


def test_hcan_layer_norm_epsilon_reaches_both_hierarchies(tmp_path):
    """`layer_norm_epsilon` (1e-3 for int8 export, BENCHMARKS.md) is the epsilon of the word and the
    sentence hierarchies' layer normalisation, and is saved with the model; 1e-6 by default."""
    from keras_textattn.layers import ParallelConvMultiheadSelfAttention

    def epsilons(model):
        return [
            layer.layer_norm.epsilon for layer in model.layers if isinstance(layer, ParallelConvMultiheadSelfAttention)
        ]

    shape = {"vocabulary_size": 30, "sequence_length": 6, "max_sentences": 3, **SMALL["hcan"]}
    assert epsilons(build_model("hcan", 2, **shape)) == [1e-6, 1e-6]
    model = build_model("hcan", 2, layer_norm_epsilon=1e-3, **shape)
    assert epsilons(model) == [1e-3, 1e-3]
    model.save(tmp_path / "model.keras")
    assert epsilons(keras.models.load_model(tmp_path / "model.keras")) == [1e-3, 1e-3]
    with pytest.raises(ValueError, match=r"`epsilon` must be a finite number > 0. Received: epsilon=0"):
        build_model("hcan", 2, layer_norm_epsilon=0, **shape)


def test_builder_errors():
    with pytest.raises(ValueError, match="Unknown model 'gpt'. Available: bigru, cspan"):
        build_model("gpt", 2, vocabulary_size=10)
    with pytest.raises(ValueError, match="vocabulary_size"):
        build_model("lama", 2)
    with pytest.raises(ValueError, match="num_classes"):
        build_model("lama", 1, vocabulary_size=10)
    with pytest.raises(ValueError, match="static `sequence_length`"):
        build_model("dual_axial", 2, vocabulary_size=10)
    with pytest.raises(ValueError, match="weights per position"):
        build_model("scalable_attention", 2, vocabulary_size=10)
    with pytest.raises(ValueError, match="variant"):
        build_model("dual_axial", 2, vocabulary_size=10, sequence_length=5, variant="triple")
    with pytest.raises(ValueError, match="configuration"):
        build_model("cspan", 2, vocabulary_size=10, configuration="huge")
    with pytest.raises(ValueError, match="fixed sizes"):
        build_model("hcan", 2, vocabulary_size=10, sequence_length=5)
    # A length of 0 built a model of empty inputs; HCAN's 0 sentences failed in its position embedding.
    with pytest.raises(
        ValueError, match=r"`sequence_length` must be a positive int or None. Received: sequence_length=0"
    ):
        build_model("lama", 2, vocabulary_size=10, sequence_length=0)
    with pytest.raises(ValueError, match=r"`max_sentences` must be a positive int or None. Received: max_sentences=0"):
        build_model("hcan", 2, vocabulary_size=10, sequence_length=5, max_sentences=0)
    # A negative bucket count failed in Keras's Embedding, as "input_dim=0", which no argument is called.
    with pytest.raises(
        ValueError, match=r"`bigram_buckets` must be an int >= 0 \(0: no bigrams\). Received: bigram_buckets=-1$"
    ):
        build_model("dual_axial", 2, vocabulary_size=10, sequence_length=5, bigram_buckets=-1)
    # A string was read as true: use_context="False" built LAMA+ctx, hierarchical="False" the hierarchy.
    with pytest.raises(ValueError, match=r"`use_context` must be True or False. Received: use_context='False'$"):
        build_model("lama", 2, vocabulary_size=10, sequence_length=5, use_context="False")
    with pytest.raises(ValueError, match=r"`hierarchical` must be True or False. Received: hierarchical='False'$"):
        build_model("hcan", 2, vocabulary_size=10, sequence_length=5, max_sentences=2, hierarchical="False")
    with pytest.raises(ValueError, match=r"`hierarchical` must be True or False. Received: hierarchical='no'$"):
        get_spec("hcan").is_hierarchical({"hierarchical": "no"})
    assert get_spec("hcan").flag_arguments() == ["hierarchical", "parallel"]
    # An encoder fixes the shape: a disagreeing length is refused, not silently dropped.
    with pytest.raises(ValueError, match="sequence_length=7 disagrees with the encoder's sequence_length=6"):
        build_model("lama", 2, encoder=_encoder("lama"), sequence_length=7)
    with pytest.raises(ValueError, match="bigram_buckets=8 disagrees with the encoder's bigram_buckets=16"):
        build_model("dual_axial", 2, encoder=_encoder("dual_axial"), bigram_buckets=8)
    with pytest.raises(ValueError, match="max_sentences=4 disagrees with the encoder's 3"):
        build_model("hcan", 2, encoder=_encoder("hcan"), max_sentences=4)


def test_lama_is_more_compact_than_the_transformer_encoder():
    """The LAMA paper's claim (section 5.1): about 3x fewer parameters than TE at the same width.
    Attention parameters only: LAMA's W_w, b_w, P, Q, c against TE's attention + FFN."""
    lama = build_model("lama", 2, vocabulary_size=100, gru_units=256, num_heads=8)
    te = build_model("transformer", 2, vocabulary_size=100, units=512, num_heads=8, feedforward_units=1024)
    lama_attention = lama.get_layer("attention").count_params()
    te_attention = sum(te.get_layer(n).count_params() for n in ("attention", "feedforward_in", "feedforward_out"))
    assert te_attention > 3 * lama_attention


def test_specs_describe_their_builders():
    """Each spec's encoder gives its builder the inputs it reads, from the spec alone."""
    assert sorted(SPECS) == sorted(BUILDERS) == sorted(SMALL)
    for name, spec in SPECS.items():
        assert spec.name == name and "vocabulary_size" in spec.builder_arguments()
        assert set(spec.cpu_defaults) <= set(spec.builder_arguments()), name
        assert spec.embedding_size_argument in spec.builder_arguments(), name
        assert set(spec.shape_arguments(_encoder(name))) <= set(spec.builder_arguments()), name
    hcan = get_spec("hcan")
    assert hcan.encoder_options({"hierarchical": False}, sequence_length=6).get("hierarchical") is None
    flat = TextEncoder(**hcan.encoder_options({"hierarchical": False}, sequence_length=6))
    flat.adapt(TEXTS)
    model = build_model("hcan", 2, encoder=flat, hierarchical=False, units=8, num_heads=2)
    assert model(tf.constant(TEXTS)).shape == (4, 2)
    assert hcan.preset_arguments("cpu") == {"units": 64, "num_heads": 4} and hcan.preset_arguments("paper") == {}
    # LAMA's presets build LAMA+ctx (Table 4's best), its builder's default LAMA.
    lama = get_spec("lama")
    assert lama.preset_arguments("paper") == {"use_context": True} and lama.preset_arguments("cpu")["use_context"]
    with pytest.raises(ValueError, match="unknown preset 'gpu'"):
        hcan.preset_arguments("gpu")


@pytest.mark.parametrize("name", sorted(SPECS))
def test_cpu_preset_is_smaller_than_the_papers_sizes(name):
    """`train()`'s default preset shrinks every model that has one (today all: the papers' sizes
    take up to 16x longer an epoch on 2 cores, benchmarks/presets.py), and the paper preset is
    the builder's defaults (with the paper's best variant: LAMA+ctx)."""
    spec = get_spec(name)
    shape = spec.shape_arguments(_encoder(name))
    paper, cpu = (
        spec.build(2, vocabulary_size=500, **shape, **spec.preset_arguments(preset)) for preset in ("paper", "cpu")
    )
    assert paper.count_params() == spec.build(2, vocabulary_size=500, **shape, **spec.best_variant).count_params()
    assert (
        cpu.count_params() < paper.count_params() if spec.cpu_defaults else cpu.count_params() == paper.count_params()
    )


# The transformer baseline's attention is Keras's MultiHeadAttention, which warns as Keras does.
@pytest.mark.parametrize("name", sorted(set(BUILDERS) - {"transformer"}))
def test_one_sentence_or_one_token_texts_attend_without_a_warning(name):
    """Where nearly every text is one sentence (single sentences, unpunctuated texts) `train()`
    gives HCAN one sentence per text, and a model built for one token reads one: attention over
    one key is that key, not the mistake Keras warns of ("a softmax over axis -1 ... has size 1",
    printed twice by such a run), and every weight still gets a gradient (zero where it is unused),
    not Keras's warning that gradients do not exist for some."""
    shape = {"sequence_length": 6, "max_sentences": 1} if get_spec(name).is_hierarchical() else {"sequence_length": 1}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = build_model(name, 2, vocabulary_size=30, **shape, **SMALL[name])
        ids = np.zeros((2,) + tuple(model.inputs[0].shape[1:]), "int32")
        ids[0].flat[0] = 3  # one real token; the second text is empty
        probabilities = keras.ops.convert_to_numpy(model(ids))
        model.compile("adam", "sparse_categorical_crossentropy", run_eagerly=True)
        model.train_on_batch(ids, np.array([1, 0]))
    said = [str(w.message) for w in caught]
    assert not [m for m in said if "has size 1" in m or "Gradients do not exist" in m], said
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, rtol=1e-5)


# Keras's `model.quantize("int8")` on the builders' models (the docs' guide "Export and serving"): the
# quantized model predicts like the float one, and its `.keras` file loads back and saves again
# (our layers keep their quantized sublayers' policies in their configs), except the transformer
# baseline's: Keras's own MultiHeadAttention rebuilds its quantized projections float on load.
QUANTIZED_KERAS_FILE_LOADS = {
    "bigru": True,
    "cspan": True,
    "dual_axial": True,
    "hcan": True,
    "kim_cnn": True,
    "lama": True,
    "scalable_attention": True,
    "transformer": False,
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_keras_int8_quantization_predicts_and_saves_as_the_readme_says(name, tmp_path):
    assert set(QUANTIZED_KERAS_FILE_LOADS) == set(BUILDERS)
    shape = {"sequence_length": 6, "max_sentences": 2} if name == "hcan" else {"sequence_length": 12}
    model = build_model(name, 3, vocabulary_size=50, **shape, **SMALL[name])
    ids = np.random.default_rng(0).integers(1, 50, (3, 12)).astype("int32")
    ids[1, 6:] = 0
    inputs = ids.reshape(3, 2, 6) if name == "hcan" else ids
    inputs = [inputs, inputs] if len(model.inputs) == 2 else inputs
    expected = model.predict(inputs, verbose=0)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Layer .* does not have a `quantize` method implemented")
        model.quantize("int8")
    quantized = model.predict(inputs, verbose=0)
    np.testing.assert_allclose(quantized, expected, atol=0.01)
    model.save(tmp_path / "model.keras")
    if QUANTIZED_KERAS_FILE_LOADS[name]:
        loaded = keras.models.load_model(tmp_path / "model.keras")
        np.testing.assert_array_equal(loaded.predict(inputs, verbose=0), quantized)
        loaded.save(tmp_path / "again.keras")  # a loaded quantized model saves again
        again = keras.models.load_model(tmp_path / "again.keras")
        np.testing.assert_array_equal(again.predict(inputs, verbose=0), quantized)
    else:
        with pytest.raises(ValueError, match="could not be loaded"):
            keras.models.load_model(tmp_path / "model.keras")


def test_han_ignores_padded_words_and_sentences():
    """HAN (HCAN's baseline, `build_han_classifier`) has no weights tied to the sizes: the same
    documents padded to more words and more sentences get the same probabilities."""
    from keras_textattn.models import build_han_classifier

    ids = np.random.default_rng(0).integers(2, 40, size=(2, 3, 4)).astype("int32")
    ids[1, 2:], ids[1, 1, 2:] = 0, 0  # the second document: two sentences, the second of two words
    small = build_han_classifier(3, vocabulary_size=40, sequence_length=4, max_sentences=3, units=8)
    large = build_han_classifier(3, vocabulary_size=40, sequence_length=7, max_sentences=5, units=8)
    large.set_weights(small.get_weights())
    padded = np.zeros((2, 5, 7), "int32")
    padded[:, :3, :4] = ids
    np.testing.assert_allclose(large.predict(padded, verbose=0), small.predict(ids, verbose=0), rtol=1e-5, atol=1e-6)
    assert [layer.name for layer in small.layers if "attention" in layer.name] == [
        "word_attention",
        "sentence_attention",
    ]


def test_han_reads_raw_text_and_needs_fixed_sizes():
    from keras_textattn.models import build_han_classifier

    encoder = _encoder("hcan")
    model = build_han_classifier(2, encoder=encoder, units=8)
    assert model.predict(tf.constant(TEXTS), verbose=0).shape == (4, 2)
    with pytest.raises(ValueError, match="HAN needs fixed sizes.*max_sentences=None"):
        build_han_classifier(2, vocabulary_size=10, sequence_length=5)


@pytest.mark.parametrize("name", [name for name, spec in SPECS.items() if not spec.hierarchical])
def test_reads_any_length_is_what_the_classifier_does(name):
    """A classifier whose spec `reads_any_length` gives, on ids (and bigram ids) cut after the
    batch's longest text, the outputs of the same ids padded to its length, as `train` feeds it
    in training and scoring (`accept_shorter_ids`); the others cannot read them (a layer's
    weights span the length)."""
    rng = np.random.default_rng(0)
    model = build_model(name, 3, vocabulary_size=50, sequence_length=40, bigram_buckets=30, **SMALL.get(name, {}))
    lengths = np.array([25, 9, 17, 1])
    real = np.arange(40) < lengths[:, None]
    ids = np.where(real, rng.integers(2, 50, (4, 40)), 0).astype("int32")
    bigrams = np.where(real, rng.integers(1, 31, (4, 40)), 0).astype("int32")
    padded = keras.ops.convert_to_numpy(model([ids, bigrams]))
    accept_shorter_ids(model)
    if not get_spec(name).reads_any_length:
        with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
            model([ids[:, :25], bigrams[:, :25]])
        return
    model.compile(loss="sparse_categorical_crossentropy")
    model.train_on_batch([ids[:, :25], bigrams[:, :25]], np.array([0, 1, 2, 0]))  # Keras's own check passes
    cut = keras.ops.convert_to_numpy(model([ids[:, :25], bigrams[:, :25]]))
    np.testing.assert_allclose(cut, keras.ops.convert_to_numpy(model([ids, bigrams])), rtol=1e-5, atol=1e-6)
    assert padded.shape == cut.shape


@pytest.mark.parametrize("variant", ["hcan", "hcan_flat", "han"])
def test_hierarchical_classifiers_read_batches_cut_to_their_most_sentences_and_words(variant):
    """HCAN (hierarchical and flat) and the HAN baseline give, on ids (and bigram ids) cut to the
    batch's most sentences and longest sentence, the outputs of the same ids padded to the sizes they
    were built for, in training too (`accept_shorter_ids`): their learned positions are read from the
    first and their reshapes take their sizes at call time (`SentenceRows`, `DocumentSentences`)."""
    from keras_textattn.models import build_han_classifier

    rng = np.random.default_rng(0)
    sentences, words = np.array([3, 1, 2, 1]), np.array([[5, 2, 4], [1, 0, 0], [3, 5, 0], [2, 0, 0]])
    if variant == "hcan_flat":
        shape, real = (40,), np.arange(40) < np.array([25, 9, 17, 1])[:, None]
        model = build_model(
            "hcan", 3, vocabulary_size=50, sequence_length=40, bigram_buckets=30, hierarchical=False, **SMALL["hcan"]
        )
        cut = (slice(None), slice(0, 25))
    else:
        shape = (6, 8)
        real = (np.arange(6)[None, :, None] < sentences[:, None, None]) & (
            np.arange(8)[None, None, :] < np.pad(words, ((0, 0), (0, 3)))[:, :, None]
        )
        sizes = dict(vocabulary_size=50, sequence_length=8, max_sentences=6, bigram_buckets=30)
        model = (
            build_model("hcan", 3, **sizes, **SMALL["hcan"])
            if variant == "hcan"
            else build_han_classifier(3, units=8, **sizes)
        )
        cut = (slice(None), slice(0, 3), slice(0, 5))
    ids = np.where(real, rng.integers(2, 50, (4, *shape)), 0).astype("int32")
    bigrams = np.where(real, rng.integers(1, 31, (4, *shape)), 0).astype("int32")
    accept_shorter_ids(model)
    model.compile(loss="sparse_categorical_crossentropy")
    model.train_on_batch([ids[cut], bigrams[cut]], np.array([0, 1, 2, 0]))  # Keras's own check passes
    outputs = keras.ops.convert_to_numpy(model([ids[cut], bigrams[cut]]))
    assert outputs.shape == (4, 3)
    np.testing.assert_allclose(
        outputs,
        keras.ops.convert_to_numpy(model([ids, bigrams])),
        rtol=1e-5,
        atol=1e-6,
    )
