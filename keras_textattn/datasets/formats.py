"""The file formats of labelled and unlabelled texts: CSV/TSV, JSONL and TFRecord, plain or gzip;
the `LocalFile` that says how to read one, and the readers."""

import codecs
import contextlib
import csv
import dataclasses
import gzip
import io
import itertools
import json
import os
import re
import typing
import warnings
import zlib

import tensorflow as tf

from keras_textattn.errors import UserError
from keras_textattn.errors import check_flag
from keras_textattn.errors import valid_unicode

# Raise csv's field limit so that a 1 MB text is read, not refused.
csv.field_size_limit(64 * 1024 * 1024)


class DataError(UserError):
    """A data source that cannot be read as labelled texts; the message names the file,
    the row and the column where it can."""


@dataclasses.dataclass
class LocalFile:
    """A CSV or TSV file (plain or gzip) of labelled texts.

    Args:
        path: the file.
        text_column: a column name or index, or a list of them joined with a space
            (AG News's original format is headerless `class,title,description`:
            `LocalFile(path, text_column=[1, 2], label_column=0, header=False)`).
        label_column: a column name or index; a list of them for multi-label data in the
            one-column-per-label layout (each column 0/1, its name the label's).
        header: whether the first row names the columns.
        delimiter: None picks `\\t` for `.tsv` / `.tsv.gz`, `,` otherwise.
        label_offset: subtracted from integer labels, so that files numbering
            classes differently agree (AG News's original test file counts 1-4, the
            training sample 0-3: `label_offset=1` for the former).
        stream: read with `tf.data` as a stream (`datasets.streaming`) rather than into
            memory. None (default): a glob (`train-*.csv.gz`), a folder of shards, a
            JSONL or TFRecord file and a remote path (`gs://...`) are streamed; a single
            local CSV / TSV file is read into memory, where a quoted field may span lines
            (streamed files need one row per line). JSONL rows are objects and TFRecord
            records `tf.train.Example`s: `text_column` / `label_column` are their keys.
        group_column: a column whose rows belong together (the reviews of one film, the
            messages of one author): a validation split carved from this file holds out
            whole groups (about `validation_fraction` of them, chosen by a seeded hash of the
            value), so that no group is on both sides and the held-out score is not inflated
            by what the model learns of a group it also trains on. A row
            with an empty value is a group of its own. Files read into memory only.
        label_delimiter: multi-label data with a label column of several labels: what
            separates them in a CSV / TSV cell (`"3,27"`, `"joy|love"`); a JSONL list or a
            TFRecord feature of several values is a set as it stands. Multi-label files are
            read into memory.
    """

    path: str
    text_column: object = "text"
    label_column: object = "label"
    header: bool = True
    delimiter: str = None
    label_offset: int = 0
    stream: bool = None
    group_column: object = None
    label_delimiter: str = None

    def __post_init__(self):
        if isinstance(self.path, bool) or not isinstance(self.path, (str, os.PathLike)) or not os.fspath(self.path):
            raise DataError(f"a data file must be a path (a file, a glob or a folder of shards); got {self.path!r}")
        check_flag(f"{os.fspath(self.path)}: header", self.header)
        if self.stream is not None:
            check_flag(f"{os.fspath(self.path)}: stream", self.stream)
        if self.delimiter is not None and not (isinstance(self.delimiter, str) and len(self.delimiter) == 1):
            raise DataError(
                f"{os.fspath(self.path)}: the delimiter must be one character (',', ';', '\\t', '|'); "
                f"got {self.delimiter!r}"
            )

        if self.label_delimiter is not None and not (isinstance(self.label_delimiter, str) and self.label_delimiter):
            raise DataError(
                f"{os.fspath(self.path)}: the label delimiter separates the labels of a row (',', '|'); "
                f"got {self.label_delimiter!r}"
            )
        if isinstance(self.label_column, (list, tuple)):
            if len(self.label_column) < 2 or self.label_delimiter is not None or self.label_offset:
                raise DataError(
                    f"{os.fspath(self.path)}: several label columns are the one-column-per-label layout of "
                    "multi-label data: two or more 0/1 columns, without a label delimiter or offset; got "
                    f"label_column={self.label_column!r}, label_delimiter={self.label_delimiter!r}, "
                    f"label_offset={self.label_offset!r}"
                )

    @property
    def multi_label(self):
        """Whether each row holds a set of labels: several 0/1 label columns, or a label delimiter."""
        return isinstance(self.label_column, (list, tuple)) or self.label_delimiter is not None

    def text_columns(self):
        """`text_column` as a list."""
        return self.text_column if isinstance(self.text_column, (list, tuple)) else [self.text_column]

    @property
    def streamed(self):
        """Whether `load_dataset` streams this file (see `stream` above)."""
        if self.stream is not None:
            return bool(self.stream)
        path = os.fspath(self.path)
        shards_or_remote = is_pattern(path) or os.path.isdir(path) or "://" in path
        if self.multi_label:  # read into memory where it can be (`load_dataset` refuses the rest)
            return shards_or_remote
        return shards_or_remote or file_format(path) in ("jsonl", "tfrecord")


# Suffixes (before an optional .gz) of each format; a folder's other files (README.md, ...) are not data.
FORMATS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".txt": "csv",
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".tfrecord": "tfrecord",
    ".tfrecords": "tfrecord",
    ".tfrec": "tfrecord",
}


def file_format(path):
    """ "csv", "tsv", "jsonl" or "tfrecord", from the name (an optional ".gz" aside); None if none of them."""
    name = path[:-3] if path.endswith(".gz") else path
    return FORMATS.get(os.path.splitext(name)[1].lower())


def is_pattern(path):
    return any(character in os.fspath(path) for character in "*?[")


DATA_SUFFIXES = (*FORMATS, ".gz")


def is_local_path(source):
    """Whether the string `source` names a local file rather than a TFDS dataset.

    TFDS names are `name`, `name/config` and either with `:version` (`imdb_reviews`,
    `glue/sst2`, `imdb_reviews:1.0.0`); a path exists, ends like a data file
    (`.csv`, `.tsv`, `.gz`, ...) or starts with `.`, `/` or `~`.
    """
    return (
        os.path.exists(source)
        or source.lower().endswith(DATA_SUFFIXES)
        or source.startswith((".", "/", "~"))
        or is_pattern(source)
        or "://" in source
    )


def refuse_utf16(path, start):
    """A `DataError` for a file whose first bytes `start` are UTF-16's byte order mark (Excel's
    "Unicode Text" is UTF-16): read as UTF-8, every other byte of it is a NUL."""
    if start[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        raise DataError(
            f"{path}: the file is UTF-16 (it starts with UTF-16's byte order mark); save it as UTF-8 (Excel: CSV UTF-8)"
        )


def open_text(path):
    """A text file (plain or gzip; CSV, TSV, vectors) as text: a byte order mark dropped, invalid UTF-8 as
    U+FFFD; a UTF-16 file is a `DataError` (`refuse_utf16`)."""
    if not os.path.isfile(path):
        raise DataError(f"Data file not found: {path!r}")
    raw = gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")
    try:
        refuse_utf16(path, raw.peek(2))
    except DataError:
        raw.close()
        raise
    # Invalid UTF-8 bytes become U+FFFD rather than stopping the read; a byte order mark
    # (Excel writes one) is dropped.
    return io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline="")


def read_labelled_texts(file):
    """Read a `LocalFile`.

    Returns:
        `(texts, labels, row_numbers, groups)`: texts and stripped labels as str, each
        row's 1-based line number in the file, for error messages, and each row's stripped
        value of `file.group_column` ("" for every row without one).
    """
    with _table(file) as table:
        text_index = [table.index(c) for c in file.text_columns()]
        label_set = _label_set_reader(table, file, text_index) if file.multi_label else None
        label_index = None if label_set else table.index(file.label_column)
        if label_index is not None:
            check_label_apart(table.path, text_index, label_index, file.label_column)
        group_index = None if file.group_column is None else table.index(file.group_column)
        texts, labels, row_numbers, groups, spaced = [], [], [], [], []
        for line, record in table.rows:
            try:
                label = (
                    label_set(record)
                    if label_set
                    else checked_label(record[label_index], file.label_column, file.label_offset)
                )
            except ValueError as problem:
                raise DataError(f"{table.path}, row {line}: {problem}") from None  # as a streamed file says
            if label_index is not None and record[label_index] != record[label_index].strip():
                spaced.append((line, record[label_index]))
            texts.append(" ".join(record[i] for i in text_index))
            labels.append(label)
            row_numbers.append(line)
            groups.append("" if group_index is None else record[group_index].strip())
    if not texts:
        raise DataError(f"{table.path}: no data rows")
    if label_index is not None:
        _warn_of_merged_rows(table, label_index, file, labels)
    if spaced:  # "pos " is read as "pos": right, but said, once
        line, raw = spaced[0]
        warnings.warn(
            f"{table.path}: {len(spaced)} of {len(labels)} labels had spaces around them, read without "
            f"(row {line}: {raw!r} as {raw.strip()!r})",
            stacklevel=2,
        )
    if not file.header and row_numbers[0] == 1 and _first_label_alone(labels, file.multi_label):
        warnings.warn(
            f"{table.path}: row 1's label {labels[0]!r} is on no other row; is row 1 a header? Without a "
            "header (--no-header, header=False) it is read as a row of a class of its own",
            stacklevel=2,
        )
    replaced = sum("\ufffd" in text for text in texts)
    # Read on (invalid UTF-8 becomes U+FFFD, as the encoder reads it), but not silently: a whole
    # file may be Latin-1.
    if replaced:
        warnings.warn(
            f"{table.path}: {replaced} of {len(texts)} texts hold U+FFFD, as which bytes that are not UTF-8 "
            "are read (a Latin-1 or Windows-1252 file? convert it: iconv -f cp1252 -t utf-8)",
            stacklevel=2,
        )
    return texts, labels, row_numbers, groups


def _first_label_alone(labels, multi_label):
    """Whether the first row's label (of a multi-label file: each of its labels) is on no other row,
    among more than two others: a header read as a row."""
    if not multi_label:
        return labels.count(labels[0]) == 1 and len(set(labels)) > 2
    others = {label for row in labels[1:] for label in row}
    return bool(labels[0]) and not set(labels[0]) & others and len(others) > 2


def _warn_of_merged_rows(table, label_index, file, labels):
    """Warn of records read over several lines whose inner lines read alone as rows with a label
    of the file: a stray quote (`pos<TAB>"Great film` in a TSV file) that a later quote on another
    line closes makes the rows between one text; with the right width nothing else shows it. (Two
    rows merged, with no line between them, cannot be told from a text over two lines.)"""
    merged = getattr(table, "merged", ())  # JSONL and TFRecord tables have no quoting
    if not merged:
        return
    known, suspects = set(labels), []
    for start, end, inner in merged:
        for line, fields in inner:
            try:
                label = checked_label(fields[label_index], file.label_column, file.label_offset)
            except ValueError:
                continue
            if label in known:
                suspects.append((start, end, line, label))
                break
    if suspects:
        start, end, line, label = suspects[0]
        warnings.warn(
            f"{table.path}: {len(suspects)} record{'s' if len(suspects) > 1 else ''} read over several "
            f"lines hold{'' if len(suspects) > 1 else 's'} lines that read as rows of their own, e.g. lines "
            f"{start}-{end} (line {line} reads as a row labelled {label!r}): a quote opened on line {start} "
            f"and closed on line {end}? Those lines are read as one text, not as rows; in a quoted field "
            'write a quote as "", and quote a field that starts with a quote',
            stacklevel=3,
        )


def _label_set_reader(table, file, text_index):
    """For a multi-label `file` (`LocalFile.multi_label`): a function of a record of `table` to its
    labels, a sorted tuple of the labels as written (for 0/1 columns, the names of the columns
    holding 1). A cell that reads as no label set raises a `ValueError` naming the column."""
    if isinstance(file.label_column, (list, tuple)):
        indices = [table.index(column) for column in file.label_column]
        for index, column in zip(indices, file.label_column):
            check_label_apart(table.path, text_index, index, column)
        names = [str(column) for column in file.label_column]
        return lambda record: tuple(
            sorted(
                name
                for name, index, column in zip(names, indices, file.label_column)
                if label_flag(record[index], column)
            )
        )
    index = table.index(file.label_column)
    check_label_apart(table.path, text_index, index, file.label_column)

    def label_set(record):
        cell = record.values(index) if isinstance(record, _KeyedRecord) else record[index]
        return split_labels(cell, file.label_delimiter, file.label_column, file.label_offset)

    return label_set


FLAGS = {"1": True, "1.0": True, "true": True, "0": False, "0.0": False, "false": False}


def label_flag(value, column):
    """Whether a 0/1 label column's cell says the label applies; a `ValueError` unless it is 0 or 1
    (or 0.0 / 1.0, true / false)."""
    flag = FLAGS.get(value.strip().lower())
    if flag is None:
        raise ValueError(f"column {column!r}: a label column of the 0/1 layout holds 0 or 1. Received: {value!r}")
    return flag


def split_labels(cell, delimiter, column, offset=0):
    """A row's label set from its `cell`: a text split at `delimiter` (a CSV cell, a JSONL string),
    or a list as it stands (a JSONL list, a TFRecord feature's values): stripped, repeats dropped,
    `offset` subtracted, sorted. An empty cell, or an empty label, is a `ValueError`; an empty list
    is the empty set (a text with none of the labels)."""
    labels = [part.strip() for part in (cell.split(delimiter) if isinstance(cell, str) else cell)]
    if "" in labels:
        problem = "the label is empty" if labels == [""] and isinstance(cell, str) else f"an empty label in {cell!r}"
        raise ValueError(
            f"column {column!r}: {problem} (labels are separated by {delimiter!r}; a text with none of "
            "the labels is a JSONL [] or a row of 0s in the one-column-per-label layout)"
        )
    return tuple(sorted({checked_label(label, column, offset) for label in labels}))


def checked_label(label, column, offset=0):
    """A label as read from `column`: stripped, `offset` subtracted; a `ValueError` naming the
    column when it is empty, or not an integer where `offset` needs one."""
    label = label.strip()
    if not label:
        raise ValueError(f"column {column!r}: the label is empty")
    if not offset:
        return label
    try:
        return str(int(label) - offset)
    except ValueError:
        raise ValueError(f"column {column!r}: label_offset needs integer labels. Received: {label!r}") from None


def text_batches(file, batch_size, id_column=None):
    """The texts of a `LocalFile` (its label column unused), read as a stream: `(ids, texts)`
    lists of up to `batch_size` rows, in file order; `ids` holds `id_column`'s values (default:
    a column named "id" when the header has one), or is None without such a column."""
    with _table(file) as table:
        text_index = [table.index(c) for c in file.text_columns()]
        id_column = _id_column(table, id_column)
        id_index = None if id_column is None else table.index(id_column)
        ids, texts = [], []
        for _, record in table.rows:
            texts.append(" ".join(record[i] for i in text_index))
            ids.append(None if id_index is None else record[id_index])
            if len(texts) == batch_size:
                yield (None if id_index is None else ids), texts
                ids, texts = [], []
        if texts:
            yield (None if id_index is None else ids), texts


def id_column_of(file, id_column=None):
    """The column of a `LocalFile` that `text_batches` gives as ids (read from its header
    only): `id_column`, else "id" when the header has one, else None."""
    if id_column is not None:
        return id_column
    with _table(file) as table:
        return _id_column(table, None)


def _id_column(table, id_column):
    return "id" if id_column is None and table.header is not None and "id" in table.header else id_column


def line_batches(path, batch_size):
    """The lines of a plain text file (or gzip) as texts, line ends removed, in lists of up to
    `batch_size`, in file order; a file that cannot be read is a `DataError` naming it."""
    batch = []
    try:
        with open_text(path) as handle:
            for line in handle:
                batch.append(line.rstrip("\r\n"))
                if len(batch) == batch_size:
                    yield batch
                    batch = []
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise _unreadable(path, error) from None
    if batch:
        yield batch


def _unreadable(path, error):
    """The `DataError` for a gzip file that ends early or is not gzip."""
    reason = "it ends early (truncated?)" if isinstance(error, EOFError) else f"not valid gzip ({error})"
    return DataError(f"{path}: cannot be read: {reason}")


class _Table(typing.NamedTuple):
    """An open CSV/TSV file: its header (None without one), its width (the first row's), and
    its data rows as `(line number, record)`, blank lines skipped, widths checked. `merged`
    fills as the rows are read: for each record read over more than two lines, `(first line,
    last line, [(line number, fields)])` of its inner lines that parse alone as a whole row."""

    path: str
    header: list
    width: int
    rows: typing.Iterator
    merged: list

    def index(self, column):
        return column_index(self.path, self.header, self.width, column)


def _table(file):
    """Open a `LocalFile` as a `_Table` of its format: CSV / TSV by column, JSONL / TFRecord by key."""
    kind = file_format(os.fspath(file.path))
    return _keyed_table(file, kind) if kind in ("jsonl", "tfrecord") else _csv_table(file)


class _KeyedTable(typing.NamedTuple):
    """An open JSONL or TFRecord file as a `_Table`: columns are keys (feature names), `header`
    the first row's; rows `(row number, _KeyedRecord)`, blank JSONL lines skipped."""

    path: str
    header: list
    rows: typing.Iterator

    def index(self, column):
        if not isinstance(column, str):
            raise DataError(f"{self.path}: its rows are read by key; give a column name, not the index {column!r}")
        return column


class _KeyedRecord:
    """One JSONL object or tf.train.Example: `record[key]` is its text as `json_text` /
    `feature_text` read it; a record or key that cannot be read is a `DataError` naming file and row."""

    def __init__(self, path, number, kind, raw):
        self.path, self.number = path, number
        self._text = json_text if kind == "jsonl" else feature_text
        self._fields = self._read(parse_keyed, kind, raw)

    def _read(self, function, *arguments):
        try:
            return function(*arguments)
        except ValueError as problem:
            raise DataError(f"{self.path}, row {self.number}: {problem}") from None

    def keys(self):
        return sorted(self._fields)

    def values(self, key):
        """The value of `key` as a list of texts (a JSON list's items, a feature's values when it
        has other than one), or its text when it is one string or number (one value)."""
        return self._read(self._values, self._fields, key)

    def _values(self, fields, key):
        if self._text is json_text and isinstance(fields.get(key), list):
            return [json_text({key: item}, key) for item in fields[key]]
        if self._text is feature_text and key in fields:
            feature = fields[key]
            kind = feature.WhichOneof("kind")
            if kind == "bytes_list" and len(feature.bytes_list.value) != 1:
                return [value.decode("utf-8", "replace") for value in feature.bytes_list.value]
            if kind == "int64_list" and len(feature.int64_list.value) != 1:
                return [str(value) for value in feature.int64_list.value]
        return self._text(fields, key)

    def __getitem__(self, key):
        return self._read(self._text, self._fields, key)


def parse_keyed(kind, record):
    """A JSONL line (str or bytes) as a dict, or a TFRecord record as a tf.train.Example's features;
    a `ValueError` says why it is neither."""
    if kind == "tfrecord":
        try:
            return tf.train.Example.FromString(record).features.feature
        except Exception:  # protobuf's DecodeError
            raise ValueError("not a tf.train.Example") from None
    try:
        row = json.loads(record.decode("utf-8", "replace") if isinstance(record, bytes) else record)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON ({error})") from None
    if not isinstance(row, dict):
        raise ValueError(f"expected a JSON object, found {type(row).__name__}")
    return row


def json_text(row, key):
    """The text of `key` in a parsed JSONL row (a number as written); a `ValueError` says what is wrong."""
    if key not in row:
        raise ValueError(f"no key {key!r}; keys: {sorted(row)}")
    value = row[key]
    if isinstance(value, (dict, list)) or value is None:
        hint = " (a list of labels: multi-label data, read with --multi-label)" if isinstance(value, list) else ""
        raise ValueError(f"key {key!r}: expected a string or a number, found {json.dumps(value)[:40]}{hint}")
    return valid_unicode(value) if isinstance(value, str) else json.dumps(value)  # "\ud800": U+FFFD


def feature_text(features, name):
    """The text of feature `name` of a tf.train.Example (bytes joined, or one int64); a `ValueError`
    says what is wrong."""
    if name not in features:
        raise ValueError(f"no feature {name!r}; features: {sorted(features)}")
    feature = features[name]
    kind = feature.WhichOneof("kind")
    if kind == "bytes_list":
        return " ".join(value.decode("utf-8", "replace") for value in feature.bytes_list.value)
    if kind == "int64_list" and len(feature.int64_list.value) == 1:
        return str(feature.int64_list.value[0])
    raise ValueError(f"feature {name!r}: expected bytes or one int64, found {kind}")


@contextlib.contextmanager
def _keyed_table(file, kind):
    """Open a JSONL or TFRecord `LocalFile` as a `_KeyedTable` (closed when the block ends)."""
    path = os.fspath(file.path)
    if not os.path.isfile(path):
        raise DataError(f"Data file not found: {path!r}")
    with contextlib.ExitStack() as stack:
        if kind == "tfrecord":
            records = tf.data.TFRecordDataset(path, compression_type="GZIP" if path.endswith(".gz") else "")
            numbered = enumerate(records.as_numpy_iterator(), 1)
        else:
            numbered = ((n, line) for n, line in enumerate(stack.enter_context(open_text(path)), 1) if line.strip())
        try:
            cut = kind == "tfrecord" and tfrecord_cut(path)
            if cut:
                raise DataError(f"{path}: cannot be read ({cut})")
            rows = ((number, _KeyedRecord(path, number, kind, raw)) for number, raw in numbered)
            first = next(rows, None)
            if first is None:
                raise DataError(f"{path}: the file is empty")
            yield _KeyedTable(path, first[1].keys(), itertools.chain([first], rows))
        except (EOFError, gzip.BadGzipFile, zlib.error, tf.errors.DataLossError) as error:
            raise DataError(f"{path}: cannot be read ({tf_reason(error)})") from None


def tf_reason(error):
    """The reason an error gives, without TensorFlow's wrapping of it ("{{function_node ...}}
    corrupted record at 0 ... [Op:IteratorGetNext] name: " is "corrupted record at 0 ...")."""
    reason = re.sub(r"\{\{.*?\}\}\s*|\s*\[Op:.*", "", str(error).splitlines()[0] if str(error) else "")
    return reason or type(error).__name__


# A file shorter than a TFRecord's 12-byte record header: TensorFlow reads it as no records, without an error.
NOT_A_TFRECORD = "not a TFRecord file: it holds bytes but no whole record"


def tfrecord_cut(path, chunk=1 << 20):
    """Why a TFRecord file ends inside a record's 12-byte header, or None where it does not.
    TensorFlow reads such a file to its last whole record without an error (one shorter than a
    header as no records), so a file cut there would lose its last rows in silence. One pass in
    `chunk`-byte reads that looks at the headers only; a record that runs past the end is left to
    TensorFlow's own error."""
    offset, read, pending = 0, 0, b""  # the next header's offset; bytes read; those from `offset` on
    with open_bytes(path) as data:
        while block := data.read(chunk):
            pending += block[max(offset - read, 0) :]
            read += len(block)
            step = 0
            while step + 12 <= len(pending):  # a header: the data's length (8 bytes), its CRC (4)
                step += 12 + int.from_bytes(pending[step : step + 8], "little") + 4  # + the data and its CRC
            offset, pending = offset + step, pending[step:]
    if not pending:
        return None
    return NOT_A_TFRECORD if offset == 0 else f"it ends inside a record's header at byte {offset} (truncated?)"


@contextlib.contextmanager
def open_bytes(path):
    """A file on any `tf.io.gfile` filesystem as bytes, gzip decompressed when its name ends in .gz."""
    with tf.io.gfile.GFile(path, "rb") as raw:
        if not path.endswith(".gz"):
            yield raw
            return
        with gzip.GzipFile(fileobj=raw) as data:
            yield data


@contextlib.contextmanager
def _csv_table(file):
    """Open a `LocalFile` as a `_Table`; a file that cannot be read (missing, empty, truncated
    or invalid gzip, invalid CSV) is a `DataError` naming it."""
    path = os.fspath(file.path)
    delimiter = file.delimiter or ("\t" if path.endswith((".tsv", ".tsv.gz")) else ",")
    try:
        with open_text(path) as handle:
            read = []  # the lines of the record being read

            def lines():
                for line in handle:
                    read.append(line)
                    yield line

            reader = csv.reader(lines(), delimiter=delimiter)
            first = next(reader, None)
            if first is None:
                raise DataError(f"{path}: the file is empty")
            _check_closed(path, read, reader.line_num, delimiter)  # a header that swallowed the file
            last = read[:]
            read.clear()
            merged = []

            def rows():
                nonlocal last
                for record in reader if file.header else itertools.chain([first], reader):
                    if read:  # not the first record, read above
                        last = read[:]
                        read.clear()
                    if not record:
                        continue
                    start = reader.line_num - len(last) + 1
                    if len(record) != len(first):
                        hint = (
                            ""
                            if len(last) == 1
                            else (
                                f" in one record read from line {start} to here (a quote "
                                f"opened on line {start} and closed lines later?)"
                            )
                        )
                        raise DataError(
                            f"{path}, row {reader.line_num}: expected {len(first)} columns like the "
                            f"first row, found {len(record)}{hint}"
                        )
                    if len(last) > 2:  # lines between the record's first and last
                        inner = [
                            (start + i, fields)
                            for i, line in enumerate(last[1:-1], 1)
                            for fields in csv.reader([line], delimiter=delimiter)
                            if len(fields) == len(first)
                        ]
                        if inner:
                            merged.append((start, reader.line_num, inner))
                    yield reader.line_num, record
                _check_closed(path, last, reader.line_num, delimiter)

            yield _Table(path, first if file.header else None, len(first), rows(), merged)
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise _unreadable(path, error) from None
    except csv.Error as error:
        raise DataError(f"{path}: not a valid CSV/TSV file ({error})") from None


def _check_closed(path, lines, line_number, delimiter):
    """A `DataError` if the file's last record, `lines` ending at line `line_number`, opens a quoted
    field that the file never closes: Python's csv (not strict, to read sloppy quoting such as
    `"a" b`) would read every line after the quote as one text, silently."""
    if '"' not in "".join(lines):
        return
    try:
        list(csv.reader(lines, delimiter=delimiter, strict=True))
    except csv.Error as error:
        if "unexpected end of data" in str(error):
            start = line_number - len(lines) + 1
            count = f"{len(lines)} line{'s' if len(lines) > 1 else ''}"
            raise DataError(
                f"{path}, line {start}: a quoted field opens there and is never closed, so everything "
                f"from it to the end of the file ({count}) would be read as one text; close the quote, "
                'or write a quote inside a quoted field as ""'
            ) from None


def check_label_apart(path, text_columns, label_column, label_name):
    """A `DataError` when the label column (`label_column`, an index or key) is one of the text
    columns: a model that reads its label scores ~1.0 and has learned nothing."""
    if label_column in text_columns:
        raise DataError(
            f"{path}: the label column {label_name!r} is also a text column (--text-column); a model "
            "reading its own label learns nothing"
        )


def column_index(path, header, width, column):
    """The index of `column` (a name in `header`, or an index below `width`), or a `DataError`."""
    if isinstance(column, int) and not isinstance(column, bool):
        if not 0 <= column < width:
            raise DataError(f"{path}: column index {column} is out of range; the file has {width} columns")
        return column
    if header is None:
        raise DataError(
            f"{path}: column {column!r} is a name but the file has no header; use a column index (0..{width - 1})"
        )
    if column not in header:
        found = [mark for mark in ("\t", ";", "|") if len(header) == 1 and mark in header[0]]
        hint = (
            ""
            if not found
            else (
                f" (one column holding {found[0]!r}: a file delimited by {found[0]!r}? "
                + (
                    "Name it .tsv or .tsv.gz, or give --delimiter tab)"
                    if found[0] == "\t"
                    else f"Give --delimiter '{found[0]}'; Python: delimiter={found[0]!r})"
                )
            )
        )
        spaced = [name for name in header if isinstance(column, str) and name.strip() == column]
        if spaced:
            hint = (
                f" ({spaced[0]!r} has spaces around the name, as a space after the delimiter writes it: give the "
                f"name as the file spells it, {spaced[0]!r}, or remove the spaces from the header)"
            )
        raise DataError(f"{path}: no column {column!r}. Columns: {header}{hint}")
    return header.index(column)
