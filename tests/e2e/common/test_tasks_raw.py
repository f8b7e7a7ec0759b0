"""Tasks over raw stdio pipes, for what the SDKs will not show: a `tasks/result` still waiting
when the client closes its input is answered (a retryable -32000) before the server exits,
requests sent after it are answered meanwhile, and a cancelled wait (tasks/result, a long poll
of bernstein_run_status) answers `{cancelled: true, partial}`.
"""

from __future__ import annotations

import json

from harness.raw import RawServer


def test_a_waiting_tasks_result_is_answered_at_end_of_input(launcher):
    with RawServer.start(launcher, "tasks-eof") as srv:
        srv.initialize("2025-11-25")
        created = srv.request(
            "tools/call", {"name": "bernstein_run", "arguments": {"goal": "never finished"}, "task": {}}
        )
        task_id = created["result"]["task"]["taskId"]
        waiting = srv.send_request("tasks/result", {"taskId": task_id})
        # The connection keeps serving while tasks/result waits.
        got = srv.request("tasks/get", {"taskId": task_id})
        assert got["result"]["status"] == "working"
        code, leftovers = srv.close()
        assert code == 0
        answers = [m for m in leftovers if isinstance(m, dict) and m.get("id") == waiting]
        assert len(answers) == 1, leftovers
        assert answers[0]["error"]["code"] == -32000
        assert answers[0]["error"]["data"] == {"taskId": task_id, "status": "working"}


def test_a_cancelled_tasks_result_stops_waiting_and_answers_cancelled(launcher):
    with RawServer.start(launcher, "tasks-cancelled") as srv:
        srv.initialize("2025-11-25")
        created = srv.request(
            "tools/call", {"name": "bernstein_run", "arguments": {"goal": "never finished"}, "task": {}}
        )
        task_id = created["result"]["task"]["taskId"]
        waiting = srv.send_request("tasks/result", {"taskId": task_id})
        # Cancelling an id nobody waits on changes nothing.
        srv.notify("notifications/cancelled", {"requestId": 987654, "reason": "stray"})
        assert srv.request("tasks/get", {"taskId": task_id})["result"]["status"] == "working"
        srv.notify("notifications/cancelled", {"requestId": waiting, "reason": "host gave up"})
        answer = srv.wait_for(waiting)
        result = answer["result"]
        assert result["cancelled"] is True and "isError" not in result, result
        [task] = result["partial"]
        assert task["taskId"] == task_id and task["status"] == "working"
        # The task itself goes on: cancelling the wait is not tasks/cancel.
        assert srv.request("tasks/get", {"taskId": task_id})["result"]["status"] == "working"
        code, leftovers = srv.close()
        assert code == 0
        assert not [m for m in leftovers if isinstance(m, dict) and m.get("id") == waiting], leftovers


def test_a_cancelled_long_poll_answers_its_partial_handle(launcher):
    with RawServer.start(launcher, "poll-cancelled") as srv:
        srv.initialize("2025-11-25")
        run = srv.call_tool("bernstein_run", {"goal": "nobody works on it"})
        text = json.loads(run["result"]["content"][0]["text"])
        run_id = text.get("result", text)["run_id"]
        waiting = srv.send_request(
            "tools/call", {"name": "bernstein_run_status", "arguments": {"run_id": run_id, "wait_ms": 60000}}
        )
        # Other requests are served while the poll waits.
        assert srv.request("ping", {})["result"] == {}
        srv.notify("notifications/cancelled", {"requestId": waiting})
        result = srv.wait_for(waiting)["result"]
        assert result["cancelled"] is True and "isError" not in result, result
        assert result["partial"][0]["runId"] == run_id


def test_a_long_poll_sends_its_current_tick_at_once_then_one_per_move(launcher):
    """The start tick arrives while the poll still waits (before its result), the next one
    when the ledger moves, then the result."""
    with RawServer.start(launcher, "poll-ticks", tier="standard") as srv:
        srv.initialize("2025-11-25")

        def payload(resp: dict) -> dict:
            text = json.loads(resp["result"]["content"][0]["text"])
            return text.get("result", text)

        root = payload(srv.call_tool("bernstein_run", {"goal": "root"}))["task_id"]
        for goal in ("child a", "child b"):
            payload(srv.call_tool("bernstein_run", {"goal": goal, "parent_task_id": root}))
        waiting = srv.send_request(
            "tools/call",
            {"name": "bernstein_run_status", "arguments": {"run_id": root, "wait_ms": 60000},
             "_meta": {"progressToken": "p"}},
        )

        def next_tick() -> tuple[int, int]:
            msg = srv.recv()
            assert msg.get("method") == "notifications/progress", msg
            assert msg["params"]["progressToken"] == "p"
            return msg["params"]["progress"], msg["params"]["total"]

        def work_one() -> None:
            claimed = payload(srv.call_tool("bernstein_claim", {"claimer_id": "w"}))
            payload(srv.call_tool("bernstein_complete", {"task_id": claimed["taskId"], "result_summary": "ok"}))

        assert next_tick() == (0, 3)
        work_one()
        # The worker's answers come first or after the tick: wait for the tick itself.
        while True:
            msg = srv.recv()
            if msg.get("method") == "notifications/progress":
                assert (msg["params"]["progress"], msg["params"]["total"]) == (1, 3), msg
                break
            srv.stash.append(msg)
        assert not [m for m in srv.stash if m.get("id") == waiting], "no result while the run works"
        work_one()
        answer = srv.wait_for(waiting)
        assert answer["result"]["isError"] is False
        ticks = [m for m in srv.received if m.get("method") == "notifications/progress"]
        assert [t["params"]["progress"] for t in ticks] == [0, 1, 3], ticks
        assert srv.received.index(ticks[-1]) < srv.received.index(answer)
        code, _ = srv.close()
        assert code == 0
