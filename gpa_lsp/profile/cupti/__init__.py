"""The CUPTI collector: an injection library (C, built on first use) and its reader."""
