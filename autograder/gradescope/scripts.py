"""The two scripts Gradescope runs: ``setup.sh`` (once, building the image) and ``run_autograder``."""
from __future__ import annotations

from autograder.release.pins import TORCH_CPU_INDEX

SETUP_SH = f"""#!/usr/bin/env bash
# Gradescope runs this once, as root, from /autograder/source, when it builds the autograder image.
# It installs Python 3.11, the pinned environment (torch CPU build) in /autograder/venv, and this kit.
set -euo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
SOURCE="$ROOT/source"
VENV="$ROOT/venv"
export DEBIAN_FRONTEND=noninteractive

if ! command -v python3.11 >/dev/null 2>&1; then
    apt-get update
    if ! apt-get install -y --no-install-recommends python3.11 python3.11-venv; then
        # Not in this Ubuntu release's archive: the deadsnakes PPA has it.
        apt-get install -y --no-install-recommends software-properties-common gnupg
        add-apt-repository -y ppa:deadsnakes/ppa
        apt-get update
        apt-get install -y --no-install-recommends python3.11 python3.11-venv
    fi
fi

python3.11 -m venv "$VENV"
# torch first, from the CPU index only: PyPI's Linux wheel would pull gigabytes of CUDA libraries.
"$VENV/bin/python" -m pip install --no-cache-dir --disable-pip-version-check \\
    --index-url {TORCH_CPU_INDEX} "$(grep '^torch==' "$SOURCE/requirements.txt")"
"$VENV/bin/python" -m pip install --no-cache-dir --disable-pip-version-check -r "$SOURCE/requirements.txt"
"$VENV/bin/python" -m pip install --no-cache-dir --disable-pip-version-check --no-deps --no-build-isolation \\
    -e "$SOURCE"
"$VENV/bin/python" -c "import torch, autograder; print('torch', torch.__version__, '- kit', autograder.__version__)"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for each submission: it grades $ROOT/submission into $ROOT/results/results.json.
# AUTOGRADER_ROOT (default /autograder) and AUTOGRADER_PYTHON (default $ROOT/venv/bin/python) let it run
# outside Gradescope, e.g. in the kit's tests. A results.json is always written, even if grading crashes.
set -u
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PY="${AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}"
RESULTS="$ROOT/results/results.json"
mkdir -p "$ROOT/results"
rm -f "$RESULTS"

cd "$ROOT/source" && AUTOGRADER_ROOT="$ROOT" PYTHONPATH="$ROOT/source" "$PY" -m autograder.gradescope.run
status=$?

if [ ! -s "$RESULTS" ]; then
    echo "run_autograder: the grading runner wrote no results (exit $status); writing a zero score" >&2
    cat > "$RESULTS" <<'JSON'
{"score": 0, "execution_time": 0, "output": "The autograder failed before it could grade this submission (its Python environment did not start). Your submission was not graded: please tell your instructor.", "visibility": "visible", "stdout_visibility": "hidden", "tests": []}
JSON
fi
exit 0
"""
