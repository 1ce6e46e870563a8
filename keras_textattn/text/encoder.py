"""`TextEncoder`: raw UTF-8 strings to padded token ids, inside the TensorFlow graph.

TensorFlow backend only: it is built on tensorflow-text ops and Keras's
`StringLookup`, so the same preprocessing runs in tf.data, in training and inside an
exported SavedModel, and its vocabulary travels with a `.keras` file as an asset.
"""

import os
import warnings

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from keras_textattn import _backend
from keras_textattn.errors import UserError
from keras_textattn.errors import check_flag
from keras_textattn.vocabulary import CJK_IDEOGRAPHS
from keras_textattn.vocabulary import CJK_SENTENCE_END
from keras_textattn.vocabulary import OOV_ID
from keras_textattn.vocabulary import PAD_ID  # noqa: F401
from keras_textattn.vocabulary import SENTENCE_END
from keras_textattn.vocabulary import sentence_rows

OOV_TOKEN = "[UNK]"

# A word is a run of letters, digits, combining marks or "_"; every other
# non-space character is a token of its own; HTML tags and (Unicode) spaces
# separate tokens and are dropped. RE2's \w and \s are ASCII-only, hence \p{..}.
# Spaces also include the other characters Python's str.splitlines breaks lines at
# (vertical tab, the file/group/record separators, NEL: IMDB's reviews hold U+0085):
# a vocabulary is saved one token per line and read back with splitlines (Keras's
# StringLookup asset), so a token holding one would make the saved encoder unloadable.
_WORD_CHARS = r"\pL\pN\pM_"
_SPACE = r"\s\p{Z}\x0b\x1c-\x1e\x{85}"
_PUNCTUATION = rf"[^{_WORD_CHARS}{_SPACE}]"
_HTML_TAG = r"<[^<>]{0,200}>"
# The spaces of `_SPACE` that `tf.strings.split` does not split at (it splits at ASCII spaces,
# tabs and line ends): Unicode spaces other than " ", and the separators above.
_UNSPLIT_SPACE = r"[^\P{Z} ]|[\x1c-\x1e\x{85}]"
_CJK_IDEOGRAPH = "[" + "".join(rf"\x{{{first:X}}}-\x{{{last:X}}}" for first, last in CJK_IDEOGRAPHS) + "]"


# Texts this matches in full are valid UTF-8, which `unicode_transcode` leaves as they are: RE2 reads
# surrogates and code points above U+10FFFF as characters, so the class leaves them out.
_VALID_UTF8 = r"(?s)[\x00-\x{D7FF}\x{E000}-\x{10FFFF}]*"


def _valid_utf8(texts):
    """`texts` (strings `(batch,)`) with each invalid UTF-8 sequence replaced by U+FFFD. Only the
    texts that need it are transcoded: checking a text is several times faster than transcoding it."""
    invalid = tf.where(tf.logical_not(tf.strings.regex_full_match(texts, _VALID_UTF8)))
    repaired = tf.strings.unicode_transcode(
        tf.gather_nd(texts, invalid), "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD
    )
    return tf.tensor_scatter_nd_update(texts, invalid, repaired)


@keras.saving.register_keras_serializable(package="keras_textattn")
class TextEncoder(keras.layers.Layer):
    """Raw strings `(batch,)` to token ids `(batch, sequence_length)`, 0 for padding; one
    string (a Python `str`, or a scalar string tensor as a `tf.data` map before batching
    gives it) to its ids `(sequence_length,)`, as Keras's `TextVectorization` does.

    Steps: invalid UTF-8 bytes become U+FFFD and NUL characters spaces; the text is split into words and
    punctuation marks (HTML tags such as `<br />` dropped when `strip_html`); each
    token is Unicode-normalised and case-folded; tokens beyond `sequence_length`
    are dropped; `StringLookup` maps tokens to ids (0 padding, 1 out of
    vocabulary, then the vocabulary by decreasing frequency).

    An empty or whitespace-only text encodes to all padding (id 0), which the
    layers treat as an all-padding row. With `sequence_length=None` a batch is
    padded to its longest text (at least one step).

    Bigrams (`bigram_buckets > 0`: the dual-axial model's input, and any model's on
    request): the call returns `(token_ids, bigram_ids)`, where
    `bigram_ids[:, i]` is the bigram of tokens i and i+1 hashed (FarmHash
    fingerprint, as fastText hashes n-grams) into `1..bigram_buckets`, and 0 where
    there is no next token. Hierarchical, `bigram_ids` has the ids' shape and pairs the
    words of a sentence row: a sentence cut after `sequence_length` words pairs its last
    kept word with the next one; a row's last word that ends its sentence, or a row that
    `split_long_sentences` cut off, has 0. Hashing, not a learned bigram vocabulary: no second
    vocabulary to adapt and store, unseen bigrams still get an id, and the memory is
    fixed by the number of buckets. `bigrams_of="vocabulary"` (the default) pairs the
    tokens as the vocabulary sees them: a token outside it is `[UNK]` in its bigrams, so
    a small vocabulary also keeps rare names out of the bigrams, which helps where test
    texts name new things (reviews of films not trained on); `"tokens"` pairs the tokens
    as written.

    Hierarchical mode (`hierarchical=True`, for HCAN): texts are split into
    sentences on `.`, `!` and `?` (the paper's rule; with `split_cjk` also on `。`
    and the fullwidth `！`, `．`, `？`), sentences with no token are dropped, and the
    output is `(batch, max_sentences, sequence_length)` with padding on both axes; a
    padded sentence is all zeros. Each sentence is cut after `sequence_length` words,
    unless `split_long_sentences=True`: then rows left over by a text with fewer sentences
    than `max_sentences` hold the rest of its long sentences, in order
    (`vocabulary.sentence_rows`; no sentence is dropped for the tail of another). Text
    without sentence ends (R8's, lower-cased without punctuation; transcripts) is one long
    "sentence", read whole that way. Held-out data gained on some datasets and lost on
    others, so it is not the default (`train(split_long_sentences=True)`,
    `--split-long-sentences`; the docs' "What we tried").

    Chinese and Japanese (`split_cjk=True`, the default): these scripts put no spaces
    between words, so a sentence would be one "word" that no other text repeats. Each
    CJK ideograph (`vocabulary.CJK_IDEOGRAPHS`) is a token of its own instead, as BERT's
    tokenizer does; kana and hangul runs stay words. Encoders saved before this option
    existed load with `split_cjk=False`, so their ids do not change.

    Args:
        max_tokens: the largest vocabulary, padding and OOV ids included; None: no limit.
        min_frequency: tokens seen fewer times during `adapt` are left out.
        sequence_length: tokens per text (per sentence when hierarchical); None:
            the batch's longest.
        max_sentences: sentences per text when hierarchical; None: the batch's longest.
        lowercase: case-fold tokens (Unicode case folding).
        strip_html: drop HTML tags.
        normalization: "NFKC" (default), "NFC", "NFD", "NFKD" or None.
        bigram_buckets: 0 for no bigrams, else the number of hash buckets.
        added_tokens: how many of the vocabulary's last tokens `extend_vocabulary` added
            (words of pretrained vectors that the adapted texts lack), after those `adapt`
            counted; set by those methods and saved with the encoder, not given by hand.
        hierarchical: sentence-then-word output for HCAN.
        split_cjk: each CJK ideograph a token, and CJK sentence ends (above).
        bigrams_of: "vocabulary" or "tokens": what the bigrams pair (above).
        split_long_sentences: when hierarchical, rows left over hold the rest of
            sentences longer than `sequence_length` words (above); False: cut them.
    """

    def __init__(
        self,
        max_tokens=20000,
        min_frequency=1,
        sequence_length=None,
        max_sentences=None,
        lowercase=True,
        strip_html=True,
        normalization="NFKC",
        bigram_buckets=0,
        hierarchical=False,
        split_cjk=True,
        bigrams_of="vocabulary",
        split_long_sentences=False,
        added_tokens=0,
        **kwargs,
    ):
        _backend.require_tensorflow("TextEncoder")
        kwargs.setdefault("dtype", "int32")
        super().__init__(**kwargs)
        for name, value, allow_none in (
            ("max_tokens", max_tokens, True),
            ("min_frequency", min_frequency, False),
            ("sequence_length", sequence_length, True),
            ("max_sentences", max_sentences, True),
        ):
            if not (value is None and allow_none) and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise ValueError(f"TextEncoder: `{name}` must be a positive integer. Received: {name}={value!r}")
        if max_tokens is not None and max_tokens < 3:
            raise ValueError(
                f"TextEncoder: `max_tokens` counts padding and OOV, so it must be at least 3. "
                f"Received: max_tokens={max_tokens}"
            )
        if normalization not in (None, "NFC", "NFD", "NFKC", "NFKD"):
            raise ValueError(
                f"TextEncoder: `normalization` must be one of None, 'NFC', 'NFD', 'NFKC', 'NFKD'. "
                f"Received: normalization={normalization!r}"
            )
        if isinstance(bigram_buckets, bool) or not isinstance(bigram_buckets, int) or bigram_buckets < 0:
            raise ValueError(
                f"TextEncoder: `bigram_buckets` must be an integer >= 0. Received: bigram_buckets={bigram_buckets!r}"
            )
        if bigrams_of not in ("vocabulary", "tokens"):
            raise ValueError(
                f"TextEncoder: `bigrams_of` must be 'vocabulary' or 'tokens'. Received: bigrams_of={bigrams_of!r}"
            )
        for name, flag in (
            ("lowercase", lowercase),
            ("strip_html", strip_html),
            ("hierarchical", hierarchical),
            ("split_cjk", split_cjk),
            ("split_long_sentences", split_long_sentences),
        ):
            check_flag(f"TextEncoder: {name}", flag)
        if max_sentences is not None and not hierarchical:
            raise ValueError(
                "TextEncoder: `max_sentences` needs hierarchical=True. "
                f"Received: max_sentences={max_sentences}, hierarchical=False"
            )
        self.max_tokens = max_tokens
        self.min_frequency = min_frequency
        self.sequence_length = sequence_length
        self.max_sentences = max_sentences
        self.lowercase = bool(lowercase)
        self.strip_html = bool(strip_html)
        self.normalization = normalization
        self.bigram_buckets = bigram_buckets
        self.hierarchical = bool(hierarchical)
        self.split_cjk = bool(split_cjk)
        self.bigrams_of = bigrams_of
        self.split_long_sentences = bool(split_long_sentences)
        self.added_tokens = added_tokens
        # Tokens are the text between delimiters, and the delimiters matched by `_kept`.
        self._kept = _PUNCTUATION + ("|" + _CJK_IDEOGRAPH if self.split_cjk else "")
        self._dropped = (_HTML_TAG + "|" if strip_html else "") + rf"[{_SPACE}]+"
        self._delimiter = f"{self._dropped}|{self._kept}"
        self._to_space = (_HTML_TAG + "|" if strip_html else "") + _UNSPLIT_SPACE
        self._sentence_end = CJK_SENTENCE_END if self.split_cjk else SENTENCE_END
        self.lookup = keras.layers.StringLookup(mask_token="", oov_token=OOV_TOKEN, num_oov_indices=1, name="lookup")
        self._adapted = False

    # ----------------------------------------------------------------- tokens
    def tokenize_with_offsets(self, texts):
        """Tokens as written in the text, with byte offsets into the text.

        Args:
            texts: strings `(batch,)`.

        Returns:
            `(tokens, starts, ends)`, ragged `(batch, None)`: `text[start:end] == token`
            for the UTF-8 bytes of each text (after invalid bytes became U+FFFD).
        """
        texts = self._as_strings(texts)
        return tf_text.regex_split_with_offsets(texts, self._delimiter, self._kept)

    def token_spans(self, text):
        """Where each encoded token of one text comes from.

        Args:
            text: one Python string.

        Returns:
            A list of `(position, token, start, end)`: `position` indexes this text's
            row of the encoder output (`(i,)`, or `(sentence, word)` when hierarchical),
            `token` is as written, and `text[start:end] == token` (character offsets).
            Tokens dropped by truncation are left out.
        """
        raw = text.encode("utf-8").replace(b"\x00", b" ")  # as in the graph (see _as_strings)
        if self.hierarchical:
            pieces, starts, _ = tf_text.regex_split_with_offsets(tf.constant([raw]), self._sentence_end)
            pieces = list(zip(starts.to_list()[0], pieces.to_list()[0]))
        else:
            pieces = [(0, raw)]
        spans, tokenized = [], []
        for piece_start, piece in pieces:
            if self.hierarchical and self.max_sentences is not None and len(tokenized) >= self.max_sentences:
                break  # more sentences change no row: none of theirs is read, and no row is left over
            tokens, begins, ends = (t.to_list()[0] for t in self.tokenize_with_offsets(tf.constant([piece])))
            if tokens:  # the encoder drops sentences without tokens
                tokenized.append((piece_start, list(zip(tokens, begins, ends))))
        width = self.sequence_length
        if self._splits_sentences():  # rows of `width` tokens, as `vocabulary.sentence_rows` reads them
            rows = sentence_rows([len(t) for _, t in tokenized], width, self.max_sentences)
        else:
            rows = [(sentence, 0) for sentence in range(len(tokenized))][: self.max_sentences]
        for row, (sentence, first) in enumerate(rows):
            piece_start, tokens = tokenized[sentence]
            for k, (token, begin, _end) in enumerate(tokens[first:], start=first):
                if width is not None and k - first >= width:
                    break
                position = (row, k - first) if self.hierarchical else (k,)
                start = len(raw[: piece_start + begin].decode("utf-8", "ignore"))
                spans.append((position, token.decode("utf-8"), start, start + len(token.decode("utf-8"))))
        return spans

    def windows(self, texts, stride=None, offsets=False):
        """Each text as the overlapping windows that together read it whole: a text longer than the
        encoder reads (`sequence_length` tokens; when hierarchical, `max_sentences` sentences) becomes
        pieces of it, each starting at a token (sentence) and holding as many as the encoder reads,
        one after `stride` of them (default: half) after the other, the last ending with the text.
        A piece is the text's own characters from its first token's start to its last's end (and,
        with bigrams, the next token's, which the last bigram pairs), so that encoding it gives the
        ids of that stretch of the text. A text the encoder reads whole is its only window.

        Args:
            texts: a list of strings.
            stride: tokens (sentences) from one window's start to the next's, 1 to the width.
            offsets: also return where in its text each window starts.

        Returns:
            `(windows, owners)`: the windows' texts, and for each the index of its text; with
            `offsets`, `(windows, owners, starts)`, `starts` the character of its text each window
            begins at (`text[start:start + len(window)] == window` for a valid UTF-8 text).
        """
        width, stride = self._window_width("windows", stride)
        if width is None:
            return (list(texts), np.arange(len(texts))) + ((np.zeros(len(texts), int),) if offsets else ())
        windows, owners, starts = [], [], []
        for start in range(0, len(texts), 256):
            batch = self._as_strings(_string_batch(texts[start : start + 256], "windows"))
            spans = self._unit_spans(batch)
            text_of, firsts = (t.numpy() for t in _window_starts([len(s) for s in spans], width, stride))
            for offset, first in zip(text_of, firsts):
                units, raw = spans[offset], batch[offset].numpy()
                if len(units) <= width:  # read whole: the text itself
                    windows.append(texts[start + offset])
                    starts.append(0)
                else:
                    end = units[min(first + width + self._window_extra(), len(units)) - 1][1]
                    windows.append(raw[units[first][0] : end].decode("utf-8"))
                    starts.append(len(raw[: units[first][0]].decode("utf-8")))
                owners.append(start + offset)
        return (windows, np.asarray(owners, int)) + ((np.asarray(starts, int),) if offsets else ())

    def window_ids(self, texts, stride=None):
        """The ids of `windows(texts, stride)` computed in the graph (a SavedModel's long texts):
        `(ids, owners)`, `ids` as `call` gives them for the windows (with bigrams, `(ids,
        bigram_ids)`), `owners` int64 `[windows]` each window's text. The windows are cut from the
        texts' tokens (sentences) rather than re-tokenised from their characters, which gives the
        same ids (tested).

        Args:
            texts: a string tensor `[batch]`.
            stride: as for `windows`.
        """
        width, stride = self._window_width("window_ids", stride)
        units = self._units(texts)
        if width is None:
            return self._encoded(units), tf.range(units.nrows())
        owners, starts = _window_starts(units.row_lengths(), width, stride)
        return self._cut_windows(units, owners, starts, width), owners

    def sampled_window_ids(self, texts, seed):
        """In the graph, the ids of one window of each text, at a random place: a text longer than
        the encoder reads is read from a token (sentence) drawn uniformly among the window starts
        that keep it inside the text, rather than from its start; a shorter one as `call` reads it.
        What training reads with `sample_windows` (each window keeps its text's label).

        Args:
            texts: a string tensor `[batch]`.
            seed: int `[2]`, of `tf.random.stateless_uniform`: the same seed, the same windows.
        """
        width, _ = self._window_width("sampled_window_ids", None)
        units = self._units(texts)
        if width is None:
            return self._encoded(units)
        over = tf.maximum(units.row_lengths() - width, 0)  # the last start that keeps a window inside
        draws = tf.random.stateless_uniform(tf.shape(over), seed, dtype=tf.float64)
        starts = tf.minimum(tf.cast(draws * tf.cast(over + 1, tf.float64), tf.int64), over)
        return self._cut_windows(units, tf.range(units.nrows()), starts, width)

    def _units(self, texts):
        """Ragged `(batch, units, ...)` of the string tensor `texts`: what a window counts, each
        text's tokens, or when hierarchical its sentences' words."""
        texts = self._as_strings(texts)
        return self._sentence_words(texts) if self.hierarchical else self.tokenize(texts)

    def _cut_windows(self, units, owners, starts, width):
        """The ids of windows of `width` units of `units`, window k from unit `starts[k]` of text
        `owners[k]` (with bigrams, one unit more where the text has it: the last bigram's pair)."""
        lengths = tf.minimum(
            tf.constant(width + self._window_extra(), tf.int64), tf.gather(units.row_lengths(), owners) - starts
        )
        firsts = tf.gather(units.row_starts(), owners) + starts
        read = tf.gather(units.values, tf.ragged.range(firsts, firsts + lengths).flat_values)
        return self._encoded(tf.RaggedTensor.from_row_lengths(read, lengths))

    def _window_width(self, method, stride):
        """`(units a window holds, stride)`: the tokens (sentences) the encoder reads, None when it
        reads any length, and `stride` checked (default: half of them)."""
        width = self.max_sentences if self.hierarchical else self.sequence_length
        if width is None:
            return None, stride
        stride = (width // 2 or 1) if stride is None else stride
        if isinstance(stride, bool) or not isinstance(stride, int) or not 1 <= stride <= width:
            raise ValueError(
                f"TextEncoder.{method}: `stride` must be an integer from 1 to {width}. Received: {stride!r}"
            )
        return width, stride

    def _window_extra(self):
        """Units a window reads past its width: with bigrams, the token its last bigram pairs."""
        return 0 if self.hierarchical else int(bool(self.bigram_buckets))

    def longer_than_read(self, texts):
        """Whether each of `texts` (a list of strings) is longer than the encoder reads, a bool array:
        more tokens than `sequence_length`, or when hierarchical more sentences holding a token than
        `max_sentences`; those are the texts `windows` reads in more than one window."""
        width = self.max_sentences if self.hierarchical else self.sequence_length
        if width is None or not len(texts):
            return np.zeros(len(texts), bool)
        counts = self.count_tokens(_string_batch(texts, "longer_than_read"))
        return (counts[0] if self.hierarchical else counts) > width

    def _unit_spans(self, texts):
        """Per text of the batch `texts` (as `_as_strings` gives them), the `(start, end)` byte spans
        of what a window counts: its tokens, or when hierarchical its sentences that hold a token."""
        if not self.hierarchical:
            _, starts, ends = self.tokenize_with_offsets(texts)
            return [list(zip(s, e)) for s, e in zip(starts.to_list(), ends.to_list())]
        sentences, starts, ends = tf_text.regex_split_with_offsets(texts, self._sentence_end)
        holds_tokens = self.tokenize(sentences.flat_values).row_lengths().numpy() > 0
        spans, flat = [], 0
        for row_starts, row_ends in zip(starts.to_list(), ends.to_list()):
            kept = holds_tokens[flat : flat + len(row_starts)]
            spans.append([(s, e) for s, e, keep in zip(row_starts, row_ends, kept) if keep])
            flat += len(row_starts)
        return spans

    def count_tokens(self, texts):
        """Token counts before truncation, as NumPy arrays.

        Returns:
            Tokens per text `(batch,)`; when hierarchical, `(sentences per text (batch,),
            words per sentence (all sentences,))`, sentences without tokens left out
            as `call` leaves them out.
        """
        texts = self._as_strings(texts)
        if not self.hierarchical:
            return self.tokenize(texts).row_lengths().numpy()
        sentences = tf_text.regex_split(texts, self._sentence_end)
        lengths = sentences.with_flat_values(self.tokenize(sentences.flat_values).row_lengths())
        lengths = tf.ragged.boolean_mask(lengths, lengths > 0)
        return lengths.row_lengths().numpy(), lengths.flat_values.numpy()

    def _standardize(self, tokens):
        """Normalise and case-fold the flat values of ragged `tokens`."""
        values = tokens.flat_values
        if self.normalization:
            values = tf_text.normalize_utf8(values, self.normalization)
        if self.lowercase:
            values = tf_text.case_fold_utf8(values)
        # A token of only ignorable characters (a soft hyphen, a zero-width space) standardises
        # to nothing: it is an unknown word, not padding.
        values = tf.where(tf.equal(values, ""), OOV_TOKEN, values)
        return tokens.with_flat_values(values)

    def tokenize(self, texts):
        """The tokens `call` looks up, as strings: standardised, ragged `(batch, None)`,
        not truncated (whole texts, not split into sentences). They are those of
        `tokenize_with_offsets`, found without offsets: what is dropped (spaces, HTML tags)
        becomes a space and each kept delimiter is set apart by spaces, then the text is split
        at spaces, several times faster than tensorflow-text's regex split. Only the spaces that
        the split does not see are replaced: replacing every run of spaces cost a match per word."""
        texts = tf.strings.regex_replace(self._as_strings(texts), self._to_space, " ")
        texts = tf.strings.regex_replace(texts, self._kept, r" \0 ")
        return self._standardize(tf.strings.split(texts))

    @staticmethod
    def _as_strings(texts):
        texts = tf.convert_to_tensor(texts)
        if texts.dtype != tf.string:
            raise ValueError(f"TextEncoder expects strings. Received: a tensor of dtype {texts.dtype.name}")
        if texts.shape.rank == 2 and texts.shape[-1] == 1:
            texts = tf.squeeze(texts, -1)
        if texts.shape.rank != 1:
            raise ValueError(
                f"TextEncoder expects a batch of strings of shape (batch,), or one string. Received: shape "
                f"{texts.shape}"
            )
        texts = _valid_utf8(texts)
        # tensorflow-text's regex ops stop reading at a NUL byte: make NUL a space (same byte offsets).
        return tf.strings.regex_replace(texts, r"\x00", " ")

    # -------------------------------------------------------------- vocabulary
    def adapt(self, data, batch_size=256):
        """Learn the vocabulary from texts: a list or array of strings, or a
        `tf.data.Dataset` of strings or of `(text, label)` pairs (batched or not)."""
        if not isinstance(data, tf.data.Dataset):
            data = tf.data.Dataset.from_tensor_slices(_string_batch(data, "adapt"))
        if isinstance(data.element_spec, tuple):
            data = data.map(lambda text, *_: text)
        spec = data.element_spec
        if not (isinstance(spec, tf.TensorSpec) and spec.dtype == tf.string and spec.shape.rank in (0, 1)):
            given = f"{spec.dtype.name} of shape {spec.shape}" if isinstance(spec, tf.TensorSpec) else spec
            raise ValueError(
                "TextEncoder.adapt takes a tf.data.Dataset of strings or of (text, label) pairs, "
                f"batched or not. Received: a dataset whose texts are {given}"
            )
        if spec.shape.rank == 0:
            data = data.batch(batch_size)

        def batch_counts(texts):  # each token of a batch of texts, and how often it occurs there
            tokens, _, frequency = tf.unique_with_counts(self.tokenize(texts).flat_values, out_idx=tf.int64)
            return tokens, frequency

        # Batches are tokenised and counted on parallel calls (several times faster than one
        # batch after another), and their counts summed in TensorFlow every `_MERGED_BATCHES`
        # batches (a Python dict updated token by token took longer than the tokenising).
        counted = data.map(batch_counts, num_parallel_calls=tf.data.AUTOTUNE).ragged_batch(_MERGED_BATCHES)
        tokens, frequency = tf.constant([], tf.string), tf.constant([], tf.int64)
        for block_tokens, block_frequency in counted.prefetch(tf.data.AUTOTUNE):
            tokens, frequency = _summed_counts(
                tf.concat([tokens, block_tokens.flat_values], 0),
                tf.concat([frequency, block_frequency.flat_values], 0),
            )
        counts = dict(zip(tokens.numpy().tolist(), frequency.numpy().tolist()))
        counts.pop(OOV_TOKEN.encode(), None)
        kept = [(token, n) for token, n in counts.items() if n >= self.min_frequency]
        kept.sort(key=lambda item: (-item[1], item[0]))  # by frequency, ties by bytes: deterministic
        if not kept:  # no vocabulary: a mistake in the data (a UserError, one line from train and tune)
            if not counts:
                raise UserError(
                    "TextEncoder.adapt: the texts hold no tokens (each is empty or blank); "
                    "no vocabulary can be learned from them"
                )
            token, most = max(counts.items(), key=lambda item: item[1])
            raise UserError(
                f"TextEncoder.adapt: no token of the texts occurs min_frequency={self.min_frequency} "
                f"times; the most frequent, {token.decode('utf-8', 'replace')!r}, occurs {most}"
            )
        if self.max_tokens is not None:
            kept = kept[: self.max_tokens - 2]
        self._use_vocabulary([token.decode("utf-8") for token, _ in kept])

    def set_vocabulary(self, vocabulary):
        """Use `vocabulary` (a list of tokens, most frequent first, without padding and OOV).

        A token this encoder never reads as one token (`tokenize`: "Apple" with `lowercase`,
        "new york", "don't") can never be looked up: a warning names such tokens. For a file of
        tokens, one per line, use `set_vocabulary_file`."""
        if isinstance(vocabulary, (str, bytes, os.PathLike)):
            raise ValueError(
                "TextEncoder.set_vocabulary takes a list of tokens; for a file of tokens, one per line, "
                f"use set_vocabulary_file(path). Received: {vocabulary!r}"
            )
        vocabulary = list(vocabulary)
        self._use_vocabulary(vocabulary)
        read = self.tokenize(vocabulary).to_list()
        unread = [
            (token, [t.decode("utf-8") for t in tokens])
            for token, tokens in zip(vocabulary, read)
            if tokens != [token.encode("utf-8")]
        ]
        if unread:
            shown = ", ".join(f"{token!r} (read as {tokens})" for token, tokens in unread[:3])
            warnings.warn(
                f"TextEncoder: {len(unread)} of the {len(vocabulary)} vocabulary tokens can never be looked "
                f"up, as this encoder reads them otherwise: {shown}{', ...' if len(unread) > 3 else ''}",
                stacklevel=2,
            )

    def _use_vocabulary(self, vocabulary):
        """`set_vocabulary` without reading the tokens: for tokens this encoder produced."""
        if not vocabulary:
            raise ValueError("TextEncoder: the vocabulary is empty; adapt on texts that contain tokens.")
        unsaveable = [token for token in vocabulary if not isinstance(token, str) or token.splitlines() != [token]]
        if unsaveable:
            raise ValueError(
                "TextEncoder: vocabulary tokens must be non-empty strings without line breaks (a "
                f"vocabulary is saved one token per line). Received: {unsaveable[:3]!r}"
            )
        self.lookup.set_vocabulary(list(vocabulary))
        self._adapted = True
        self.added_tokens = 0

    def extend_vocabulary(self, words):
        """Give ids, after the vocabulary's, to the `words` it lacks that this encoder reads as one
        token each (a word it would split, "don't" or "u.s.", could never be looked up), in order.

        For pretrained vectors (`keras_textattn.text.vectors.vectors_words`): a word that the
        training texts never show, and so would read as unknown, keeps the pretrained vector of its
        embedding row. Returns the tokens added; `added_tokens` counts them all.
        """
        if not self._adapted:
            raise ValueError(
                "TextEncoder has no vocabulary to extend: call `adapt(texts)` or `set_vocabulary(...)` first."
            )
        vocabulary = self.get_vocabulary()
        candidates = [word for word in dict.fromkeys(words) if isinstance(word, str) and word.splitlines() == [word]]
        tokens = self.tokenize(candidates).to_list() if candidates else []
        known = set(vocabulary)
        added = [word for word, read in zip(candidates, tokens) if read == [word.encode("utf-8")] and word not in known]
        if added:
            before = self.added_tokens
            self._use_vocabulary(vocabulary[2:] + added)
            self.added_tokens = before + len(added)
        return added

    def set_vocabulary_file(self, path):
        """Use the tokens of a UTF-8 file, one per line (most frequent first, without
        padding and OOV), read when the lookup table is initialised. A SavedModel
        that contains this encoder carries the file as an asset."""
        if not os.path.isfile(path):
            raise ValueError(f"TextEncoder: vocabulary file {path} does not exist.")
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().split("\n")
        lines = lines[:-1] if lines[-1] == "" else lines
        if lines[:2] == ["", OOV_TOKEN]:
            raise ValueError(
                f"TextEncoder: {path} lists padding and OOV first, as a run's vocabulary.txt does (line i "
                "is id i); a vocabulary file holds the tokens after them: pass its lines from the third "
                "on to set_vocabulary."
            )
        if "" in lines or not lines:
            raise ValueError(
                f"TextEncoder: {path} "
                + (f"has an empty line ({lines.index('') + 1}); " if lines else "is empty; ")
                + "a vocabulary file holds one token per line."
            )
        self.lookup.set_vocabulary(os.fspath(path))
        self._adapted = True
        self.added_tokens = 0

    def cut_vocabulary(self, max_tokens):
        """A new encoder with the same settings that keeps only the first `max_tokens` ids
        (padding and OOV included) of this one's vocabulary: every token with a higher id
        becomes OOV. The vocabulary is sorted by frequency (ties by bytes), so the copy
        encodes exactly as an encoder adapted with `max_tokens` on the same texts would;
        that is how a hyperparameter search tries several vocabularies while adapting once.
        A `max_tokens` above the vocabulary's size keeps all of it. Tokens that
        `extend_vocabulary` added come last, and a cut drops them first."""
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 3:
            raise ValueError(
                "TextEncoder.cut_vocabulary: `max_tokens` counts padding and OOV, so it must be an "
                f"integer of at least 3. Received: max_tokens={max_tokens!r}"
            )
        if not self._adapted:
            raise ValueError(
                "TextEncoder has no vocabulary to cut: call `adapt(texts)` or `set_vocabulary(...)` first."
            )
        vocabulary = self.get_vocabulary()
        added = max(0, min(max_tokens, len(vocabulary)) - (len(vocabulary) - self.added_tokens))
        return self._copy(vocabulary[2:max_tokens], added, max_tokens=max_tokens)

    def cut_length(self, sequence_length):
        """A new encoder with the same vocabulary and settings that keeps the first
        `sequence_length` tokens of a text: its ids are this one's first `sequence_length`
        columns (bigram ids too: the last kept token pairs with the next one either way), so a
        search tries several lengths while adapting and encoding once. Flat texts only; at
        most this encoder's length."""
        if isinstance(sequence_length, bool) or not isinstance(sequence_length, int) or sequence_length < 1:
            raise ValueError(
                "TextEncoder.cut_length: `sequence_length` must be a positive integer. "
                f"Received: sequence_length={sequence_length!r}"
            )
        if self.hierarchical or self.sequence_length is None:
            raise ValueError(
                "TextEncoder.cut_length cuts the texts of a flat encoder of fixed `sequence_length`; this "
                f"one is {'hierarchical' if self.hierarchical else 'of no fixed length'}. "
                f"Received: sequence_length={sequence_length}"
            )
        if sequence_length > self.sequence_length:
            raise ValueError(
                f"TextEncoder.cut_length cuts texts to at most this encoder's {self.sequence_length} "
                f"tokens. Received: sequence_length={sequence_length}"
            )
        if not self._adapted:
            raise ValueError(
                "TextEncoder has no vocabulary to keep: call `adapt(texts)` or `set_vocabulary(...)` first."
            )
        return self._copy(self.get_vocabulary()[2:], self.added_tokens, sequence_length=sequence_length)

    def _copy(self, tokens, added_tokens, **changes):
        """A new encoder of this one's settings with `changes`, whose vocabulary is `tokens` (after
        padding and OOV), the last `added_tokens` of them added by `extend_vocabulary`."""
        config = {name: value for name, value in self.get_config().items() if name != "name"}  # a name of its own
        copy = type(self).from_config({**config, **changes})
        copy._use_vocabulary(tokens)
        copy.added_tokens = added_tokens
        return copy

    @property
    def is_adapted(self):
        """Whether the encoder has a vocabulary (`adapt`, `set_vocabulary` or a loaded file), as
        Keras's preprocessing layers say."""
        return self._adapted

    def get_vocabulary(self):
        """All tokens by id: `["", "[UNK]", most frequent, ...]`."""
        return [str(token) for token in self.lookup.get_vocabulary()]

    def vocabulary_size(self):
        return self.lookup.vocabulary_size()

    def counted_vocabulary_size(self):
        """The vocabulary's size without the tokens `extend_vocabulary` added: those `adapt`
        counted on texts, padding and OOV included."""
        return self.vocabulary_size() - self.added_tokens

    # ------------------------------------------------------------------- call
    def __call__(self, inputs, *args, **kwargs):
        if isinstance(inputs, (str, bytes)):  # one text, as a tf.data map before batching gives it
            inputs = tf.constant(inputs)
        elif not isinstance(inputs, (tf.Tensor, tf.RaggedTensor, keras.KerasTensor)):  # Keras takes only tensors
            inputs = _string_batch(inputs, "call")
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs):
        if not self._adapted:
            raise ValueError("TextEncoder has no vocabulary: call `adapt(texts)` or `set_vocabulary(...)` first.")
        one_text = inputs.shape.rank == 0  # its ids without the batch axis, as Keras's TextVectorization
        texts = self._as_strings(tf.reshape(inputs, [1]) if one_text else inputs)
        ids = self._encoded(self._sentence_words(texts) if self.hierarchical else self.tokenize(texts))
        return keras.tree.map_structure(lambda batch: batch[0], ids) if one_text else ids

    def _sentence_words(self, texts):
        """Ragged `(batch, sentences, words)`: each text's sentences that hold a word."""
        sentences = tf_text.regex_split(texts, self._sentence_end)  # (batch, sentences)
        words = sentences.with_flat_values(self.tokenize(sentences.flat_values))
        return tf.ragged.boolean_mask(words, words.row_lengths(axis=-1) > 0)

    def _encoded(self, words):
        """The ids (`call`'s) of ragged `words`: `(batch, words)`, or when hierarchical `(batch,
        sentences, words)`, long sentences split into rows where the encoder splits them."""
        if not self.hierarchical:
            return self._ids_and_bigrams(words, [None, self.sequence_length])
        if self._splits_sentences():
            words = _split_rows(words, self.sequence_length, self.max_sentences)
        return self._ids_and_bigrams(words[:, : self.max_sentences], [None, self.max_sentences, self.sequence_length])

    def _ids_and_bigrams(self, words, shape):
        """Ids of ragged `words` (texts, or texts of sentence rows) cut and padded to `shape`,
        whose last axis is `sequence_length`; with bigrams, `(ids, bigram_ids)` of that shape,
        the last kept word's bigram pairing it with its next word, as far as the row has one."""
        if self.sequence_length is not None:  # with bigrams, one word more: the last bigram's second word
            words = words[..., : self.sequence_length + (1 if self.bigram_buckets else 0)]
        token_ids = self._ids(words)
        ids = self._pad(token_ids[..., : self.sequence_length], shape)
        if not self.bigram_buckets:
            return ids
        if self.bigrams_of == "vocabulary":
            words = tf.ragged.map_flat_values(
                lambda word, i: tf.where(tf.equal(i, OOV_ID), OOV_TOKEN, word), words, token_ids
            )
        sentences = words.ragged_rank > 1
        rows = words.values if sentences else words  # (rows, words): bigrams stay inside a row
        pairs = tf.strings.join([rows[:, :-1], rows[:, 1:]], separator=" ")[:, : self.sequence_length]
        bigrams = tf.cast(tf.strings.to_hash_bucket_fast(pairs, self.bigram_buckets) + 1, "int32")
        bigram_ids = self._pad(words.with_values(bigrams) if sentences else bigrams, shape)
        if self.sequence_length is None:  # a row has one bigram fewer than tokens: match the ids' width
            missing = tf.shape(ids)[-1] - tf.shape(bigram_ids)[-1]
            bigram_ids = tf.pad(bigram_ids, [[0, 0]] * (len(shape) - 1) + [[0, missing]])
        return ids, bigram_ids

    def _splits_sentences(self):
        return self.hierarchical and self.split_long_sentences and self.sequence_length is not None

    def _ids(self, tokens):
        return tokens.with_flat_values(tf.cast(self.lookup(tokens.flat_values), "int32"))

    @staticmethod
    def _pad(ragged, shape):
        """Zero-pad `ragged` to `shape`; an axis of size None gets the longest
        row's length, and at least one step, so an all-empty batch still has a time axis."""
        dense = ragged.to_tensor(default_value=0, shape=shape)
        extra = [[0, 0]] + [
            [0, tf.maximum(1 - tf.shape(dense)[axis], 0)] if size is None else [0, 0]
            for axis, size in enumerate(shape[1:], start=1)
        ]
        return tf.pad(dense, extra)

    # ------------------------------------------------------------ Keras glue
    def build(self, input_shape):
        self.built = True  # no weights: the vocabulary lives in the lookup table

    def compute_output_shape(self, input_shape):
        batch = tuple(input_shape[:1])  # none for one text
        if self.hierarchical:
            shape = (*batch, self.max_sentences, self.sequence_length)
        else:
            shape = (*batch, self.sequence_length)
        return (shape, shape) if self.bigram_buckets else shape

    def compute_output_spec(self, inputs):
        return keras.tree.map_shape_structure(
            lambda shape: keras.KerasTensor(shape, "int32"), self.compute_output_shape(inputs.shape)
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "max_tokens": self.max_tokens,
                "min_frequency": self.min_frequency,
                "sequence_length": self.sequence_length,
                "max_sentences": self.max_sentences,
                "lowercase": self.lowercase,
                "strip_html": self.strip_html,
                "normalization": self.normalization,
                "bigram_buckets": self.bigram_buckets,
                "hierarchical": self.hierarchical,
                "split_cjk": self.split_cjk,
                "bigrams_of": self.bigrams_of,
                "split_long_sentences": self.split_long_sentences,
                "added_tokens": self.added_tokens,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        # Encoders saved before these options existed read CJK text as runs of letters and paired
        # the tokens as written: keep that.
        return super().from_config({"split_cjk": False, "bigrams_of": "tokens", **config})

    def load_assets(self, dir_path):
        # The vocabulary itself is restored by the StringLookup sublayer's assets.
        self._adapted = True


def _window_starts(counts, width, stride):
    """`(owners, starts)`, int64 `[windows]`: the windows over texts of `counts` units (tokens or
    sentences), each window's text and first unit, as `vocabulary.window_starts` (the clients'
    plain-Python rule) places them."""
    counts = tf.cast(counts, tf.int64)
    over = tf.maximum(counts - width, 0)  # units past the first window
    windows = -(-over // stride) + 1  # ceil(over / stride) + 1
    owners = tf.repeat(tf.range(tf.size(counts, out_type=tf.int64)), windows)
    starts = tf.minimum(tf.ragged.range(windows).flat_values * stride, tf.gather(over, owners))
    return owners, starts


def _split_rows(words, width, max_rows=None):
    """Ragged `(batch, sentences, words)` read as rows of at most `width` words, in order, as
    `vocabulary.sentence_rows` says: each sentence's first `width` words a row (the first
    `max_rows` sentences'), and rows left over hold the rest of long sentences."""
    sentences = words.values  # (all sentences, words)
    lengths = sentences.row_lengths()
    starts = tf.ragged.range((lengths + width - 1) // width) * width  # (all sentences, pieces): first word of each
    piece_sentence = starts.value_rowids()
    piece_text = tf.gather(words.value_rowids(), piece_sentence)
    piece_lengths = tf.minimum(tf.gather(lengths, piece_sentence) - starts.flat_values, width)
    pieces = tf.RaggedTensor.from_row_lengths(sentences.flat_values, piece_lengths)  # (all pieces, words)
    if max_rows is not None:
        sentence_index = tf.range(tf.size(lengths, out_type=tf.int64)) - tf.gather(
            words.row_starts(), words.value_rowids()
        )
        is_tail = starts.flat_values > 0
        tails_before = tf.cumsum(tf.cast(is_tail, tf.int64), exclusive=True)  # over all texts' pieces, in order
        tail_rank = tails_before - tf.gather(
            tf.math.unsorted_segment_min(tails_before, piece_text, words.nrows()), piece_text
        )
        spare = tf.maximum(max_rows - words.row_lengths(), 0)
        keep = tf.where(
            is_tail, tail_rank < tf.gather(spare, piece_text), tf.gather(sentence_index, piece_sentence) < max_rows
        )
        pieces, piece_text = tf.ragged.boolean_mask(pieces, keep), tf.boolean_mask(piece_text, keep)
    rows_per_text = tf.math.unsorted_segment_sum(tf.ones_like(piece_text), piece_text, words.nrows())
    return tf.RaggedTensor.from_row_lengths(pieces, rows_per_text)


def _string_batch(texts, method):
    """`texts` (a list or tuple of strings, a NumPy array of them, a string tensor) as a string
    tensor of rank >= 1, else a `ValueError` saying what `TextEncoder.<method>` takes, instead of
    TensorFlow's conversion error (or Keras's "only input tensors", for one string)."""
    expected = (
        f"TextEncoder.{method} takes a batch of texts: a list of strings (str or bytes), a NumPy array of "
        "them or a string tensor of shape (batch,)"
    )
    if isinstance(texts, (str, bytes)):
        raise ValueError(f"{expected}. Received: one {type(texts).__name__}; give a list of one")
    if isinstance(texts, np.ndarray) and texts.dtype.kind not in "USO":
        raise ValueError(f"{expected}. Received: a NumPy array of dtype {texts.dtype}")
    if isinstance(texts, (list, tuple, np.ndarray)):
        for index, text in enumerate(
            np.ravel(np.asarray(texts, dtype=object)) if isinstance(texts, np.ndarray) else texts
        ):
            if not isinstance(text, (str, bytes)):
                raise ValueError(f"{expected}. Received: item {index} is {text!r:.60} ({type(text).__name__})")
        return tf.constant(texts, tf.string)
    if isinstance(texts, tf.Tensor) and texts.dtype == tf.string and texts.shape.rank:
        return texts
    given = (
        f"a {texts.dtype.name} tensor of shape {texts.shape}" if isinstance(texts, tf.Tensor) else type(texts).__name__
    )
    raise ValueError(f"{expected}. Received: {given}")


# `TextEncoder.adapt` sums its batches' token counts this many batches at a time.
_MERGED_BATCHES = 64


def _summed_counts(tokens, counts):
    """The distinct tokens of `tokens` (strings) and the sum of each one's `counts`."""
    distinct, positions = tf.unique(tokens)
    return distinct, tf.math.unsorted_segment_sum(counts, positions, tf.shape(distinct)[0])
