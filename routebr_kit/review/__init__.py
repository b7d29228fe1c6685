"""Release review (paper §III-D): shadow replay of candidate assets, a paired diff with a CI gate, and exact
change-impact selection — all from recorded proposals, with no model call."""
