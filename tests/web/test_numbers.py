"""Numbers for people (webapp/numbers.py, issue 22 item 3): three significant figures, thousands separated, never
e-notation, whatever the magnitude; Python's own formatting is the oracle for the digits."""

import re

import pytest

from webapp import numbers


@pytest.mark.parametrize(
    "value, text",
    [(1583.2, "1,580 ms"), (15812.3, "15,800 ms"), (3.97, "3.97 ms"), (0.0473, "0.0473 ms"), (0, "0 ms")],
)
def test_a_time_in_ms_reads_as_people_write_it(value, text):
    assert numbers.ms(value) == text


@pytest.mark.parametrize("value", [1.2e-7, 3.3e-5, 0.5, 7.0, 1234.5, 9.99e6, 1.58e12, -2.5e-4])
def test_every_magnitude_keeps_three_significant_figures_in_plain_notation(value):
    text = numbers.figure(value)
    assert not re.search(r"e[+-]?\d", text), text
    assert float(text.replace(",", "")) == pytest.approx(float(f"{value:.3g}"), rel=1e-12)


def test_no_number_reads_as_a_dash():
    assert numbers.figure(None) == numbers.ms("n/a") == numbers.figure(float("nan")) == "—"
