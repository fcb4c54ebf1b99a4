"""bench.cycle's course workloads (upstream scheduler_perf test cases in process) run to the end: every
measured pod bound, and where upstream churns preemptors, their preemptions happen along the way."""

from __future__ import annotations

import pytest

from bench import cycle
from bench.upstream import course

try:
    course.course_dir()
except course.CourseError as e:  # the pinned module is not on this machine
    pytest.skip(str(e), allow_module_level=True)


@pytest.mark.parametrize(
    "name",
    ["NodeAffinityCourse", "UnschedulableCourse", "NodeInclusionPolicyCourse", "PreemptionAsyncCourse"],
)
def test_course_workload_binds_every_measured_pod(name: str) -> None:
    nodes = 25
    w = cycle.cycle_workloads(nodes, 60)[name]
    _, _, bound, cpu = cycle.run_once(w, nodes, None, parallelism=1)
    assert bound == w.measured_pods
    assert cpu > 0
    if name == "PreemptionAsyncCourse":
        # 4 low-priority 900m pods per node: each 3-CPU churn pod can only get in by preempting
        assert cycle.LAST_POST_FILTER.get("calls", 0) >= 1
        assert cycle.LAST_POST_FILTER.get("dry:resources", 0) + cycle.LAST_POST_FILTER.get("dry:full", 0) > 0
