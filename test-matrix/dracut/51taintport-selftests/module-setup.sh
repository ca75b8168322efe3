#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dracut module "taintport-selftests": what the kernel's own livepatch
# selftests (tools/testing/selftests/livepatch/) and taintport's loads of the
# trace-event sample need, and the hook that runs them. The selftests, their
# modules and the sample come from the kernel's tree, per cell, in the
# archive taintport appends to this image under /taintport/selftests/ with
# the run's token; this image is the same for every kernel.
# shellcheck disable=SC2154 # moddir is dracut's

# called by dracut
check() {
    # only when asked for (-m/--add): it must never reach a host's initramfs
    return 255
}

# called by dracut
depends() {
    echo base
    return 0
}

# called by dracut
install() {
    # functions.sh and the test-*.sh scripts: bash, kmod's tools (modprobe
    # up to 6.1, insmod from 6.12, modinfo, rmmod; depmod for modprobe),
    # dmesg, sysctl (kernel.ftrace_enabled), and the text tools they call
    # (each test-*.sh finds functions.sh with dirname; 6.1 compares the log
    # with comm, test-syscall counts CPUs with getconf and seq);
    # timeout bounds each script
    # dracut 059 ignores install()'s status: a missing tool stops it here
    if ! inst_multiple bash insmod rmmod modprobe modinfo depmod dmesg sysctl \
            awk grep sed diff date id mktemp cat stat sleep timeout tr head \
            tail wc rm ls mkdir cp mount uname sort cut dirname basename comm \
            seq getconf; then
        dfatal "taintport-selftests: cannot install the selftests' tools"
        exit 1
    fi
    inst_script "$moddir/taintport-selftests.sh" /taintport/taintport-selftests
    # cmdline, not pre-udev: base's init dies on a missing root= between
    # the two, and the test guest has no root
    inst_hook cmdline 90 "$moddir/taintport-selftests-hook.sh"
}
