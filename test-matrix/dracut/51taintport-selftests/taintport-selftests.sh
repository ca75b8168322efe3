#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's own livepatch selftests and the trace-event sample's loads,
# in the test guest, printed as KTAP (test-matrix/README.md, "The selftests
# stage"): subtest selftests.livepatch, one test per test-*.sh, its output
# as diagnostics before its result; subtest sample.trace_events, the sample
# loaded signed, unsigned and forced as taintport-agent loads utt. Then the
# end marker, and the VM ends (sysrq b; QEMU runs with -no-reboot).

PAYLOAD=/taintport/selftests
TRACING=/sys/kernel/tracing
SAMPLE_SYSTEM=sample-trace   # the sample's TRACE_SYSTEM
SAMPLE_MODULE=trace_events_sample

refuse() {
    echo "taintport-selftests: refusing to run: $1" >&2
    exit 3
}

# The same guards as taintport-agent's, before any module is touched: the
# run's token on the command line and in the image, the kernel the payload
# was built for, inside an initramfs.
guard() {
    local arg args token=
    read -r -a args < /proc/cmdline
    for arg in "${args[@]}"; do
        [[ $arg == taintport.token=* ]] && token=${arg#taintport.token=}
    done
    [[ -n $token ]] || refuse "no taintport.token= on the kernel command line"
    [[ -f /taintport/token && $token == "$(cat /taintport/token)" ]] ||
        refuse "taintport.token= does not match /taintport/token"
    [[ -f $PAYLOAD/release && "$(uname -r)" == "$(cat $PAYLOAD/release)" ]] ||
        refuse "uname -r is not the release the selftests were built for"
    [[ -f /etc/initrd-release ]] || refuse "not inside an initramfs"
}

# diag(prefix) - each line of stdin as an indented KTAP diagnostic
diag() {
    local line
    while IFS= read -r line; do
        printf '    # %s: %s\n' "$1" "$line"
    done
}

# The tests' prerequisites: functions.sh reads dynamic debug's control in
# debugfs and 6.1's mktemp wants /tmp; up to 6.1 modprobe finds test_klp_* through modules.dep; from
# 6.12 has_kdir() wants /lib/modules/<release>/build, which the host used
# instead (the modules arrive built).
prepare() {
    local release ko
    release=$(uname -r)
    mkdir -p /tmp
    mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
    mount -t tracefs tracefs $TRACING 2>/dev/null || TRACING=/sys/kernel/debug/tracing
    mkdir -p "/lib/modules/$release/build"
    if [[ -d $PAYLOAD/modules ]]; then
        mkdir -p "/lib/modules/$release/kernel/lib/livepatch"
        # none where the host could not build them: the selftests skip
        # themselves (assert_mod), the host says why
        for ko in "$PAYLOAD"/modules/*.ko; do
            [[ -f $ko ]] && cp "$ko" "/lib/modules/$release/kernel/lib/livepatch/"
        done
        depmod -a 2>&1 | diag "depmod"
    fi
}

livepatch() {
    local scripts=() script name out rc n=0 limit failed=0 skipped=0
    cd $PAYLOAD/livepatch || return
    for script in test-*.sh; do scripts+=("$script"); done
    limit=$(cat $PAYLOAD/timeout)
    echo "    KTAP version 1"
    echo "    # Subtest: selftests.livepatch"
    echo "    1..${#scripts[@]}"
    for script in "${scripts[@]}"; do
        n=$((n + 1))
        name=${script%.sh}
        out=$(timeout "$limit" bash "./$script" 2>&1)
        rc=$?
        printf '%s\n' "$out" | diag "$name"
        # the scripts go on past a failed command and end with the status
        # of their last one: a tool missing from this image is a broken
        # run, never a pass
        if [[ $out == *": command not found"* ]]; then
            echo "    # error: $name: a command it runs is missing from the image"
            rc=1
        fi
        case $rc in
        0) echo "    ok $n $name" ;;
        4) skipped=$((skipped + 1))
           echo "    ok $n $name # SKIP $(printf '%s\n' "$out" | grep -m1 -i skip)" ;;
        124) skipped=$((skipped + 1))
           echo "    ok $n $name # SKIP did not finish within ${limit}s under TCG" ;;
        *) failed=$((failed + 1))
           echo "    not ok $n $name" ;;
        esac
    done
    if ((failed)); then
        echo "not ok 1 selftests.livepatch"
    elif ((skipped == ${#scripts[@]})); then
        echo "ok 1 selftests.livepatch # SKIP every selftest skipped"
    else
        echo "ok 1 selftests.livepatch"
    fi
}

# sample_load(n, test, want, file, insmod args...) - load the sample, see
# whether its trace system is in tracefs, unload it; ok when that is want
# (present or refused), as taintport-agent's events_present/events_refused
sample_load() {
    local n=$1 test=$2 want=$3 file=$4 got
    shift 4
    # no signed copy where the kernel's key is not here (the distribution's
    # binary), no sample where the host could not build it: the host
    # declares each with why, so here it is a skip
    if [[ ! -f $file ]]; then
        echo "    ok $n $test # SKIP no ${file##*/} in the payload"
        return 2
    fi
    insmod "$@" "$file" 2>&1 | diag "$test: insmod $* ${file##*/}"
    if [[ ! -d /sys/module/$SAMPLE_MODULE ]]; then
        echo "    not ok $n $test"
        return 1
    fi
    echo "taint = $(cat /sys/module/$SAMPLE_MODULE/taint)" | diag "$test"
    got=refused
    [[ -d $TRACING/events/$SAMPLE_SYSTEM ]] && got=present
    echo "events/$SAMPLE_SYSTEM/: $got" | diag "$test"
    dmesg | grep "$SAMPLE_MODULE\|trace-events-sample" | tail -n 3 | diag "$test: dmesg"
    rmmod $SAMPLE_MODULE 2>&1 | diag "$test: rmmod"
    if [[ $got == "$want" ]]; then
        echo "    ok $n $test"
    else
        echo "    not ok $n $test"
        return 1
    fi
}

# Signed, unsigned, then forced (vermagic ignored, as insmod -f): the order
# taintport-agent loads utt in, because taint bits are sticky for the boot.
sample() {
    local failed=0 skipped=0 rc
    echo "    KTAP version 1"
    echo "    # Subtest: sample.trace_events"
    echo "    1..3"
    # each load: 0 as wanted, 1 not, 2 skipped
    sample_load 1 signed_events_present present \
        $PAYLOAD/sample/trace-events-sample-signed.ko
    rc=$?; ((rc == 1)) && failed=1; ((rc == 2)) && skipped=$((skipped + 1))
    sample_load 2 unsigned_events_present present \
        $PAYLOAD/sample/trace-events-sample.ko
    rc=$?; ((rc == 1)) && failed=1; ((rc == 2)) && skipped=$((skipped + 1))
    sample_load 3 forced_events_refused refused \
        $PAYLOAD/sample/trace-events-sample.ko -f
    rc=$?; ((rc == 1)) && failed=1; ((rc == 2)) && skipped=$((skipped + 1))
    if ((failed)); then
        echo "not ok 2 sample.trace_events"
    elif ((skipped == 3)); then
        echo "ok 2 sample.trace_events # SKIP every load skipped"
    else
        echo "ok 2 sample.trace_events"
    fi
}

guard
prepare
# A line of its own: the boot stub's last words ("Probing EDD ... ok" and a
# terminal reset) end without a newline, and at loglevel=1 with nothing
# before it (no depmod from 6.12 on) KTAP would start behind them, which a
# parser takes as every line's prefix (kunit_parser's rule, and ours).
echo
echo "KTAP version 1"
echo "1..2"
livepatch
sample
echo "# taintport-selftests: end status=0"
# the serial driver sends what is left of its buffer from interrupts, which
# an immediate reboot would cut off
sleep 0.5
echo b > /proc/sysrq-trigger
