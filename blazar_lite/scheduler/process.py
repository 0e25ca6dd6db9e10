"""The scheduler beside `blazar-lite serve`, in a process of its own.

gunicorn's master forks the API workers, and forks again whenever one is replaced. A scheduler
thread in the master would be copied into every fork mid-flight, and with it the master's open
database connections: a worker that cleans up such a copy closes the scheduler's connection
under it. So `serve` starts the scheduler as a fresh interpreter (`python -m
blazar_lite.scheduler`) with its own engine, before gunicorn starts, and stops it when gunicorn
exits. It reads the same settings: the configuration file is handed over in BLAZAR_LITE_CONFIG,
and the environment is inherited.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys

from blazar_lite.settings import ENV_PREFIX

LOG = logging.getLogger(__name__)
STOP_SECONDS = 30


def start_scheduler_process(config_file: str | None) -> subprocess.Popen[bytes]:
    """Start the scheduler in a child process; its output goes where ours goes."""
    env = dict(os.environ)
    if config_file:
        env[ENV_PREFIX + "CONFIG"] = os.path.abspath(config_file)
    process = subprocess.Popen([sys.executable, "-m", "blazar_lite.scheduler"], env=env, stdin=subprocess.DEVNULL)
    LOG.info("lease scheduler running in process %d", process.pid)
    return process


def stop_scheduler_process(process: subprocess.Popen[bytes]) -> None:
    """Ask the scheduler to stop (SIGTERM), letting it finish the event it is running; kill it if
    it has not stopped within STOP_SECONDS."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            LOG.warning("lease scheduler %d did not stop within %d s; killing it", process.pid, STOP_SECONDS)
            process.kill()
            process.wait()
