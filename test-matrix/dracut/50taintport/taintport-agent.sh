#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Sourced by dracut's init as a cmdline hook, with stdout on the console.
# The agent ends the VM itself. Should it come back (it refused to run,
# or could not end the VM), init goes on and stops at the missing root=.

if [ -x /taintport/taintport-agent ]; then
    /taintport/taintport-agent
else
    echo "taintport: /taintport/taintport-agent is not in the image (the host appends it to each boot's image)"
fi
