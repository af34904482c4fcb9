#!/usr/bin/env bash
# The README leads a newcomer (issue 45): at most 150 lines; what smheap is, the results
# table and the two commands within its first 60 lines; no paragraph longer than eight
# lines; every file it links to exists; and CI runs the test command it gives.
#   test/checks/readme_leads.sh [README]
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
readme=${1:-$top/README.md}
dir=$(dirname "$readme")
bad=0
fail() { echo "README: $*"; bad=1; }

lines=$(wc -l < "$readme")
[ "$lines" -le 150 ] || fail "$lines lines, more than 150"

first_line() { grep -n -m1 -E "$1" "$readme" | cut -d: -f1; }
for what in '^## Results' '^\| .*ch3:nemesis.*Open MPI' '^    maint/setup\.sh' '^    maint/test\.sh'; do
    n=$(first_line "$what")
    [ -n "$n" ] || { fail "no line matching '$what'"; continue; }
    [ "$n" -le 60 ] || fail "'$what' first at line $n, after line 60"
done
grep -q -E 'Intel|AMD|EPYC|Xeon' <(sed -n '/^## Results/,/^## /p' "$readme") ||
    fail "the results do not name the processor"

# Paragraphs: runs of text lines; a list item, a table, a code block or a heading ends one.
awk -v max=8 '
    function flush() { if (n > max) { printf "README: paragraph of %d lines at line %d\n", n, start; bad = 1 } n = 0 }
    /^[[:space:]]*$/ || /^#/ || /^\|/ || /^    / { flush(); next }
    /^- / || /^[0-9]+\. / { flush() }
    { if (n == 0) start = NR; n++ }
    END { flush(); exit bad }' "$readme" || bad=1

grep -o -E '\]\([^)#]+\)' "$readme" | sed -E 's/^\]\(//; s/\)$//' | grep -v -E '^[a-z]+://' |
    sort -u | while read -r link; do
        [ -e "$dir/$link" ] || { echo "README: links to $link, which does not exist"; exit 1; }
    done || bad=1

grep -q -x 'exec maint/test.sh' "$top/.ci/run" || fail ".ci/run does not run maint/test.sh"
[ "$bad" = 0 ] && echo "README: $lines lines, leads with the results and the two commands"
exit $bad
