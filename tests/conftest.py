"""Hypothesis profiles for the test suite, and Ctrl-C made deliverable.

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

Several tests stop a server or a command with SIGINT, as Ctrl-C would (a
child process, or the test process itself through ``interrupt_main``).  A
shell starts a background job with SIGINT ignored, and a child process
inherits that: a suite started that way would wait on every such stop
until its timeout, or for ever.  The suite therefore takes SIGINT back as
Python's default (its children then start with the default action too).
"""

from __future__ import annotations

import os
import signal

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

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
