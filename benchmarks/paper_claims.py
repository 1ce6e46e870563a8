"""The papers' speed claims, side by side: each paper model against the model its paper says it
beats, at equal sizes, in one process (`throughput.py`'s "claims" worker).

- HCAN against HAN, a hierarchical BiGRU attention network (the HCAN paper: more than 2x faster
  to train);
- dual-axial against a one-layer Transformer encoder on `keras.layers.MultiHeadAttention` (the
  paper: 15 s an epoch against more than 260 s for earlier multi-dimensional self-attention);
- the LAMA Encoder (LAMA on the embeddings, no RNN) against a one-layer Transformer encoder,
  lengths 50 to 250 as in the paper's Figure 2, and LAMA with its BiGRU at the same lengths.

Sizes are the CPU presets' widths (what `train` builds on a CPU), the comparator at the same
width. Inputs are random token ids (2,000 words) in batches of 32, so the figures are the
models' compute alone: a Keras training step (`train_on_batch`, Adam) per second.
"""

import json

import numpy as np

VOCABULARY = 2000
BATCH = 32


def _pairs(quick):
    """(claim, paper's words, shape, model, its builder arguments, comparator, its arguments)."""
    flat = [128] if quick else [128, 768]
    lama_lengths = [50] if quick else [50, 150, 250]
    hierarchy = [(8, 16)] if quick else [(48, 32)]
    transformer = {"num_heads": 4, "dropout": 0.0}
    rows = [
        (
            "hcan_vs_han",
            "more than 2x faster",
            {"max_sentences": s, "sequence_length": w},
            "hcan",
            {"units": 64, "num_heads": 4},
            "han",
            {"units": 64},
        )
        for s, w in hierarchy
    ]
    rows += [
        (
            "dual_axial_vs_mha",
            "15 s vs 260 s an epoch (AG News, GPU)",
            {"sequence_length": n},
            "dual_axial",
            {"embedding_dim": 32, "fc_units": 64},
            "transformer",
            {"units": 32, "feedforward_units": 64, **transformer},
        )
        for n in flat
    ]
    for n in lama_lengths:
        lama = {"embedding_dim": 64, "gru_units": 32, "num_heads": 4, "mlp_units": 64, "use_context": True}
        te = ("transformer", {"units": 64, "feedforward_units": 128, **transformer})
        rows.append(
            (
                "lama_encoder_vs_te",
                "faster than TE (Figure 2)",
                {"sequence_length": n},
                "lama",
                {**lama, "use_rnn": False},
                *te,
            )
        )
        rows.append(("lama_vs_te", "(not claimed: the BiGRU is sequential)", {"sequence_length": n}, "lama", lama, *te))
    return rows


def _builder(name):
    from keras_textattn.models import BUILDERS
    from keras_textattn.models import build_han_classifier

    return build_han_classifier if name == "han" else BUILDERS[name]


def _train_seconds(name, arguments, shape, min_seconds, timed):
    """Seconds per training step of model `name` on random ids of `shape`'s sizes."""
    import keras

    keras.utils.set_random_seed(0)
    model = _builder(name)(2, vocabulary_size=VOCABULARY, **shape, **arguments)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    sizes = [shape[key] for key in ("max_sentences", "sequence_length") if key in shape]
    rng = np.random.default_rng(0)
    ids = rng.integers(2, VOCABULARY, size=(BATCH, *sizes)).astype("int32")
    labels = rng.integers(0, 2, size=BATCH)
    return timed(lambda: model.train_on_batch(ids, labels), min_seconds), int(model.count_params())


def measure(min_seconds, quick, timed):
    """Worker: one JSON line per claim and shape (training examples per second of both models)."""
    for claim, paper, shape, model, arguments, comparator, comparator_arguments in _pairs(quick):
        seconds, parameters = _train_seconds(model, arguments, shape, min_seconds, timed)
        comparator_seconds, comparator_parameters = _train_seconds(
            comparator, comparator_arguments, shape, min_seconds, timed
        )
        print(
            json.dumps(
                {
                    "claim": claim,
                    "paper_says": paper,
                    "shape": shape,
                    "model": model,
                    "model_arguments": arguments,
                    "comparator": comparator,
                    "comparator_arguments": comparator_arguments,
                    "train_examples_per_second": BATCH / seconds,
                    "comparator_train_examples_per_second": BATCH / comparator_seconds,
                    "speedup": comparator_seconds / seconds,
                    "parameters": parameters,
                    "comparator_parameters": comparator_parameters,
                }
            ),
            flush=True,
        )


def markdown(rows):
    """The claims table: both models' training examples per second and the ratio."""
    lines = [
        "### The papers' speed claims (training steps, random ids, batch 32)",
        "",
        "| claim | shape | model ex/s | comparator ex/s | model's speedup | the paper says |",
        "| --- | --- | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        shape = " x ".join(str(v) for v in r["shape"].values())
        lines.append(
            f"| {r['model']} vs {r['comparator']} ({r['claim']}) | {shape} | {r['train_examples_per_second']:.0f} | "
            f"{r['comparator_train_examples_per_second']:.0f} | {r['speedup']:.2f}x | {r['paper_says']} |"
        )
    return "\n".join(lines)
