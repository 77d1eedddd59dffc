"""deepbandits: neural contextual bandits, centred on Neural-σ²-LinUCB.

Quick start::

    import deepbandits as db
    env = db.make_env("h1", seed=0)
    policy = db.make_policy("neural-sigma2-linucb", seed=0)
    result = db.run(policy, env, T=2000)
    best = db.tune("linucb", "h1", T=2000, tuning_seeds=[100, 101], eval_seeds=[0, 1],
                   out="results/tune", n_trials=20)   # Optuna; best.best_spec

    mnist = db.make_env("mnist", seed=0)   # reads $DEEPBANDITS_DATA (downloads when online)

    d = policy.decide(contexts, mask=available)   # live: a Decision (id, arm, propensity, ...)
    policy.learn(d.id, reward)                      # whenever its reward arrives, in any order

    db.run_experiment(db.load_config("my.toml"), "results/my")   # an experiment config
    runs = db.load_results("results/my")   # every run of a folder: one row per round
"""

import lazy_loader

# Every public name loads on first use (Scientific Python's SPEC 1): ``import deepbandits`` alone
# loads neither torch nor pandas, so ``deepbandits --version``, the service's client and a
# script that needs only the errors start at once. The names and the modules they come from are
# listed once, in ``__init__.pyi``.
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
