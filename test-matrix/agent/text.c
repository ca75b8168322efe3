// SPDX-License-Identifier: GPL-2.0
/* Small files of sysfs, procfs and tracefs, read and written whole. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"

/* the whole of a small file, NUL-terminated; -1 with errno on failure */
ssize_t read_text(const char *path, char *buf, size_t size)
{
	ssize_t len = 0;
	ssize_t n = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while ((size_t)len < size - 1) {
		n = read(fd, buf + len, size - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += n;
	}
	buf[len] = '\0';
	if (n < 0) {
		int saved = errno;

		close(fd);
		errno = saved;
		return -1;
	}
	close(fd);
	return len;
}

/* sysfs and tracefs take a value in one write(); 0 or -1 with errno */
int write_text(const char *path, const char *text)
{
	size_t len = strlen(text);
	ssize_t n;
	int saved;
	int fd;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = write(fd, text, len);
	saved = errno;
	close(fd);
	if (n == (ssize_t)len)
		return 0;
	errno = n < 0 ? saved : EIO;
	return -1;
}
