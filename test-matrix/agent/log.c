// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel log of a load: the messages /dev/kmsg got while it ran, one
 * a line, shown as diagnostics before the first test that reads them.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "parse.h"

/* -1 when the kernel log cannot be read; the load is then reported as such */
int kmsg_open_at_end(void)
{
	int fd;

	fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		agent_error("open /dev/kmsg: %s", strerror(errno));
		return -1;
	}
	if (lseek(fd, 0, SEEK_END) < 0) {
		agent_error("seek /dev/kmsg: %s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* the messages logged since kmsg_open_at_end(), one a line, into l->kmsg */
void kmsg_drain(int fd, struct load *l)
{
	char record[8192];	/* a whole record, or read() fails with EINVAL */
	size_t used = 0;
	ssize_t n;

	for (;;) {
		const char *msg;
		size_t len;

		n = read(fd, record, sizeof(record) - 1);
		if (n < 0 && (errno == EINTR || errno == EPIPE))
			continue;	/* EPIPE: older records were overwritten */
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			agent_error("read /dev/kmsg: %s",
				    n ? strerror(errno) : "end of file");
			return;
		}
		msg = kmsg_message(record, n, &len);
		if (!msg)
			continue;
		if (used + len + 2 > sizeof(l->kmsg)) {
			agent_error("%s: kernel log too long, kept %zu bytes",
				    l->subtest, used);
			break;
		}
		memcpy(l->kmsg + used, msg, len);
		used += len;
		l->kmsg[used++] = '\n';
	}
	l->kmsg[used] = '\0';
	l->kmsg_read = true;
}

/* what the load logged, one diagnostic a message, once */
void print_dmesg(struct load *l)
{
	const char *line = l->kmsg;

	if (l->kmsg_printed || !l->kmsg_read)
		return;
	l->kmsg_printed = true;
	if (!*line)
		diag(l, "dmesg: nothing logged");
	while (*line) {
		int len = strcspn(line, "\n");

		diag(l, "dmesg: %.*s", len, line);
		line += len;
		line += *line == '\n';
	}
}
