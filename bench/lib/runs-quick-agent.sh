#!/bin/sh
# The bench's short run (the `command` runtime, docs/runs.md): reads the prompt, writes one file in
# its worktree (so the run has work to commit), reports it and ends with a result line.
cat >/dev/null
echo "written by run $SVC_RUN_ID" > bench-output.txt
echo '{"type":"file_change","path":"bench-output.txt","change":"add","added":1,"removed":0}'
echo '{"type":"result","summary":"wrote bench-output.txt","turns":1}'
