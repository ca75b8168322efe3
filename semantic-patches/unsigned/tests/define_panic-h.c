/* include/linux/panic.h (v5.15 on), bit 13 removed to rebuild a pre-fix tree. */
#ifndef _LINUX_PANIC_H
#define _LINUX_PANIC_H

/* This cannot be an enum because some may be used in assembly source. */
#define TAINT_CRAP			10
#define TAINT_FIRMWARE_WORKAROUND	11
#define TAINT_OOT_MODULE		12
#define TAINT_SOFTLOCKUP		14
#define TAINT_LIVEPATCH			15
#define TAINT_TEST			18
#define TAINT_FLAGS_COUNT		19

#endif	/* _LINUX_PANIC_H */
