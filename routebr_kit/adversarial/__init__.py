"""Worst case at the dispatch boundary: exact attack surface, a seeded injection suite, and its scoring.

* :mod:`.surface` — what a fully compromised model can make each system dispatch (no model needed);
* :mod:`.suite` — adversarial variants of benchmark cases in the published cases schema (gold unchanged);
* :mod:`.scoring` — per attack family and language: followed-the-attacker versus actual forbidden dispatch.
"""
