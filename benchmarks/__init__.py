"""ssestate's benchmark suite: seeded fixtures, framing and chat-layer races.

Run ``python -m benchmarks`` from the repository root; see README.md here.
"""
