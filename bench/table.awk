# bench/table.awk - the benchmarks' one table: reads tab-separated lines
#   ratio <figure> <le|ge|noise> <target> <value>   (one per repetition)
#   info  <figure> <value>                          (a rate, no target)
# and prints, per figure in order of first appearance, the median, the
# range (min-max) and the verdict: "met" only when the whole range is on
# the right side of the target, "not met (spread crosses)" when only the
# median is, "noise floor" for a reference timed against itself (op noise).
# Variables: machine (the first line), json=1 for JSON, quick=1 with
# --quick (JSON only). Used by scripts/bench.sh and bench/bench_mpi.sh.
BEGIN { FS = "\t" }
$1 == "ratio" || $1 == "info" {
    f = $2
    if (!(f in n)) {
        order[++nf] = f
        op[f] = $1 == "info" ? "info" : $3
        target[f] = $1 == "info" ? "" : $4
    }
    v[f, ++n[f]] = $1 == "info" ? $3 : $5
}
function sort_values(f, k,    i, j, t) {
    for (i = 1; i <= k; i++) s[i] = v[f, i]
    for (i = 2; i <= k; i++)
        for (j = i; j > 1 && s[j - 1] > s[j]; j--) {
            t = s[j]; s[j] = s[j - 1]; s[j - 1] = t
        }
}
END {
    if (json) printf "{\"machine\": \"%s\", \"quick\": %s, \"figures\": [\n", machine, quick ? "true" : "false"
    else {
        printf "machine: %s\n\n", machine
        printf "| figure | target | median | range (min-max) | reps | verdict |\n"
        printf "|---|---|---|---|---|---|\n"
    }
    for (i = 1; i <= nf; i++) {
        f = order[i]; k = n[f]
        sort_values(f, k)
        med = k % 2 ? s[(k + 1) / 2] : (s[k / 2] + s[k / 2 + 1]) / 2
        lo = s[1]; hi = s[k]; t = target[f]
        if (op[f] == "info") {
            verdict = ""
            tshow = ""
        } else if (op[f] == "noise") {
            verdict = "noise floor"
            tshow = "-"
        } else if (op[f] == "le") {
            verdict = hi <= t ? "met" : (med <= t ? "not met (spread crosses)" : "not met")
            tshow = "<= " t
        } else {
            verdict = lo >= t ? "met" : (med >= t ? "not met (spread crosses)" : "not met")
            tshow = ">= " t
        }
        if (json)
            printf "  {\"figure\": \"%s\", \"op\": \"%s\", \"target\": %s, \"median\": %.4f, \"min\": %.4f, \"max\": %.4f, \"reps\": %d, \"verdict\": %s}%s\n",
                f, op[f], t == "" || op[f] == "noise" ? "null" : t, med, lo, hi, k,
                verdict == "" ? "null" : "\"" verdict "\"", i < nf ? "," : ""
        else
            printf "| %s | %s | %.3f | %.3f-%.3f | %d | %s |\n", f, tshow, med, lo, hi, k, verdict
    }
    if (json) printf "]}\n"
}
