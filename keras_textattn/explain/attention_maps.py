"""What a trained model attends to: attention weights mapped back onto the words of a text.

TensorFlow backend (it runs the text encoder). The weights are those each paper
visualises: ScalableAttention's alpha, the dual-axial text- and feature-axial maps
(averaged over the features of each word), HCAN's word- and sentence-level target
attention (one row per head), LAMA's heads and CSPAN's queries.
"""

import dataclasses
import os

import keras
import numpy as np
import tensorflow as tf

from keras_textattn import _backend
from keras_textattn.datasets.splits import checked_label_names
from keras_textattn.errors import UserError
from keras_textattn.errors import check_answered
from keras_textattn.errors import check_batch_size
from keras_textattn.errors import check_long_texts
from keras_textattn.errors import check_texts
from keras_textattn.errors import check_whole
from keras_textattn.layers import LAMA
from keras_textattn.layers import ConvMultiheadTargetAttention
from keras_textattn.layers import DualAxialSelfAttention
from keras_textattn.layers import MultiQueryAttention
from keras_textattn.layers import ScalableAttention
from keras_textattn.multi_label import label_sets
from keras_textattn.run_folder import load_run
from keras_textattn.run_folder import run_thresholds
from keras_textattn.text import TextEncoder
from keras_textattn.vocabulary import PAD_ID

ATTENTION_LAYERS = (ScalableAttention, DualAxialSelfAttention, ConvMultiheadTargetAttention, LAMA, MultiQueryAttention)


@dataclasses.dataclass
class Explanation:
    """One text, its prediction, and the attention on each of its tokens.

    Attributes:
        text: the text as given.
        tokens: `[{"token", "start", "end"}]`, `text[start:end] == token` (characters).
        label: the predicted class name (of a multi-label run: its most probable label);
            `probabilities`: class name to probability.
        attention: map name to an array `(rows, len(tokens))`: one row per head or
            query (one row for single-map layers), weights of padded steps dropped.
        sentences: HCAN only: `[{"start", "end"}]` of the encoded sentences, and
            `sentence_attention`: map name to `(heads, len(sentences))`.
        dimension_attention: dual-axial only: map name to `(len(tokens), features)`,
            the per-dimension weights of each word (the paper's Figure 5).
        labels: of a multi-label run, every label whose probability reaches its threshold
            (most probable first; maybe none); None otherwise (`predicted`: `[label]`).
    """

    text: str
    tokens: list
    label: str
    probabilities: dict
    attention: dict
    sentences: list = dataclasses.field(default_factory=list)
    sentence_attention: dict = dataclasses.field(default_factory=dict)
    dimension_attention: dict = dataclasses.field(default_factory=dict)
    labels: list = None

    def predicted(self):
        """The labels predicted: `labels` of a multi-label run, else `[label]`."""
        return [self.label] if self.labels is None else self.labels


def as_explanations(value, function):
    """`value`, one `Explanation` or an iterable of them, as a list; a `UserError` naming
    `function` and the first item that is not an `Explanation`."""
    items = [value] if isinstance(value, Explanation) else value
    if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        raise UserError(f"{function} takes explain()'s Explanations (one, or a list); got {type(value).__name__}")
    items = list(items)
    for index, item in enumerate(items):
        if not isinstance(item, Explanation):
            raise UserError(
                f"{function} takes explain()'s Explanations (one, or a list); item {index} is {type(item).__name__}"
            )
    return items


def _call_arguments(model, layer, config):
    """`(args, kwargs)` of the one call of `layer` in the functional `model`, as KerasTensors.

    Read from the model's public config (`config`, `model.get_config()`): each tensor
    argument names the operation that produced it, whose `output` is the tensor.
    """
    nodes = next(entry["inbound_nodes"] for entry in config["layers"] if entry["name"] == layer.name)
    if len(nodes) != 1:
        raise UserError(f"Layer {layer.name!r} of {model.name!r} is called {len(nodes)} times; explain needs one call.")
    operations = {operation.name: operation for operation in model.operations}

    def tensors(value):
        if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
            name, node, index = value["config"]["keras_history"]
            if node != 0:
                raise UserError(f"{name!r} of {model.name!r} is called more than once; explain needs one call.")
            return keras.tree.flatten(operations[name].output)[index]
        if isinstance(value, dict):
            return {key: tensors(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [tensors(item) for item in value]
        return value

    return tensors(nodes[0]["args"]), tensors(nodes[0]["kwargs"])


def _attention_probe(model):
    """A function of an encoded batch `ids` giving `(probabilities, {name: attention map})`
    of `model`, both from one pass; built once per model, called once per batch.

    A sub-model returns the model's output and the tensors each attention layer was
    called with (its inputs, its padding mask, LAMA's context); the layer is then called
    again on their values with `return_attention_scores=True`. The builders pass every
    attention layer its mask; for a model whose layer got its mask implicitly (from
    `Embedding(mask_zero=True)`), the mask is `token_ids != PAD_ID`.
    """
    layers = [layer for layer in model.layers if isinstance(layer, ATTENTION_LAYERS)]
    if not layers:
        raise UserError(f"Model {model.name!r} has no keras_textattn attention layer to explain.")
    config = model.get_config()
    calls = [_call_arguments(model, layer, config) for layer in layers]
    flat_calls = [keras.tree.flatten(call) for call in calls]
    tensors = [item for flat in flat_calls for item in flat if isinstance(item, keras.KerasTensor)]
    probe = keras.Model(model.input, [model.outputs[0], *tensors])  # called as `model` is

    def probabilities_and_maps(ids):
        probabilities, *values = probe(ids, training=False)
        values = iter(values)
        token_ids = keras.tree.flatten(ids)[0]
        maps = {}
        for layer, call, flat in zip(layers, calls, flat_calls):
            flat = [next(values) if isinstance(item, keras.KerasTensor) else item for item in flat]
            args, kwargs = keras.tree.pack_sequence_as(call, flat)
            kwargs.setdefault("mask", keras.ops.not_equal(token_ids, PAD_ID))
            _, scores = layer(*args, **kwargs, return_attention_scores=True)  # inference: no dropout
            for key, value in scores.items() if isinstance(scores, dict) else [(None, scores)]:
                maps[layer.name if key is None else f"{layer.name}/{key}"] = keras.ops.convert_to_numpy(value)
        return keras.ops.convert_to_numpy(probabilities), maps

    return probabilities_and_maps


def explain(
    model_or_run, texts, encoder=None, label_names=None, batch_size=256, thresholds=None, long_texts="cut", stride=None
):
    """Explain the predictions of a model on `texts`.

    Args:
        model_or_run: a run folder of `train()` (or a list of one), or a Keras classifier taking
            token ids first (then give its `encoder`), such as the `keras_textattn.models`
            builders make when given `vocabulary_size`.
        texts: a list of strings (one string: a list of one); bytes are read as UTF-8.
        encoder: the `TextEncoder` of the model (read from the run folder otherwise).
        label_names: with a Keras model: its class names, one per output (default "0", "1",
            ...); a run folder names its classes itself (giving them too is refused).
        batch_size: texts per model call (all of them at once would hold every text's
            activations and attention maps together).
        thresholds: with a multi-label Keras model: each label's decision threshold, for
            `Explanation.labels` (a multi-label run folder gives its own).
        long_texts: what a text longer than the model reads gets, as for `inference.Classifier`:
            "cut" (its start is explained) or "windows": each window is explained, and the text's
            explanation is theirs merged: its probabilities their mean (what `predict --long-texts
            windows` answers), every token of the text with each map's weight averaged over the
            windows that read it (a flat model's maps, and HCAN's sentence maps, then scaled to sum
            to 1 over the text).
        stride: with "windows", as for `inference.Classifier`.

    Returns:
        A list of `Explanation`, one per text.
    """
    _backend.require_tensorflow("explain")
    if isinstance(model_or_run, (list, tuple)):  # a repeated --run, or a list in Python: one run only
        if len(model_or_run) != 1:
            raise UserError(
                f"explain reads one run; {len(model_or_run)} given would be an ensemble, which predict, "
                'evaluate and export --format saved_model take (the guide "Predict and evaluate")'
            )
        (model_or_run,) = model_or_run
    if isinstance(model_or_run, (str, os.PathLike)):
        if label_names is not None:
            raise UserError(
                f"explain: a run folder names its classes (labels.json); label_names is for a Keras "
                f"model. Received: label_names={label_names!r:.80}"
            )
        if thresholds is not None:
            raise UserError(
                "explain: a multi-label run folder has its own thresholds; thresholds are for a Keras model"
            )
        model, encoder, label_names = load_run(os.fspath(model_or_run))
        thresholds = run_thresholds(os.fspath(model_or_run), label_names)
    else:
        model = model_or_run
        if not isinstance(model, keras.Model):
            raise UserError(f"explain takes a run folder or a Keras classifier; got {type(model).__name__}")
        if not isinstance(encoder, TextEncoder):
            raise ValueError("Give the model's `encoder` (a TextEncoder), or a run folder instead of a model.")
        label_names = checked_label_names(label_names)
    check_batch_size(batch_size)
    # Bytes are read as UTF-8 with invalid bytes replaced (U+FFFD), as the encoder reads them; the
    # explanations' text and token offsets are of that string.
    texts = [text.decode("utf-8", errors="replace") if isinstance(text, bytes) else text for text in check_texts(texts)]
    if not texts:
        return []
    classes = model.outputs[0].shape[-1]
    label_names = label_names or [str(i) for i in range(classes)]
    if len(label_names) != classes:
        raise UserError(
            f"explain: label_names name the model's {classes} classes, one each; got {len(label_names)}: {label_names}"
        )
    if thresholds is not None and len(thresholds) != classes:
        raise UserError(f"explain: thresholds are one per label: {classes} expected, {len(thresholds)} given")
    check_long_texts(long_texts, stride, [encoder])
    if long_texts == "windows":
        return _explained_in_windows(model, texts, encoder, label_names, batch_size, thresholds, stride)
    probe = _attention_probe(model)
    probabilities, maps = [], {}
    for start in range(0, len(texts), batch_size):
        batch_probabilities, batch_maps = probe(encoder(tf.constant(texts[start : start + batch_size])))
        probabilities.append(batch_probabilities)
        for name, value in batch_maps.items():  # batch first (HCAN's words: batch x sentences)
            maps.setdefault(name, []).append(value)
    probabilities = np.concatenate(probabilities)
    check_answered(
        probabilities,
        texts,
        os.fspath(model_or_run) if isinstance(model_or_run, (str, os.PathLike)) else f"Model {model.name!r}",
    )
    maps = {name: np.concatenate(values) for name, values in maps.items()}
    hierarchical = encoder.hierarchical
    explanations = []
    for row, text in enumerate(texts):
        spans = encoder.token_spans(text)
        label = label_names[int(np.argmax(probabilities[row]))]
        explanation = Explanation(
            text=text,
            tokens=[{"token": token, "start": start, "end": end} for _, token, start, end in spans],
            label=label,
            probabilities={name: float(p) for name, p in zip(label_names, probabilities[row])},
            attention={},
            labels=None
            if thresholds is None
            else [name for name, _ in label_sets(probabilities[row : row + 1], thresholds, label_names)[0]],
        )
        for name, value in maps.items():
            if hierarchical and _word_level(value, len(texts), encoder):  # (batch * sentences, heads, words)
                words = value.reshape((len(texts), -1) + value.shape[1:])[row]  # (sentences, heads, words)
                explanation.attention[name] = (
                    np.stack([words[position[0], :, position[1]] for position, *_ in spans], axis=-1)
                    if spans
                    else np.zeros((words.shape[1], 0))
                )
                continue
            scores = value[row]
            if scores.ndim == 1:  # one map over time: (time,)
                scores = scores[None]
            elif "/" in name:  # dual-axial (time, features): mean weight of each word
                explanation.dimension_attention[name] = scores[[position[0] for position, *_ in spans]]
                scores = scores.mean(-1)[None]
            if hierarchical:  # sentence level: (heads, sentences)
                explanation.sentence_attention[name] = scores[:, : _sentence_count(spans)]
            else:
                explanation.attention[name] = scores[:, [position[0] for position, *_ in spans]]
        if hierarchical:
            explanation.sentences = _sentences(spans)
        explanations.append(explanation)
    return explanations


def _explained_in_windows(model, texts, encoder, label_names, batch_size, thresholds, stride):
    """`explain`'s explanations of `texts`, each the merge of its windows' (`_merged`)."""
    pieces, owners, starts = encoder.windows(texts, stride, offsets=True)
    parts = explain(model, pieces, encoder, label_names, batch_size, thresholds)
    return [
        _merged(text, [parts[k] for k in mine], starts[mine], label_names, thresholds, encoder.hierarchical)
        for text, mine in ((text, np.flatnonzero(owners == row)) for row, text in enumerate(texts))
    ]


def _merged(text, parts, starts, label_names, thresholds, hierarchical):
    """The `Explanation` of `text` from those of its windows, `parts`, each beginning at character
    `starts[k]` of it (see `explain`'s `long_texts`); a text read whole is its one part."""
    if len(parts) == 1:
        return dataclasses.replace(parts[0], text=text)
    mean = np.mean([[part.probabilities[name] for name in label_names] for part in parts], axis=0)
    tokens = _union(parts, starts, "tokens")

    def averaged(maps, spans, union, axis):
        return {name: _averaged(parts, starts, union, spans, maps, name, axis) for name in getattr(parts[0], maps)}

    attention = averaged("attention", "tokens", tokens, -1)
    merged = Explanation(
        text=text,
        tokens=[{"token": token, "start": start, "end": end} for (start, end), token in tokens.items()],
        label=label_names[int(np.argmax(mean))],
        probabilities={name: float(p) for name, p in zip(label_names, mean)},
        # HCAN's word maps are each sentence's own: averaged, they still sum to 1 over it.
        attention=attention if hierarchical else {name: _summing_to_one(v) for name, v in attention.items()},
        dimension_attention=averaged("dimension_attention", "tokens", tokens, 0),
        labels=None if thresholds is None else [name for name, _ in label_sets(mean[None], thresholds, label_names)[0]],
    )
    if hierarchical:
        sentences = _union(parts, starts, "sentences")
        merged.sentences = [{"start": start, "end": end} for start, end in sentences]
        merged.sentence_attention = {
            name: _summing_to_one(value)
            for name, value in averaged("sentence_attention", "sentences", sentences, -1).items()
        }
    return merged


def _union(parts, starts, spans):
    """`{(start, end): token or None}`: every span of the parts' `spans` ("tokens" or "sentences"),
    each part's moved by its start in the text, in the text's order."""
    union = {
        (int(span["start"] + start), int(span["end"] + start)): span.get("token")
        for part, start in zip(parts, starts)
        for span in getattr(part, spans)
    }
    return dict(sorted(union.items()))


def _averaged(parts, starts, union, spans, maps, name, axis):
    """The map `name` of the parts' `maps` (one value along `axis` per span of their `spans`), as
    the mean over the parts that hold each span of `union`."""
    index = {span: i for i, span in enumerate(union)}
    total, count = None, np.zeros(len(index))
    for part, start in zip(parts, starts):
        values = np.moveaxis(np.asarray(getattr(part, maps)[name], float), axis, -1)
        positions = [index[(span["start"] + start, span["end"] + start)] for span in getattr(part, spans)]
        total = np.zeros(values.shape[:-1] + (len(index),)) if total is None else total
        total[..., positions] += values
        count[positions] += 1
    return np.moveaxis(total / np.maximum(count, 1), -1, axis)


def _summing_to_one(rows):
    """`rows` (one map per row) scaled to sum to 1 each (a row of zeros stays so)."""
    sums = rows.sum(axis=-1, keepdims=True)
    return np.divide(rows, sums, out=np.zeros_like(rows), where=sums > 0)


def _word_level(value, texts, encoder):
    """Whether `value`, a map of a hierarchical model over `texts`, is over each sentence's words
    (a row per sentence, a column per word) rather than over each text's sentences (a row per
    text, a column per sentence). Both are checked: with one sentence a text the rows are as
    many, with as many words as sentences the columns."""
    return value.shape[0] == texts * encoder.max_sentences and value.shape[-1] == encoder.sequence_length


def _sentence_count(spans):
    return len({position[0] for position, *_ in spans})


def _sentences(spans):
    sentences = {}
    for position, _, start, end in spans:
        first, last = sentences.get(position[0], (start, end))
        sentences[position[0]] = (min(first, start), max(last, end))
    return [{"start": start, "end": end} for _, (start, end) in sorted(sentences.items())]


def top_tokens(explanations, k=10, min_count=2):
    """The tokens that get the most attention per predicted class (the LAMA paper's Table 6).

    A token's score is its mean attention relative to uniform attention (weight times
    the text's token count, so 1.0 means "an average token"), over every occurrence
    in the texts predicted as the class (of a multi-label run: with the label among their
    `labels`); the first attention map, averaged over its
    heads; tokens case-folded and seen at least `min_count` times. A plain sum would
    rank the most frequent tokens ("the", ".") first.

    Args:
        explanations: `explain()`'s list (or one `Explanation`).

    Returns:
        `{class name: [(token, score), ...]}` with at most `k` tokens per class.
    """
    check_whole("k (--top)", k)
    check_whole("min_count", min_count)
    totals = {}
    for explanation in as_explanations(explanations, "top_tokens"):
        if not explanation.attention or not explanation.tokens:
            continue
        weights = next(iter(explanation.attention.values())).mean(0) * len(explanation.tokens)
        for label in explanation.predicted():
            counter = totals.setdefault(label, {})
            for token, weight in zip(explanation.tokens, weights):
                total, count = counter.get(token["token"].casefold(), (0.0, 0))
                counter[token["token"].casefold()] = (total + float(weight), count + 1)
    table = {}
    for label, counter in sorted(totals.items()):
        scores = [(token, total / count) for token, (total, count) in counter.items() if count >= min_count]
        table[label] = sorted(scores, key=lambda item: (-item[1], item[0]))[:k]
    return table
