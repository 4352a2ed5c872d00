# stats_mix.sh -- sourced by the benchmark scripts that run the library
# with SPARCML_STATS=1.
#
# stats_mix: on stdin a run's output; on stdout the calls by algorithm of
# its SPARCML_STATS report (sparcml(7), STATISTICS), as NAME*CALLS joined
# by "+" (say ssar_recursive_double*2+ssar_split_allgather*9); nothing
# where the output holds no report.
stats_mix() {
    awk '/SPARCML_STATS report/ { on = 1; next }
        on && $1 == "sparcml:" && $3 ~ /^[0-9]+$/ { printf "%s%s*%s", sep, $2, $3; sep = "+" }'
}
