# Sourced by the GPU bench scripts from the checkout's root: KGYM_BIN (the packed build/gpu/kgym behind a wrapper that
# finds its libraries, unless KGYM_BIN is set), KGYM_BENCH_COMMIT (the packed tree's, else HEAD's), and the variables
# kgym and its Python need (KGYM_PYTHON, KGYM_HARNESS_PATH); PY is the interpreter.
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
