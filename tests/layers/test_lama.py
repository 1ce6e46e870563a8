import keras
import numpy as np
import pytest

from keras_textattn.layers import LAMA
from tests import numpy_reference as ref
from tests.layer_contract import check_finite_on_extremes
from tests.layer_contract import check_padding_invariance
from tests.layer_contract import run_layer_contract
from tests.layer_contract import set_random_weights
from tests.layer_contract import to_numpy

X_SHAPE = (3, 6, 4)
MASK = np.array([[1] * 6, [1] * 4 + [0] * 2, [1] + [0] * 5], bool)


def lama_reference(H, keep, W_w, b_w, P, Q, c, heads, rank, l2=True):
    """Eq. 7, 10, 13, 15 for one document. H: T x 2h. P, Q: 2h x (k m), head-major."""
    U = np.tanh(H @ W_w + b_w)  # Eq. 7 (Keras kernel: h @ W_w)
    F = np.zeros((heads, len(H)))
    for t in range(len(H)):
        for i in range(heads):
            cols = slice(i * rank, (i + 1) * rank)
            # Eq. 10: f = c^T P_i Q_i^T u_t
            F[i, t] = c @ P[:, cols] @ Q[:, cols].T @ U[t]
    F = np.tanh(F)
    if l2:
        F = F / np.linalg.norm(F, axis=0, keepdims=True)  # over the m heads, per word
    A = np.stack([ref.softmax_over(F[i], keep) for i in range(heads)])  # Eq. 13
    S = A @ np.where(keep[:, None], H, 0.0)  # Eq. 15
    return S, A


def _weights(layer):
    npy = keras.ops.convert_to_numpy
    return npy(layer.hidden.kernel), npy(layer.hidden.bias), npy(layer.context_factors), npy(layer.token_factors)


@pytest.mark.parametrize(
    "init_kwargs, output_shape, losses",
    [
        ({"num_heads": 3}, (3, 8), 0),
        ({"num_heads": 2, "rank": 3, "flatten": True, "regularization": "positions"}, (16,), 1),
        ({"num_heads": 4, "regularization": "embeddings"}, (4, 8), 1),
    ],
)
def test_layer_contract(init_kwargs, output_shape, losses, tmp_path):
    run_layer_contract(
        LAMA, init_kwargs, output_shape, propagates_mask=False, expected_num_losses=losses, tmp_path=tmp_path
    )


@pytest.mark.parametrize("heads, rank, l2", [(3, 1, True), (2, 3, True), (1, 2, False)])
def test_matches_reference(heads, rank, l2):
    rng = np.random.default_rng(0)
    x = rng.normal(size=X_SHAPE).astype("float32")
    layer = LAMA(num_heads=heads, rank=rank, l2_normalize=l2)
    layer.build(x.shape)
    set_random_weights(layer, rng, scale=1.0)
    S, A = to_numpy(layer(x, mask=MASK, return_attention_scores=True))
    W_w, b_w, P, Q = _weights(layer)
    c = keras.ops.convert_to_numpy(layer.context)
    for b in range(len(x)):
        S_ref, A_ref = lama_reference(x[b], MASK[b], W_w, b_w, P, Q, c, heads, rank, l2)
        np.testing.assert_allclose(S[b], S_ref, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(A[b], A_ref, rtol=1e-5, atol=1e-6)


def test_per_example_context_lama_ctx():
    """LAMA+ctx: c is given per document (the mean of its unpadded word embeddings)."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=X_SHAPE).astype("float32")
    embeddings = rng.normal(size=(3, 6, 5)).astype("float32")
    context = np.stack([embeddings[b][MASK[b]].mean(0) for b in range(3)])
    layer = LAMA(num_heads=2)
    S = to_numpy(layer(x, context=context, mask=MASK))
    assert layer.context_factors.shape == (5, 2)
    W_w, b_w, P, Q = _weights(layer)
    for b in range(3):
        S_ref, _ = lama_reference(x[b], MASK[b], W_w, b_w, P, Q, context[b], 2, 1)
        np.testing.assert_allclose(S[b], S_ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="built with a `context` input"):
        layer(x, mask=MASK)


def test_context_model_saves_and_loads(tmp_path):
    tokens = keras.Input(shape=(None, 4))
    context = keras.Input(shape=(5,))
    model = keras.Model([tokens, context], LAMA(num_heads=2, flatten=True)(tokens, context=context))
    data = [np.random.rand(2, 6, 4).astype("float32"), np.random.rand(2, 5).astype("float32")]
    model.save(tmp_path / "ctx.keras")
    loaded = keras.models.load_model(tmp_path / "ctx.keras")
    np.testing.assert_allclose(to_numpy(loaded(data)), to_numpy(model(data)), rtol=1e-6)


def test_disagreement_penalties_match_eq_19():
    rng = np.random.default_rng(2)
    x = rng.normal(size=X_SHAPE).astype("float32")
    for regularization in ("positions", "embeddings"):
        layer = LAMA(num_heads=3, regularization=regularization, regularization_weight=0.5)
        S, A = (keras.ops.convert_to_numpy(v) for v in layer(x, mask=MASK, return_attention_scores=True))
        penalties = []
        for b in range(3):
            if regularization == "positions":
                penalties.append(np.sum((A[b] @ A[b].T - np.eye(3)) ** 2))  # -D_penal, Eq. 19a
            else:
                unit = S[b] / np.linalg.norm(S[b], axis=1, keepdims=True)
                penalties.append(np.sum(unit @ unit.T) / 9)  # -D_emb, Eq. 19b
        (loss,) = layer.losses
        np.testing.assert_allclose(keras.ops.convert_to_numpy(loss), 0.5 * np.mean(penalties), rtol=1e-5)


def test_positions_penalty_rewards_disagreeing_heads():
    """Training on the penalty alone makes the heads disagree more. The bound is loose:
    tanh then l2 keeps scores in [-1, 1], so no head can become one-hot (Eq. 13)."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(16, 6, 4)).astype("float32")
    inputs = keras.Input(shape=(6, 4))
    layer = LAMA(num_heads=2, regularization="positions", regularization_weight=1.0)
    model = keras.Model(inputs, layer(inputs))
    model.compile(optimizer=keras.optimizers.Adam(0.05), loss=lambda y, p: 0.0 * keras.ops.sum(p))
    first = model.evaluate(x, np.zeros((16, 2, 4)), verbose=0)
    model.fit(x, np.zeros((16, 2, 4)), epochs=30, verbose=0)
    assert model.evaluate(x, np.zeros((16, 2, 4)), verbose=0) < 0.97 * first


def test_padding_invariance_and_extremes():
    rng = np.random.default_rng(4)
    layer = LAMA(num_heads=3)
    check_padding_invariance(
        layer,
        rng.normal(size=(2, 5, 4)).astype("float32"),
        real_length=5,
        call_kwargs={"return_attention_scores": True},
    )
    S, A = check_finite_on_extremes(LAMA(num_heads=3, regularization="embeddings"), features=4)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(A)[1], 0.0)
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(S)[1], 0.0)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_heads": 0}, r"num_heads.*num_heads=0"),
        ({"rank": -1}, r"rank.*rank=-1"),
        ({"regularization": "l2"}, r"regularization.*'embeddings', 'positions'.*l2"),
        ({"regularization_weight": -0.1}, r"regularization_weight. must be a finite number >= 0.*=-0.1$"),
        # inf trained to NaN weights; a string (`--set regularization_weight=nan`) was a TypeError.
        (
            {"regularization_weight": float("inf")},
            r"must be a finite number >= 0. Received: regularization_weight=inf$",
        ),
        ({"regularization_weight": "nan"}, r"must be a finite number >= 0. Received: regularization_weight='nan'$"),
        (
            {"regularization_weight": float("nan")},
            r"must be a finite number >= 0. Received: regularization_weight=nan$",
        ),
        # A string was read as true: "False" and "no" flattened S and normalised it.
        ({"flatten": "False"}, r"LAMA: `flatten` must be True or False. Received: flatten='False'$"),
        ({"l2_normalize": "no"}, r"`l2_normalize` must be True or False. Received: l2_normalize='no'$"),
        ({"flatten": 0}, r"Received: flatten=0$"),
    ],
)
def test_invalid_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LAMA(**kwargs)


def test_numpy_bools_are_flags():
    layer = LAMA(flatten=np.bool_(True), l2_normalize=np.bool_(False))
    assert layer.get_config()["flatten"] is True and layer.get_config()["l2_normalize"] is False


def test_incompatible_context():
    with pytest.raises(ValueError, match=r"\(batch, context_features\).*\(None, 3, 4\)"):
        LAMA()(keras.Input(shape=(5, 4)), context=keras.Input(shape=(3, 4)))
