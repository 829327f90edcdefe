"""tau-bench's own airline environment running the test split's gold trials, the way tau-bench
runs a trial: reset, the gold actions as steps, then the answer, whose reply ends the episode
and computes the reward (tau-bench reloads the data, replays the gold actions and compares
hashes). No model is called: the user only answers ###STOP###.

usage: python3 tau_bench_env.py TAU_BENCH_CHECKOUT [--steps-only]   (prints the count rewarded)
  --steps-only: reset and the gold steps, no answer and so no reward (the cheaper half).
needs: pydantic; tau-bench's source (github.com/sierra-research/tau-bench). Its `litellm`
import is stubbed: the user simulator is not used.
"""

import sys
import types

sys.path.insert(0, sys.argv[1])
sys.modules.setdefault("litellm", types.SimpleNamespace(completion=None))

from tau_bench.envs.airline.env import MockAirlineDomainEnv  # noqa: E402
from tau_bench.types import Action  # noqa: E402


class Stop:
    """A user who has nothing more to say."""

    def reset(self, instruction=None):
        return instruction or ""

    def step(self, content):
        return "###STOP###"

    def get_total_cost(self):
        return 0.0


steps_only = "--steps-only" in sys.argv[2:]
env = MockAirlineDomainEnv(user_strategy="human", task_split="test", task_index=0)
env.user = Stop()
rewarded = 0
for index, task in enumerate(env.tasks):
    env.reset(task_index=index)
    for action in task.actions:
        env.step(action)
    if steps_only:
        continue
    answer = "; ".join(task.outputs) if task.outputs else "Done."
    response = env.step(Action(name="respond", kwargs={"content": answer}))
    rewarded += response.reward == 1
print(f"tau-bench env: {len(env.tasks)} trials" + ("" if steps_only else f", {rewarded} rewarded"))
