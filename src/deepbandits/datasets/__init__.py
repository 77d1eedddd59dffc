"""Real classification datasets read from their canonical files (Section 5.2, Appendix B.2)."""

from deepbandits.datasets.catalog import Dataset, dataset_names, load_dataset
from deepbandits.datasets.download import Checksum, DownloadError, fetch
from deepbandits.datasets.formats import DatasetFileError, RestrictedUnpickler
from deepbandits.datasets.location import ENV_VAR, cache_home, data_home

__all__ = [
    "ENV_VAR",
    "Checksum",
    "Dataset",
    "DatasetFileError",
    "DownloadError",
    "RestrictedUnpickler",
    "cache_home",
    "data_home",
    "dataset_names",
    "fetch",
    "load_dataset",
]
