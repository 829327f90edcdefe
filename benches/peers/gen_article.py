"""Writes N random article trajectories (AgentTrajectory, one JSON object per line) for the
example suite's case TC-SQL-FIX-001: random steps, tools, arguments, repeated calls, duplicate
step numbers. Seeded, so a size always gives the same file.

usage: python3 gen_article.py N OUT.jsonl
"""
import json
import random
import sys

n, out = int(sys.argv[1]), sys.argv[2]
rng = random.Random(n)
tools = ["read_log_file", "update_config", "restart_service", "query_metrics", "list_configs"]
with open(out, "w") as f:
    for i in range(n):
        steps = []
        for s in range(rng.randint(1, 8)):
            calls = []
            for _ in range(rng.randint(0, 3)):
                tool = rng.choice(tools)
                args = {"key": rng.choice(["max_connections", "timeout", "pool"]),
                        "value": rng.choice([5, 10, 20, 20.0, "20"])}
                calls.append({"tool_name": tool, "arguments": args,
                              "observation": "x" * rng.randint(10, 400)})
            number = s + 1 if rng.random() > 0.05 else max(1, s)
            steps.append({"step_number": number, "thought": "thinking " * rng.randint(1, 30),
                          "tool_calls": calls})
        good = rng.random() < 0.6
        traj = {
            "task_id": "TC-SQL-FIX-001",
            "goal": "Analyze DB connection failure error and update SQL connection pool setting to 20.",
            "initial_state": {"max_connections": 5, "status": "exhausted"},
            "final_state": {"max_connections": 20 if good else 5,
                            "status": "healthy" if good else "exhausted"},
            "final_answer": "Increased SQL connection pool to 20." if good else "Could not fix it.",
            "total_tokens_used": rng.randint(100, 5000),
            "total_cost_usd": round(rng.random() / 100, 5),
            "total_latency_seconds": round(rng.random() * 10, 3),
            "steps": steps,
        }
        f.write(json.dumps(traj) + "\n")
