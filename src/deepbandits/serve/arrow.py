"""``decide_batch`` in Apache Arrow: the requests and the decisions as Arrow IPC streams.

A JSON batch of 1,000 requests of 10 arms x 20 features costs the server about 26 us per
decision to parse and validate, more than deciding it and logging it together; an Arrow body is
read in place. ``POST /v1/decide_batch`` with ``Content-Type:
application/vnd.apache.arrow.stream`` (:data:`MEDIA_TYPE`, Arrow's registered media type) takes
one table, one row per request:

============ ================================= ==============================================
``contexts`` list of lists of numbers           the request's ``K`` rows of ``d`` features; every
                                                request of the body has the same ``K`` and ``d``
``mask``     list of booleans, optional         the arms that may be chosen; null for a request
                                                without a mask
============ ================================= ==============================================

Fixed-size and variable-size lists are both read; integers and 32-bit floats are cast to
float64. The answer, in the same media type, has one row per decision, in order: ``decision_id``
(string), ``arm`` (int64), ``propensity`` (float64), ``mean`` and ``width`` (fixed-size lists
of ``K`` float64, non-finite values as they are, where JSON writes null) and ``model_version``
(int64). Every reader of Arrow (pyarrow, polars, DuckDB, arrow-rs, the Arrow libraries of Java,
Go, C++, ...) writes and reads them. A body of another shape is refused with the library's
:class:`~deepbandits.errors.InputValueError` naming the column (422), a column of another type
(dictionary-encoded, struct, extension, ...) with :class:`~deepbandits.errors.InputTypeError`.

A body is untrusted until checked: pyarrow reads what a stream's metadata says (list offsets
that run backwards make it read outside its buffers, and crash the process), so every record
batch is validated in full (``validate(full=True)``) before anything reads its values. Buffers
compressed with LZ4 or ZSTD (Arrow's ``BodyCompression``) are counted before pyarrow
decompresses them: each compressed buffer starts with its uncompressed length, and a stream
whose record batches would hold more than the body limit once decompressed is refused with
:class:`~deepbandits.errors.PayloadTooLargeError` (413) before any of it is decompressed. The
stream is read one message at a time (:func:`read_requests`), the lengths from each record
batch's flatbuffer metadata (``_Flatbuffer``).
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from deepbandits.errors import InputTypeError, InputValueError, PayloadTooLargeError

if TYPE_CHECKING:
    from deepbandits.serve.backend import Decided

MEDIA_TYPE = "application/vnd.apache.arrow.stream"
COLUMNS = ("contexts", "mask")
NOT_ARROW = "the request body is not a valid Arrow IPC stream"

# Arrow's IPC metadata (format/Message.fbs, format/Schema.fbs), the fields read here by their
# slot, the order in which the .fbs files declare them (a union takes two slots: its type, then
# the value): Message {version, header_type, header, bodyLength, custom_metadata};
# RecordBatch {length, nodes, buffers, compression, variadicBufferCounts};
# struct Buffer {offset: long; length: long} (16 bytes, little endian).
_HEADER_TYPE, _HEADER = 1, 2
_BUFFERS, _COMPRESSION = 2, 3
_RECORD_BATCH = 3  # MessageHeader's RecordBatch
_BUFFER = struct.Struct("<qq")
_INT64 = struct.Struct("<q")
#: The uncompressed length of a compressed buffer that Arrow stored uncompressed (too small
#: to gain from compression).
_STORED = -1


def read_requests(body: bytes, max_bytes: int) -> tuple[NDArray[np.float64], list[Any] | None]:
    """The requests of an Arrow body, checked before any of it is read (module notes).

    Parameters
    ----------
    body : bytes
        An Arrow IPC stream (module notes for its columns).
    max_bytes : int
        Most bytes the stream's record batches may hold once decompressed.

    Returns
    -------
    contexts : ndarray of shape (B, K, d)
        Every request's contexts, as float64.
    masks : list or None
        Every request's mask (a list of bools, or None), or None when the body has no mask
        column.

    Raises
    ------
    InputValueError
        A body that is not a valid Arrow IPC stream, or not of the columns and shapes above.
    InputTypeError
        A column of another type.
    PayloadTooLargeError
        Record batches that would hold more than ``max_bytes`` once decompressed.
    """
    try:
        table = _read_stream(body, max_bytes)
        if table.num_rows == 0:
            raise InputValueError("requests must hold at least one request, but 0 are given")
        contexts = _matrices(table.column("contexts").combine_chunks())
        if "mask" not in table.column_names:
            return contexts, None
        mask = table.column("mask").combine_chunks()
        nulls = mask.flatten().null_count
        if nulls:
            raise InputValueError(
                "mask must hold no nulls within a request's mask (a null mask, for the whole "
                f"request, means no mask), but {nulls} are"
            )
        return contexts, mask.to_pylist()
    except (pa.ArrowException, OSError) as exc:
        raise InputValueError(f"{NOT_ARROW}: {exc}") from None


def _read_stream(body: bytes, max_bytes: int) -> pa.Table:
    """The table of ``body``: its schema checked, then each record batch's decompressed size
    counted, then the batch read and validated in full (module notes)."""
    reader = pa.ipc.MessageReader.open_stream(body)
    try:
        first = reader.read_next_message()
    except StopIteration:
        raise InputValueError(f"{NOT_ARROW}: it holds no schema") from None
    if first.type != "schema":
        raise InputValueError(f"{NOT_ARROW}: it starts with a {first.type}, not a schema")
    schema = pa.ipc.read_schema(first)
    _check_schema(schema)
    batches, size = [], 0
    for message in reader:
        if message.type != "record batch":  # a dictionary batch, a second schema, a tensor
            raise InputValueError(
                f"{NOT_ARROW} of one schema and record batches: it holds a {message.type} "
                "message after its schema"
            )
        size += _decompressed_size(message)
        if size > max_bytes:
            raise PayloadTooLargeError(
                f"the request body must hold at most {max_bytes} bytes of Arrow buffers once "
                f"decompressed (the service's --max-body-bytes), but its record batches hold "
                f"{size} or more: split a batch into smaller ones"
            )
        batch = pa.ipc.read_record_batch(message, schema)
        batch.validate(full=True)
        batches.append(batch)
    return pa.Table.from_batches(batches, schema)


def _check_schema(schema: pa.Schema) -> None:
    """Refuse a schema of other columns than :data:`COLUMNS`, or of other types."""
    names = schema.names
    if "contexts" not in names or set(names) - set(COLUMNS) or len(set(names)) < len(names):
        raise InputValueError(
            f"an Arrow body must have the column contexts, and may have mask, each once, but "
            f"its columns are {names}"
        )
    column = schema.field("contexts").type
    if not (_is_list(column) and _is_list(column.value_type)):
        raise InputTypeError(
            "contexts must be a list of K rows per request, each row a list of d numbers "
            f"(list<list<float64>>), but it is {column}"
        )
    kind = column.value_type.value_type
    if not (pa.types.is_floating(kind) or pa.types.is_integer(kind)):
        raise InputTypeError(f"contexts must hold numbers, but they hold {kind}")
    if "mask" in names:
        kind = schema.field("mask").type
        if not _is_list(kind) or not pa.types.is_boolean(kind.value_type):
            raise InputTypeError(f"mask must be a list of booleans per request, but it is {kind}")


def _decompressed_size(message: pa.ipc.Message) -> int:
    """The bytes of a record batch message's buffers once decompressed, from its metadata and
    the uncompressed length that starts each compressed buffer (Arrow's ``BodyCompression``;
    an empty buffer has none), before anything is decompressed."""
    meta = _Flatbuffer(message.metadata.to_pybytes())
    root = meta.root()
    if meta.scalar(root, _HEADER_TYPE, "<B") != _RECORD_BATCH:
        raise InputValueError(f"{NOT_ARROW}: a record batch message has another header")
    batch = meta.table(root, _HEADER)
    compressed = meta.field(batch, _COMPRESSION) is not None
    count, start = meta.vector(batch, _BUFFERS)
    body = message.body
    size = 0
    for offset, length in meta.structs(_BUFFER, count, start):
        if offset < 0 or length < 0 or offset + length > body.size:
            raise InputValueError(
                f"{NOT_ARROW}: a buffer at {offset} of {length} bytes lies outside its message "
                f"body of {body.size} bytes"
            )
        if not (compressed and length):
            size += length
            continue
        if length < _INT64.size:
            raise InputValueError(f"{NOT_ARROW}: a compressed buffer of {length} bytes")
        (uncompressed,) = _INT64.unpack_from(body, offset)
        if uncompressed < _STORED:
            raise InputValueError(
                f"{NOT_ARROW}: a compressed buffer of {uncompressed} bytes uncompressed"
            )
        size += length - _INT64.size if uncompressed == _STORED else uncompressed
    return size


class _Flatbuffer:
    """The few reads of a flatbuffer that :func:`_decompressed_size` needs, each bounds-checked.

    The buffer starts with the offset of its root table (uint32, little endian, as every offset
    here, relative to where it is stored). A table starts with the signed offset back to its
    vtable (int32: vtable = table - value); the vtable holds its own size (uint16), the table's
    size (uint16), then one uint16 per field slot: the field's position in the table, 0 (or a
    slot beyond the vtable) for a field that is absent. A table or vector field holds the
    offset of its target; a vector is its length (uint32) and its elements, a struct's inline.
    """

    def __init__(self, data: bytes) -> None:
        self.data = data

    def _read(self, fmt: str, position: int) -> int:
        if not 0 <= position <= len(self.data) - struct.calcsize(fmt):
            raise InputValueError(f"{NOT_ARROW}: its metadata is damaged")
        return int(struct.unpack_from(fmt, self.data, position)[0])

    def root(self) -> int:
        """The position of the root table."""
        return self._read("<I", 0)

    def field(self, table: int, slot: int) -> int | None:
        """The position of field ``slot`` of ``table``, None if it is absent."""
        vtable = table - self._read("<i", table)
        if 4 + 2 * slot >= self._read("<H", vtable):
            return None
        at = self._read("<H", vtable + 4 + 2 * slot)
        return table + at if at else None

    def scalar(self, table: int, slot: int, fmt: str) -> int:
        """Scalar field ``slot`` of ``table`` (its default 0 when absent)."""
        at = self.field(table, slot)
        return 0 if at is None else self._read(fmt, at)

    def table(self, table: int, slot: int) -> int:
        """The position of the table that field ``slot`` of ``table`` points to."""
        at = self.field(table, slot)
        if at is None:
            raise InputValueError(f"{NOT_ARROW}: its metadata lacks a required field")
        return at + self._read("<I", at)

    def vector(self, table: int, slot: int) -> tuple[int, int]:
        """The length of the vector field ``slot`` of ``table`` and its first element's position
        (0 and 0 when absent)."""
        at = self.field(table, slot)
        if at is None:
            return 0, 0
        start = at + self._read("<I", at)
        return self._read("<I", start), start + 4

    def structs(self, kind: struct.Struct, count: int, start: int) -> list[tuple[int, ...]]:
        """``count`` structs ``kind`` from ``start``."""
        end = start + count * kind.size
        if end > len(self.data):
            raise InputValueError(f"{NOT_ARROW}: its metadata is damaged")
        return list(kind.iter_unpack(self.data[start:end]))


def _is_list(kind: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)
    )


def _matrices(column: pa.Array) -> NDArray[np.float64]:
    """The ``contexts`` column (its type checked) as one float64 array ``[B, K, d]``."""
    shape = [len(column)]
    values = column
    for _ in range(2):
        if values.null_count:
            raise InputValueError(f"contexts must have no nulls, but {values.null_count} are")
        if pa.types.is_fixed_size_list(values.type):  # one length, its type's (the client's)
            low = high = values.type.list_size
        elif len(values):
            lengths = pc.list_value_length(values)
            low, high = pc.min(lengths).as_py(), pc.max(lengths).as_py()
        else:
            low = high = 0
        if low != high:
            raise InputValueError(
                f"contexts must be of one shape [K, d] in an Arrow body (send requests of "
                f"different shapes as JSON), but their lengths run from {low} to {high}"
            )
        shape.append(low)
        values = values.flatten()
    if values.null_count:
        raise InputValueError(f"contexts must have no nulls, but {values.null_count} are")
    return values.to_numpy(zero_copy_only=False).astype(np.float64, copy=False).reshape(shape)


def decisions_table(decided: Decided) -> bytes:
    """The Arrow IPC stream that answers the decisions ``decided`` (module notes)."""
    K = len(decided.mean[0])

    def lists(rows: list[NDArray[np.float64]]) -> pa.Array:
        return pa.FixedSizeListArray.from_arrays(pa.array(np.concatenate(rows)), K)

    table = pa.table(
        {
            "decision_id": pa.array(decided.ids, pa.string()),
            "arm": pa.array(decided.arms, pa.int64()),
            "propensity": pa.array(decided.propensities, pa.float64()),
            "mean": lists(decided.mean),
            "width": lists(decided.width),
            "model_version": pa.array(np.full(len(decided), decided.model_version, np.int64)),
        }
    )
    return to_stream(table)


def requests_table(contexts: NDArray[np.float64], masks: list[Any] | None = None) -> bytes:
    """The Arrow body of the requests ``contexts`` ``[B, K, d]`` (a client's side)."""
    K, d = contexts.shape[1:]
    flat = pa.array(np.ascontiguousarray(contexts, dtype=np.float64).ravel())
    rows = pa.FixedSizeListArray.from_arrays(flat, d)
    columns = {"contexts": pa.FixedSizeListArray.from_arrays(rows, K)}
    if masks is not None:
        columns["mask"] = pa.array(
            [None if m is None else np.asarray(m, dtype=bool).tolist() for m in masks],
            pa.list_(pa.bool_()),
        )
    return to_stream(pa.table(columns))


def read_table(body: bytes) -> pa.Table:
    """The table of an Arrow IPC stream (the client's reading of an answer), validated in full
    before it is returned: a malformed stream raises
    :class:`~deepbandits.errors.InputValueError` rather than crash whoever reads it."""
    try:
        table = pa.ipc.open_stream(body).read_all()
        table.validate(full=True)
    except (pa.ArrowException, OSError) as exc:
        raise InputValueError(f"the body is not a valid Arrow IPC stream: {exc}") from None
    return table


def to_stream(table: pa.Table) -> bytes:
    """``table`` as the bytes of an Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())
