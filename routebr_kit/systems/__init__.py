"""The systems the paper compares: the B1/B2 one-call baselines and the controller variants of the ablations."""
