#!/usr/bin/env bash
# The Triton version matrix: msltrans on each older Triton release it supports, after the main
# run (which uses the newest). For each version, a plain venv (no system site-packages, so it
# cannot see the main run's Triton) gets CPU torch, that Triton from the registry and
# msltrans's other dependencies, then msltrans itself (editable, --no-deps), and runs the
# cross-version slice (tests/compat_slice.txt) with `pytest -n 2`. The venvs and one pip cache
# live under $MSLTRANS_MATRIX_DIR (default ~/.cache/msltrans/matrix) and are reused while their
# Triton is the one asked for; the simulator's kernel cache is shared with the main run.
#   bash scripts/ci_triton_matrix.sh                    # 3.6.0, 3.7.1, 3.8.0
#   MSLTRANS_MATRIX_VERSIONS="3.8.0" bash scripts/ci_triton_matrix.sh
#   bash scripts/ci_triton_matrix.sh --setup            # only create the venvs
set -euo pipefail
cd "$(dirname "$0")/.."

versions="${MSLTRANS_MATRIX_VERSIONS:-3.6.0 3.7.1 3.8.0}"
dir="${MSLTRANS_MATRIX_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/msltrans/matrix}"
export PIP_CACHE_DIR="$dir/pip"
export PIP_DISABLE_PIP_VERSION_CHECK=1
mkdir -p "$dir"
setup_only=0
[ "${1:-}" = "--setup" ] && setup_only=1

# msltrans's dependencies besides triton and torch (pyproject.toml) and its test tools.
deps=(numpy jinja2 matplotlib "setuptools>=68" wheel pytest pytest-xdist hypothesis)

make_venv() {
  local version="$1" venv="$2"
  if [ -x "$venv/bin/python" ] &&
     "$venv/bin/python" -c "import sys, torch, triton; sys.exit(triton.__version__ != '$version')" \
       2>/dev/null; then
    return 0
  fi
  echo "creating $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  # CPU torch first (the same pin as scripts/setup.sh), so nothing pulls a CUDA build.
  quiet_pip "$venv" torch==2.13.0
  quiet_pip "$venv" "triton==$version" "${deps[@]}"
}

# pip install -q, without the warnings a machine's pip config may print for every package
# (find-links folders that lack it); errors still show.
quiet_pip() {
  local venv="$1"
  shift
  "$venv/bin/python" -m pip install -q "$@" 2> >(grep -v "is ignored: it is neither" >&2)
}

echo "== triton matrix: $versions (venvs under $dir) =="
failed=0
for version in $versions; do
  venv="$dir/triton-$version"
  start=$(date +%s)
  make_venv "$version" "$venv"
  # The checkout's path changes from run to run: install it again each time (seconds).
  quiet_pip "$venv" --no-deps --no-build-isolation -e .
  echo "== triton $version: venv ready in $(( $(date +%s) - start ))s =="
  [ "$setup_only" = 1 ] && continue
  mapfile -t slice < <(grep -v '^\s*\(#\|$\)' tests/compat_slice.txt)
  start=$(date +%s)
  echo "== triton $version: tests/compat_slice.txt =="
  # pytest's own closing line, one per version, under that header
  "$venv/bin/python" -m pytest -n 2 -q -p no:cacheprovider -rs "${slice[@]}" || failed=1
  echo "== triton $version: slice took $(( $(date +%s) - start ))s =="
done
exit "$failed"
