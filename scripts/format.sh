#!/bin/sh
# Formats the project's C++ and CUDA sources with .clang-format.
#
#   scripts/format.sh           format every file in place
#   scripts/format.sh --check   change nothing; list the files that differ
#                               from the style and exit 1 if there are any
#
# The files: the tracked *.cpp, *.h, *.cu and *.cuh under core/, gpu/, mpi/,
# app/, ui/, tests/ and bench/. CLANG_FORMAT names the program (default
# clang-format; the style is written for version 14, Debian 12's).
set -eu

cd "$(dirname "$0")/.."
clang_format=${CLANG_FORMAT:-clang-format}
mode=format
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  -h|--help) sed -n '2,11s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) echo "format.sh: unknown option '$1' (--check, or none to format in place)" >&2; exit 2 ;;
esac
if ! command -v "$clang_format" >/dev/null 2>&1; then
  echo "format.sh: $clang_format not found (Debian: apt-get install clang-format)" >&2
  exit 2
fi

files=$(git ls-files -- core gpu mpi app ui tests bench | grep -E '\.(cpp|h|cu|cuh)$' || true)
if [ "$mode" = format ]; then
  # shellcheck disable=SC2086  # one file name per word: the tree has no spaces in them
  [ -z "$files" ] || "$clang_format" -i --style=file $files
  exit 0
fi
differ=0
for f in $files; do
  if ! "$clang_format" --style=file "$f" | cmp -s - "$f"; then
    echo "$f"
    differ=1
  fi
done
if [ $differ -ne 0 ]; then
  echo "format.sh: the files above differ from .clang-format (scripts/format.sh formats them)" >&2
fi
exit $differ
