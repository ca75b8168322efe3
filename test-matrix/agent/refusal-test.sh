#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Runs the built agent, unchanged, on this host under strace and proves
# that it refuses: it prints the refusal, exits 3, and never opens a
# module nor makes a syscall that loads, unloads, reboots or touches
# I/O ports or the console log level.
#
# strace also injects EPERM into those syscalls, so a broken guard would
# fail this test without having done anything to the host.

agent=${1:?usage: $0 <taintport-agent>}
dangerous=init_module,finit_module,delete_module,reboot,ioperm,iopl,syslog,mount
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

echo "KTAP version 1"
echo "1..4"

strace -f -qq -o "$tmp/strace" \
	-e trace="$dangerous,open,openat" \
	-e inject="$dangerous:error=EPERM" \
	"$agent" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?

failed=0
result() {
	if [ "$1" = 0 ]; then
		echo "ok $2 $3"
	else
		echo "not ok $2 $3"
		failed=1
	fi
}

echo "# exit status $rc; stderr: $(cat "$tmp/stderr")"
[ "$rc" = 3 ]
result $? 1 agent_exits_3
grep -q '^taintport-agent: refusing to run: ' "$tmp/stderr"
result $? 2 agent_prints_the_refusal

sed 's/^/# strace: /' "$tmp/strace"
! grep -Eq "(^|[^_])($(echo "$dangerous" | tr , '|'))\(" "$tmp/strace"
result $? 3 agent_makes_no_dangerous_syscall
! grep -q '\.ko"' "$tmp/strace"
result $? 4 agent_opens_no_module

exit $failed
