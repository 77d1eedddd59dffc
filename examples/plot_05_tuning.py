"""
# Tuning a policy with a tiny budget

`db.tune` searches a policy's declared hyperparameters with Optuna on some seeds (the tuning
seeds), then compares the best setting with the untuned one on other seeds (the evaluation
seeds): a setting is only as good as it is on seeds it was not chosen on. The first trial is
always the untuned setting. The budget here (4 trials of 600 rounds) is far too small to mean
anything; it shows the mechanics. The study lives in `out/study.db` and the same call resumes it.
"""

import tempfile

import deepbandits as db

out = tempfile.mkdtemp(prefix="deepbandits-tune-")
result = db.tune(
    "linucb",
    "h1",
    T=600,
    tuning_seeds=[100, 101],
    eval_seeds=[0, 1, 2],
    out=out,
    n_trials=4,
    progress=False,
)
print("best setting:", result.best_spec)
print("its mean final regret on the tuning seeds:", round(result.best_value, 1))

# %%
# Every trial of the study (trial 0 is the untuned setting; `out/trials.csv` has the same), and
# the untuned and the best setting on the evaluation seeds (first row: untuned).

trials = result.study.trials_dataframe()
print(trials.filter(regex="^(number|value|params_.*|state)$").round(4).to_string(index=False))
print(result.summary.to_string(index=False))

untuned, tuned = result.summary["final_regret_mean"].iloc[:2]
print(
    f"on the evaluation seeds: untuned {untuned:.1f}, tuned {tuned:.1f}:",
    "the tuned setting is better" if tuned < untuned else "keep the untuned setting",
)
