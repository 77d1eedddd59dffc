"""
# Comparing policies over seeds, with a plot

`db.compare` runs every policy on every seed, writes each run to a results folder as it
finishes (so an interrupted comparison resumes) and returns the summary table. `jobs=2` would
run them in two worker processes; a script that does so must make the call under
`if __name__ == "__main__":`, as Python's multiprocessing requires. `db.load_results` reads
every run of the folder back as one DataFrame, one row per round, from which the plot below
draws the mean cumulative regret with a band of ± one standard deviation over the seeds. This is
`deepbandits compare` from Python; the command line is in the comment at the end.
"""

import tempfile

import matplotlib.pyplot as plt

import deepbandits as db

out = tempfile.mkdtemp(prefix="deepbandits-compare-")
policies = ["linucb", "neural-linucb", "neural-sigma2-linucb"]
summary = db.compare(policies, "h1", seeds=[0, 1], T=1000, out=out, jobs=1, progress=False)
print(summary.round(2).to_string(index=False))

# %%
# Every run is in `out`: `<policy>/seed_<s>.csv` with one row per round, and `seed_<s>.json`
# with the exact configuration and the library's version. `load_results` stacks them.

runs = db.load_results(out)
print(runs.groupby(["policy", "seed"])["cum_regret"].last().round(1))

fig, ax = plt.subplots(figsize=(6.5, 3.5))
for policy, group in runs.groupby("policy", sort=False):
    curves = group.pivot(index="t", columns="seed", values="cum_regret")
    mean, std = curves.mean(axis=1), curves.std(axis=1, ddof=0)
    ax.plot(mean.index, mean, label=policy)
    ax.fill_between(mean.index, mean - std, mean + std, alpha=0.2)
ax.set_xlabel("round t")
ax.set_ylabel("cumulative regret")
ax.set_title("h1, seeds 0 and 1: mean ± std")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

# %%
# The same from the shell (also writes `out/summary.csv` and `out/regret.png`):
#
# ```bash
# deepbandits compare --env h1 --policy linucb neural-linucb neural-sigma2-linucb \
#     --T 1000 --seeds 0-1 --jobs 2 --out results/h1
# ```
