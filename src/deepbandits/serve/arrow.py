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
:class:`~deepbandits.errors.InputValueError` naming the column (422).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numpy.typing import NDArray

from deepbandits.errors import InputTypeError, InputValueError

if TYPE_CHECKING:  # the client reads these tables without the policies (torch)
    from deepbandits.policies import Decision

MEDIA_TYPE = "application/vnd.apache.arrow.stream"
COLUMNS = ("contexts", "mask")


def read_requests(body: bytes) -> tuple[NDArray[np.float64], list[Any] | None]:
    """The requests of an Arrow body: every request's contexts ``[B, K, d]`` and the masks
    (None when the body has no mask column)."""
    try:
        table = pa.ipc.open_stream(body).read_all()
    except (pa.ArrowException, OSError) as exc:
        raise InputValueError(f"the request body is not an Arrow IPC stream ({exc})") from None
    names = table.column_names
    if "contexts" not in names or set(names) - set(COLUMNS):
        raise InputValueError(
            f"an Arrow body must have the column contexts, and may have mask, but its columns "
            f"are {names}"
        )
    if table.num_rows == 0:
        raise InputValueError("requests must hold at least one request, but 0 are given")
    contexts = _matrices(table.column("contexts").combine_chunks())
    if "mask" not in names:
        return contexts, None
    mask = table.column("mask").combine_chunks()
    if not _is_list(mask.type) or not pa.types.is_boolean(mask.type.value_type):
        raise InputTypeError(f"mask must be a list of booleans per request, but it is {mask.type}")
    return contexts, mask.to_pylist()


def _is_list(kind: pa.DataType) -> bool:
    return bool(
        pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)
    )


def _matrices(column: pa.Array) -> NDArray[np.float64]:
    """The ``contexts`` column as one float64 array ``[B, K, d]``."""
    shape = [len(column)]
    values = column
    for what in ("a list of K rows per request", "each row a list of d numbers"):
        if not _is_list(values.type):
            raise InputTypeError(
                f"contexts must be {what} (list<list<float64>>), but it is {column.type}"
            )
        if values.null_count:
            raise InputValueError(f"contexts must have no nulls, but {values.null_count} are")
        lengths = pc.list_value_length(values)
        low, high = pc.min(lengths).as_py(), pc.max(lengths).as_py()
        if low != high:
            raise InputValueError(
                f"contexts must be of one shape [K, d] in an Arrow body (send requests of "
                f"different shapes as JSON), but their lengths run from {low} to {high}"
            )
        shape.append(low)
        values = values.flatten()
    if not (pa.types.is_floating(values.type) or pa.types.is_integer(values.type)):
        raise InputTypeError(f"contexts must hold numbers, but they hold {values.type}")
    if values.null_count:
        raise InputValueError(f"contexts must have no nulls, but {values.null_count} are")
    return values.to_numpy(zero_copy_only=False).astype(np.float64, copy=False).reshape(shape)


def decisions_table(decisions: list[Decision], model_version: int) -> bytes:
    """The Arrow IPC stream that answers ``decisions`` (module notes)."""
    K = len(decisions[0].mean)

    def lists(rows: list[NDArray[np.float64]]) -> pa.Array:
        return pa.FixedSizeListArray.from_arrays(pa.array(np.concatenate(rows)), K)

    table = pa.table(
        {
            "decision_id": pa.array([d.id for d in decisions], pa.string()),
            "arm": pa.array([d.arm for d in decisions], pa.int64()),
            "propensity": pa.array([d.propensity for d in decisions], pa.float64()),
            "mean": lists([d.mean for d in decisions]),
            "width": lists([d.width for d in decisions]),
            "model_version": pa.array(np.full(len(decisions), model_version, np.int64)),
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
    """The table of an Arrow IPC stream."""
    return pa.ipc.open_stream(body).read_all()


def to_stream(table: pa.Table) -> bytes:
    """``table`` as the bytes of an Arrow IPC stream."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())
