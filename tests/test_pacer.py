"""Pacer: steady replay of bursty text, with time passed in."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ssestate import LocalProtocolError, Pacer

# -- examples -----------------------------------------------------------------


def test_steady_rate_from_first_push() -> None:
    p = Pacer(rate=10.0, max_lag=5.0)
    p.push("abcdefghij", now=100.0)
    assert p.take(100.0) == ""
    assert p.take(100.1) == "a"
    assert p.take(100.35) == "bc"  # 3.5 characters of credit in all
    assert p.take(100.35) == ""
    assert p.take(100.5) == "de"
    assert p.pending == 5
    assert not p.done


def test_credit_is_not_banked_while_idle() -> None:
    p = Pacer(rate=10.0, max_lag=5.0)
    p.push("ab", 0.0)
    assert p.take(10.0) == "ab"
    assert p.take(20.0) == ""
    p.push("cdefgh", 30.0)  # a long idle time earns nothing
    assert p.take(30.0) == ""
    assert p.take(30.2) == "cd"


def test_unused_credit_is_capped_when_text_runs_out() -> None:
    p = Pacer(rate=10.0, max_lag=5.0)
    p.push("ab", 0.0)
    assert p.take(3.0) == "ab"
    p.push("cdef", 3.0)  # pending was empty: the clock starts again
    assert p.take(3.05) == ""
    assert p.take(3.1) == "c"


def test_speeds_up_when_the_backlog_grows() -> None:
    p = Pacer(rate=10.0, max_lag=1.0)
    p.push("x" * 100, 0.0)
    # 100 characters pending with a 1 s bound: 100 characters a second, not 10.
    assert p.take(0.5) == "x" * 50


def test_deadline_forces_out_late_text() -> None:
    p = Pacer(rate=1.0, max_lag=2.0)
    p.push("abcd", 0.0)
    assert p.take(1.9) == "abc"  # 4 pending within 2 s: 2 characters a second
    assert p.take(2.0) == "d"  # 0.9 characters of credit, but "d" is due


def test_deadline_after_partial_takes() -> None:
    p = Pacer(rate=1.0, max_lag=2.0)
    p.push("ab", 0.0)
    assert p.take(1.0) == "a"
    p.push("cd", 1.0)
    assert p.take(2.0) == "b"  # "ab" due at 2.0: only "b" of it is left
    assert p.take(3.0) == "cd"


def test_never_splits_crlf() -> None:
    p = Pacer(rate=10.0, max_lag=5.0)
    p.push("a\r\nb", 0.0)
    assert p.take(0.2) == "a\r\n"  # two characters of credit; the LF comes along
    assert p.take(0.25) == ""
    assert p.take(0.4) == "b"


def test_trailing_cr_is_held_for_its_lf() -> None:
    p = Pacer(rate=100.0, max_lag=0.5)
    p.push("ab\r", 0.0)
    assert p.take(10.0) == "ab"  # even past the deadline
    assert p.pending == 1
    assert p.wait(10.0) is None
    p.push("\ncd", 10.0)
    assert p.take(10.0) == "\r\n"  # the one character of credit kept, plus the LF
    assert p.take(20.0) == "cd"


def test_held_cr_does_not_bank_credit() -> None:
    p = Pacer(rate=10.0, max_lag=100.0)
    p.push("a\r", 0.0)
    assert p.take(1.0) == "a"
    assert p.take(50.0) == ""
    p.push("\nbcdefgh", 50.0)
    assert p.take(50.0) == "\r\n"  # the credit of one character, plus the LF
    assert p.take(50.05) == ""
    assert p.take(50.15) == ""  # the LF went out early: one character of debt
    assert p.take(50.21) == "b"


def test_lone_cr_goes_out_when_followed_by_other_text() -> None:
    p = Pacer(rate=10.0, max_lag=5.0)
    p.push("\r", 0.0)
    p.push("x", 0.0)
    assert p.take(0.1) == "\r"
    assert p.take(0.2) == "x"


def test_close_flushes_everything_including_a_trailing_cr() -> None:
    p = Pacer(rate=1.0, max_lag=60.0)
    p.push("hello\r", 0.0)
    p.close()
    assert p.wait(0.0) == 0.0
    assert p.take(0.0) == "hello\r"
    assert p.done
    assert p.take(1.0) == ""
    assert p.wait(1.0) is None


def test_drain_returns_everything_without_closing() -> None:
    p = Pacer(rate=1.0, max_lag=60.0)
    p.push("abc", 0.0)
    assert p.drain() == "abc"
    assert not p.closed
    assert p.drain() == ""
    p.push("d", 5.0)
    assert p.take(5.5) == ""
    assert p.take(6.0) == "d"


def test_time_going_backwards_adds_no_credit() -> None:
    p = Pacer(rate=10.0, max_lag=5.0)
    p.push("abcdef", 10.0)
    assert p.take(10.2) == "ab"
    assert p.take(9.0) == ""
    assert p.take(10.3) == "c"


def test_wait_predicts_the_next_character() -> None:
    p = Pacer(rate=10.0, max_lag=5.0)
    p.push("abc", 0.0)
    assert p.wait(0.0) == pytest.approx(0.1)
    assert p.wait(0.04) == pytest.approx(0.06)
    assert p.take(0.1) == "a"
    assert p.wait(0.1) == pytest.approx(0.1)
    assert p.wait(0.5) == 0.0


def test_wait_is_bounded_by_the_deadline() -> None:
    p = Pacer(rate=1.0, max_lag=1.0)
    p.push("a\r\nbc", 0.0)
    assert p.take(0.4) == "a\r\n"  # 2 characters of credit, plus the LF: a debt of 1
    assert p.wait(0.4) == pytest.approx(0.6)  # credit would take 1.0 s more; "bc" is due at 1.0
    assert p.take(1.0) == "bc"


def test_wait_and_take_with_nothing_pending() -> None:
    p = Pacer()
    assert p.wait(0.0) is None
    assert p.take(0.0) == ""
    p.push("", 0.0)
    assert p.pending == 0


def test_push_after_close_is_refused() -> None:
    p = Pacer()
    p.close()
    with pytest.raises(LocalProtocolError, match="after close"):
        p.push("x", 0.0)


@pytest.mark.parametrize("rate", [0.0, -1.0, math.inf, math.nan])
def test_bad_rate(rate: float) -> None:
    with pytest.raises(LocalProtocolError, match="rate must be"):
        Pacer(rate=rate)


@pytest.mark.parametrize("lag", [0.0, -2.0, math.inf, math.nan])
def test_bad_max_lag(lag: float) -> None:
    with pytest.raises(LocalProtocolError, match="max_lag must be"):
        Pacer(max_lag=lag)


# -- properties -----------------------------------------------------------------

_text = st.text(alphabet=st.sampled_from(["a", "é", "字", "🚀", "\r", "\n", " "]), max_size=40)
# A script of operations: ("push", text, dt) or ("take", dt); time never goes back.
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("push"), _text, st.floats(0, 2)),
        st.tuples(st.just("take"), st.just(""), st.floats(0, 2)),
    ),
    max_size=40,
)
_rates = st.floats(0.5, 500)
_lags = st.floats(0.05, 5)


def _run(rate: float, lag: float, ops: list[tuple[str, str, float]]) -> tuple[list[tuple[float, str]], Pacer, float]:
    """Play ``ops``; return (time of each push and its text), the pacer and
    the final time, checking the lag bound after every take."""
    p = Pacer(rate=rate, max_lag=lag)
    now = 0.0
    pushes: list[tuple[float, str]] = []
    taken = ""
    for op, text, dt in ops:
        now += dt
        if op == "push":
            p.push(text, now)
            pushes.append((now, text))
            continue
        out = p.take(now)
        if taken and out:
            assert not (taken.endswith("\r") and out.startswith("\n")), "a CRLF was split"
        taken += out
        # Lag bound: every character pushed at least max_lag ago is out,
        # except a CR at the very end that may still be waiting for its LF.
        due = "".join(text for t, text in pushes if t + lag <= now)
        everything = "".join(text for _, text in pushes)
        if due == everything and due.endswith("\r"):
            due = due[:-1]
        assert len(taken) >= len(due)
    return pushes, p, now


@given(_rates, _lags, _ops)
def test_everything_pushed_is_taken_once_in_order(rate: float, lag: float, ops: list[tuple[str, str, float]]) -> None:
    p = Pacer(rate=rate, max_lag=lag)
    now = 0.0
    pushed = taken = ""
    for op, text, dt in ops:
        now += dt
        if op == "push":
            p.push(text, now)
            pushed += text
        else:
            taken += p.take(now)
        assert pushed.startswith(taken)  # never ahead of what was pushed, never reordered
        assert p.pending == len(pushed) - len(taken)
    p.close()
    taken += p.take(now)
    assert taken == pushed
    assert p.done


@given(_rates, _lags, _ops)
def test_lag_is_bounded(rate: float, lag: float, ops: list[tuple[str, str, float]]) -> None:
    _run(rate, lag, ops)


@given(_rates, _lags, _ops)
def test_never_splits_crlf_across_takes(rate: float, lag: float, ops: list[tuple[str, str, float]]) -> None:
    p = Pacer(rate=rate, max_lag=lag)
    now = 0.0
    outs: list[str] = []
    for op, text, dt in ops:
        now += dt
        if op == "push":
            p.push(text, now)
        else:
            outs.append(p.take(now))
    outs = [o for o in outs if o]
    for a, b in itertools.pairwise(outs):
        assert not (a.endswith("\r") and b.startswith("\n"))


@given(
    st.floats(1, 200),
    st.floats(0.1, 5),
    st.text(alphabet="ab\r\n字", min_size=1, max_size=200),
    st.lists(st.floats(0, 0.5), max_size=30),
)
def test_steady_rate_when_not_behind(rate: float, lag: float, text: str, gaps: list[float]) -> None:
    # One push no larger than what the steady rate shows within max_lag:
    # the pacer runs at exactly `rate` (give or take the LF of a CRLF).
    text = text[: max(1, int(rate * lag))]
    p = Pacer(rate=rate, max_lag=lag)
    p.push(text, 0.0)
    now = 0.0
    taken = 0
    for gap in gaps:
        now += gap
        taken += len(p.take(now))
        assert taken <= rate * now + 1 + 1e-6
        held = 1 if text.endswith("\r") else 0
        expected = min(len(text) - held, math.floor(rate * now + 1e-9))
        assert taken >= expected - 1


@given(_rates, _lags, _ops)
def test_wait_says_when_take_has_something(rate: float, lag: float, ops: list[tuple[str, str, float]]) -> None:
    p = Pacer(rate=rate, max_lag=lag)
    now = 0.0
    for op, text, dt in ops:
        now += dt
        if op == "push":
            p.push(text, now)
            continue
        w = p.wait(now)
        if w is None:
            now += 1e6
            assert p.take(now) == ""
            continue
        if w > 1e-6:
            assert p.take(now) == ""
        now += w + 1e-6
        assert p.take(now) != ""
