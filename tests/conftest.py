"""Hypothesis profiles for the test suite.

``dev`` (the default) keeps example counts modest so a run on a laptop stays
quick; ``ci`` (chosen when the environment has ``CI=true``) runs 30
examples a property on each of the four supported Pythons (120 a CI run),
never reuses a database and prints the blob to replay a failure: the suite
runs under coverage on all four at once on two cores, and must stay within
the fifteen minutes CI allows.  ``HYPOTHESIS_PROFILE=<name>`` picks a
profile by hand.
Neither profile derandomizes: every run explores new inputs, and a failing
example is printed (and, under ``dev``, kept in the local example database).

Test files that need fewer examples than the profile (a property that feeds
each input one byte at a time, say) scale ``settings.default.max_examples``
down rather than hard-coding a count, so both profiles keep their meaning.
``deep`` (by hand only) runs thousands of examples, for hunting bugs.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "dev",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "deep",
    max_examples=5000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "ci",
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
    print_blob=True,
)

_default = "ci" if os.environ.get("CI", "").lower() == "true" else "dev"
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", _default))
