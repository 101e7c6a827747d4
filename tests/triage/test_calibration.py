"""Reliability bins and the expected calibration error the worlds benchmark pools."""

from __future__ import annotations

import pytest

from sheriff.triage.simrun import calibration, expected_calibration_error, reliability_bins


def test_bins_hold_cases_sum_of_p_and_true_regressions() -> None:
    scored = [(0.02, False), (0.08, True), (0.95, True), (1.0, True), (0.55, False)]
    bins = reliability_bins(scored)
    assert len(bins) == 10
    assert bins[0] == [2, pytest.approx(0.10), 1]
    assert bins[5] == [1, pytest.approx(0.55), 0]
    assert bins[9] == [2, pytest.approx(1.95), 2]  # P = 1.0 falls in the last bin
    assert sum(b[0] for b in bins) == len(scored)
    assert calibration(scored)["bins"] == bins


def test_ece_is_the_case_weighted_gap_between_mean_p_and_the_share_true() -> None:
    # Bin 0: mean P 0.05, half true (gap 0.45, 2 of 5 cases); bin 5: 0.55 vs 0 (1 of 5);
    # bin 9: 0.975 vs 1 (2 of 5).
    bins = reliability_bins([(0.02, False), (0.08, True), (0.55, False), (0.95, True), (1.0, True)])
    expected = (2 * 0.45 + 1 * 0.55 + 2 * 0.025) / 5
    assert expected_calibration_error(bins) == pytest.approx(expected)
    assert expected_calibration_error(reliability_bins([])) == 0.0
    perfect = reliability_bins([(0.0, False)] * 9 + [(1.0, True)] * 3)
    assert expected_calibration_error(perfect) == 0.0
