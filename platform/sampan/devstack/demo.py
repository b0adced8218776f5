"""``make demo``: the main job, headless, through the REST API, on real services.

Starts Redis, the web server, a Celery worker and (later) a local edge agent in a fresh data
folder, runs ``run_main_job`` with ``seeds/demo.json`` (``--task detection``:
``seeds/demo_detection.json``, ``make demo TASK=detection``; ``--task text``:
``seeds/demo_text.json``, ``make demo TASK=text``), stops everything, and prints ONE
JSON object as the last line of stdout (its ``task`` names the task). Exit status 0 only if
every stage succeeded.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from sampan.devstack.client import Client
from sampan.devstack.mainjob import SEEDS_DIR, run_main_job
from sampan.devstack.stack import Stack


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--recipe", default=None,
                        help="a recipe file (default: seeds/demo.json, or with --task "
                             "detection seeds/demo_detection.json)")
    parser.add_argument("--task", default="classification",
                        choices=["classification", "image_classification", "detection",
                                 "object_detection", "text", "text_classification"])
    parser.add_argument("--budget-s", type=float, default=None)
    parser.add_argument("--data-dir", default=None, help="keep the data here (default: temp)")
    args = parser.parse_args(argv)
    default = ("demo_detection.json" if "detection" in args.task
               else "demo_text.json" if "text" in args.task else "demo.json")
    recipe = json.loads(Path(args.recipe or SEEDS_DIR / default).read_text())
    if args.budget_s:
        recipe["budget_s"] = args.budget_s
    data_dir = (Path(args.data_dir) if args.data_dir
                else Path(tempfile.mkdtemp(prefix="sampan-demo-")))

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    started = time.monotonic()
    stack = Stack(data_dir=data_dir)
    result: dict[str, object] = {"ok": False}
    try:
        stack.start()
        user = json.loads(stack.manage("sampan_user", "--username", "demo", "--password",
                                       "demo-password").stdout.strip().splitlines()[-1])
        setup_s = round(time.monotonic() - started, 2)
        say(f"[setup] {setup_s:.1f} s  web={stack.url}")
        result = run_main_job(stack, Client(stack.url, user["token"]), recipe=recipe, say=say)
        result["stages_s"] = {"setup": setup_s, **result["stages_s"]}  # type: ignore[dict-item]
        result["ok"] = True
    except Exception as exc:
        say(f"demo failed: {exc}")
        for name in ("web", "worker", "agent"):
            say(f"--- {name} log ---\n{stack.log_tail(name, 40)}")
        result = {"ok": False, "error": str(exc), "task": recipe.get("task")}
    finally:
        stack.stop()
        if not args.data_dir:
            shutil.rmtree(data_dir, ignore_errors=True)
    result["total_s"] = round(time.monotonic() - started, 2)
    print(json.dumps(result), flush=True)
    return 0 if result.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
