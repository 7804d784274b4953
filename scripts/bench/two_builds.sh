# Shared by the scripts that compare two builds (sourced, not run).
# two_builds NAME "$@" sets `build_a` and `build_b` to the absolute paths
# of the first two arguments and `work_directory` to a fresh directory
# named after NAME; without two arguments, it prints the script's opening
# comment as its usage and exits 2. alternate_pairs PAIRS then calls the
# script's `run LABEL BINARY` for each build, PAIRS times.
two_builds() {
    local name="$1"
    shift
    if (($# < 2)); then
        awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" >&2
        exit 2
    fi
    build_a="$(realpath "$1")"
    build_b="$(realpath "$2")"
    work_directory="$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")"
}

# Runs PAIRS pairs, alternating which build goes first, so that a drift
# within the session weighs on both builds alike.
alternate_pairs() {
    local round
    for round in $(seq 1 "$1"); do
        if ((round % 2)); then
            run A "$build_a"
            run B "$build_b"
        else
            run B "$build_b"
            run A "$build_a"
        fi
    done
}
