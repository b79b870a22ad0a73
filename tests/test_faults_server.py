"""Fault injection on the server stack (PostgreSQL + pgvector, real processes; the machinery is
tests/helpers/faults.py and tests/helpers/server_faults.py, and bench/bench_faults.py --stack server
runs it with 100+ kills): a writer SIGKILLed in the middle of each operation, `forest serve`
workers SIGKILLed while clients write through REST and MCP, `forest personal worker` processes
SIGKILLed while they share one queue, and PostgreSQL restarted under load. Afterwards nothing was
lost, written twice or left half-built, and `forest doctor` finds the store healthy or repairs it."""
from __future__ import annotations

import random

import pytest

from helpers import faults


@pytest.fixture(scope="module")
def ctx():
    return faults.context()


@pytest.fixture(scope="module")
def server(postgres):
    return faults.Server(postgres)


@pytest.mark.parametrize("operation", list(faults.OPERATIONS))
def test_a_writer_killed_anywhere_leaves_a_whole_server_store(ctx, server, tmp_path, operation):
    """As on the embedded stack: killed right after each durable write in turn (a committed
    PostgreSQL transaction, a pgvector write) and at random moments, the store is the one before
    or the one after, never between."""
    line = faults.baseline(ctx, operation, tmp_path, server)
    try:
        violations = faults.kill_at_random(ctx, line, tmp_path, 3 if operation == "personal" else 1,
                                           random.Random(operation)).violations
        if operation != "personal":  # its writes interleave with a worker thread's: random kills only
            sweep = faults.kill_at_each_write(ctx, line, tmp_path)
            assert sweep.kills == line.writes >= 1
            violations += sweep.violations
    finally:
        line.discard()
    assert violations == []
