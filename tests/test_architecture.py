"""The extending guide's example of a policy from parts runs; the parts behave as documented."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

import deepbandits as db
from deepbandits.policies import (
    POLICIES,
    IdentityFeatures,
    NamedPolicy,
    NetworkFeatures,
    RangeBound,
    RidgeHead,
    RidgeUCB,
    register_policy,
)
from deepbandits.policies.policy import Policy

GUIDE = Path(__file__).parents[1] / "docs" / "guides" / "extending.md"


def readme_example(marker: str) -> str:
    text = GUIDE.read_text(encoding="utf-8")
    match = re.search(rf"<!-- example: {marker} -->\s*```python\n(.*?)```", text, re.DOTALL)
    assert match, f"the extending guide has no example {marker!r}"
    return match.group(1)


def test_the_readme_example_composes_a_policy_that_plays_saves_and_loads(tmp_path):
    code = readme_example("new-policy")
    assert "class " not in code.replace("class SquaredFeatures(Part)", "")  # no policy subclass
    assert not re.search(r"\._[a-z]", code)  # no private member
    namespace: dict = {}
    try:
        exec(compile(code, "README.md", "exec"), namespace)
        result = namespace["result"]
        assert len(result.records) == 500
        composed = namespace["policy"]
        assert composed.head.lam == 1.0 and composed.t_ == 0  # set_params reached the part
        policy = db.make_policy("quadratic-ucb", seed=0)
        assert type(policy) is namespace["QuadraticUCB"] and isinstance(policy, RidgeUCB)
        assert policy.get_params()["alpha"] == 0.1 and repr(policy) == "QuadraticUCB(seed=0)"
        X = np.random.default_rng(0).standard_normal((4, 3))
        d = policy.decide(X)
        np.testing.assert_allclose(d.features, np.concatenate([X[d.arm], X[d.arm] ** 2]))
        policy.learn(d, 1.0)
        policy.save(tmp_path / "q.pt")
        loaded = db.load_policy(tmp_path / "q.pt")
        np.testing.assert_array_equal(loaded.predict(X)[0], policy.predict(X)[0])
        with pytest.raises(db.InputValueError, match="taken"):
            register_policy("quadratic-ucb", POLICIES["linucb"])
    finally:
        POLICIES.pop("quadratic-ucb", None)


def test_register_policy_refuses_bad_names_and_recipes():
    with pytest.raises(db.InputValueError, match="lower-case"):
        register_policy("My Policy", POLICIES["linucb"])
    with pytest.raises(db.InputTypeError, match="Recipe"):
        register_policy("thing", db.LinUCB)  # type: ignore[arg-type]
    with pytest.raises(db.InputValueError, match="own name"):
        register_policy("thing", POLICIES["linucb"])
    with pytest.raises(db.InputValueError, match="taken"):
        register_policy("linucb", POLICIES["linucb"])


@pytest.mark.parametrize("name", list(POLICIES))
def test_every_registry_name_is_one_policy_class_and_at_most_its_keywords(name):
    """A variant is a recipe, not a subclass: between a name's class and Policy stands at most
    the class that implements the hooks, and a name's own class adds only its keywords."""
    cls = type(db.make_policy(name))
    chain = [
        c
        for c in cls.__mro__
        if c.__module__.startswith("deepbandits")
        and c not in Policy.__mro__
        and c is not NamedPolicy
    ]
    assert len(chain) <= 2 and issubclass(cls, Policy), chain
    if len(chain) == 2:
        own = {k for k in vars(cls) if not k.startswith("__")} - {"_abc_impl"}
        assert issubclass(cls, NamedPolicy)
        assert own <= {"recipe", "param_specs", "_own_specs", "_registry_name"}, own


def test_the_ridge_family_is_a_composition_of_parts():
    linear = db.make_policy("linucb", per_arm=True)
    linear.decide(np.ones((3, 5)))
    assert isinstance(linear.features, IdentityFeatures) and isinstance(linear.head, RidgeHead)
    assert linear.head.kind_ == "per_arm" and linear.ridge_.n_heads == 3
    neural = db.make_policy("neural-sigma2-linucb", hidden=8, feature_dim=4)
    neural.decide(np.ones((3, 5)))
    assert isinstance(neural.features, NetworkFeatures) and neural.features.dim == 4
    assert isinstance(neural.variance, RangeBound) and neural.ridge_.dim == 4
    blocks = db.make_policy("linucb")
    blocks.decide(db.block_encode(np.ones(5), 3))
    assert blocks.head.kind_ == "per_block" and blocks.ridge_.A.shape == (3, 5, 5)


def test_state_dict_is_the_union_of_the_parts_and_nested_params_reach_them():
    parts = db.make_policy("neural-sigma2-linucb", hidden=8, feature_dim=4, seed=0).parts
    policy = RidgeUCB(**parts, reward_range=(0.0, 1.0), seed=0)
    policy.update(np.ones((3, 5)), 0, 0.5)
    state = policy.state_dict()["state"]
    assert {"features", "head", "variance", "explore", "trainer"} <= set(state)
    assert set(state["head"]) == set(policy.head.state_dict())
    deep = policy.get_params(deep=True)
    assert deep["head__lam"] == 1.0 and deep["explore__alpha"] == 0.02
    policy.set_params(head__lam=2.0, explore__alpha=0.5)
    assert policy.head.lam == 2.0 and policy.explore.alpha == 0.5 and policy.t_ == 0
    with pytest.raises(db.InputValueError, match="lam must be > 0"):
        policy.set_params(head__lam=-1.0)
    assert policy.head.lam == 2.0  # a refused value changes nothing


def test_a_new_variance_source_needs_no_subclass_of_a_policy():
    class Constant:
        """σ²ₜ = 4 for every round."""

        needs = frozenset()
        weighted = True
        R = 1.0

        def validate(self):
            pass

        def initialize(self, horizon):
            pass

        def raw(self, est):
            return 4.0

        def get_params(self):
            return {}

        def state_dict(self):
            return {}

        def load_state_dict(self, state):
            pass

    policy = RidgeUCB(variance=Constant(), seed=0)
    info = policy.update(np.eye(3), 1, 1.0)
    assert info.sigma2 == 4.0
    np.testing.assert_allclose(policy.ridge_.A[0], np.eye(3) + np.diag([0, 0.25, 0]))


def test_a_discounted_head_keeps_its_prior_and_shrinks_the_data():
    head = RidgeHead("shared", lam=2.0, discount=0.5, discount_every=1)
    head.validate()
    head.initialize(2)
    x = np.array([1.0, 2.0])
    head.learn(x[None], np.array([3.0]), np.array([1.0]), np.array([0]), t=0)
    np.testing.assert_allclose(head.ridge_.A[0], 2.0 * np.eye(2) + 0.5 * np.outer(x, x))
    np.testing.assert_allclose(head.ridge_.b[0], 0.5 * 3.0 * x)
    np.testing.assert_allclose(head.ridge_.A_inv[0], np.linalg.inv(head.ridge_.A[0]))


def test_importing_the_library_leaves_the_heavy_imports_for_later():
    """``import deepbandits`` loads no public name until it is used (``__init__.pyi``): not
    torch, pandas, matplotlib, scikit-learn or scipy.stats; the service's client starts without
    torch and pandas; a name loads on first use, and drawing a figure then loads matplotlib."""
    import subprocess
    import sys

    heavy = ["torch", "pandas", "matplotlib", "sklearn", "scipy.stats"]
    code = (
        "import sys, deepbandits\n"
        f"print([m for m in {heavy!r} if m in sys.modules])\n"
        "import deepbandits.client\n"
        f"print([m for m in {heavy!r} if m in sys.modules])\n"
        "print(deepbandits.make_env.__module__, 'torch' in sys.modules)\n"
        "from deepbandits.plotting import regret_curves\n"
        "fig = regret_curves({'a': ([1, 2], [[0.0, 1.0]])})\n"
        "print(type(fig).__module__, 'matplotlib' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.splitlines() == [
        "[]",
        "[]",
        "deepbandits.envs True",
        "matplotlib.figure True",
    ]


@pytest.mark.parametrize("package", ["deepbandits", "deepbandits.cli", "deepbandits.serve"])
def test_each_stub_declares_every_public_name_of_its_package(package: str) -> None:
    """Type checkers read ``__init__.pyi`` instead of ``__init__.py``: every name of the
    package's ``__all__`` is imported or declared there, and resolves at run time."""
    import ast
    import importlib
    from pathlib import Path

    module = importlib.import_module(package)
    tree = ast.parse(Path(module.__file__).with_suffix(".pyi").read_text())
    declared = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            declared |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            declared.add(node.target.id)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            declared.add(node.name)
    assert set(module.__all__) == declared
    assert all(getattr(module, name) is not None for name in module.__all__)


def test_every_public_name_loads_from_the_module_the_stub_names():
    """Each name of ``deepbandits.__all__`` (read from ``__init__.pyi``) resolves, to the object
    its module defines; a name not in it is an AttributeError that names it."""
    import ast
    import importlib
    from pathlib import Path

    stub = Path(db.__file__).with_suffix(".pyi")
    pairs = [
        (node.module, alias.name)
        for node in ast.parse(stub.read_text()).body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    ]
    assert sorted(name for _, name in pairs) == sorted(db.__all__)
    for module, name in pairs:
        home = f"deepbandits.{module}" if module else f"deepbandits.{name}"
        expected = importlib.import_module(home)
        assert getattr(db, name) is (getattr(expected, name) if module else expected)
    with pytest.raises(AttributeError, match="no_such_name"):
        db.no_such_name  # noqa: B018
    assert "make_policy" in dir(db)


SOURCE = Path(db.__file__).parent


def _trees(package: str) -> list[tuple[Path, ast.Module]]:
    return [
        (path, ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted((SOURCE / package).rglob("*.py"))
    ]


def test_the_service_imports_nothing_from_the_experiments():
    """serve/ sits beside experiments/, not on it: what both need (the spec parser, the thread
    pinning) lives below both (``deepbandits.specs``, ``deepbandits._threads``)."""
    found = []
    for path, tree in _trees("serve"):
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module is not None:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            if any(
                n == "deepbandits.experiments" or n.startswith("deepbandits.experiments.")
                for n in names
            ):
                found.append(f"{path.name}:{node.lineno}")
    assert not found, f"serve/ imports from deepbandits.experiments at {', '.join(found)}"


def test_the_service_reads_no_private_member_of_a_policy():
    """serve/ drives a policy by its public, documented calls only (``random_state``,
    ``prepare_training``, ``apply_training``, ``initialize``, ...): no ``x._name`` there names a
    private attribute or method that the policies package defines."""
    private = set()
    for _, tree in _trees("policies"):
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                private.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                private.add(node.attr)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                private.add(node.id)  # class attributes (``_samples: ClassVar[bool]``)
    private = {name for name in private if name.startswith("_") and not name.startswith("__")}
    assert {"_rng", "_check", "_params"} <= private  # the check sees what it must refuse
    found = []
    for path, tree in _trees("serve"):
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr in private
                and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
            ):
                found.append(f"{path.name}:{node.lineno} .{node.attr}")
    assert not found, f"serve/ reads private members of a policy: {', '.join(found)}"
