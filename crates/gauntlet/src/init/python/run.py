"""Runs the suite against agent.py, prints the summary and the verdict, and exits 0 when every
gate passed (1 when one failed): python run.py"""

import sys
from pathlib import Path

import gauntlet
from agent import agent

results = gauntlet.run(Path(__file__).parent, agent=agent, verbose=True)
sys.exit(0 if results.verdict == "passed" else 1)
