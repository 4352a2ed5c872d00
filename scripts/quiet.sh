# quiet.sh -- sourced by the benchmark scripts: wait for an idle machine
# before a measurement.  The caller sets quiet_max (seconds to wait at
# most; 0: never wait) and quiet_idle (the idle percentage to wait for),
# and defines quiet_note MESSAGE, which hears when the machine stayed busy
# and how long a wait took.

# The CPUs' idle percentage over one second, from /proc/stat.
idle_pct() {
    local a b
    a=$(awk '/^cpu / { print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat)
    sleep 1
    b=$(awk '/^cpu / { print $5 + $6, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat)
    echo "$a $b" | awk '{ d = $4 - $2; print (d > 0 ? int(100 * ($3 - $1) / d) : 100) }'
}

wait_quiet() {
    local t0=$SECONDS idle
    [ "$quiet_max" -gt 0 ] || return 0
    while :; do
        idle=$(idle_pct)
        [ "$idle" -ge "$quiet_idle" ] && break
        if [ $((SECONDS - t0)) -ge "$quiet_max" ]; then
            quiet_note "machine still busy (idle ${idle}%) after ${quiet_max}s: measuring anyway"
            return 0
        fi
        sleep 4
    done
    [ $((SECONDS - t0)) -gt 2 ] && quiet_note "waited $((SECONDS - t0))s for an idle machine"
    return 0
}
