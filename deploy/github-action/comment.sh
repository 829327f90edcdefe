#!/usr/bin/env bash
# The body of gauntlet's pull-request comment, on stdout: a marker the action finds the comment
# by (one comment per pull request, updated on each push), then the run's Markdown summary
# (`gauntlet report RUN --format md`: trials, why each failed one failed, metrics, gates, the
# verdict) and, when the base branch's run is there, the comparison with it (its verdict, the
# critical violations new in this run and the table of cases that flipped, worse first).
#
#   deploy/github-action/comment.sh RUN_DIR [BASE_RUN_DIR]
set -euo pipefail
run=$1
base=${2:-}
echo "<!-- gauntlet-pr-comment -->"
if [ -n "$base" ] && [ -f "$base/results.json" ]; then
  gauntlet report "$run" --format md --baseline "$base"
else
  gauntlet report "$run" --format md
  echo
  echo "_No run of the base branch to compare with: the comparison appears once the base branch has a run of this suite uploaded by this action._"
fi
