"""Each test run gets its own ROS domain and localhost-only discovery (see conftest.py)."""

from __future__ import annotations

import os

import conftest


def test_run_has_its_own_domain_and_localhost_discovery():
    assert os.environ["ROS_DOMAIN_ID"] == str(conftest.ROS_DOMAIN_ID)
    assert 1 <= conftest.ROS_DOMAIN_ID <= 101
    assert os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] == "LOCALHOST"


def test_a_second_claim_gets_a_different_domain():
    other, handle = conftest._claim_domain_id()
    try:
        assert other != conftest.ROS_DOMAIN_ID
    finally:
        handle.close()
