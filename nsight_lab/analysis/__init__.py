"""Two sessions against each other: ratios, intervals, verdicts and named baselines."""
