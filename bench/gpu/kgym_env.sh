# Sourced by the GPU bench scripts from the checkout's root: KGYM_BIN (the packed build/gpu/kgym behind a wrapper that
# finds its libraries, unless KGYM_BIN is set), KGYM_BENCH_COMMIT (the packed tree's, else HEAD's), and the variables
# kgym and its Python need (KGYM_PYTHON, KGYM_HARNESS_PATH); PY is the interpreter; machine_facts prints the tree,
# date, GPU, torch, cores, memory and what `kgym doctor` says of the sandbox (a results folder's machine.txt).
if [ -z "${KGYM_BIN:-}" ]; then
  B=$PWD/build/gpu
  printf '#!/bin/sh\nLD_LIBRARY_PATH="%s/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" exec "%s/kgym" "$@"\n' "$B" "$B" \
    > /tmp/kgym
  chmod +x /tmp/kgym
  KGYM_BIN=/tmp/kgym
  KGYM_BENCH_COMMIT="$(head -1 "$B/commit.txt" 2>/dev/null | cut -c1-12)"
else
  KGYM_BENCH_COMMIT="$(git rev-parse --short HEAD 2>/dev/null)"
fi
export KGYM_BENCH_COMMIT KGYM_PYTHON="${KGYM_PYTHON:-python3}" KGYM_HARNESS_PATH="$PWD/python" PYTHONUNBUFFERED=1
PY="$KGYM_PYTHON"
machine_facts() {
  echo "tree: ${KGYM_BENCH_COMMIT:-unknown}"; echo "date: $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no GPU"
  "$PY" -c "import torch; print('torch', torch.__version__)" 2>&1; nproc; free -g | head -2
  "$KGYM_BIN" doctor 2>/dev/null | grep -E "^(freezer|sealed|NOT)"
}
