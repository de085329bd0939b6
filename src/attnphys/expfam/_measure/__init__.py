"""Base measures, one file per variant (theory: docs/theory/expfam.md §2)."""
