"""The interface every policy implements: :class:`Policy`, the union of its calls.

A policy is its core (:class:`~deepbandits.policies.core.PolicyCore`: parameters, parts,
lifecycle and the hooks a policy class implements) plus its public calls, one concern per module:
acting (:class:`~deepbandits.policies.acting.Acting`), learning
(:class:`~deepbandits.policies.learning.Learning`), merging replicas
(:class:`~deepbandits.policies.merging.Merging`) and files
(:class:`~deepbandits.policies.checkpoint.Checkpointing`). Every public call is all or nothing
(:mod:`~deepbandits.policies.transaction`).
"""

from __future__ import annotations

from deepbandits.policies.acting import Acting
from deepbandits.policies.checkpoint import Checkpointing
from deepbandits.policies.learning import Learning
from deepbandits.policies.merging import Merging


class Policy(Acting, Learning, Merging, Checkpointing):
    """Base class of all bandit policies.

    The acting API is :meth:`decide` (a :class:`~deepbandits.policies.decision.Decision`, kept
    pending by id until :meth:`learn` gets its reward), with :meth:`decide_batch` and
    :meth:`learn_batch` for many requests at once, and :meth:`select` / :meth:`update` as the
    synchronous shortcut. :meth:`predict` and :meth:`probabilities` read and change nothing.
    :meth:`get_params` / :meth:`set_params` and ``sklearn.base.clone`` work as on a
    scikit-learn estimator; :meth:`state_dict` / :meth:`load_state_dict` / :meth:`save` as on
    a PyTorch module.

    Subclasses implement the hooks of :class:`~deepbandits.policies.core.PolicyCore`.

    Attributes
    ----------
    n_features_in_ : int or None
        Context dimension, inferred from the first contexts that change the policy.
    t_ : int
        Number of rewards learned.
    pending_ : PendingDecisions
        Decisions awaiting their reward (:mod:`deepbandits.policies.pending`).
    """
