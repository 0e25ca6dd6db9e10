"""`python -m blazar_lite.scheduler`: the scheduler alone, with settings from BLAZAR_LITE_CONFIG and
the environment. `blazar-lite serve` starts it this way, in a fresh interpreter of its own."""

from __future__ import annotations

from blazar_lite.cli import main

if __name__ == "__main__":
    main(["scheduler"], prog_name="blazar-lite")
