"""Choosing the CUPTI sampling period so the hottest kernel gets enough samples (unit tests of
arithmetic; the re-run itself is exercised on the device by scripts/gpu/record_library.sh)."""

from gpa_lsp.profile.collect import MIN_AUTO_PERIOD, shorter_period


def test_fewer_samples_than_wanted_shortens_the_period_by_the_missing_factor():
    # 300 samples at 2^12: 10,000 needs 34x more: 2^(12 - 6)... bounded at 2^7
    assert shorter_period(12, 300, 10_000) == MIN_AUTO_PERIOD
    assert shorter_period(12, 2_600, 10_000) == 10          # 3.8x more: two halvings
    assert shorter_period(12, 5_001, 10_000) == 11


def test_enough_samples_or_already_short_keeps_the_run():
    assert shorter_period(12, 10_000, 10_000) is None
    assert shorter_period(MIN_AUTO_PERIOD, 10, 10_000) is None
    assert shorter_period(12, 10, 0) is None                # min_samples = 0: never repeat
