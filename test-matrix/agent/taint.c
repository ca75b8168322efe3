// SPDX-License-Identifier: GPL-2.0
/*
 * Reading taints: the module's letters (/sys/module/<m>/taint), the
 * kernel's bits (/proc/sys/kernel/tainted), each read once a load and
 * shown as a diagnostic before the first test that rests on it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "agent.h"
#include "parse.h"

/*
 * The letter the tree prints for the taint the command line may rename
 * (main.c sets it); the tables say it by the taint's usual letter.
 */
char unsigned_letter;

const struct taint *taint_of(char letter)
{
	size_t i;

	for (i = 0; i < nr_taints; i++)
		if (taints[i].letter == letter)
			return &taints[i];
	return NULL;
}

/* the letter the kernel under test shows for a letter of the tables */
char letter_of(char letter)
{
	const struct taint *t = taint_of(letter);

	return t && t->cmdline ? unsigned_letter : letter;
}

/*
 * Why a letter of the tables cannot be seen on this load by design, or
 * NULL: a module the distribution signed is in-tree (no O), and a module
 * loaded unsigned where a signed load was meant has the unsigned letter
 * for that reason.
 */
const char *letter_unobservable(const struct load *l, char letter)
{
	const struct taint *t = taint_of(letter);

	if (letter == 'O' && l->mode->module->in_tree)
		return "the distribution's signed module is in-tree: no O";
	if (t && t->cmdline)
		return l->mode->unsigned_why;
	return NULL;
}

/* /proc/sys/kernel/tainted; false when it cannot be read */
bool kernel_tainted(unsigned long *tainted)
{
	char text[32];

	return read_text("/proc/sys/kernel/tainted", text, sizeof(text)) >= 0 &&
	       tainted_parse(text, tainted);
}

/* says so when the tree prints another letter than the tables */
static void diag_renamed_letter(const struct load *l)
{
	size_t i;

	for (i = 0; i < nr_taints; i++)
		if (taints[i].cmdline && taints[i].letter != unsigned_letter)
			diag(l, "the letter %c stands for '%c' (%s)",
			     taints[i].letter, unsigned_letter, taints[i].cmdline);
}

/* 1 when l->taint holds the module's letters, -1 when they cannot be read */
int module_taint(struct load *l)
{
	char path[PATH_SIZE];

	if (l->taint_state)
		return l->taint_state;
	snprintf(path, sizeof(path), "/sys/module/%s/taint", l->mode->module->name);
	if (read_text(path, l->taint, sizeof(l->taint)) < 0) {
		agent_error("%s: read %s: %s", l->subtest, path, strerror(errno));
		return l->taint_state = -1;
	}
	l->taint[strcspn(l->taint, "\n")] = '\0';
	diag(l, "%s = %s", path, l->taint);
	diag_renamed_letter(l);
	return l->taint_state = 1;
}

/* 1 when l->tainted holds the kernel's taint, -1 when it cannot be read */
int kernel_taint(struct load *l)
{
	if (l->tainted_state)
		return l->tainted_state;
	if (!kernel_tainted(&l->tainted)) {
		agent_error("%s: cannot read /proc/sys/kernel/tainted", l->subtest);
		return l->tainted_state = -1;
	}
	diag(l, "tainted = %lu", l->tainted);
	return l->tainted_state = 1;
}
