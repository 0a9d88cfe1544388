"""I/O adapters for ssestate: thin loops that feed a ``ChatStream`` from a
connection.  Each lives in its own module (``sync``, ``httpx``, ``trio``) and
is imported explicitly; the ssestate core never imports any of them."""
