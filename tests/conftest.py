"""Shared fixtures."""

import pytest

from layoutkit import _repack


@pytest.fixture(params=["cached", "streamed"])
def store_mode(request):
    """Run a test with ordinary stores and again with every output streamed
    (the staged, non-temporal path the kernel takes for outputs beyond the cache)."""
    old = _repack.set_stream_threshold(0 if request.param == "streamed" else -1)
    yield request.param
    _repack.set_stream_threshold(old)
