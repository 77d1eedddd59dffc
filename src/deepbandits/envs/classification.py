"""Classification as a contextual bandit (Beygelzimer & Langford 2009; Section 5.2, Appendix B.2).

Each round draws one sample x ∈ ℝᴰ with label y. Arm k's context is x placed in block k of ℝᴷᴰ
(:func:`~deepbandits.encoding.block_encode`; ``encoding="dense"`` gives the same matrix as a
plain array); the reward is 1 for the arm of the true class and 0 otherwise, so the declared
reward range is [a, b] = [0, 1] and the expected reward of arm k is 1{k = y}. Labels (of any
type) are mapped to arms 0..K−1 in sorted order, as in the paper's code. Samples are visited in
an order shuffled by the seed, reshuffled after every pass over the data.

Preprocessing is a named step, ``preprocess``, applied to each sample before it is encoded (in
every round, in :meth:`ClassificationEnv.holdout` and :meth:`ClassificationEnv.contexts_for`):
``"standardize"`` (the default for your own data), ``"l2"`` (the paper's), ``"standardize+l2"``
or ``"none"``; :mod:`deepbandits.envs.preprocessing` says what each does and why
standardisation is the default for your own data.

``dynamic_range=True`` is the setting of Fig. ab_dynamic (b): from round T/2 on, the rewards are
3 for the true class and 1 otherwise, and the declared range moves from [0, 1] to [1, 3]. A live
system gets the contexts of its raw records from :meth:`ClassificationEnv.contexts_for`.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from deepbandits._validation import check_arm, check_bool, check_choice, check_int, check_seed
from deepbandits.datasets import load_dataset
from deepbandits.datasets.columns import FeatureColumns
from deepbandits.datasets.table import (
    TableError,
    pop_table_options,
    read_table,
    takes_table_options,
)
from deepbandits.encoding import Contexts, block_encode
from deepbandits.envs.base import Environment, Holdout, Round
from deepbandits.envs.labels import MAX_ARMS, encode_labels
from deepbandits.envs.preprocessing import (
    DATASET_PREPROCESS,
    DEFAULT_PREPROCESS,
    PREPROCESSING,
    RELATIVE_STD_FLOOR,
    REMOVED_KEYWORDS,
    apply_preprocess,
    check_finite_features,
    check_removed_keywords,
    column_statistics,
    preprocess_statistics,
)
from deepbandits.envs.records import Record, features_of
from deepbandits.envs.settings import SETTINGS, dataset_preprocess, dataset_settings
from deepbandits.errors import CallOrderError, InputTypeError, InputValueError

ENCODINGS = ("block", "dense")

# Defined beside the preprocessing they describe; importable from here as before.
__all__ = [
    "DATASET_PREPROCESS",
    "DEFAULT_PREPROCESS",
    "ENCODINGS",
    "PREPROCESSING",
    "RELATIVE_STD_FLOOR",
    "REMOVED_KEYWORDS",
    "ClassificationEnv",
    "check_finite_features",
    "check_removed_keywords",
    "column_statistics",
    "encode_labels",
]


class ClassificationEnv(Environment):
    """Contextual bandit built from any labelled data.

    Parameters
    ----------
    X : array ``[n, D]``
        Features: any real numeric or boolean dtype, all finite. Kept as given (a uint8 image
        array stays uint8); each sample is converted to float64 and preprocessed when drawn.
    y : array ``[n]``
        Labels of any one orderable type (strings, integers, ...); the K distinct values become
        arms 0..K−1 in sorted order. None / NaN / pandas NA are refused (the first such row is
        named), and so is a column that does not look like labels (``max_arms``,
        ``float_labels``).
    encoding : {"block", "dense"}, default="block"
        Arm contexts as :class:`~deepbandits.encoding.BlockContexts` or as the dense
        ``[K, K·D]`` array (the same numbers; the block form is K× cheaper for the policies).
    preprocess : {"standardize", "l2", "standardize+l2", "standardize-nonbinary", \
"standardize-global", "none"}, default="standardize"
        What is done to each sample before it is encoded (:mod:`~deepbandits.envs.preprocessing`
        says what each does, and why standardisation is the default for your own data):
        ``(x − mean) / scale`` per column with the statistics of the X given (those used are in
        :meth:`get_params`, ``"preprocess_stats"``), ``x / ‖x‖₂`` (the paper's), both, the
        first but for the 0/1 columns, which stay 0/1, the first with one mean and scale for
        all columns, or none.
    dynamic_range : bool, default=False
        Rewards {0, 1} before round ``horizon/2`` and {1, 3} from it on (Fig. ab_dynamic (b)).
    horizon : int, default=15000
        Length T of the run (used only by ``dynamic_range``); the runner sets it to the run's T.
    seed : int, optional
        Seed of the sample order.
    max_arms : int, default=100
        Most distinct labels accepted: a column with more (a numeric feature given as the
        label) is refused, naming it and its count, unless this is raised.
    float_labels : bool, default=False
        Accept float labels that are not whole numbers (refused by default: such a column is
        a measurement, and every value would be an arm).
    settings : {"recommended", "paper"}, default="recommended"
        On a paper dataset, what the policies get (:attr:`policy_defaults`) and, through
        :meth:`from_dataset`, the default ``preprocess`` (:mod:`deepbandits.envs.settings`).
    **removed
        Keywords of earlier versions: ``normalize`` raises ``InputValueError`` saying which
        ``preprocess`` replaces it (``"l2"`` for True, ``"none"`` for False).

    Attributes
    ----------
    classes_ : array ``[K]``
        The label of each arm.
    mean_, scale_ : arrays ``[D]`` or None
        The standardisation statistics (None when ``preprocess`` does not standardise).
    columns_ : FeatureColumns or None
        How a table's columns became X (:meth:`from_table`); None for arrays.
    row_ : int or None
        The row of X that the current round shows (None before the first round).
    """

    def __init__(
        self,
        X: ArrayLike,
        y: ArrayLike,
        *,
        encoding: str = "block",
        preprocess: str = DEFAULT_PREPROCESS,
        dynamic_range: bool = False,
        horizon: int = 15000,
        seed: int | None = None,
        max_arms: int = MAX_ARMS,
        float_labels: bool = False,
        settings: str = "recommended",
        **removed: Any,
    ) -> None:
        check_removed_keywords(removed)
        if removed:
            raise InputTypeError(
                f"ClassificationEnv got unexpected keyword argument(s) {', '.join(removed)}"
            )
        X = np.asarray(X)
        if X.ndim != 2 or not (
            X.dtype == np.bool_
            or (
                np.issubdtype(X.dtype, np.number) and not np.issubdtype(X.dtype, np.complexfloating)
            )
        ):
            raise InputTypeError(
                f"X must be a 2-d array of real numbers [n, D], but {X.dtype} {X.shape} is given"
            )
        if len(X) == 0:
            raise InputValueError("X has no samples")
        check_finite_features(X)
        self.classes_, self.labels = encode_labels(
            y, len(X), max_arms=max_arms, float_labels=float_labels
        )
        self.max_arms, self.float_labels = max_arms, float_labels
        self.X = X
        self.n_arms = len(self.classes_)
        self.encoding = check_choice(encoding, "encoding", ENCODINGS)
        self.preprocess = check_choice(preprocess, "preprocess", PREPROCESSING)
        self.dynamic_range = check_bool(dynamic_range, "dynamic_range")
        self.horizon = check_int(horizon, "horizon", minimum=1)
        self.seed = check_seed(seed)
        self.settings = check_choice(settings, "settings", SETTINGS)
        self.mean_, self.scale_ = preprocess_statistics(X, self.preprocess)
        self.dataset: str | None = None
        self.data_dir: str | None = None
        self.note = ""
        self.source: dict[str, Any] | None = None
        self.columns_: FeatureColumns | None = None
        self.reset(seed)

    @classmethod
    def from_dataset(
        cls,
        name: str,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        download: bool = True,
        **params: Any,
    ) -> ClassificationEnv:
        """The bandit of dataset ``name`` (:func:`~deepbandits.datasets.load_dataset`).

        ``params`` go to the constructor; ``preprocess`` defaults to the dataset's entry of
        :data:`DATASET_PREPROCESS`, or to "l2" (every sample L2-normalised, Section 5.2) with
        ``settings="paper"`` (:mod:`deepbandits.envs.settings`).
        """
        check_removed_keywords(params)
        params.setdefault("preprocess", dataset_preprocess(name, params.get("settings")))
        ds = load_dataset(name, data_dir, download=download)
        env = cls(ds.X, ds.y, **params)
        env.dataset, env.note = name, ds.note
        env.data_dir = None if data_dir is None else str(data_dir)
        return env

    @classmethod
    @takes_table_options
    def from_table(
        cls, path: str | os.PathLike[str], label: str | int, **params: Any
    ) -> ClassificationEnv:
        """The classification bandit of a table file: ``make_env("table", path=..., label=...)``.

        Parameters
        ----------
        path, label, features, categorical, dropna, header, delimiter, na_values, comment
            As in :func:`~deepbandits.datasets.table.read_table` (its keyword-only options,
            :data:`~deepbandits.datasets.table.TABLE_OPTIONS`, are taken from ``params``); the
            label by name or position (``label=-1``: the last column).
        **params
            The constructor's keywords (``preprocess``, default ``"standardize"``;
            ``encoding``, ``dynamic_range``, ``horizon``, ``seed``, ``max_arms``,
            ``float_labels``).

        Returns
        -------
        ClassificationEnv
            Its :meth:`get_params` records the file next to the bandit's own parameters
            (:meth:`~deepbandits.datasets.table.Table.provenance`; ``"summary"``: what was read
            and inferred, in one line), ``columns_`` how the columns were encoded (for
            :meth:`contexts_for`). No paper defaults: ``policy_defaults`` is empty.

        Raises
        ------
        TableError
            For the file and its columns, for a label column that does not look like one
            (``max_arms``, ``float_labels``; checked before the features), and for a
            constructor keyword out of range (the message then names the file).
        """
        check_removed_keywords(params)

        def check_label(y: pd.Series) -> None:
            # the bandit's label rules before read_table looks at the features: a column given
            # as the label by mistake is refused for what it is, not for another column
            encode_labels(
                y,
                len(y),
                max_arms=params.get("max_arms", MAX_ARMS),
                float_labels=params.get("float_labels", False),
            )

        table = read_table(path, label, **pop_table_options(params), check_label=check_label)
        try:
            env = cls(table.X, pd.Series(table.y, name=table.label), **params)
        except ValueError as exc:
            if isinstance(exc, TableError):
                raise
            raise TableError(f"{table.path!r}: {exc}") from exc
        env.source, env.columns_ = table.provenance(), table.encoder
        return env

    @property
    def n_features(self) -> int:
        """Context dimension K·D of an arm."""
        return self.n_arms * self.X.shape[1]

    @property
    def policy_defaults(self) -> dict[str, Any]:
        """The settings of this dataset (``settings``: the recommended ones, or the paper's of
        Appendix B.2) that every policy taking them gets unless given explicitly; empty for
        your own data (arrays or a table). :mod:`deepbandits.envs.settings` has them."""
        return dataset_settings(self.dataset, self.settings, None)

    def policy_defaults_for(self, policy: str) -> dict[str, Any]:
        """:attr:`policy_defaults` with those of ``policy`` (a registry name) alone."""
        return dataset_settings(self.dataset, self.settings, policy)

    def get_params(self) -> dict[str, Any]:
        params: dict[str, Any] = {
            "encoding": self.encoding,
            "preprocess": self.preprocess,
            "dynamic_range": self.dynamic_range,
            "horizon": self.horizon,
            "seed": self.seed,
            "max_arms": self.max_arms,
            "float_labels": self.float_labels,
            "settings": self.settings,
        }
        if self.mean_ is not None and self.scale_ is not None:
            params["preprocess_stats"] = {
                "mean": [float(v) for v in self.mean_],
                "scale": [float(v) for v in self.scale_],
            }
        if self.dataset is not None:
            params.update(dataset=self.dataset, data_dir=self.data_dir, note=self.note)
        elif self.source is not None:
            params.update(self.source)
        else:
            digest = hashlib.sha256(np.ascontiguousarray(self.X).tobytes())
            digest.update(np.ascontiguousarray(self.labels).tobytes())
            params["data"] = f"arrays X {self.X.shape} {self.X.dtype}, sha256 {digest.hexdigest()}"
        params.update(n_samples=len(self.X), n_arms=self.n_arms)
        return params

    def reset(self, seed: int | None = None) -> ClassificationEnv:
        if seed is not None:
            self.seed = check_seed(seed)
        self._rng = np.random.default_rng(self.seed)
        self._order = self._rng.permutation(len(self.X))
        self.t = 0
        self._label: int | None = None
        self.row_: int | None = None
        return self

    def reward_range_at(self, t: int) -> tuple[float, float]:
        """Declared range of round ``t`` (0-based)."""
        return (1.0, 3.0) if self.dynamic_range and t >= self.horizon // 2 else (0.0, 1.0)

    @property
    def reward_range(self) -> tuple[float, float]:
        """The declared range [a, b] of the current round (of the first before any round), as
        every environment has it: [0, 1], or [1, 3] from round ``horizon/2`` on with
        ``dynamic_range``."""
        return self.reward_range_at(max(self.t - 1, 0))

    def contexts_for(self, record: Record) -> Contexts | list[Contexts]:
        """The arm contexts of raw records, encoded exactly as this environment's rounds.

        Parameters
        ----------
        record : dict, pandas Series or DataFrame, or array
            A table bandit's record of the file's original columns (a dict or a Series; other
            keys, the label say, are ignored; categorical columns hold their raw values), or a
            DataFrame of records; or feature vectors as the rows of X, ``[D]`` or ``[m, D]``.

        Returns
        -------
        BlockContexts or array ``[K, K·D]``, or a list of them (one per record)
            As :meth:`next_round` gives them: one-hot encoding, ``preprocess`` with this
            environment's statistics, ``encoding`` of the arms (:mod:`~deepbandits.envs.records`).

        Raises
        ------
        TableError
            A record that misses a feature column or a value, or holds a category the table
            does not have or a non-number in a numeric column.
        """
        rows, single = features_of(record, self.columns_, self.X.shape[1])
        contexts = [self._arms(x) for x in self._preprocess(rows)]
        return contexts[0] if single else contexts

    def _arms(self, x: NDArray[np.float64]) -> Contexts:
        """One preprocessed sample's arm contexts in this environment's ``encoding``."""
        contexts = block_encode(x, self.n_arms)
        return contexts if self.encoding == "block" else contexts.dense()

    def transform(self, x: Record) -> NDArray[np.float64]:
        """Apply this environment's ``preprocess`` to samples ``x`` (``[D]`` or ``[m, D]``, or
        a table's raw records as :meth:`contexts_for` takes them), with the statistics of its
        X; returns a new float64 array (``[D]`` for one sample)."""
        rows, single = features_of(x, self.columns_, self.X.shape[1])
        out = self._preprocess(rows)
        return out[0] if single else out

    def sample(self, i: int) -> NDArray[np.float64]:
        """Features of sample ``i`` as float64, preprocessed (``preprocess``)."""
        return self._preprocess(self.X[i].astype(np.float64))

    def _preprocess(self, x: NDArray[np.float64]) -> NDArray[np.float64]:
        """``preprocess`` applied in place to float64 samples (``[D]`` or ``[m, D]``)."""
        return apply_preprocess(x, self.preprocess, self.mean_, self.scale_)

    def variance_bound(self) -> float:
        """Rewards are deterministic given the sample: Var(rₜ) = 0."""
        return 0.0

    def holdout(self, n: int) -> Holdout:
        """The last ``n`` samples of the seed's first shuffled pass: never played in a run of
        T ≤ N − n rounds. Rewards as in round 1 (range [0, 1])."""
        n = check_int(n, "n", minimum=1)
        order = np.random.default_rng(self.seed).permutation(len(self.X))
        if n >= len(order):
            raise InputValueError(f"a hold-out set of {n} needs more than the {len(order)} samples")
        contexts, expected = [], np.zeros((n, self.n_arms))
        for row, i in enumerate(order[-n:]):
            contexts.append(self._arms(self.sample(int(i))))
            expected[row, self.labels[i]] = 1.0
        return Holdout(contexts, expected, expected.copy())

    def next_round(self) -> Round:
        n = len(self.X)
        if self.t and self.t % n == 0:
            self._order = self._rng.permutation(n)
        i = int(self._order[self.t % n])
        self.row_ = i
        a, b = self.reward_range_at(self.t)
        expected = np.full(self.n_arms, a)
        expected[self.labels[i]] = b
        self._label = int(self.labels[i])
        self._expected = expected
        self.t += 1
        return Round(
            contexts=self._arms(self.sample(i)),
            expected_rewards=expected,
            sigma2=0.0,
            reward_range=(a, b),
        )

    def reward(self, arm: int) -> float:
        if self._label is None:
            raise CallOrderError("call next_round() before reward()")
        return float(self._expected[check_arm(arm, self.n_arms)])
