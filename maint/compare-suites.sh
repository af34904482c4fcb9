#!/usr/bin/env bash
# Compare two runs of maint/run-suite.sh, directory by directory: a Markdown table of the
# tests each run passed, and the tests the reference passed and the other did not.
#
#   maint/compare-suites.sh RESULTS_DIR REFERENCE_RESULTS_DIR [OUT]
#
# e.g. maint/compare-suites.sh build/results/mpich-ch3-smheap-nodes-2 \
#          build/results/mpich-ch3-nemesis-nodes-2
# Writes the table to OUT (default RESULTS_DIR/compare.md) and prints it; exits non-zero
# if the reference passed a test the other run did not.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,10p' "$0"; exit 2; }
run=$1 ref=$2 out=${3:-$1/compare.md}
for d in "$run" "$ref"; do
    [ -f "$d/summary.txt" ] || { echo "no $d/summary.txt (run maint/run-suite.sh first)" >&2; exit 2; }
done

# "ok|not ok - ./dir/test nprocs" -> "dir/test nprocs ok|fail"; a test that did not build
# has no nprocs ("-")
outcomes() {
    sed -nE 's/^(ok|not ok) +[0-9]* *- *\.\/([^ ]+) ?([0-9]*).*/\2 \3 \1/p' "$1/summary.txt" |
        sed -E 's/ not ok$/ fail/; s/^([^ ]+)  /\1 - /' | sort -u
}

awk -v run="$(basename "$run")" -v ref="$(basename "$ref")" '
    FNR == 1 { file++ }
    { key = $1 " " $2; dir = $1; sub(/\/.*/, "", dir); dirs[dir] = 1 }
    file == 1 { r[key] = $3; rdir[key] = dir }
    file == 2 { n[key] = $3; ndir[key] = dir }
    END {
        printf "| directory | tests | %s passed | %s passed | passed by %s only |\n", run, ref, ref
        printf "| --- | --- | --- | --- | --- |\n"
        for (k in r) { tests[rdir[k]]++; if (r[k] == "ok") rp[rdir[k]]++ }
        for (k in n) { if (!(k in r)) tests[ndir[k]]++; if (n[k] == "ok") np[ndir[k]]++
                       if (n[k] == "ok" && r[k] != "ok") { only[ndir[k]]++; lost = lost "\n- " k } }
        for (d in dirs) {
            tt += tests[d]; trp += rp[d]; tnp += np[d]; tonly += only[d]
            printf "| %s | %d | %d | %d | %d |\n", d, tests[d], rp[d], np[d], only[d] | "sort" }
        close("sort")
        printf "| **all** | %d | %d | %d | %d |\n", tt, trp, tnp, tonly
        if (lost != "") printf "\nPassed by %s, not by %s:%s\n", ref, run, lost
        exit tonly > 0
    }' <(outcomes "$run") <(outcomes "$ref") | tee "$out"
