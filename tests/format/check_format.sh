#!/usr/bin/env bash
# Checks that every C++ file of the repository is formatted as .clang-format says (Google style, 120 columns).
# Run by CTest (test "clang_format"); exits non-zero and names each file that differs. Fix with:
#   git ls-files '*.cc' '*.h' | xargs clang-format -i
# The check pins clang-format 14 (Debian 12's), because another major version formats some constructs differently.
set -uo pipefail
cd "$(dirname "$0")/../.."
CF="${KGYM_CLANG_FORMAT:-}"
if [ -z "$CF" ]; then
  for c in clang-format-14 clang-format; do
    if command -v "$c" >/dev/null; then CF="$c"; break; fi
  done
fi
if [ -z "$CF" ]; then
  echo "check_format: clang-format not found (setup.sh installs it)" >&2
  exit 1
fi
"$CF" --version
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h' '*.cpp' '*.hpp')
else
  mapfile -t files < <(find src bench tests -name '*.cc' -o -name '*.h' -o -name '*.cpp' -o -name '*.hpp')
fi
bad=0
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  if ! "$CF" --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f"
    bad=$((bad + 1))
  fi
done
echo "check_format: ${#files[@]} files, $bad not formatted"
[ "$bad" = 0 ]
