"""Knative activator throttler capacity through the Python bindings (the maths stays in C++)."""
import pytest

from kubetune import autoscale as a


def share(**kw):
    return a.throttler_share(a.ThrottlerInput(**kw))


def test_pod_assignment_finite():
    # throttler_test.go:TestPodAssignmentFinite: 6 pods, cc 42, 4 activators, index 0 -> {ip0, ip4}, 2 * 42.
    s = share(backends=6, container_concurrency=42, activator_count=4, activator_index=0)
    assert s.tracker_indices == [0, 4]
    assert (s.slice_begin, s.slice_end, s.remnant, s.assigned) == (0, 1, 4, 2)
    assert s.breaker_capacity == 84 and s.tracker_capacity == 42 and not s.infinite_breaker


def test_infinite_breaker_takes_every_tracker():
    # throttler_test.go:TestThrottlerUpdateCapacity/Infinite capacity with podIP trackers.
    s = share(backends=1, pod_trackers=3, container_concurrency=0, activator_count=2, activator_index=1)
    assert s.infinite_breaker and s.breaker_capacity == 1
    assert s.capacity == a.REVISION_MAX_CONCURRENCY == 2**31 - 1
    assert s.tracker_indices == [0, 1, 2]
    # Scaled to zero: the infinite breaker closes.
    assert share(backends=0, container_concurrency=0).breaker_capacity == 0


def test_cluster_ip_divides_capacity():
    # throttler_test.go:TestThrottlerUpdateCapacity/numActivators: 5, capacity: 10, cc: 10 (no trackers).
    s = share(backends=10, container_concurrency=10, activator_count=5, activator_index=3, via_cluster_ip=True)
    assert (s.capacity, s.assigned, s.tracker_indices) == (20, 0, [])
    # .../numActivators: 200, capacity: 10, cc: 10 -> never below 1 while any capacity exists.
    assert share(backends=10, container_concurrency=10, activator_count=200, via_cluster_ip=True).capacity == 1


def test_pick_tracker_indices():
    # throttler_test.go:TestPickIndices/10 pods, 3 activators this is 1 and /2 pods, 3 activators, this is 2.
    assert a.pick_tracker_indices(10, 1, 3) == (3, 6, 1)
    assert a.pick_tracker_indices(2, 2, 3) == (0, 1, 0)


def test_bad_input_is_a_value_error():
    with pytest.raises(ValueError, match="activator_index = 3"):
        share(backends=6, container_concurrency=1, activator_count=3, activator_index=3)
    with pytest.raises(ValueError, match="container_concurrency = -1"):
        share(backends=1, container_concurrency=-1)
    with pytest.raises(ValueError, match="unknown field 'activators'"):
        a.ThrottlerInput(activators=2)
    with pytest.raises(ValueError, match="trackers = 0"):
        a.pick_tracker_indices(0, 0, 1)
