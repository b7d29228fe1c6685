"""Running systems over cases: the resumable run engine and the one replay path."""
