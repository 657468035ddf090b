# Sourced by bench/gpu_check.sh: ending what a script started, and nothing else.
#
# BentoML's workers start sessions of their own (circus calls setsid), out of reach of a signal to
# the process group of the step that started them; a step killed at its budget leaves them running.
# Ending them by name (`pkill -f 'bentoml serve'`) would also end every other BentoML service on a
# shared machine. Instead every process started after `mark_own_processes` carries a mark in its
# environment, which children inherit (BentoML's workers and the model's runner process too), and
# `end_own_leftovers` SIGKILLs the processes bearing it, each one's process group with it where it
# leads one (its group is its own children).

mark_own_processes() {
    OWN_PROCESSES_MARK="$1-$$-$(date +%s%N)"
    export OWN_PROCESSES_MARK
}

end_own_leftovers() {
    local proc pid
    [ -n "${OWN_PROCESSES_MARK:-}" ] || return 0
    for proc in /proc/[0-9]*; do
        pid=${proc#/proc/}
        [ "$pid" = "$$" ] && continue
        # environ is NUL-separated; -z reads it so, -x matches the whole variable.
        if grep -qzx "OWN_PROCESSES_MARK=$OWN_PROCESSES_MARK" "$proc/environ" 2>/dev/null; then
            [ "$(ps -o pgid= -p "$pid" 2>/dev/null | tr -d ' ')" = "$pid" ] && kill -9 -- "-$pid" 2>/dev/null
            kill -9 "$pid" 2>/dev/null
        fi
    done
    return 0
}
