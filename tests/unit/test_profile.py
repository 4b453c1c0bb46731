"""bench.profile reads Spark's event log: jobs by call site, stages, tasks and the application's
span."""

from __future__ import annotations

from bench.profile import Job, busy, jobs_of


def test_jobs_stages_tasks_and_span_from_an_event_log():
    site = "collect at /tmp/x/reports/analysis.py:52"
    events = [
        {"Event": "SparkListenerApplicationStart", "Timestamp": 1_000},
        {"Event": "SparkListenerJobStart", "Job ID": 0, "Submission Time": 2_000,
         "Stage Infos": [{}, {}], "Properties": {"callSite.short": site}},
        {"Event": "SparkListenerStageCompleted",
         "Stage Info": {"Stage ID": 0, "Number of Tasks": 8}},
        {"Event": "SparkListenerStageCompleted",
         "Stage Info": {"Stage ID": 1, "Number of Tasks": 1}},
        {"Event": "SparkListenerJobEnd", "Job ID": 0, "Completion Time": 3_500},
        {"Event": "SparkListenerJobStart", "Job ID": 1, "Submission Time": 4_000,
         "Stage Infos": [{"Stage Name": "run at FutureTask.java:264"}], "Properties": {}},
        {"Event": "SparkListenerStageCompleted",
         "Stage Info": {"Stage ID": 2, "Number of Tasks": 2}},
        {"Event": "SparkListenerJobEnd", "Job ID": 1, "Completion Time": 4_250},
        {"Event": "SparkListenerApplicationEnd", "Timestamp": 6_000},
    ]
    jobs, span_s, tasks = jobs_of(events)
    assert jobs == [Job("collect at reports/analysis.py:52", 2.0, 3.5, 2),
                    Job("run at FutureTask.java:264", 4.0, 4.25, 1)]
    assert (span_s, tasks) == (5.0, 11)
    assert jobs_of(events[:-1])[1] == 3.25  # no end event: the application ends with its last job


def test_busy_counts_overlapping_jobs_once():
    jobs = [Job("a", 0.0, 4.0, 1), Job("b", 1.0, 2.0, 1), Job("c", 3.0, 6.0, 1),
            Job("d", 8.0, 9.0, 1)]
    assert busy(jobs) == 7.0


def test_a_stage_adaptive_execution_runs_ahead_is_named_for_what_it_is():
    events = [{"Event": "SparkListenerJobStart", "Job ID": 3, "Submission Time": 0,
               "Properties": {},
               "Stage Infos": [{"Stage Name": "$anonfun$withThreadLocalCaptured$1 at "
                                              "CompletableFuture.java:1768"}]},
              {"Event": "SparkListenerJobEnd", "Job ID": 3, "Completion Time": 500}]
    (job,), _, _ = jobs_of(events)
    assert job.site == "query stages run ahead of their action (adaptive shuffles and broadcasts)"
