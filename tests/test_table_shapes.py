"""Table files in the shapes they are published in (issue 49 §1), read with no editing from
Python (``read_table``, ``make_env("table", ...)``) and from the command line: UCI's ``.data``
(numbers then a class name, no header), the label first, whitespace-separated ``.dat`` and
``.txt``, tab-separated ``.txt``/``.tsv``, semicolon ``.csv`` (with decimal commas too),
``.csv.gz`` and Parquet; the one-line summary of what was inferred, and the errors."""

import gzip
import json
import re

import numpy as np
import pandas as pd
import pytest

import deepbandits as db
from deepbandits.cli import main
from deepbandits.datasets.layout import detect_layout
from deepbandits.envs import TableError, read_table

N = 30
CLASSES = ["Iris-setosa", "Iris-versicolor", "Iris-virginica"]


def measurements(n: int = N, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Four measurements with one decimal and a class name per row."""
    rng = np.random.default_rng(seed)
    y = np.array(CLASSES)[np.arange(n) % 3]
    X = np.round(rng.uniform(0.5, 7.5, (n, 4)), 1)
    return X, y


def lines(X: np.ndarray, y: np.ndarray, sep: str, label_first: bool = False) -> list[str]:
    rows = []
    for x, label in zip(X, y, strict=True):
        cells = [f"{v:.1f}" for v in x]
        rows.append(sep.join([label, *cells] if label_first else [*cells, label]))
    return rows


def write(path, rows, header=None, opener=open):
    with opener(path, "wt") as f:
        f.write("\n".join(([header] if header else []) + rows) + "\n")
    return path


# name, label (position or name), how the file is written, header?, delimiter
SHAPES = {
    "uci.data": (-1, lambda X, y: lines(X, y, ","), None, "comma"),
    "label-first.data": (0, lambda X, y: lines(X, y, ",", label_first=True), None, "comma"),
    "aligned.dat": (-1, lambda X, y: ["  " + r for r in lines(X, y, "   ")], None, "whitespace"),
    "spaced.txt": (-1, lambda X, y: lines(X, y, " "), None, "whitespace"),
    "tabbed.txt": (4, lambda X, y: lines(X, y, "\t"), "a\tb\tc\td\tspecies", "tab"),
    "tabbed.tsv": ("species", lambda X, y: lines(X, y, "\t"), "a\tb\tc\td\tspecies", "tab"),
    "semicolon.csv": (-1, lambda X, y: lines(X, y, ";"), "a;b;c;d;species", "semicolon"),
    "named.csv": ("species", lambda X, y: lines(X, y, ","), "a,b,c,d,species", "comma"),
    # UCI's training and test parts keep their own suffixes (optdigits.tra, shuttle.tst)
    "optdigits.tra": (-1, lambda X, y: lines(X, y, ","), "a,b,c,d,species", "comma"),
    "shuttle.tst": (-1, lambda X, y: lines(X, y, " "), None, "whitespace"),
}


def shape_file(tmp_path, name):
    label, rows, header, _ = SHAPES[name]
    X, y = measurements()
    return write(tmp_path / name, rows(X, y), header), label, X, y


def summary_of(path, header: bool, delimiter: str, label: str) -> str:
    return (
        f"{str(path)!r}: {N} rows, 4 features, 3 classes (label column {label!r}); "
        f"header: {'yes' if header else 'no'} (detected); delimiter: {delimiter} (detected)"
    )


def label_name(name: str) -> str:
    label, _, header, _ = SHAPES[name]
    if header is None:
        return "0" if label == 0 else "4"
    return "species"


@pytest.mark.parametrize("name", SHAPES)
def test_each_shape_reads_as_it_comes(tmp_path, name):
    path, label, X, y = shape_file(tmp_path, name)
    _, _, header, delimiter = SHAPES[name]
    table = read_table(path, label)
    np.testing.assert_array_equal(table.X, X)
    assert table.y.tolist() == y.tolist()
    assert table.label == label_name(name)
    assert table.describe() == summary_of(path, header is not None, delimiter, label_name(name))
    if header is None:  # named by position
        expected = ["1", "2", "3", "4"] if label == 0 else ["0", "1", "2", "3"]
        assert table.columns == expected
    else:
        assert table.columns == ["a", "b", "c", "d"]
    env = db.make_env("table", path=str(path), label=label, seed=0, preprocess="none")
    np.testing.assert_array_equal(env.X, X)
    assert env.classes_.tolist() == CLASSES and env.n_arms == 3
    params = env.get_params()
    assert params["summary"] == table.describe()
    assert params["header"] == ("none" if header is None else "first")
    assert params["delimiter"] == delimiter


@pytest.mark.parametrize("name", ["uci.data", "label-first.data", "aligned.dat", "semicolon.csv"])
def test_each_shape_runs_from_the_command_line(tmp_path, capsys, name):
    path, label, _, _ = shape_file(tmp_path, name)
    _, _, header, delimiter = SHAPES[name]
    out = tmp_path / "out"
    args = ["--policy", "linucb", "--T", "20", "--seeds", "0", "--out", str(out), "--no-progress"]
    spec = f"table:path={path},label={label}"
    assert main(["compare", "--env", spec, *args]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert f"read {summary_of(path, header is not None, delimiter, label_name(name))}" in printed
    config = json.loads((out / "linucb" / "seed_0.json").read_text())
    assert config["env"]["params"]["label"] == label_name(name)
    assert config["env"]["params"]["n_samples"] == N


def test_a_gzipped_csv_without_header(tmp_path, capsys):
    X, y = measurements()
    path = write(tmp_path / "uci.csv.gz", lines(X, y, ","), opener=gzip.open)
    table = read_table(path, -1)
    np.testing.assert_array_equal(table.X, X)
    assert table.describe().endswith(
        "header: no (detected); delimiter: comma (detected); gz-compressed"
    )
    out = str(tmp_path / "out")
    args = ["--policy", "linucb", "--T", "10", "--seeds", "0", "--out", out, "--no-progress"]
    assert main(["run", "--env", f"table:path={path},label=-1", *args]) == 0
    assert "3 classes (label column '4')" in capsys.readouterr().out


def test_parquet_takes_the_label_by_position(tmp_path, capsys):
    X, y = measurements()
    frame = pd.DataFrame(X, columns=list("abcd")).assign(species=y)
    path = tmp_path / "t.parquet"
    frame.to_parquet(path, index=False)
    table = read_table(path, -1)
    np.testing.assert_array_equal(table.X, X)
    assert table.label == "species" and table.layout is None
    assert table.describe() == (
        f"{str(path)!r}: 30 rows, 4 features, 3 classes (label column 'species'); "
        "header: yes (Parquet); delimiter: none (Parquet)"
    )
    assert db.make_env("table", path=path, label=4).get_params()["delimiter"] is None
    with pytest.raises(TableError, match=r"for text files.*Parquet"):
        read_table(path, -1, header="none")
    out = str(tmp_path / "out")
    args = ["--policy", "linucb", "--T", "10", "--seeds", "0", "--out", out, "--no-progress"]
    assert main(["run", "--env", f"table:path={path},label=-1", *args]) == 0
    assert "(label column 'species'); header: yes (Parquet)" in capsys.readouterr().out


def test_decimal_commas_of_a_semicolon_file(tmp_path):
    X, y = measurements()
    rows = [r.replace(".", ",") for r in lines(X, y, ";")]
    path = write(tmp_path / "european.csv", rows, "a;b;c;d;species")
    table = read_table(path, "species")
    np.testing.assert_array_equal(table.X, X)
    assert table.describe().endswith("delimiter: semicolon (detected); decimal comma")
    assert table.provenance()["decimal"] == ","


def test_features_and_categorical_by_position(tmp_path):
    rows = [f"{i % 4},{'red' if i % 2 else 'blue'},{i / 10:.1f},{'ab'[i % 2]}" for i in range(12)]
    path = write(tmp_path / "mixed.data", rows)
    table = read_table(path, -1, features=[2, 1], categorical=[1])
    assert table.columns == ["2", "1"] and table.categorical == ["1"]
    assert table.feature_names == ["2", "1=blue", "1=red"]
    np.testing.assert_array_equal(table.X[1], [0.1, 0.0, 1.0])
    assert "3 features (from 2 columns, 1 one-hot)" in table.describe()
    with pytest.raises(TableError, match=r"label=7 is not a column position.*4 columns"):
        read_table(path, 7)
    with pytest.raises(TableError, match=r"features=-5 is not a column position"):
        read_table(path, -1, features=[-5])
    with pytest.raises(TableError, match=r"features names column.*more than once: 2"):
        read_table(path, -1, features=[2, "2"])


def test_a_name_over_a_column_of_categories_is_a_header(tmp_path):
    # letter-recognition as published: the letter first, then 16 numbers, under a line that
    # names the letter's column and numbers the others (issue 49 §1: the first line read as
    # data made a class "Letter" of one row)
    rng = np.random.default_rng(0)
    letters = rng.choice(list("ABCDEFGH"), 40)
    rows = [",".join([str(c), *map(str, rng.integers(0, 16, 16))]) for c in letters]
    path = write(
        tmp_path / "letter-recognition.data",
        rows,
        "Letter," + ",".join(str(i) for i in range(1, 17)),
    )
    table = read_table(path, 0)
    assert table.X.shape == (40, 16)
    assert sorted(set(table.y)) == sorted(set(letters))
    assert table.label == "Letter"
    assert "header: yes (detected)" in table.describe()


def test_explicit_header_choices(tmp_path, capsys):
    # numbers as column names: "auto" takes the line for data, header="first" names the columns
    X, y = measurements()
    path = write(tmp_path / "years.csv", lines(X, y, ","), "2019,2020,2021,2022,kind")
    named = read_table(path, "kind", header="first")
    assert named.columns == ["2019", "2020", "2021", "2022"]
    np.testing.assert_array_equal(named.X, X)
    assert "header: yes (given)" in named.describe()
    # "auto" reads it as a header too: its text names the column of classes below it
    assert read_table(path, -1).columns == ["2019", "2020", "2021", "2022"]
    # a first line with numbers in it and a class that is one of the others is data
    X2, y2 = X.copy(), y.copy()
    X2[0] = [2019, 2020, 2021, 2022]
    data = write(tmp_path / "data.csv", lines(X2, y2, ","))
    guessed = read_table(data, -1)
    np.testing.assert_array_equal(guessed.X[0], [2019, 2020, 2021, 2022])
    assert "30 rows, 4 features, 3 classes (label column '4'); header: no" in guessed.describe()
    # ... and so is one of measurements whose class no other line has
    X2[0], y2[0] = [1.5, 2.5, 3.5, 4.5], "Iris-rare-one"
    rare = write(tmp_path / "rare.csv", lines(X2, y2, ","))
    assert "31 rows" not in read_table(rare, -1).describe()
    assert (
        "30 rows, 4 features, 4 classes (label column '4'); header: no"
        in read_table(rare, -1).describe()
    )
    # header="none" (None too, as the command line's header=none) on a file with a header
    plain = write(tmp_path / "plain.csv", lines(X, y, ","), "a,b,c,d,kind")
    with pytest.raises(TableError, match=r"column '0' is numeric, but row 0 .*holds 'a'"):
        read_table(plain, -1, header=None)
    out = str(tmp_path / "out")
    args = ["--policy", "linucb", "--T", "10", "--seeds", "0", "--out", out, "--no-progress"]
    assert main(["run", "--env", f"table:path={path},label=kind,header=first", *args]) == 0
    assert "header: yes (given); delimiter: comma (detected)" in capsys.readouterr().out
    with pytest.raises(TableError, match=r"header must be 'auto'.*'none'.*'yes' is given"):
        read_table(plain, -1, header="yes")


def test_a_table_of_text_columns(tmp_path):
    values = [
        ("x", "s", "n", "p"),
        ("b", "s", "w", "e"),
        ("x", "y", "w", "e"),
        ("f", "s", "n", "p"),
    ]
    rows = [",".join(v) for v in values * 3]
    headerless = read_table(write(tmp_path / "mushroom.data", rows), -1, categorical=[0, 1, 2])
    assert len(headerless.y) == 12 and headerless.layout.header is False
    named = write(tmp_path / "named.csv", rows, "cap,surface,colour,edible")
    table = read_table(named, "edible", categorical=["cap", "surface", "colour"])
    assert len(table.y) == 12 and table.layout.header is True


def test_detection_rules():
    def header(text):
        return detect_layout(
            text, delimiter=None, header="auto", compression=None, na_values=[], where="f"
        ).header

    assert header("a,b,class\n1,2,x\n3,4,y\n")
    assert not header("1,2,x\n3,4,y\n")
    assert not header("1,?,x\n3,4,y\n")  # a first line with a number in it is data
    assert header(",a,b\n0,1.5,x\n1,2.5,y\n")  # pandas' index column: an empty name
    assert not header("red,small\nblue,large\nred,large\n")  # 'red' recurs: data
    assert header("colour,size\nblue,large\nred,small\n")

    def delimiter(text):
        return detect_layout(
            text, delimiter=None, header="auto", compression=None, na_values=[], where="f"
        ).delimiter

    assert delimiter('1,"a;b",x\n2,"c;d",y\n') == "comma"
    assert delimiter("1|2|x\n3|4|y\n") == "pipe"
    assert delimiter("1\tNew York\tx\n2\tParis\ty\n") == "tab"
    assert delimiter("  1  2 x\n 3 4   y\n") == "whitespace"
    with pytest.raises(TableError, match="cannot tell how the columns of f are separated"):
        delimiter("one\ntwo\n")
    with pytest.raises(TableError, match="f is empty"):
        delimiter("\n\n")


def test_a_stray_value_in_a_numeric_column_is_named(tmp_path):
    X, y = measurements()
    rows = lines(X, y, ",")
    cells = rows[7].split(",")
    rows[7] = ",".join([*cells[:2], "?", *cells[3:]])
    path = write(tmp_path / "stray.data", rows)
    with pytest.raises(TableError) as info:
        db.make_env("table", path=path, label=-1)
    message = str(info.value)
    assert message.startswith(f"{str(path)!r}: column '2' is numeric, but row 7 ")
    assert "holds '?'" in message and "na_values=[?]" in message
    assert "categorical" not in message and "one-hot" not in message
    with pytest.warns(UserWarning, match="dropped 1 of 30 rows"):
        table = read_table(path, -1, na_values=["?"], dropna=True)
    assert table.X.shape == (29, 4) and "1 dropped for missing values" in table.describe()


def test_one_hot_advice_only_for_a_column_of_categories(tmp_path):
    X, y = measurements()
    colours = np.array(["red", "green", "blue"])[np.arange(N) % 3]
    rows = [f"{c},{r}" for c, r in zip(colours, lines(X, y, ","), strict=True)]
    path = write(tmp_path / "colours.data", rows)
    with pytest.raises(TableError) as info:
        read_table(path, -1)
    message = str(info.value)
    assert "'0' holds text (3 distinct values, e.g. 'red', 'green', 'blue')" in message
    assert "categorical=[0]" in message and "'5'" not in message  # never the label column
    assert read_table(path, -1, categorical=[0]).feature_names[:3] == ["0=blue", "0=green", "0=red"]


def test_a_float_column_given_as_the_label_is_refused_for_what_it_is(tmp_path, capsys):
    X, y = measurements(n=150)
    path = write(tmp_path / "many.data", lines(X, y, ","))
    distinct = len(np.unique(X[:, 0]))
    assert distinct > 30
    with pytest.raises(TableError) as info:
        db.make_env("table", path=path, label=0)
    message = str(info.value)
    assert "label column '0' " in message and f"{distinct} distinct" in message
    assert "categorical" not in message and "'4'" not in message  # not about another column
    ids = [f"{i},{r}" for i, r in enumerate(lines(X, y, ","))]
    with pytest.raises(TableError, match=r"'0' has 150 distinct values, more than max_arms=100"):
        db.make_env("table", path=write(tmp_path / "ids.data", ids), label=0)
    out = str(tmp_path / "out")
    args = ["--policy", "linucb", "--T", "10", "--seeds", "0", "--out", out, "--no-progress"]
    assert main(["run", "--env", f"table:path={path},label=0", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("deepbandits: error: ") and "label column '0'" in err


def test_a_missing_label_names_itself_and_how_to_pass_it(tmp_path, capsys):
    path, _, _, _ = shape_file(tmp_path, "uci.data")
    with pytest.raises(db.InputValueError) as info:
        db.make_env("table", path=path)
    message = str(info.value)
    assert message.startswith("environment 'table' needs label= (the label column")
    assert "make_env('table', path=..., label=...)" in message
    assert "from_table" not in message and "positional argument" not in message
    with pytest.raises(db.InputValueError, match=r"needs path= \(.*\) and label="):
        db.make_env("table")
    out = str(tmp_path / "out")
    args = ["--policy", "linucb", "--T", "10", "--seeds", "0", "--out", out, "--no-progress"]
    assert main(["compare", "--env", f"table:path={path}", *args]) == 2
    err = capsys.readouterr().err
    assert "needs label=" in err and "--env table:path=...,label=..." in err
    assert "internal error" not in err and "TypeError" not in err


def test_other_mistakes_on_the_table_path_are_the_librarys_own(tmp_path):
    path, _, X, y = shape_file(tmp_path, "uci.data")
    with pytest.raises(TableError, match=r"path must be the table file's path.*3 is given"):
        db.make_env("table", path=3, label=-1)
    with pytest.raises(TableError, match=r"label must be .* position .*\[1, 2\] is given"):
        db.make_env("table", path=path, label=[1, 2])
    with pytest.raises(TableError, match=r"no label column 'class' .*read without a header"):
        db.make_env("table", path=path, label="class")
    with pytest.raises(TableError, match="delimiter must be one of comma"):
        read_table(path, -1, delimiter="colon")
    ragged = lines(X, y, ",")
    ragged[4] += ",9.9"
    with pytest.raises(TableError, match=r"line 5 of .* has 6 fields where the lines above have 5"):
        read_table(write(tmp_path / "ragged.data", ragged), -1)


def test_delimiter_given(tmp_path):
    X, y = measurements()
    path = write(tmp_path / "semi.txt", lines(X, y, ";"))
    table = read_table(path, -1, delimiter="semicolon")
    np.testing.assert_array_equal(table.X, X)
    assert re.search(r"delimiter: semicolon \(given\)$", table.describe())
    assert read_table(path, -1, delimiter=";").layout.delimiter == "semicolon"


# UCI's segmentation.test and others open with notes: ';;; ...' lines, or '# ...'
COMMENTED = ";;; Image segmentation, test part (UCI)\n;;; 30 rows, 4 attributes, class last\n\n"


def test_comment_lines_read_with_comment_from_python_and_the_command_line(tmp_path, capsys):
    X, y = measurements()
    rows = lines(X, y, ",")
    rows[3] += "  ; a note at the end of a row"
    rows.insert(10, ";;; a note between rows")
    path = tmp_path / "segmentation.test"
    path.write_text(COMMENTED + "\n".join(rows) + "\n")
    for comment in (";", "semicolon"):
        table = read_table(path, -1, comment=comment)
        np.testing.assert_array_equal(table.X, X)
        assert table.y.tolist() == y.tolist()
        assert table.describe().endswith("delimiter: comma (detected); comments: ';' (given)")
    env = db.make_env("table", path=str(path), label=-1, comment=";", seed=0, preprocess="none")
    np.testing.assert_array_equal(env.X, X)
    assert env.get_params()["comment"] == ";"
    # the command line: 'comment=;' (quote the spec in a shell) or 'comment=semicolon'
    for spelling in (";", "semicolon"):
        out = tmp_path / f"out-{spelling}"
        args = ["--policy", "linucb", "--T", "20", "--seeds", "0", "--out", str(out)]
        spec = f"table:path={path},label=-1,comment={spelling}"
        assert main(["run", "--env", spec, *args, "--no-progress"]) == 0
        printed = capsys.readouterr().out
        assert f"read {str(path)!r}: {N} rows, 4 features, 3 classes" in printed
        assert "comments: ';' (given)" in printed
        config = json.loads((out / "linucb" / "seed_0.json").read_text())
        assert config["env"]["params"]["n_samples"] == N
    # comments below the first lines are an error without comment=, which it advises
    with pytest.raises(TableError, match=r"pass comment=semicolon$"):
        read_table(path, -1)


@pytest.mark.parametrize("mark", [";;;", "#", "# "])
def test_a_block_of_comments_before_the_table_is_skipped(tmp_path, mark):
    X, y = measurements()
    notes = f"{mark} Notes, as published\n\n{mark} 30 rows; class last\n"
    for name, sep, delimiter in [("notes.data", ",", "comma"), ("notes.dat", " ", "whitespace")]:
        path = tmp_path / name
        path.write_text(notes + "\n".join(lines(X, y, sep)) + "\n")
        table = read_table(path, -1)
        np.testing.assert_array_equal(table.X, X)
        assert table.describe() == (
            summary_of(path, False, delimiter, "4")
            + "; first 3 lines skipped as comments (detected)"
        )
        assert table.provenance()["skipped_lines"] == 3
    # the line above the rows may be their header, written as a comment: not skipped
    named = write(tmp_path / "named.csv", lines(X, y, ","), "#a,b,c,d,species")
    assert read_table(named, "species").columns == ["#a", "b", "c", "d"]
    # the mark again below the block: comment= says how to read the file, as the error advises
    rows = lines(X, y, ",")
    rows.insert(5, "# a note between rows")
    below = tmp_path / "below.data"
    below.write_text("# one\n# two\n" + "\n".join(rows) + "\n")
    with pytest.raises(TableError, match=r"pass comment=#$"):
        read_table(below, -1)
    np.testing.assert_array_equal(read_table(below, -1, comment="#").X, X)


def test_comment_mistakes_are_the_librarys_own(tmp_path):
    X, y = measurements()
    path = write(tmp_path / "uci.data", lines(X, y, ","))
    for bad in ["##", "x", "1", " ", "", 3, ["#"]]:
        with pytest.raises(
            TableError,
            match=rf"comment must be the one character .* {re.escape(repr(bad))} is given",
        ):
            read_table(path, -1, comment=bad)
    with pytest.raises(TableError, match="comment and delimiter must differ, but both are ','"):
        read_table(path, -1, comment=",", delimiter="comma")
    parquet = tmp_path / "t.parquet"
    pd.DataFrame({"a": X[:, 0], "y": y}).to_parquet(parquet)
    with pytest.raises(TableError, match="comment are for text files"):
        read_table(parquet, "y", comment="#")
    only = tmp_path / "only.data"
    only.write_text(";;; nothing but notes\n;;; here\n")
    with pytest.raises(TableError, match="holds nothing but comments"):
        read_table(only, -1, comment=";")
