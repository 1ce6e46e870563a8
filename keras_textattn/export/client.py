"""The `TextEncoder`'s tokenisation in plain Python, for clients of an exported TFLite model.

TFLite has no string ops, so a client turns text into ids itself. This module is
the reference for that: it reads the `encoder.json` and `vocabulary.txt` written
next to `model.tflite` and uses only the standard library and NumPy (port it as it is).
The tests check that it gives the in-graph encoder's ids on real texts.

The rules (see `TextEncoder`):
1. Decode UTF-8, replacing invalid bytes by U+FFFD; NUL counts as a space.
2. Hierarchical models only: split into sentences at runs of `.`, `!`, `?`
   (`vocabulary.SENTENCE_END`; when `split_cjk`, `vocabulary.CJK_SENTENCE_END`; dropped); sentences
   without tokens are dropped.
3. Split into tokens, scanning left to right: an HTML tag `<...>` (at most 200
   characters, no `<` or `>` inside; when `strip_html`) and whitespace (Unicode
   separators, ASCII whitespace, U+000B, U+001C-U+001E and U+0085) are dropped;
   when `split_cjk`, a CJK ideograph (`vocabulary.CJK_IDEOGRAPHS`) is a token of its
   own; a run of other letters, digits, combining marks and `_` is a word; any other
   character is a token of its own.
4. Each token: Unicode normalisation (`normalization`, NFKC by default), then case
   folding (`lowercase`; ICU's, which also drops default-ignorable characters such as
   the soft hyphen: here format characters, category Cf); a token left empty is `[UNK]`.
5. Keep the first `sequence_length` tokens (words per sentence; and the first
   `max_sentences` sentences, where with `split_long_sentences` rows left over hold the
   rest of long sentences: `vocabulary.sentence_rows`); look each up in the vocabulary: line i of
   vocabulary.txt is id i, id 0 pads, an unknown token gets id 1 (OOV). A port need not read
   further than the token after the last kept one (`encode` stops there, but with
   `split_long_sentences`, which counts every sentence's tokens).
6. Windows (`windows`, for a text read whole): over a text of `count` units (tokens; when
   hierarchical, sentences holding a token) and a width (`sequence_length`; `max_sentences`), a
   window starts at `min(k * stride, max(count - width, 0))` for k = 0 .. ceil(max(count - width,
   0) / stride) (`vocabulary.window_starts`); each window is read by rule 5 as a text of the
   `width` units from its start (and, flat with bigrams, the token after, which the last bigram
   pairs). The model's probabilities are averaged over a text's windows.

Differences left: ICU (in the graph) and Python may fold a few rare characters
differently, and bigram ids (the dual-axial model's, and any model's trained with bigrams; HCAN's
pair the words of a sentence row) are FarmHash Fingerprint64 of "token_i token_i+1" modulo
`bigram_buckets`, plus 1, where with `bigrams_of:
vocabulary` a token not in the vocabulary is written `[UNK]` (Guava's
`Hashing.farmHashFingerprint64()` on Android); `encode` computes them with
TensorFlow when it is installed.
"""

import functools
import itertools
import json
import os
import re
import unicodedata

import numpy as np

from keras_textattn.errors import UserError
from keras_textattn.vocabulary import CJK_IDEOGRAPHS
from keras_textattn.vocabulary import CJK_SENTENCE_END
from keras_textattn.vocabulary import OOV_ID
from keras_textattn.vocabulary import PAD_ID
from keras_textattn.vocabulary import SENTENCE_END
from keras_textattn.vocabulary import sentence_rows
from keras_textattn.vocabulary import window_starts

_HTML_TAG = re.compile(r"<[^<>]{0,200}>")
# Besides Unicode separators (category Z): ASCII whitespace, NUL, and the other characters
# str.splitlines breaks lines at (vertical tab, file/group/record separators, NEL).
_SPACE = frozenset("\t\n\v\f\r \x00\x1c\x1d\x1e\x85")


@functools.lru_cache(maxsize=1 << 16)
def _kind(character):
    """How the tokeniser reads one character: "space" (Unicode separators, ASCII whitespace,
    NUL, and the other characters str.splitlines breaks lines at), "ideograph" (a CJK
    ideograph), "word" (another letter, digit, combining mark or `_`) or "other". Cached:
    a text repeats few distinct characters."""
    if character in _SPACE or unicodedata.category(character).startswith("Z"):
        return "space"
    if character != "_" and unicodedata.category(character)[0] not in "LNM":
        return "other"
    if any(first <= ord(character) <= last for first, last in CJK_IDEOGRAPHS):
        return "ideograph"
    return "word"


def _one_text(text):
    """`text` as a str (bytes decoded as UTF-8, invalid bytes replaced by U+FFFD); anything but one
    text is a `UserError`: the TFLite model takes one text per call."""
    if isinstance(text, bytes):
        return text.decode("utf-8", errors="replace")
    if isinstance(text, str):
        return text
    if isinstance(text, (list, tuple, np.ndarray)):
        raise UserError(
            f"ClientTokenizer takes one text (str or bytes) per call, as the TFLite model does; "
            f"got a {type(text).__name__} of {np.size(text)}: encode each text on its own"
        )
    raise UserError(f"ClientTokenizer takes one text (str or bytes); got {text!r:.60} ({type(text).__name__})")


def stacked(inputs):
    """A non-empty list of the model's inputs (dicts of arrays, each a batch) as one batch."""
    return {name: np.concatenate([one[name] for one in inputs]) for name in inputs[0]}


class ClientTokenizer:
    """Raw text to the model's input ids, without TensorFlow.

    Args:
        folder: a folder written by `keras_textattn.export.tflite` (reads
            `encoder.json` and `vocabulary.txt`), or its `model.tflite`.
    """

    def __init__(self, folder):
        folder = os.fspath(folder)
        if os.path.isfile(folder) and folder.endswith(".tflite"):
            folder = os.path.dirname(folder) or "."
        missing = [
            name for name in ("encoder.json", "vocabulary.txt") if not os.path.isfile(os.path.join(folder, name))
        ]
        if missing:
            raise UserError(
                f"{folder} is not a folder of `keras-textattn export --format tflite` (no "
                f"{' or '.join(missing)}): give the folder the TFLite export wrote"
            )
        with open(os.path.join(folder, "encoder.json"), encoding="utf-8") as handle:
            self.config = json.load(handle)
        with open(os.path.join(folder, "vocabulary.txt"), encoding="utf-8", newline="\n") as handle:
            tokens = handle.read().split("\n")[:-1]  # one token per line (no token holds a line break)
        self.ids = {token: index for index, token in enumerate(tokens) if index >= 2}
        self.unknown = tokens[OOV_ID]
        # Folders exported before these settings existed lack them: their encoder did not split
        # CJK text, paired the tokens as written and cut long sentences.
        self.split_cjk = self.config.get("split_cjk", False)
        self.bigrams_of = self.config.get("bigrams_of", "tokens")
        self.split_long_sentences = self.config.get("split_long_sentences", False)
        self._sentence_end = re.compile(CJK_SENTENCE_END if self.split_cjk else SENTENCE_END)
        # The kinds of character a word runs over: with `split_cjk` an ideograph is a token of its own.
        self._word_kinds = {"word"} if self.split_cjk else {"word", "ideograph"}

    def tokens(self, text, limit=None):
        """The standardised tokens of one text (a str, or bytes as UTF-8), not truncated; with
        `limit`, its first `limit` tokens, the rest of the text not read (a long text costs no
        more than a short one)."""
        text = _one_text(text)
        word = self._word_kinds
        tokens, position = [], 0
        while position < len(text) and (limit is None or len(tokens) < limit):
            tag = _HTML_TAG.match(text, position) if text[position] == "<" and self.config["strip_html"] else None
            kind = _kind(text[position])
            if tag:
                position = tag.end()
            elif kind == "space":
                position += 1
            elif kind in word:
                end = position + 1
                while end < len(text) and _kind(text[end]) in word:
                    end += 1
                tokens.append(text[position:end])
                position = end
            else:
                tokens.append(text[position])
                position += 1
        return [self._standardize(token) for token in tokens]

    def _standardize(self, token):
        if self.config["normalization"]:
            token = unicodedata.normalize(self.config["normalization"], token)
        if self.config["lowercase"]:
            token = "".join(c for c in token.casefold() if unicodedata.category(c) != "Cf")
        return token or self.unknown

    def _ids(self, tokens, length):
        ids = np.full(length, PAD_ID, np.int32)
        for index, token in enumerate(tokens[:length]):
            ids[index] = self.ids.get(token, OOV_ID)
        return ids

    def _bigram_ids(self, rows, length):
        """The hashed bigrams of each row's tokens (its words past `length` included: the last
        kept word pairs with the next one), `length` ids a row; one TensorFlow call for all rows."""
        import tensorflow as tf

        if self.bigrams_of == "vocabulary":
            rows = [[token if token in self.ids else self.unknown for token in tokens] for tokens in rows]
        pairs = [[f"{a} {b}" for a, b in zip(tokens, tokens[1:])][:length] for tokens in rows]
        bigrams = np.zeros((len(rows), length), np.int32)
        flat = [pair for row in pairs for pair in row]
        if flat:
            hashed = tf.strings.to_hash_bucket_fast(flat, self.config["bigram_buckets"]).numpy() + 1
            for row, values in enumerate(np.split(hashed, np.cumsum([len(row) for row in pairs])[:-1])):
                bigrams[row, : len(values)] = values
        return bigrams

    def encode_batch(self, texts):
        """`encode` of each of `texts` (a non-empty list), stacked on the batch axis: the inputs of a
        model that takes any batch size (the ONNX export's)."""
        return stacked([self.encode(text) for text in texts])

    def encode(self, text):
        """One text to the model's inputs: `{"token_ids": (1, ...)}` int32 (plus
        `"bigram_ids"` of the same shape for a model with bigrams, computed with TensorFlow)."""
        text = _one_text(text)
        # Each row's first `width` tokens and the one after (a bigram pairs the last kept word with it).
        if self.config["hierarchical"]:
            return self._inputs(self._sentence_rows(self._sentences(text, whole=self.split_long_sentences)))
        return self._inputs([self.tokens(text, limit=self.config["sequence_length"] + 1)])

    def windows(self, text, stride=None):
        """One text read whole in overlapping windows, as `TextEncoder.windows` reads it: the inputs
        of each window stacked on the batch axis (`(windows, ...)`, each window what `encode` gives
        the stretch of text it covers). A text longer than the model reads (`sequence_length`
        tokens; when hierarchical, `max_sentences` sentences holding a token) is read from every
        `stride`-th token (sentence; default: half the width), the last window ending with the text
        (`vocabulary.window_starts`); a text the model reads whole is one window, its `encode`."""
        width, stride = self.window_width(stride)
        text = _one_text(text)
        if self.config["hierarchical"]:
            sentences = self._sentences(text, whole=True)
            windows = [
                self._sentence_rows(sentences[start : start + width])
                for start in window_starts(len(sentences), width, stride)
            ]
        else:
            tokens = self.tokens(text)
            windows = [[tokens[start : start + width + 1]] for start in window_starts(len(tokens), width, stride)]
        return stacked([self._inputs(rows) for rows in windows])

    def window_width(self, stride=None):
        """`(units a window holds, stride)`: the tokens (hierarchical: sentences) the model reads,
        and `stride` checked (a ValueError unless a whole number from 1 to the width; default: half
        the width)."""
        width = self.config["max_sentences"] if self.config["hierarchical"] else self.config["sequence_length"]
        stride = (width // 2 or 1) if stride is None else stride
        if isinstance(stride, bool) or not isinstance(stride, int) or not 1 <= stride <= width:
            raise ValueError(
                f"ClientTokenizer.windows: `stride` must be an integer from 1 to {width}. Received: {stride!r}"
            )
        return width, stride

    def longer_than_read(self, text):
        """Whether one text is longer than the model reads (the texts `windows` reads in more than
        one window); it reads the text only as far as it needs to tell."""
        text = _one_text(text)
        if self.config["hierarchical"]:
            width = self.config["max_sentences"]
            read = (self.tokens(sentence, limit=1) for sentence in self._sentence_end.split(text))
            return len(list(itertools.islice(filter(None, read), width + 1))) > width
        width = self.config["sequence_length"]
        return len(self.tokens(text, limit=width + 1)) > width

    def _sentences(self, text, whole):
        """The tokens of each sentence of `text` that holds one, in order: all of them when `whole`,
        else each sentence's first `sequence_length` and the one after, and only the first
        `max_sentences` sentences (the rest of the text not read)."""
        width = self.config["sequence_length"]
        read = (
            self.tokens(sentence, limit=None if whole else width + 1) for sentence in self._sentence_end.split(text)
        )
        return list(filter(None, read) if whole else itertools.islice(filter(None, read), self.config["max_sentences"]))

    def _sentence_rows(self, sentences):
        """The rows a hierarchical model reads of `sentences` (token lists, as `_sentences` gives
        them): with `split_long_sentences`, `vocabulary.sentence_rows`; else each of the first
        `max_sentences` sentences, its first `sequence_length` tokens and the one after."""
        width, rows = self.config["sequence_length"], self.config["max_sentences"]
        if self.split_long_sentences:
            spans = sentence_rows([len(tokens) for tokens in sentences], width, rows)
            return [sentences[sentence][start : start + width] for sentence, start in spans]
        return [tokens[: width + 1] for tokens in sentences[:rows]]

    def _inputs(self, rows):
        """The model's inputs, a batch of one, for the token rows it reads (one row for a flat
        model, each `sequence_length` tokens and the next one, which a bigram pairs)."""
        config = self.config
        width = config["sequence_length"]
        shape = (config["max_sentences"], width) if config["hierarchical"] else (1, width)
        inputs = {"token_ids": np.full(shape, PAD_ID, np.int32)}
        for row, tokens in enumerate(rows):
            inputs["token_ids"][row] = self._ids(tokens, width)
        if config["bigram_buckets"]:
            inputs["bigram_ids"] = np.zeros(shape, np.int32)
            inputs["bigram_ids"][: len(rows)] = self._bigram_ids(rows, width)
        # A batch of one: (1, width), or (1, sentences, width) for a hierarchical model.
        return {name: ids[None] if config["hierarchical"] else ids for name, ids in inputs.items()}
