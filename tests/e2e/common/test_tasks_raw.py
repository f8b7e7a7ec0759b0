"""Tasks over raw stdio pipes, for what the SDKs will not show: a `tasks/result` still waiting
when the client closes its input is answered (a retryable -32000) before the server exits, and
requests sent after it are answered meanwhile.
"""

from __future__ import annotations

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


def test_a_cancelled_tasks_result_stops_waiting_and_gets_no_answer(launcher):
    with RawServer.start(launcher, "tasks-cancelled") as srv:
        srv.initialize("2025-11-25")
        created = srv.request(
            "tools/call", {"name": "bernstein_run", "arguments": {"goal": "never finished"}, "task": {}}
        )
        task_id = created["result"]["task"]["taskId"]
        waiting = srv.send_request("tasks/result", {"taskId": task_id})
        srv.notify("notifications/cancelled", {"requestId": waiting, "reason": "host gave up"})
        # Later requests are answered; the cancelled one never is, not even at end of input.
        assert srv.request("tasks/get", {"taskId": task_id})["result"]["status"] == "working"
        code, leftovers = srv.close()
        assert code == 0
        assert not [m for m in leftovers if isinstance(m, dict) and m.get("id") == waiting], leftovers
