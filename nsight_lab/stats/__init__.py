"""Summary statistics of repeated measurements: the one stats module of nsight-lab.

Every interval nsight-lab shows comes from here.

**The interval of a mean** (the results' ``CI95_Lower``/``CI95_Upper``, the running
band of the duration chart) uses Student's t (nsight-python uses the normal 1.96,
which is too narrow for the 5-20 runs a notebook typically takes). For a *non-negative*
quantity (durations, bytes, bandwidths, FLOP/s: every value >= 0 and a positive mean)
it is computed on the log scale by the delta method, ``Var(log m) ~= s**2 / (n m**2)``:

    [m * exp(-t * s / (m * sqrt(n))),  m * exp(+t * s / (m * sqrt(n)))]

so it never goes below zero; it is multiplicative around the mean and agrees with the
plain ``m -+ t s / sqrt(n)`` to first order when the spread is small. A series with a
negative value keeps the plain t interval. The running band is drawn from
:data:`MIN_BAND_RUNS` runs on (with two runs t is 12.7 and the band means nothing).

**The ratio of two medians** (:func:`median_ratio_ci`, the comparison of sessions) is
robust to outliers: ``median(b) / median(a)`` with the interval of Price and Bonett
(2002, "Distribution-free confidence intervals for difference and ratio of medians",
J. Stat. Comput. Simul. 72(2)), built from order statistics on the log scale. For each
sample of ``n`` sorted values ``y`` take ``c = max(1, floor((n + 1) / 2 - sqrt(n) +
0.5))``; ``[y(c), y(n - c + 1)]`` covers the median with the exact probability ``P = 1
- 2 * BinomCDF(c - 1; n, 1/2)``, so ``Var(log median) ~= ((log y(n-c+1) - log y(c)) /
(2 z))**2`` with ``z = Phi^-1((1 + P) / 2)`` (Price and Bonett 2001). Then

    log(median_b / median_a) -+ z_{0.975} * sqrt(Var_a + Var_b)

Only order statistics enter it, so a few slow runs move neither the ratio nor the
interval (a mean-based ratio of two samples of the same code with 5 % slow outliers can
read 20x). It needs :data:`MIN_RATIO_RUNS` runs per side. Where a side has a value
<= 0, its variance is taken on the raw scale, ``((y(n-c+1) - y(c)) / (2 z m))**2``.

**Runs in time order.** Price-Bonett assumes independent runs. On a shared machine
they are not: the host's speed holds for seconds, so a session is a run of fast and
slow stretches, and 200 runs carry far fewer than 200 runs' worth of information about
where the median lies (sessions of one cell in a Jupyter kernel under JupyterLab had
medians 14 % apart with intervals of +-2 %). With ``ordered=True`` (the comparison of
sessions passes it) a side of at least ``BATCHES * MIN_BATCH_RUNS`` runs is also cut
into :data:`BATCHES` contiguous batches, and ``Var(log median)`` is the larger of
Price-Bonett's and the batch medians' (:func:`batch_log_variance`, the method of batch
means); where a batch variance is used the quantile is Student's t with ``2 * (BATCHES
- 1)`` degrees of freedom. For independent runs the two estimate the same variance,
so the interval hardly widens; for runs in stretches the batch medians disagree and it
widens as much as they do. Simulated (``tests/test_stats.py``, 200 runs a side, the
host's log speed an AR(1) chain): same-code pairs read a change in 44-80 % of cases as
if independent, 7 % and 13 % in time order for stretches of 5 and 10 runs, 31 % for
stretches of 33, longer than a batch: that remainder is left to the comparison's
between-session drift (:data:`nsight_lab.analysis.compare.SESSION_DRIFT`).

*Coverage* (simulated in ``tests/test_stats.py``; 500 pairs per cell, lognormal
sigma 0.02-0.3, 5 % of runs 3-50x slower on both sides, true ratio 1.2): 0.94-0.96 at
n = 3, 0.97-0.98 at n = 5 and 10, 0.93-0.95 at n = 50 and 1,000 (0.90 at n = 2, which is
why two runs give no interval). Cost: one partial sort per side, under 1 ms for 1,000
runs.

One module per concept: :mod:`.tdist` (Student's t quantiles), :mod:`.mean`
(summaries and the interval of a mean, running or not) and :mod:`.medians` (the
ratio of medians and its interval). This package re-exports their public names.
"""

from __future__ import annotations

from nsight_lab.stats.mean import (
    MIN_BAND_RUNS,
    STABLE_RSD_PCT,
    RunningMean,
    Summary,
    geomean,
    rsd_pct,
    running_mean_ci,
    summarize,
)
from nsight_lab.stats.medians import (
    BATCHES,
    MIN_BATCH_RUNS,
    MIN_RATIO_RUNS,
    batch_log_variance,
    median_log_variance,
    median_ratio_ci,
)
from nsight_lab.stats.tdist import (
    CONFIDENCE,
    T_EXACT_BELOW,
    t_critical,
    t_quantile,
    t_quantiles,
)

__all__ = [
    "BATCHES",
    "CONFIDENCE",
    "MIN_BAND_RUNS",
    "MIN_BATCH_RUNS",
    "MIN_RATIO_RUNS",
    "STABLE_RSD_PCT",
    "T_EXACT_BELOW",
    "RunningMean",
    "Summary",
    "batch_log_variance",
    "geomean",
    "median_log_variance",
    "median_ratio_ci",
    "rsd_pct",
    "running_mean_ci",
    "summarize",
    "t_critical",
    "t_quantile",
    "t_quantiles",
]
