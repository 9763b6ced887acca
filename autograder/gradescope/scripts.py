"""The two scripts Gradescope runs: ``setup.sh`` (once, building the image) and ``run_autograder``."""
from __future__ import annotations

import json

from autograder.release.pins import TORCH_CPU_INDEX

SETUP_SH = f"""#!/usr/bin/env bash
# Gradescope runs this once, as root, from /autograder/source, when it builds the autograder image.
# It installs Python 3.11, the pinned environment (torch CPU build) in /autograder/venv, and this kit.
# Where the PyTorch CPU index cannot be reached (a mirror, an air-gapped machine, the kit's own tests),
# AUTOGRADER_PIP_INDEX_URL replaces it and AUTOGRADER_PIP_FIND_LINKS (space-separated folders or URLs of
# wheels) is added to every pip call; unset, torch comes from {TORCH_CPU_INDEX}.
set -euo pipefail
ROOT="${{AUTOGRADER_ROOT:-/autograder}}"
SOURCE="$ROOT/source"
VENV="$ROOT/venv"
TORCH_INDEX="${{AUTOGRADER_PIP_INDEX_URL:-{TORCH_CPU_INDEX}}}"
FIND_LINKS=()
read -r -a links <<< "${{AUTOGRADER_PIP_FIND_LINKS:-}}"
for link in "${{links[@]}}"; do FIND_LINKS+=(--find-links "$link"); done
export DEBIAN_FRONTEND=noninteractive

# python3.11 and its venv module (Debian and Ubuntu ship ensurepip apart, in python3.11-venv)
if ! python3.11 -c "import ensurepip, venv" >/dev/null 2>&1; then
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
PIP=("$VENV/bin/python" -m pip install --no-cache-dir --disable-pip-version-check "${{FIND_LINKS[@]}}")
# torch first, from the CPU index only: PyPI's Linux wheel would pull gigabytes of CUDA libraries.
"${{PIP[@]}}" --index-url "$TORCH_INDEX" "$(grep '^torch==' "$SOURCE/requirements.txt")"
# The rest from pip's own index (PyPI). torch is installed already, so requirements.txt's own line for the
# CPU index (there for students' pip install -r) is left out: an index that cannot be reached is not asked.
grep -v '^--' "$SOURCE/requirements.txt" > "$VENV/requirements.txt"
"${{PIP[@]}}" -r "$VENV/requirements.txt"
"${{PIP[@]}}" --no-deps --no-build-isolation -e "$SOURCE"
"$VENV/bin/python" -c "import torch, autograder; print('torch', torch.__version__, '- kit', autograder.__version__)"
# The course's reference answers, computed once here: each run reads them instead of computing them again
# (a speed-up only: where they cannot be kept, each run computes its own, as it would without this line).
"$VENV/bin/python" -m autograder.gradescope.reference_answers || echo "setup.sh: reference answers not kept" >&2
# The source (the reference solutions, the hidden suites, course.yml, the kit) is root's alone: the grader runs as
# root, its workers as other uids, which read none of it whatever the isolation the container allows
# (docs/gradescope.md).
# The venv the workers import torch from stays readable.
chmod -R go-rwx "$SOURCE"
"""

#: the results.json run_autograder writes when the grading runner wrote none (one line of JSON)
ZERO_SCORE = {"score": 0, "execution_time": 0,
              "output": "The autograder failed before it could grade this submission (its Python environment did not "
                        "start). Your submission was not graded: please tell your instructor.",
              "visibility": "visible", "stdout_visibility": "hidden", "tests": []}

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

cd "$ROOT/source" && AUTOGRADER_ROOT="$ROOT" PYTHONPATH="$ROOT/source" "$PY" -m autograder.gradescope.run_autograder
status=$?

if [ ! -s "$RESULTS" ]; then
    echo "run_autograder: the grading runner wrote no results (exit $status); writing a zero score" >&2
    cat > "$RESULTS" <<'JSON'
@ZERO_SCORE@
JSON
fi
exit 0
""".replace("@ZERO_SCORE@", json.dumps(ZERO_SCORE))
