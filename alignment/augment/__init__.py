"""Method A's reward augmentation: the strategy table (which reward variant appends the
acknowledgment score, and when) and the counterfactual attribution the strategies read."""
