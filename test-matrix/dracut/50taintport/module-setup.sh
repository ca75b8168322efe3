#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# dracut module "taintport": the test payload of test-matrix/README.md and
# the hook that starts it. The host exports TAINTPORT_PAYLOAD=<folder>
# before it calls dracut, holding what it wants in this image: the agent
# (taintport-agent), the test modules (*.ko), the token. taintport itself
# passes an empty folder, so that one image serves every kernel, and appends
# each boot's agent (built for its kernel), modules and token as a second
# archive.
# shellcheck disable=SC2154 # initdir and moddir are dracut's

# called by dracut
check() {
    # only when asked for (-m/--add): it must never reach a host's initramfs
    return 255
}

# called by dracut
depends() {
    # base's init sources the hooks; the agent is static and needs nothing
    echo base
    return 0
}

# called by dracut
install() {
    local _f

    # dracut 059 ignores install()'s status, so a missing payload must
    # stop the build here, the way its own inst_hook does (dfatal, exit)
    if [[ -z $TAINTPORT_PAYLOAD ]]; then
        dfatal "taintport: TAINTPORT_PAYLOAD is not set"
        exit 1
    fi
    if [[ ! -d $TAINTPORT_PAYLOAD ]]; then
        dfatal "taintport: TAINTPORT_PAYLOAD=$TAINTPORT_PAYLOAD is not a folder"
        exit 1
    fi
    for _f in "$TAINTPORT_PAYLOAD"/taintport-agent "$TAINTPORT_PAYLOAD"/*.ko \
              "$TAINTPORT_PAYLOAD"/token; do
        [[ -f $_f ]] || continue
        if ! inst_simple "$_f" "/taintport/${_f##*/}"; then
            dfatal "taintport: cannot install $_f"
            exit 1
        fi
    done
    # dracut strips executable files after install(); stripping a module
    # would drop its appended signature, so modules are never executable
    for _f in "$initdir"/taintport/*.ko; do
        [[ -f $_f ]] && chmod 0644 "$_f"
    done

    # cmdline, not pre-udev: base's init dies on a missing root= between
    # the two, and the test guest has no root
    inst_hook cmdline 90 "$moddir/taintport-agent.sh"
}
