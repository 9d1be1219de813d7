#!/usr/bin/env bash
# Install msltrans and what it needs on a fresh Debian/Ubuntu machine (Linux x86_64/aarch64):
#   clang-19 (the simulator's compiler) and LLVM's headers (its lanes pass), a CPU build of
#   torch, then msltrans itself.
#   bash scripts/setup.sh          # the package
#   bash scripts/setup.sh --test   # the package plus the test tools
# Run as root, or with sudo available for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."

extras=""
[ "${1:-}" = "--test" ] && extras="[test]"

sudo_cmd=""
[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"

if [ -n "${MSLTRANS_CLANG:-}" ]; then
  echo "using MSLTRANS_CLANG=$MSLTRANS_CLANG"
elif ! command -v clang-19 >/dev/null 2>&1; then
  echo "installing clang-19 (apt)"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends clang-19 llvm-19 >/dev/null
fi
# LLVM's C++ headers, for the simulator's lanes pass (msltrans/sim/lanes: a simdgroup run as
# one function). Without them the simulator runs every thread on its own fiber: the same
# results, slower on kernels full of SIMD ops and barriers.
if [ -z "${MSLTRANS_CLANG:-}" ] && command -v clang-19 >/dev/null 2>&1; then
  include="$(llvm-config-19 --includedir 2>/dev/null || true)"
  if [ ! -f "${include:-/nonexistent}/llvm/Passes/PassPlugin.h" ]; then
    echo "installing llvm-19-dev (apt): LLVM's headers for the simulator's lanes pass"
    export DEBIAN_FRONTEND=noninteractive
    { $sudo_cmd apt-get update -qq &&
      $sudo_cmd apt-get install -y -qq --no-install-recommends llvm-19-dev >/dev/null; } ||
      echo "warning: llvm-19-dev not installed; the simulator will run without its lanes mode"
  fi
fi

if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "installing pip for $(command -v python3) (apt)"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends python3-pip >/dev/null
fi
pip=(python3 -m pip install -q --disable-pip-version-check)
# Debian's own python3 refuses `pip install` outside a venv (PEP 668). In a venv, or with a
# pyenv/conda python, nothing changes; on the system python of a fresh machine (what the quick
# start is for) install into it anyway, as the quick start promises, and say so.
if python3 - <<'PY'
import os, sys, sysconfig
managed = os.path.exists(os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED"))
sys.exit(0 if managed and sys.prefix == sys.base_prefix else 1)
PY
then
  echo "note: $(command -v python3) is externally managed (PEP 668); installing with" \
       "--break-system-packages. To keep the system python clean, run this script from a venv."
  pip+=(--break-system-packages)
fi
# A CPU build of torch first: an unpinned torch would pull a multi-GB CUDA build.
python3 -c "import torch" 2>/dev/null || "${pip[@]}" torch==2.13.0
"${pip[@]}" -e ".${extras}"
python3 -c "import msltrans, triton, torch; print('msltrans', msltrans.__version__, '| triton', triton.__version__, '| torch', torch.__version__)"
