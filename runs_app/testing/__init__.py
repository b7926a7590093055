"""Test doubles shared by the test suites and `bench/` (e.g. `fake_openrouter`).

Kept free of imports so that importing this package never pulls in aiohttp,
which only the development dependencies provide.
"""
