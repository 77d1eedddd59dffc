"""Dataset readers on tiny fixtures written in each canonical format (never the real data)."""

import gzip
import hashlib
import os
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

from deepbandits.datasets import (
    Checksum,
    DatasetFileError,
    DownloadError,
    catalog,
    data_home,
    fetch,
    load_dataset,
)
from deepbandits.datasets.formats import read_cifar_batch, read_idx
from deepbandits.datasets.sources import extract_cifar


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    """Parsed-array caches go to a temporary cache folder, never to the user's; the fixtures
    written under the canonical file names are not the canonical files (no known checksum)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("DEEPBANDITS_DATA", raising=False)
    monkeypatch.setattr(catalog, "CANONICAL", {})


# ------------------------------------------------------------------------------- writers
def write_idx(path: Path, array: np.ndarray) -> None:
    header = bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def make_mnist(root: Path, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    folder = root / "mnist"
    folder.mkdir(parents=True)
    images, labels = [], []
    for split, n in (("train", 6), ("t10k", 4)):
        x = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
        y = rng.integers(0, 10, n, dtype=np.uint8)
        write_idx(folder / f"{split}-images-idx3-ubyte.gz", x)
        write_idx(folder / f"{split}-labels-idx1-ubyte.gz", y)
        images.append(x.reshape(n, -1))
        labels.append(y)
    return np.concatenate(images), np.concatenate(labels)


def write_cifar_batch(path: Path, data: np.ndarray, labels: list[int]) -> None:
    batch = {b"batch_label": b"training batch", b"labels": labels, b"data": data}
    path.write_bytes(pickle.dumps(batch, protocol=2))


def make_shuttle(root: Path, rng: np.random.Generator) -> np.ndarray:
    folder = root / "shuttle"
    folder.mkdir(parents=True)
    rows = np.column_stack([rng.integers(-50, 100, (12, 9)), rng.integers(1, 8, 12)])
    for name, part in (("shuttle.trn", rows[:8]), ("shuttle.tst", rows[8:])):
        (folder / name).write_text("\n".join(" ".join(map(str, r)) for r in part) + "\n")
    return rows


def make_covertype(root: Path, rng: np.random.Generator) -> np.ndarray:
    folder = root / "covertype"
    folder.mkdir(parents=True)
    rows = np.column_stack([rng.integers(0, 4000, (15, 54)), rng.integers(1, 8, 15)])
    text = "\n".join(",".join(map(str, r)) for r in rows) + "\n"
    with gzip.open(folder / "covtype.data.gz", "wt") as f:
        f.write(text)
    return rows


# -------------------------------------------------------------------------------- MNIST
def test_mnist_idx_files_parse_exactly_and_are_cached(tmp_path, monkeypatch):
    X, y = make_mnist(tmp_path, np.random.default_rng(0))
    ds = load_dataset("mnist", tmp_path, download=False)
    np.testing.assert_array_equal(ds.X, X)
    np.testing.assert_array_equal(ds.y, y)
    cached = list((tmp_path / "mnist").glob("mnist.*.npz"))
    assert len(cached) == 1  # next to the sources, which are writable here

    def no_parsing(*args):
        raise AssertionError("the sources were parsed again")

    spec = catalog.SPECS["mnist"]
    monkeypatch.setitem(
        catalog.SPECS, "mnist", catalog.Spec(**{**spec.__dict__, "read": no_parsing})
    )
    np.testing.assert_array_equal(load_dataset("mnist", tmp_path, download=False).X, X)


def test_cache_is_rebuilt_when_a_source_changes(tmp_path):
    rng = np.random.default_rng(1)
    make_mnist(tmp_path, rng)
    load_dataset("mnist", tmp_path, download=False)
    new_labels = np.array([9, 9, 9, 9, 9, 9], dtype=np.uint8)
    path = tmp_path / "mnist" / "train-labels-idx1-ubyte.gz"
    before = path.stat().st_mtime_ns
    write_idx(path, new_labels)
    os.utime(path, ns=(before + 10**9, before + 10**9))  # a later edit: a later time stamp
    ds = load_dataset("mnist", tmp_path, download=False)
    np.testing.assert_array_equal(ds.y[:6], new_labels)
    assert len(list((tmp_path / "mnist").glob("mnist.*.npz"))) == 1  # the stale one is gone


def test_read_only_folder_caches_in_the_cache_folder(tmp_path):
    make_mnist(tmp_path, np.random.default_rng(2))
    folder = tmp_path / "mnist"
    os.chmod(folder, 0o555)
    try:
        load_dataset("mnist", tmp_path, download=False)
        assert not list(folder.glob("*.npz"))
        assert list((tmp_path / "xdg" / "deepbandits" / "converted").glob("mnist.*.npz"))
    finally:
        os.chmod(folder, 0o755)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda raw: raw[:-10], "truncated"),
        (lambda raw: b"\x00\x00\x07\x03" + raw[4:], "not an IDX file"),
        (lambda raw: raw + b"\x00", "trailing bytes"),
    ],
)
def test_damaged_idx_file_is_named(tmp_path, damage, message):
    path = tmp_path / "x.gz"
    write_idx(path, np.zeros((3, 4, 4), dtype=np.uint8))
    raw = damage(gzip.decompress(path.read_bytes()))
    path.write_bytes(gzip.compress(raw))
    with pytest.raises(DatasetFileError, match=message) as err:
        read_idx(path)
    assert str(path) in str(err.value)


def test_truncated_gzip_is_named(tmp_path):
    make_mnist(tmp_path, np.random.default_rng(3))
    path = tmp_path / "mnist" / "train-images-idx3-ubyte.gz"
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(DatasetFileError, match="gzip") as err:
        load_dataset("mnist", tmp_path, download=False)
    assert "train-images-idx3-ubyte.gz" in str(err.value)


# ------------------------------------------------------------------------------ CIFAR-10
def test_cifar_uses_the_batches_present_and_says_so(tmp_path):
    rng = np.random.default_rng(4)
    folder = tmp_path / "cifar10"
    folder.mkdir()
    parts = []
    for name in ("data_batch_2", "data_batch_3"):  # no batch 1: any subset is used
        data = rng.integers(0, 256, (5, 3072), dtype=np.uint8)
        labels = rng.integers(0, 10, 5).tolist()
        write_cifar_batch(folder / name, data, labels)
        parts.append((data, labels))
    with pytest.warns(UserWarning, match="partial CIFAR-10"):
        ds = load_dataset("cifar10", tmp_path, download=False)
    np.testing.assert_array_equal(ds.X, np.concatenate([p[0] for p in parts]))
    np.testing.assert_array_equal(ds.y, np.concatenate([p[1] for p in parts]))
    assert "data_batch_1" in ds.note and "test_batch" in ds.note and "10 images" in ds.note
    with pytest.raises(FileNotFoundError, match="any of data_batch_1"):
        load_dataset("cifar10", tmp_path / "empty", download=False)


class _Exploit:
    def __reduce__(self):
        return (os.system, ("echo pwned > " + str(self.target),))


def test_malicious_cifar_pickle_cannot_run_code(tmp_path):
    target = tmp_path / "pwned"
    exploit = _Exploit()
    exploit.target = target
    path = tmp_path / "data_batch_1"
    path.write_bytes(pickle.dumps({b"data": exploit, b"labels": [0]}, protocol=2))
    with pytest.raises(DatasetFileError, match="forbidden global") as err:
        read_cifar_batch(path)
    assert "posix.system" in str(err.value) or "os.system" in str(err.value)
    assert not target.exists()


def test_truncated_or_wrong_cifar_batch_is_named(tmp_path):
    path = tmp_path / "data_batch_1"
    write_cifar_batch(path, np.zeros((4, 3072), dtype=np.uint8), [1, 2, 3, 4])
    path.write_bytes(path.read_bytes()[:-500])
    with pytest.raises(DatasetFileError, match="data_batch_1"):
        read_cifar_batch(path)
    write_cifar_batch(path, np.zeros((4, 100), dtype=np.uint8), [1, 2, 3, 4])
    with pytest.raises(DatasetFileError, match=r"\[n, 3072\]"):
        read_cifar_batch(path)
    write_cifar_batch(path, np.zeros((2, 3072), dtype=np.float32), [1, 2])
    with pytest.raises(DatasetFileError, match="not uint8"):
        read_cifar_batch(path)


# ---------------------------------------------------------------------- UCI tables
def test_shuttle_and_covertype_parse_exactly(tmp_path):
    rng = np.random.default_rng(5)
    shuttle = make_shuttle(tmp_path, rng)
    ds = load_dataset("shuttle", tmp_path, download=False)
    np.testing.assert_array_equal(ds.X, shuttle[:, :9])
    np.testing.assert_array_equal(ds.y, shuttle[:, 9] - 1)
    cov = make_covertype(tmp_path, rng)
    ds = load_dataset("covertype", tmp_path, download=False)
    np.testing.assert_array_equal(ds.X, cov[:, :54])
    np.testing.assert_array_equal(ds.y, cov[:, 54] - 1)


def test_malformed_table_row_is_named(tmp_path):
    make_shuttle(tmp_path, np.random.default_rng(6))
    path = tmp_path / "shuttle" / "shuttle.tst"
    path.write_text(path.read_text() + "1 2 3\n")
    with pytest.raises(DatasetFileError, match=r"shuttle\.tst"):
        load_dataset("shuttle", tmp_path, download=False)


def test_truncated_covertype_gzip_is_named(tmp_path):
    make_covertype(tmp_path, np.random.default_rng(7))
    path = tmp_path / "covertype" / "covtype.data.gz"
    path.write_bytes(path.read_bytes()[:-30])
    with pytest.raises(DatasetFileError, match=r"covtype\.data\.gz"):
        load_dataset("covertype", tmp_path, download=False)


# ---------------------------------------------------------------- location and download
def test_data_directory_resolution(tmp_path, monkeypatch):
    assert data_home(tmp_path / "a") == tmp_path / "a"
    monkeypatch.setenv("DEEPBANDITS_DATA", str(tmp_path / "b"))
    assert data_home() == tmp_path / "b"
    assert data_home(tmp_path / "a") == tmp_path / "a"
    monkeypatch.delenv("DEEPBANDITS_DATA")
    assert data_home() == tmp_path / "xdg" / "deepbandits" / "data"


def test_missing_file_offline_says_which_where_and_how(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        load_dataset("shuttle", tmp_path, download=False)
    text = str(err.value)
    assert "shuttle.trn" in text and str(tmp_path / "shuttle") in text
    assert "DEEPBANDITS_DATA" in text and "UCI" in text


def serve_shuttle(monkeypatch, tmp_path, *, right_checksum: bool):
    """Point the shuttle sources at local file:// URLs (an offline stand-in for UCI)."""
    rows = make_shuttle(tmp_path / "server", np.random.default_rng(8))
    served = tmp_path / "server" / "shuttle"
    digest = hashlib.sha256((served / "shuttle.tst").read_bytes()).hexdigest()
    checksum = Checksum("sha256", digest if right_checksum else "0" * 64)
    sources = {
        "shuttle.trn": catalog.Source((served / "shuttle.trn").as_uri(), None),
        "shuttle.tst": catalog.Source((served / "shuttle.tst").as_uri(), checksum),
    }
    spec = catalog.SPECS["shuttle"]
    patched = catalog.Spec(**{**spec.__dict__, "sources": sources})
    monkeypatch.setitem(catalog.SPECS, "shuttle", patched)
    return rows


def test_download_checks_the_checksum(tmp_path, monkeypatch):
    rows = serve_shuttle(monkeypatch, tmp_path, right_checksum=True)
    ds = load_dataset("shuttle", tmp_path / "data")
    np.testing.assert_array_equal(ds.y, rows[:, 9] - 1)
    assert (tmp_path / "data" / "shuttle" / "shuttle.tst").is_file()
    assert not list((tmp_path / "data" / "shuttle").glob("*.part"))


def test_download_with_a_wrong_checksum_is_discarded(tmp_path, monkeypatch):
    serve_shuttle(monkeypatch, tmp_path, right_checksum=False)
    with pytest.raises(FileNotFoundError, match="not the published") as err:
        load_dataset("shuttle", tmp_path / "data")
    assert "download failed" in str(err.value)
    assert not (tmp_path / "data" / "shuttle" / "shuttle.tst").exists()
    assert not list((tmp_path / "data" / "shuttle").glob("*.part"))


def test_fetch_reports_an_unreachable_url(tmp_path):
    with pytest.raises(DownloadError, match="could not download"):
        fetch((tmp_path / "nothing-here").as_uri(), tmp_path / "out", None)
    assert not (tmp_path / "out").exists()


def test_checksum_of_gzip_content_ignores_the_wrapper(tmp_path):
    a, b = tmp_path / "a.gz", tmp_path / "b.gz"
    a.write_bytes(gzip.compress(b"same content", compresslevel=1, mtime=0))
    b.write_bytes(gzip.compress(b"same content", compresslevel=9, mtime=5))
    digest = hashlib.sha256(b"same content").hexdigest()
    assert Checksum("sha256", digest, of="gzip").matches(a)
    assert Checksum("sha256", digest, of="gzip").matches(b)
    assert not Checksum("sha256", digest).matches(a)


def lzw_compress_literals(data: bytes) -> bytes:
    """A valid Unix ``compress`` (.Z) stream that codes every byte as a 9-bit literal.

    Each code adds one dictionary entry on the decoder's side, so fewer than 256 codes never
    reach the 10-bit width; codes are packed least-significant bit first.
    """
    assert len(data) < 250
    bits = sum(byte << (9 * i) for i, byte in enumerate(data))
    n_bytes = (9 * len(data) + 7) // 8
    return bytes([0x1F, 0x9D, 16]) + bits.to_bytes(n_bytes, "little")


def test_shuttle_trn_is_downloaded_as_z_and_checked_after_decompression(tmp_path, monkeypatch):
    text = b"1 2 3 4 5 6 7 8 9 1\n10 20 30 40 50 60 70 80 90 4\n"
    z_file = tmp_path / "server" / "shuttle.trn.Z"
    z_file.parent.mkdir()
    z_file.write_bytes(lzw_compress_literals(text))
    (tmp_path / "server" / "shuttle.tst").write_bytes(text)
    digest = hashlib.sha256(text).hexdigest()

    def serve(trn_digest):
        sources = {
            "shuttle.trn": catalog.Source(
                z_file.as_uri(),
                None,
                catalog.SPECS["shuttle"].sources["shuttle.trn"].unpack,
                "shuttle.trn.Z",
                Checksum("sha256", trn_digest),
            ),
            "shuttle.tst": catalog.Source((tmp_path / "server" / "shuttle.tst").as_uri(), None),
        }
        spec = catalog.SPECS["shuttle"]
        monkeypatch.setitem(
            catalog.SPECS, "shuttle", catalog.Spec(**{**spec.__dict__, "sources": sources})
        )

    serve("f" * 64)
    with pytest.raises(FileNotFoundError, match=r"unpacked to a shuttle\.trn"):
        load_dataset("shuttle", tmp_path / "bad")
    assert not (tmp_path / "bad" / "shuttle" / "shuttle.trn").exists()
    serve(digest)
    ds = load_dataset("shuttle", tmp_path / "good")
    np.testing.assert_array_equal(ds.y, [0, 3, 0, 3])
    assert (tmp_path / "good" / "shuttle" / "shuttle.trn").read_bytes() == text
    assert not (tmp_path / "good" / "shuttle" / "shuttle.trn.Z").exists()


def test_cifar_archive_extracts_only_the_known_batch_files(tmp_path, monkeypatch):
    import io
    import tarfile

    staging = tmp_path / "staging"
    staging.mkdir()
    write_cifar_batch(staging / "b1", np.full((3, 3072), 7, dtype=np.uint8), [1, 2, 3])
    archive = tmp_path / "cifar-10-python.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(staging / "b1", arcname="cifar-10-batches-py/data_batch_1")
        evil = tarfile.TarInfo("../evil.txt")
        payload = b"should never be written"
        evil.size = len(payload)
        tar.addfile(evil, io.BytesIO(payload))
    md5 = hashlib.md5(archive.read_bytes()).hexdigest()
    source = catalog.Source(archive.as_uri(), Checksum("md5", md5), extract_cifar, archive.name)
    spec = catalog.SPECS["cifar10"]
    sources = dict.fromkeys(spec.sources, source)
    monkeypatch.setitem(
        catalog.SPECS, "cifar10", catalog.Spec(**{**spec.__dict__, "sources": sources})
    )
    with pytest.warns(UserWarning, match="missing data_batch_2"):
        ds = load_dataset("cifar10", tmp_path / "data")
    np.testing.assert_array_equal(ds.y, [1, 2, 3])
    assert not (tmp_path / "data" / "evil.txt").exists() and not (tmp_path / "evil.txt").exists()
    assert sorted(
        p.name for p in (tmp_path / "data" / "cifar10").iterdir() if p.suffix != ".npz"
    ) == ["data_batch_1"]


# ------------------------------------------------------------------ recommended / paper settings
def test_a_dataset_gives_its_recommended_settings_and_the_papers_one_keyword_away(tmp_path):
    import deepbandits as db
    from deepbandits.envs.settings import PAPER_DEFAULTS, RECOMMENDED
    from deepbandits.networks.schedule import Training

    make_mnist(tmp_path, np.random.default_rng(3))
    env = db.make_env("mnist", data_dir=tmp_path, download=False)
    assert env.settings == "recommended" and env.preprocess == "standardize-global"
    assert env.policy_defaults == RECOMMENDED["mnist"]["*"]
    neural = db.make_policy("neural-sigma2-linucb", env=env).get_params()
    assert (neural["lr"], neural["train_steps"], neural["refit_on_update"]) == (0.1, 100, True)
    assert neural["lam"] == 1.0  # LinUCB's λ is LinUCB's alone
    assert (neural["range_confidence"], neural["alpha"]) == (1.0, 0.1)  # Neural-σ²-LinUCB's alone
    linear = db.make_policy("neural-linucb", env=env).get_params()
    assert (linear["range_confidence"], linear["alpha"]) == (0.0, 0.02)
    ucb = db.make_policy("neural-ucb", env=env)  # EE-Net's width, λ and ν on the LeNet trunk
    p = ucb.get_params()
    assert (p["hidden"], p["lam"], p["alpha"], p["lr"]) == (100, 0.001, 0.01, 0.1)
    warmup = (100, 16, 0.05)  # every network's, on the LeNet trunk
    for params in (p, neural, linear):
        assert params["network"] == "lenet"
        assert (params["warmup_steps"], params["warmup_batch_size"], params["warmup_lr"]) == warmup
    assert ucb.train_schedule_.training(999) == Training(*warmup)  # before t₀ = 1,000
    assert ucb.train_schedule_.training(1000) == Training(100, 64)  # the ridge family's after
    assert db.make_policy("linucb", env=env).get_params()["lam"] == 100.0
    assert db.make_policy("linucb", env=env, lam=2.0).get_params()["lam"] == 2.0  # the user's wins

    paper = db.make_env("mnist", data_dir=tmp_path, download=False, settings="paper")
    assert paper.preprocess == "l2" and paper.get_params()["settings"] == "paper"
    assert paper.policy_defaults == PAPER_DEFAULTS["mnist"]["*"]
    assert db.make_policy("linucb", env=paper).get_params()["lam"] == 1.0
    given = db.make_env("mnist", data_dir=tmp_path, download=False, preprocess="none")
    assert given.preprocess == "none"
    with pytest.raises(db.errors.InputValueError, match="settings"):
        db.make_env("mnist", data_dir=tmp_path, download=False, settings="best")


RIDGE_NETWORKS = ("neural-lingreedy", "neural-linucb", "neural-sigma2-linucb", "save-neural-linucb")


def test_the_ridge_familys_new_defaults_reach_it_but_not_the_paper_datasets(tmp_path):
    """NEURAL_DEFAULTS (the "neural-linear" schedule, weight decay 0.005; chosen on h1, see
    benchmarks/results/defaults_h1_tuning.csv) reach the ridge family on data without settings;
    NeuralUCB, NeuralTS and BootstrappedNN keep the "default" schedule and no weight decay; and
    the paper datasets, under either setting, keep the schedule and the weight decay of before
    (their numbers, and MNIST's fast first-layer path, are measured with 0)."""
    import deepbandits as db
    from deepbandits.envs.settings import dataset_settings
    from deepbandits.networks.learner import SCHEDULE_FIELDS
    from deepbandits.networks.schedule import SCHEDULES, TrainSchedule, resolve_schedule

    new = TrainSchedule(train_every=100, train_start=2000, warmup_every=10, train_steps=300)
    assert SCHEDULES["neural-linear"] == new
    assert SCHEDULES["default"] == TrainSchedule(100, 2000, 50, 1000, 64)  # unchanged
    for name in RIDGE_NETWORKS:
        policy = db.make_policy(name)
        params = policy.get_params()
        assert (params["train_schedule"], params["weight_decay"]) == ("neural-linear", 0.005)
        assert policy.train_schedule_ == new
        named = db.make_policy(name, train_schedule="paper")  # a named schedule is that schedule
        assert named.train_schedule_ == SCHEDULES["paper"]
    for name in ("neural-ucb", "neural-ts", "bootstrapped-nn"):
        policy = db.make_policy(name)
        assert policy.get_params()["weight_decay"] == 0.0
        assert policy.train_schedule_ == SCHEDULES["default"]

    make_mnist(tmp_path, np.random.default_rng(3))
    expected = {
        "recommended": TrainSchedule(  # the LeNet trunk's: its warm-up for every network
            train_every=50,
            train_start=1000,
            warmup_every=10,
            train_steps=100,
            warmup_steps=100,
            warmup_batch_size=16,
            warmup_lr=0.05,
        ),
        "paper": TrainSchedule(
            train_every=10, train_start=10000, warmup_every=50, train_steps=1000
        ),
    }
    for settings, schedule in expected.items():
        env = db.make_env("mnist", data_dir=tmp_path, download=False, settings=settings)
        for name in RIDGE_NETWORKS:
            policy = db.make_policy(name, env=env)
            assert policy.get_params()["weight_decay"] == 0.0, (settings, name)
            assert policy.train_schedule_ == schedule, (settings, name)
        ucb = db.make_policy("neural-ucb", env=env).get_params()
        assert (ucb["train_schedule"], ucb["weight_decay"]) == ("default", 0.0)
    for dataset in ("mnist", "shuttle", "covertype", "cifar10"):
        for settings in ("recommended", "paper"):
            for name in RIDGE_NETWORKS:
                given = dataset_settings(dataset, settings, name)
                policy = db.make_policy(name, **given)
                before = resolve_schedule("default", {k: given.get(k) for k in SCHEDULE_FIELDS})
                assert policy.get_params()["weight_decay"] == 0.0, (dataset, settings, name)
                assert policy.train_schedule_ == before, (dataset, settings, name)


def test_your_own_data_gets_its_own_settings_only():
    import deepbandits as db

    X, y = np.random.default_rng(0).normal(size=(40, 3)), np.arange(40) % 4
    env = db.make_env("classification", X=X, y=y)
    cheaper = {"train_steps": 100, "lr": 0.03}
    assert env.policy_defaults == {} and env.policy_defaults_for("neural-ucb") == {}
    assert env.policy_defaults_for("linucb") == {"intercept": True, "alpha": 1.0}
    assert env.policy_defaults_for("neural-linucb") == {"lam": 0.25, "epsilon": 0.02, **cheaper}
    assert db.make_policy("neural-linucb", env=env).get_params()["lam"] == 0.25
    assert db.make_policy("neural-sigma2-linucb", env=env).get_params()["lam"] == 1.0
    assert env.policy_defaults_for("neural-sigma2-linucb") == {"range_confidence": 2.0, **cheaper}
    params = db.make_policy("neural-sigma2-linucb", env=env).get_params()
    assert (params["range_confidence"], params["train_steps"], params["lr"]) == (2, 100, 0.03)
    assert db.make_policy("neural-linucb", env=env).train_schedule_.train_steps == 100
    given = db.make_policy("neural-sigma2-linucb", env=env, range_confidence=0.0, train_steps=300)
    assert (given.get_params()["range_confidence"], given.train_schedule_.train_steps) == (0, 300)
    paper = db.make_env("classification", X=X, y=y, settings="paper")
    assert paper.policy_defaults == {} and paper.policy_defaults_for("linucb") == {}
    assert paper.policy_defaults_for("neural-sigma2-linucb") == {}
    assert db.make_policy("neural-linucb", env=paper).get_params()["lam"] == 1.0


def test_covertypes_prior_reaches_neural_sigma2_linucb_alone_and_not_the_papers_settings(tmp_path):
    """Covertype's recommended λ = 4 (eleventh round of the records) is Neural-σ²-LinUCB's only:
    its rounds weigh 1/σ̄² ≥ 4, the other networks' weigh 1; ``settings="paper"`` keeps λ = 1."""
    import deepbandits as db

    make_covertype(tmp_path, np.random.default_rng(3))
    env = db.make_env("covertype", data_dir=tmp_path, download=False)
    lam = {
        name: db.make_policy(name, env=env).get_params()["lam"]
        for name in ("neural-sigma2-linucb", "neural-linucb", "neural-ucb", "linucb")
    }
    assert lam == {
        "neural-sigma2-linucb": 4.0,
        "neural-linucb": 1.0,
        "neural-ucb": 1.0,
        "linucb": 1.0,
    }
    mine = db.make_policy("neural-sigma2-linucb", env=env, lam=2.0)
    assert mine.get_params()["lam"] == 2.0  # the user's wins
    paper = db.make_env("covertype", data_dir=tmp_path, download=False, settings="paper")
    assert db.make_policy("neural-sigma2-linucb", env=paper).get_params()["lam"] == 1.0
