"""RetryPolicy and StreamTimeout."""

from __future__ import annotations

import email.utils
import pickle
import random
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ssestate import RetryPolicy, StreamTimeout


class Fixed(random.Random):
    """A random source that always returns the same value."""

    def __init__(self, value: float) -> None:
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


NO_JITTER = Fixed(0.0)
statuses = st.one_of(st.none(), st.integers(100, 599))


def test_defaults_match_the_spec() -> None:
    policy = RetryPolicy()
    assert (policy.max_retries, policy.base_delay, policy.max_delay) == (2, 0.5, 8.0)


def test_backoff_doubles_and_is_capped() -> None:
    policy = RetryPolicy(max_retries=10, base_delay=0.5, max_delay=3.0, rng=NO_JITTER)
    assert [policy.delay(a) for a in range(5)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_jitter_reduces_by_at_most_the_jitter_fraction() -> None:
    policy = RetryPolicy(base_delay=1.0, jitter=0.25, rng=Fixed(0.999999))
    delay = policy.delay(0, 503)
    assert delay is not None
    assert 0.75 < delay < 0.7501
    assert RetryPolicy(base_delay=1.0, jitter=0.0, rng=Fixed(0.9)).delay(0, 503) == 1.0


def test_default_rng_is_used_when_none_given() -> None:
    delay = RetryPolicy(base_delay=1.0).delay(0)
    assert delay is not None
    assert 0.75 <= delay <= 1.0


def test_huge_attempt_numbers_stay_at_the_cap() -> None:
    policy = RetryPolicy(max_retries=10**9, rng=NO_JITTER)
    assert policy.delay(10**9 - 1, 503) == 8.0


def test_attempts_are_counted_from_zero() -> None:
    policy = RetryPolicy(max_retries=2, rng=NO_JITTER)
    assert policy.delay(0, 503) == 0.5
    assert policy.delay(1, 503) == 1.0
    assert policy.delay(2, 503) is None
    assert RetryPolicy(max_retries=0).delay(0, 503) is None


@pytest.mark.parametrize("status", [None, 408, 409, 429, 500, 502, 503, 504, 599])
def test_retryable(status: int | None) -> None:
    assert RetryPolicy.retryable(status)
    assert RetryPolicy(rng=NO_JITTER).delay(0, status) == 0.5


@pytest.mark.parametrize("status", [200, 204, 301, 304, 400, 401, 403, 404, 410, 413, 422, 451, 600])
def test_not_retryable(status: int) -> None:
    assert not RetryPolicy.retryable(status)
    assert RetryPolicy().delay(0, status, {"Retry-After": "1"}) is None


def test_never_after_output_was_emitted() -> None:
    assert RetryPolicy().delay(0, None, emitted=True) is None
    assert RetryPolicy().delay(0, 429, {"Retry-After": "0"}, emitted=True) is None


def test_retry_after_seconds_any_case_and_pairs() -> None:
    policy = RetryPolicy()
    assert policy.delay(0, 429, {"Retry-After": "3"}) == 3.0
    assert policy.delay(0, 429, [("retry-after", " 0 ")]) == 0.0
    assert policy.delay(0, 503, [("RETRY-AFTER", "1.5")]) == 1.5


def test_first_header_of_a_name_wins() -> None:
    assert RetryPolicy().delay(0, 429, [("Retry-After", "2"), ("retry-after", "9")]) == 2.0


def test_retry_after_ms_wins_over_retry_after() -> None:
    headers = {"retry-after-ms": "250", "Retry-After": "7"}
    assert RetryPolicy().delay(0, 429, headers) == 0.25


def test_unusable_values_fall_back_to_backoff() -> None:
    policy = RetryPolicy(rng=NO_JITTER)
    for value in ["", "soon", "-1", "nan", "inf", "1e999"]:
        assert policy.delay(1, 429, {"Retry-After": value, "retry-after-ms": value}) == 1.0, value
    assert policy.delay(1, 429, {}) == 1.0


def test_retry_after_http_date_against_now() -> None:
    headers = {"Retry-After": "Sun, 06 Nov 1994 08:49:37 GMT"}
    epoch = 784111777.0  # that instant
    assert RetryPolicy().delay(0, 429, headers, now=epoch - 4) == 4.0
    assert RetryPolicy().delay(0, 429, headers, now=epoch + 100) == 0.0


def test_retry_after_http_date_against_the_date_header() -> None:
    headers = {"Retry-After": "Sun, 06 Nov 1994 08:49:40 GMT", "Date": "Sun, 06 Nov 1994 08:49:37 GMT"}
    assert RetryPolicy().delay(0, 429, headers) == 3.0


def test_http_date_zone_offsets() -> None:
    headers = {"Retry-After": "Sun, 06 Nov 1994 09:49:37 +0100", "Date": "Sun, 06 Nov 1994 08:49:35 GMT"}
    assert RetryPolicy().delay(0, 429, headers) == 2.0


def test_http_date_without_a_date_header_is_read_against_the_local_clock() -> None:
    # A response that asks for an instant but carries no usable Date header
    # still asked for that instant: it is read against the wall clock.
    headers = {"Retry-After": "Sun, 06 Nov 1994 08:49:37 GMT"}
    epoch = 784111777.0
    policy = RetryPolicy(rng=NO_JITTER, clock=lambda: epoch - 7)
    assert policy.delay(0, 429, headers) == 7.0
    assert policy.delay(0, 429, {**headers, "Date": "garbage"}) == 7.0
    assert policy.delay(0, 429, headers, now=epoch - 2) == 2.0  # the caller's now wins
    assert RetryPolicy(clock=lambda: epoch + 5).delay(0, 429, headers) == 0.0  # already past


def test_http_date_is_read_against_time_time_by_default() -> None:
    when = time.time() + 30
    headers = {"Retry-After": email.utils.formatdate(when, usegmt=True)}
    wait = RetryPolicy().delay(0, 429, headers)
    assert wait is not None and 25 <= wait <= 31


def test_too_long_retry_after_means_no_retry() -> None:
    policy = RetryPolicy(max_retry_after=60)
    assert policy.delay(0, 429, {"Retry-After": "60"}) == 60.0
    assert policy.delay(0, 429, {"Retry-After": "61"}) is None
    assert policy.delay(0, 429, {"retry-after-ms": "60001"}) is None


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_retries": -1},
        {"base_delay": -0.1},
        {"max_delay": float("nan")},
        {"max_retry_after": float("inf")},
        {"jitter": 1.5},
        {"jitter": -0.1},
    ],
)
def test_invalid_configuration(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        RetryPolicy(**kwargs)  # type: ignore[arg-type]


@given(
    attempt=st.integers(0, 60),
    status=statuses,
    base=st.floats(0, 100),
    cap=st.floats(0, 100),
    jitter=st.floats(0, 1),
    r=st.floats(0, 1, exclude_max=True),
)
def test_backoff_never_exceeds_the_cap(
    attempt: int, status: int | None, base: float, cap: float, jitter: float, r: float
) -> None:
    policy = RetryPolicy(max_retries=61, base_delay=base, max_delay=cap, jitter=jitter, rng=Fixed(r))
    delay = policy.delay(attempt, status)
    if RetryPolicy.retryable(status):
        assert delay is not None
        assert 0 <= delay <= cap
        assert delay >= min(cap, base * 2.0**attempt) * (1 - jitter) * (1 - 1e-12)
    else:
        assert delay is None


@given(
    attempt=st.integers(0, 5),
    status=statuses,
    headers=st.dictionaries(
        st.sampled_from(["Retry-After", "retry-after-ms", "Date", "X-Other"]),
        st.one_of(st.text(max_size=12), st.integers(0, 100).map(str)),
    ),
)
def test_never_after_emitted_and_never_negative(attempt: int, status: int | None, headers: dict[str, str]) -> None:
    policy = RetryPolicy(max_retries=5)
    assert policy.delay(attempt, status, headers, emitted=True) is None
    delay = policy.delay(attempt, status, headers)
    if delay is not None:
        assert RetryPolicy.retryable(status)
        assert 0 <= delay <= policy.max_retry_after


def test_stream_timeout_first_byte() -> None:
    exc = StreamTimeout("first-byte", 30.0042, 30.0)
    assert isinstance(exc, TimeoutError)
    assert (exc.phase, exc.waited, exc.limit) == ("first-byte", 30.0042, 30.0)
    assert str(exc) == "first-byte timeout: no response body byte 30.004 s after the request was sent (limit 30 s)"


def test_stream_timeout_idle_and_pickle() -> None:
    exc = StreamTimeout("idle", 1.25, 1.0)
    assert str(exc) == "idle timeout: no byte for 1.250 s after the last one (limit 1 s)"
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is StreamTimeout
    assert (back.phase, back.waited, back.limit, str(back)) == ("idle", 1.25, 1.0, str(exc))
