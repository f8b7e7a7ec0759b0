#!/bin/sh
# An example agent for `bernstein worker --exec examples/agent.sh`: no model, no network.
# The worker runs it once per claimed task, in the project directory, with the task as JSON
# on stdin and in BERNSTEIN_TASK_* variables. Each line it prints is posted to the task's
# mailbox; the last line starting with `RESULT:` becomes the task's result; exit 0 completes
# the task, any other status fails it. Replace it with a real agent (`--agent claude`, …).
set -eu
echo "task $BERNSTEIN_TASK_ID ($BERNSTEIN_TASK_ROLE): $BERNSTEIN_TASK_TITLE"
words=$(printf '%s' "$BERNSTEIN_TASK_GOAL" | wc -w | tr -d ' ')
echo "reading the goal: $words words"
sleep 1
echo "RESULT: done with \"$BERNSTEIN_TASK_TITLE\" ($words words of goal read)"
