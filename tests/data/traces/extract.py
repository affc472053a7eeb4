"""Regenerates django_reads.jsonl from the public mini-swe-agent trajectories.

    git clone https://github.com/SWE-agent/mini-swe-agent && cd mini-swe-agent
    python3 /path/to/extract.py ec0e8e849fea5b1619deb1753007201000904672 > django_reads.jsonl

Every bash tool call of every django__django-* trajectory at that commit, kept when label.py
calls it a read, first occurrence only, in trajectory order.
"""
import json, subprocess, sys
from label import is_read

commit = sys.argv[1]
names = subprocess.run(["git", "ls-tree", "-r", "--name-only", commit],
                       capture_output=True, text=True, check=True).stdout.split("\n")
seen = set()
for name in names:
    if not name.endswith(".traj.json") or "/django__django-" not in name:
        continue
    shown = subprocess.run(["git", "show", f"{commit}:{name}"], capture_output=True, text=True)
    try:
        doc = json.loads(shown.stdout)
    except ValueError:  # a blob the clone lacks (a partial mirror) is skipped
        continue
    if not isinstance(doc, dict):
        continue
    for msg in doc.get("messages", []):
        for call in (msg.get("tool_calls") or []) if isinstance(msg, dict) else []:
            try:
                cmd = json.loads(call["function"]["arguments"]).get("command")
            except (ValueError, KeyError, AttributeError):
                continue
            if cmd and is_read(cmd) and cmd not in seen:
                seen.add(cmd)
                print(json.dumps(cmd))
