# Shared by the scripts that compare builds (sourced, not run).
#
# two_builds NAME "$@" sets `build_a` and `build_b` to the absolute paths
# of the first two arguments and `work_directory` to a fresh directory
# named after NAME; without two arguments, it prints the script's opening
# comment as its usage and exits 2. alternate_pairs PAIRS then calls the
# script's `run LABEL BINARY` for each build, PAIRS times.

# Prints the sourcing script's opening comment as its usage and exits 2.
usage_and_exit() {
    awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0" >&2
    exit 2
}

two_builds() {
    local name="$1"
    shift
    if (($# < 2)); then
        usage_and_exit
    fi
    build_a="$(realpath "$1")"
    build_b="$(realpath "$2")"
    work_directory="$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")"
}

# callgrind_builds NAME "$@", for the scripts that count one or two builds'
# instructions: sets `builds` to the absolute paths of the first argument
# and of the second when given, and `work_directory` to a fresh directory
# named after NAME; without an argument it prints the script's opening
# comment as its usage and exits 2, and without valgrind it exits 1.
callgrind_builds() {
    local name="$1"
    shift
    if (($# < 1)); then
        usage_and_exit
    fi
    builds=("$(realpath "$1")")
    if [[ $# -ge 2 && -n "$2" ]]; then
        builds+=("$(realpath "$2")")
    fi
    command -v valgrind >/dev/null || { echo "valgrind is required (Debian package valgrind)" >&2; exit 1; }
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
